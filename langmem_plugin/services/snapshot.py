"""A snapshot of memory handed to a sub-agent: what it may read at the hand-off, frozen and read-only.

A supervisor that hands a task to a sub-agent may want the sub-agent to work from the memory as it
was at that moment: not from what other workers write while it runs, and without changing it.
:func:`snapshot_steps` reads every memory of the chosen compartments that the caller's scope reads
now (``memory.snapshot(config)``) into a :class:`MemorySnapshot`; ``memory.agent(name).restore(
snapshot)`` gives that sub-agent surfaces whose store is a :class:`SnapshotStore` over the run's
store:

- a namespace of the snapshot's compartments reads as it was when the snapshot was taken: items
  written, changed or deleted there since are not seen (a namespace of those compartments that the
  snapshot does not hold — another user's, another thread's — reads empty);
- no write reaches those compartments: the sub-agent's rule for each of them is ``read_only`` (its
  tools answer with an error it can act on, its turns write no episode there), and the store
  view itself refuses a write there with :class:`~langmem_plugin.errors.AgentAccessError`;
- every other namespace (agent knowledge, the sub-agent's own compartments, the package's
  bookkeeping) is the run's store, read and written as usual;
- a search from a prefix that spans the snapshot's compartments and others (``("memories",)``,
  as the inspector's catalog reads) raises ``ConfigurationError``: inspect with the root's memory.

Search in the snapshot's namespaces: BM25 over the frozen memories, and the store's own dense
candidates for the same query kept only where the memory is the snapshot's, unchanged since it was
taken — so a memory changed since is found by its words only, and a plain ``search`` with a query
ranks by BM25. A snapshot is a copy held by the process: ``forget`` and ``forget_user`` do not
reach it; drop it when the sub-agent's run ends.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services import execute
>>> from langmem_plugin.services.layout import MemoryLayout
>>> store = InMemoryStore()
>>> store.put(("memories", "user", "u1"), "tea", {"content": "Sam likes green tea"})
>>> snap = execute(store, snapshot_steps(Scope(user_id="u1", thread_id="t1"), MemoryLayout()))
>>> store.put(("memories", "user", "u1"), "cake", {"content": "Sam likes cake"})
>>> view = SnapshotStore(store, snap)
>>> [item.key for item in view.search(("memories", "user", "u1"))]
['tea']
>>> [item.key for item in view.search(("memories", "user", "u1"), query="green tea")]
['tea']
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)
from langgraph.store.memory import InMemoryStore

from langmem_plugin.core.candidates import CandidateQuery, Candidates, CandidateStore
from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.core.scope import NamespaceTemplate, Scope
from langmem_plugin.errors import AgentAccessError, ConfigurationError
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.layout import STORED_COMPARTMENTS, Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["DEFAULT_SNAPSHOT", "MemorySnapshot", "SnapshotStore", "snapshot_steps"]

#: The compartments a snapshot holds unless told: what recall and the memory tools read.
DEFAULT_SNAPSHOT: tuple[Compartment, ...] = (Compartment.USER, Compartment.SESSION)
#: Items listed per request while a snapshot is taken.
_PAGE = 1000
#: The text BM25 reads of a frozen memory (as the default store's lexical index does).
_FIELDS = ("metadata.session", "metadata.context", "content")

_Key = tuple[tuple[str, ...], str]


@dataclass(frozen=True)
class MemorySnapshot:
    """The memories of some compartments as one scope read them at one moment (read-only).

    Attributes:
        items: every memory held, as the store had it (copies: changing one changes nothing).
        namespaces: the namespaces it holds, an empty one included (read as empty, not as the store).
        compartments: the compartments it stands for.
        templates: each compartment's namespace template, to tell its namespaces from others.
        taken_at: when it was taken (UTC).
        user_id: the user of the scope it was taken for.
        thread_id: the thread of that scope.
    """

    items: tuple[Item, ...]
    namespaces: tuple[tuple[str, ...], ...]
    compartments: tuple[str, ...]
    templates: tuple[NamespaceTemplate, ...]
    taken_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    user_id: str | None = None
    thread_id: str | None = None

    def __len__(self) -> int:
        return len(self.items)

    def contents(self) -> list[str]:
        """The text of each memory held, in the store's order."""
        return [str(item.value.get("content", "")) for item in self.items]


def snapshot_steps(
    scope: Scope, layout: MemoryLayout, compartments: Iterable[Compartment | str] = DEFAULT_SNAPSHOT
) -> StoreSteps[MemorySnapshot]:
    """Store steps that read every memory ``scope`` reads now in ``compartments`` (the namespaces its
    agent's rules give it: the shared ones, or its own where a rule isolates it).

    A compartment the scope cannot name (no ``thread_id``: no session memory) is left out.

    Raises:
        CompartmentError: a compartment that is not stored (``run``) or does not exist.
        ConfigurationError: no compartment.
        ScopeError: the scope names none of them.
    """
    chosen = list(dict.fromkeys(parse_compartment(c, allowed=STORED_COMPARTMENTS) for c in compartments))
    if not chosen:
        raise ConfigurationError(
            "a snapshot needs at least one compartment. Fix: leave compartments out "
            f"(default {[c.value for c in DEFAULT_SNAPSHOT]}) or name some."
        )
    named = [Compartment(c) for c in layout.named(chosen, scope)]
    namespaces = [layout.namespace(c, scope) for c in named]
    templates = []
    for c in named:
        isolated = layout.rule(c, scope) is Sharing.ISOLATED and c is not Compartment.KNOWLEDGE
        templates.append(layout.private_template(c) if isolated else layout.template(c))
    items: list[Item] = []
    for namespace in namespaces:
        offset = 0
        while True:
            (page,) = yield [SearchOp(namespace, None, _PAGE, offset, None, refresh_ttl=False)]
            items += [_frozen(item) for item in page if tuple(item.namespace) == namespace]
            if len(page) < _PAGE:
                break
            offset += len(page)
    return MemorySnapshot(
        tuple(items),
        tuple(namespaces),
        tuple(c.value for c in named),
        tuple(templates),
        user_id=scope.user_id,
        thread_id=scope.thread_id,
    )


def _frozen(item: Item) -> Item:
    return Item(
        value=copy.deepcopy(dict(item.value)),
        key=item.key,
        namespace=tuple(item.namespace),
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _pattern(template: NamespaceTemplate) -> list[re.Pattern[str]]:
    """One regular expression per label: its fixed text, and anything for a placeholder."""
    return [
        re.compile("".join(".+" if part.startswith("{") else re.escape(part) for part in _parts(label)))
        for label in template
    ]


def _parts(label: str) -> list[str]:
    return [part for part in re.split(r"(\{[^}]*\})", label) if part]


class SnapshotStore(BaseStore):
    """``store`` with the namespaces of ``snapshot``'s compartments frozen as it holds them
    (see the module docstring). Every other namespace is ``store``'s, unchanged."""

    def __init__(self, store: BaseStore, snapshot: MemorySnapshot) -> None:
        self.store = store
        self.snapshot = snapshot
        self._patterns = [_pattern(t) for t in snapshot.templates]
        self._items: dict[_Key, Item] = {(tuple(i.namespace), i.key): i for i in snapshot.items}
        self._bm25 = BM25Index()
        self._bm25.add_many((key, _text(item.value)) for key, item in self._items.items())
        self._filters = InMemoryStore()  # selects by LangGraph's filter, as the reference store does
        self._filters.batch([PutOp(ns, key, item.value) for (ns, key), item in self._items.items()])

    def __repr__(self) -> str:
        held = list(self.snapshot.compartments)
        return f"SnapshotStore({self.store!r}, {len(self.snapshot)} memories of {held})"

    @property
    def index_config(self) -> Any:
        """The run's store's ``index_config``."""
        return getattr(self.store, "index_config", None)

    # -- which namespaces are frozen ---------------------------------------------------------------

    def _frozen(self, namespace: Sequence[str]) -> bool:
        """Whether ``namespace`` (or a prefix search from it) lies inside a snapshot compartment."""
        return any(
            len(namespace) >= len(labels)
            and all(p.fullmatch(n) for p, n in zip(labels, namespace, strict=False))
            for labels in self._patterns
        )

    def _reaches(self, prefix: Sequence[str]) -> bool:
        """Whether a search from ``prefix`` may reach a snapshot compartment's namespaces."""
        return any(
            len(prefix) < len(labels) and all(p.fullmatch(n) for p, n in zip(labels, prefix, strict=False))
            for labels in self._patterns
        )

    # -- BaseStore ---------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        live = [i for i, op in enumerate(ops) if not self._answers(op)]
        answered = self.store.batch([ops[i] for i in live]) if live else []
        return self._merge(ops, live, answered)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        live = [i for i, op in enumerate(ops) if not self._answers(op)]
        answered = await self.store.abatch([ops[i] for i in live]) if live else []
        return self._merge(ops, live, answered)

    def _answers(self, op: Op) -> bool:
        """Whether the snapshot answers ``op`` itself (and refuses it, for a write)."""
        if isinstance(op, PutOp):
            if self._frozen(op.namespace):
                held = ", ".join(self.snapshot.compartments)
                raise AgentAccessError(
                    f"the namespace {tuple(op.namespace)!r} is a snapshot's ({held} memory as it was at "
                    "the hand-off): it is read-only here. Fix: write from the agent that handed the "
                    "snapshot over, or give this agent its own compartment (AgentRules(agents={name: "
                    "{compartment: 'isolated'}})) and leave it out of the snapshot.",
                    compartment=held,
                )
            return False
        if isinstance(op, GetOp):
            return self._frozen(op.namespace)
        if isinstance(op, SearchOp):
            if self._reaches(op.namespace_prefix):
                raise ConfigurationError(
                    f"a search from {tuple(op.namespace_prefix)!r} spans a snapshot's namespaces and others; "
                    "a snapshot view answers a search inside one compartment. Fix: search a namespace "
                    "of one compartment."
                )
            return self._frozen(op.namespace_prefix)
        return False  # ListNamespacesOp: the store's, with the snapshot's namespaces (below)

    def _merge(self, ops: list[Op], live: list[int], answered: Sequence[Result]) -> list[Result]:
        out: list[Result] = [None] * len(ops)
        for i, result in zip(live, answered, strict=True):
            op = ops[i]
            out[i] = self._namespaces(op, result) if isinstance(op, ListNamespacesOp) else result
        for i, op in enumerate(ops):
            if isinstance(op, GetOp) and i not in live:
                item = self._items.get((tuple(op.namespace), op.key))
                out[i] = _frozen(item) if item is not None else None
            elif isinstance(op, SearchOp) and i not in live:
                out[i] = self._search(op)
        return out

    def _namespaces(self, op: ListNamespacesOp, found: Any) -> list[tuple[str, ...]]:
        """The store's namespaces outside the snapshot's compartments, and the snapshot's own
        (the ``offset`` is the store's: the snapshot's are added to its page)."""
        kept = [ns for ns in found if not self._frozen(ns)]
        depth = op.max_depth
        held = [ns[:depth] if depth is not None else ns for ns in self.snapshot.namespaces if _meets(op, ns)]
        return sorted(set(kept) | set(held))[: op.limit]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.filter:
            found = self._filters.search(prefix, filter=op.filter, limit=max(len(self._items), 1))
            selected = {(tuple(item.namespace), item.key) for item in found}
        keys = [
            key
            for key in self._items
            if key[0][: len(prefix)] == prefix and (not op.filter or key in selected)
        ]
        if op.query:
            scores = self._bm25.scores(op.query, keys)
            keys = sorted((k for k in keys if scores.get(k)), key=lambda k: -scores[k])
        else:
            scores = {}
        chosen = keys[op.offset : op.offset + op.limit]
        return [_hit(self._items[key], scores.get(key)) for key in chosen]

    # -- CandidateStore ----------------------------------------------------------------------------

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """Candidates: the snapshot's for a query inside it, else the run's store's."""
        frozen, live = self._split(queries)
        dense = self._dense_sync([q for _, q in frozen]) if frozen else []
        answered = self._live_sync([q for _, q in live]) if live else []
        return self._joined(queries, frozen, dense, live, answered)

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """:meth:`search_candidates`, from async code."""
        frozen, live = self._split(queries)
        dense = await self._dense_async([q for _, q in frozen]) if frozen else []
        answered = await self._live_async([q for _, q in live]) if live else []
        return self._joined(queries, frozen, dense, live, answered)

    def _split(
        self, queries: Sequence[CandidateQuery]
    ) -> tuple[list[tuple[int, CandidateQuery]], list[tuple[int, CandidateQuery]]]:
        for q in queries:
            self._answers(SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query))  # a span raises
        frozen = [(i, q) for i, q in enumerate(queries) if self._frozen(q.namespace_prefix)]
        live = [(i, q) for i, q in enumerate(queries) if not self._frozen(q.namespace_prefix)]
        return frozen, live

    def _live_sync(self, queries: list[CandidateQuery]) -> list[Candidates]:
        if isinstance(self.store, CandidateStore):
            return self.store.search_candidates(queries)
        pages = self.store.batch([_as_search(q) for q in queries])
        return [_unlexical(q, page) for q, page in zip(queries, pages, strict=True)]

    async def _live_async(self, queries: list[CandidateQuery]) -> list[Candidates]:
        if isinstance(self.store, CandidateStore):
            return await self.store.asearch_candidates(queries)
        pages = await self.store.abatch([_as_search(q) for q in queries])
        return [_unlexical(q, page) for q, page in zip(queries, pages, strict=True)]

    def _dense_sync(self, queries: list[CandidateQuery]) -> list[list[SearchItem]]:
        """The run's store's dense candidates for each query (twice as many: some are newer)."""
        wider = [_wider(q) for q in queries]
        return [c.dense for c in self._live_sync(wider)]

    async def _dense_async(self, queries: list[CandidateQuery]) -> list[list[SearchItem]]:
        wider = [_wider(q) for q in queries]
        return [c.dense for c in await self._live_async(wider)]

    def _joined(
        self,
        queries: Sequence[CandidateQuery],
        frozen: list[tuple[int, CandidateQuery]],
        dense: list[list[SearchItem]],
        live: list[tuple[int, CandidateQuery]],
        answered: list[Candidates],
    ) -> list[Candidates]:
        out: list[Candidates | None] = [None] * len(queries)
        for (i, _), candidates in zip(live, answered, strict=True):
            out[i] = candidates
        for (i, q), found in zip(frozen, dense, strict=True):
            out[i] = self._frozen_candidates(q, found)
        return [c for c in out if c is not None]

    def _frozen_candidates(self, q: CandidateQuery, dense: list[SearchItem]) -> Candidates:
        """BM25 over the frozen memories; the store's dense hits that are the snapshot's, unchanged."""
        kept = []
        for hit in dense:
            item = self._items.get((tuple(hit.namespace), hit.key))
            if item is not None and item.updated_at == hit.updated_at:
                kept.append(_hit(item, hit.score))
        lexical = self._search(SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query))
        return Candidates(kept[: q.limit], lexical, q.query, lexical_index=True)


def _text(value: Any) -> str:
    return "\n".join(text for path in _FIELDS for text in get_text_at_path(value, path))


def _hit(item: Item, score: float | None) -> SearchItem:
    frozen = _frozen(item)
    return SearchItem(frozen.namespace, frozen.key, frozen.value, frozen.created_at, frozen.updated_at, score)


def _as_search(q: CandidateQuery) -> SearchOp:
    return SearchOp(q.namespace_prefix, q.filter, q.limit, 0, q.query)


def _unlexical(q: CandidateQuery, page: Any) -> Candidates:
    scored = [item for item in page if item.score is not None]
    return Candidates(scored, [], q.query, lexical_index=False, unscored=[] if scored else list(page))


def _wider(q: CandidateQuery) -> CandidateQuery:
    return CandidateQuery(
        q.namespace_prefix, q.query, q.limit * 2, q.filter, q.background_df, q.background_min_docs
    )


def _meets(op: ListNamespacesOp, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets ``op``'s match conditions."""
    for condition in op.match_conditions or ():
        path = tuple(condition.path)
        part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
        if len(part) != len(path) or any(p != "*" and p != n for p, n in zip(path, part, strict=True)):
            return False
    return True
