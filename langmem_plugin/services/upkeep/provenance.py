"""Provenance: which exchanges a memory came from, and what forgetting or superseding it does to them.

Every memory record keeps ``sources``: the exchanges (episodes) it was saved or extracted from,
as links ``"thread_id/episode key"`` (:func:`~langmem_plugin.core.record.exchange_link`); every
exchange keeps ``derived``: the ids of the memories that came from it. Remember writes both in
the exchange's own batch (the memory tools say in their ``ToolMessage.artifact`` which memories a
call saved or changed); consolidation writes them for what extraction found.

- **Forgetting** a memory (:func:`forget_memories_steps`: the ``delete_memory`` and
  ``forget_memories`` tools, ``Memory.forget``) removes the exchanges it came from with it — the
  exchange, its passages, and the copy of its beginning the next exchange keeps for lexical
  search — and redacts the memory's history: each entry keeps who did what and when, without the
  text. The exchange removals come first in the one batch, so a crash part-way never leaves a
  memory deleted while an exchange that stated it is still recalled.
- **Superseding** a memory (consolidation's ``INVALIDATE``, a tool update of its content) marks
  the exchanges it came from no longer current (``invalid_at``, ``superseded_by``,
  :mod:`langmem_plugin.core.validity`): recall leaves them out, as it leaves out the superseded
  memory; search still finds them, marked.
- **Forgetting by content** (:func:`forget_matching_steps`) finds every memory and exchange of the
  scope whose text holds every word of the query, and the thread's stored tool results of the
  caller that hold them too, and forgets them all in one batch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import GetOp, Item, PutOp, SearchOp

from langmem_plugin.core.record import (
    MemoryKind,
    MemoryRecord,
    exchange_link,
    parse_exchange_link,
    with_links,
)
from langmem_plugin.core.scope import NamespaceTemplate, Scope
from langmem_plugin.core.validity import invalidated, is_current
from langmem_plugin.errors import InvalidFilterError, ScopeError
from langmem_plugin.services.history import HISTORY_NAMESPACE, Change
from langmem_plugin.services.intents import begin_op, purge_intent, purge_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.operations import (
    StoredMemory,
    changes_ops,
    get_steps,
    list_steps,
    read_record,
    to_stored,
    update_steps,
)
from langmem_plugin.services.store_steps import HOLD, StoreSteps
from langmem_plugin.services.stored_results import is_owned, results_namespace
from langmem_plugin.services.team import team_copies_steps
from langmem_plugin.services.upkeep.candidates import Candidate

__all__ = [
    "MAX_QUERY_CHARS",
    "Forgotten",
    "attribute_steps",
    "exchange_namespaces",
    "exchange_removal_steps",
    "forget_matching_steps",
    "forget_memories_steps",
    "link_memories_steps",
    "matches_query",
    "query_words",
    "revise_steps",
    "supersede_steps",
]

#: The longest query :func:`forget_matching_steps` takes.
MAX_QUERY_CHARS = 500
_PAGE = 500
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "about",
        "everything",
        "anything",
        "all",
        "of",
        "my",
        "me",
        "i",
        "that",
        "this",
        "to",
        "forget",
        "forgot",
        "and",
        "or",
        "in",
        "on",
        "for",
        "with",
        "is",
        "was",
        "it",
        "its",
        "what",
        "you",
        "your",
        "please",
    ]
)
_ROOMS = (Compartment.USER, Compartment.SESSION)


@dataclass
class Forgotten:
    """What a forget removed.

    Attributes:
        memories: ``(id, compartment)`` of each memory deleted.
        exchanges: the keys of the exchanges (episodes) removed with them.
        passages: how many passages of those exchanges were removed.
        history: how many history entries were redacted (their text removed).
        history_purged: old versions the store kept of what was removed or rewritten, dropped
            (a store with history: ``CheckpointerStore``); 0 for a store that keeps none.
        tool_results: the ids of the thread's stored tool results removed (a forget by content:
            the caller's own results in the thread that hold every word of the query).
    """

    memories: list[tuple[str, str]] = field(default_factory=list)
    exchanges: list[str] = field(default_factory=list)
    passages: int = 0
    history: int = 0
    history_purged: int = 0
    tool_results: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """The ids of the memories deleted."""
        return [i for i, _ in self.memories]

    def summary(self) -> str:
        """One line: how many memories and exchanges (and stored tool results) were removed."""
        line = (
            f"{len(self.memories)} memories and {len(self.exchanges)} past exchanges "
            f"({self.passages} passages) removed; {self.history} history entries redacted"
        )
        return f"{line}; {len(self.tool_results)} stored tool results removed" if self.tool_results else line


def _namespaces(scope: Scope, layout: MemoryLayout, thread_id: str | None) -> list[tuple[str, ...]]:
    """The user namespace of ``scope`` and the session namespace of ``thread_id``, those it can fill."""
    found: list[tuple[str, ...]] = []
    for compartment in _ROOMS:
        try:
            found.append(layout.namespace(compartment, Scope(user_id=scope.user_id, thread_id=thread_id)))
        except ScopeError:
            continue
    return found


def exchange_namespaces(scope: Scope, layout: MemoryLayout, link: str) -> list[tuple[tuple[str, ...], str]]:
    """Where the exchange of ``link`` may be stored: ``(namespace, key)`` in user and session memory."""
    thread, key = parse_exchange_link(link)
    return [(ns, key) for ns in _namespaces(scope, layout, thread)]


def link_memories_steps(
    scope: Scope, layout: MemoryLayout, links: Sequence[tuple[str, Sequence[str]]]
) -> StoreSteps[list[PutOp]]:
    """The writes that add each exchange link to the ``sources`` of its memories (by id, in the
    scope's user and session memory); memories not found are skipped."""
    wanted = [(link, memory_id) for link, ids in links for memory_id in ids]
    if not wanted:
        return []
    yield HOLD  # read, then written back with the link: no other writer in between
    places = [
        (link, ns, memory_id)
        for link, memory_id in wanted
        for ns in _namespaces(scope, layout, scope.thread_id)
    ]
    items = yield [GetOp(ns, memory_id) for _, ns, memory_id in places]
    records: dict[tuple[tuple[str, ...], str], MemoryRecord] = {}
    for (link, ns, memory_id), item in zip(places, items, strict=True):
        if item is None:
            continue
        record = records.get((ns, memory_id)) or read_record(item)
        if record is None or record.kind is MemoryKind.EPISODE:
            continue
        records[(ns, memory_id)] = with_links(record, sources=[link])
    return [PutOp(ns, key, record.to_value(), index=["content"]) for (ns, key), record in records.items()]


def _exchange_items_steps(
    scope: Scope, layout: MemoryLayout, links: Iterable[str]
) -> StoreSteps[list[tuple[Item, list[Item]]]]:
    """Each stored exchange of ``links`` with its passages."""
    places = [place for link in dict.fromkeys(links) for place in exchange_namespaces(scope, layout, link)]
    if not places:
        return []
    found = yield [GetOp(ns, key) for ns, key in places]
    exchanges = [i for i in found if i is not None and i.value.get("kind") == MemoryKind.EPISODE.value]
    if not exchanges:
        return []
    # the passages by key (remember's ``passage_key``: ``{key}-p{n}``, ``metadata.passages`` of
    # them): a filter on ``metadata.episode`` is not one every BaseStore answers (InMemoryStore)
    wanted = [(i, n) for i in exchanges for n in range(_passage_count(i))]
    parts = (yield [GetOp(tuple(i.namespace), f"{i.key}-p{n}") for i, n in wanted]) if wanted else []
    passages: dict[tuple[tuple[str, ...], str], list[Item]] = {}
    for (item, _), part in zip(wanted, parts, strict=True):
        if part is not None and (part.value.get("metadata") or {}).get("episode") == item.key:
            passages.setdefault((tuple(item.namespace), item.key), []).append(part)
    return [(i, passages.get((tuple(i.namespace), i.key), [])) for i in exchanges]


def _passage_count(item: Item) -> int:
    count = str((item.value.get("metadata") or {}).get("passages") or "0")
    return min(int(count), _PAGE) if count.isdecimal() else 0


def _removal_steps(
    exchanges: Sequence[tuple[Item, list[Item]]], forgotten: Forgotten
) -> StoreSteps[list[PutOp]]:
    """The writes that remove ``exchanges`` (and their passages) and strip the copy of their
    beginning from the exchange after each (``metadata.context``)."""
    doomed = {(tuple(i.namespace), i.key) for i, _ in exchanges}
    following = []
    unlinked = []  # written live: an exchange does not know the one that came after it
    for item, _ in exchanges:
        nxt = (item.value.get("metadata") or {}).get("next")
        if isinstance(nxt, str):
            following.append((tuple(item.namespace), nxt))
        else:
            unlinked.append(item)
    ops: list[PutOp] = []
    for item, passages in exchanges:
        ops.extend(PutOp(tuple(p.namespace), p.key, None) for p in passages)
        ops.append(PutOp(tuple(item.namespace), item.key, None))
        forgotten.exchanges.append(item.key)
        forgotten.passages += len(passages)
    after: list[Item | None] = []
    if following:
        after += yield [GetOp(ns, key) for ns, key in dict.fromkeys(following)]
    if unlinked:  # found by the link back they keep (a filter on a nested field, as every store reads it)
        pages = yield [
            SearchOp(tuple(i.namespace), filter={"metadata": {"previous": i.key}}, limit=4, refresh_ttl=False)
            for i in unlinked
        ]
        after += [hit for page, i in zip(pages, unlinked, strict=True) for hit in page if _follows(hit, i)]
    stripped: set[tuple[tuple[str, ...], str]] = set()
    for one in after:
        if one is None or "context" not in (one.value.get("metadata") or {}):
            continue
        where = (tuple(one.namespace), one.key)
        if where in doomed or where in stripped:
            continue
        stripped.add(where)
        value = dict(one.value)
        value["metadata"] = {k: v for k, v in value["metadata"].items() if k != "context"}
        ops.append(PutOp(where[0], where[1], value, index=["content"]))
    return ops


def _follows(hit: Item, exchange: Item) -> bool:
    """Whether ``hit`` is the exchange right after ``exchange`` (same namespace, its link back)."""
    metadata = hit.value.get("metadata") or {}
    return tuple(hit.namespace) == tuple(exchange.namespace) and metadata.get("previous") == exchange.key


def redact_history_steps(
    scope: Scope, ids: Sequence[str], history: NamespaceTemplate
) -> StoreSteps[list[PutOp]]:
    """Each history entry of ``ids`` again, without its text (``old``, ``new``, ``reason``)."""
    if not scope.user_id or not ids:
        return []
    namespace = scope.namespace(history)
    pages = yield [SearchOp(namespace, filter={"memory_id": i}, limit=_PAGE, refresh_ttl=False) for i in ids]
    ops = []
    for page in pages:
        for item in page:
            value = {**item.value, "old": None, "new": None, "reason": "forgotten", "redacted": True}
            ops.append(PutOp(tuple(item.namespace), item.key, value, index=False))
    return ops


def exchange_removal_steps(
    scope: Scope,
    layout: MemoryLayout,
    memories: Sequence[StoredMemory],
    forgotten: Forgotten,
    *,
    exchanges: Iterable[str] = (),
) -> StoreSteps[list[PutOp]]:
    """The writes that remove the exchanges ``memories`` came from (their ``sources``; for a
    memory that is itself an exchange or a passage, that exchange), and the ``exchanges`` links
    given: each exchange with its passages, and the copy of its beginning the next exchange
    keeps. ``forgotten`` records what they remove."""
    links = list(exchanges)
    for memory in memories:
        if memory.record.kind is MemoryKind.EPISODE:
            episode = memory.record.metadata.get("episode") or memory.id  # a passage: its exchange
            links.append(exchange_link(memory.record.metadata.get("thread_id"), episode))
        else:
            links.extend(memory.record.sources)
    found = yield from _exchange_items_steps(scope, layout, links)
    return (yield from _removal_steps(found, forgotten))


def forget_memories_steps(
    scope: Scope,
    layout: MemoryLayout,
    memories: Sequence[StoredMemory],
    *,
    exchanges: Iterable[str] = (),
    tool_results: Sequence[Item] = (),
    recorded_by: str | None = "forget",
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[Forgotten]:
    """Forget ``memories`` and the exchanges they came from (and the ``exchanges`` links given,
    and the stored ``tool_results`` given), and their copies in team memory
    (:func:`~langmem_plugin.services.team.team_copies_steps`).

    One batch, in this order: the tool results, the exchanges and their passages removed, the
    history of each memory redacted, the memories deleted, and a ``DELETE`` entry per memory that
    says who (``recorded_by``) and when, without the text. A memory that is itself an exchange is
    removed as one (with its passages). Then a store that keeps history (``CheckpointerStore``)
    drops the old versions of every item the batch deleted or rewrote
    (:func:`~langmem_plugin.services.store_steps.purge_history_steps`); the batch records that
    purge as an intent (:func:`~langmem_plugin.services.intents.purge_intent`), so a run killed
    before it is finished by the next resume.
    """
    yield HOLD  # the next exchanges are read, then written back without their quote
    forgotten = Forgotten(tool_results=[r.key for r in tool_results])
    plain = [m for m in memories if m.record.kind is not MemoryKind.EPISODE]
    copies = yield from team_copies_steps(layout, plain)  # what the team read of them goes with them
    memories, plain = [*memories, *copies], [*plain, *copies]
    ops = [PutOp(tuple(r.namespace), r.key, None) for r in tool_results]
    ops += yield from exchange_removal_steps(scope, layout, memories, forgotten, exchanges=exchanges)
    removed = {(ns, key) for ns, key in ((tuple(op.namespace), op.key) for op in ops if op.value is None)}
    redactions = yield from redact_history_steps(scope, [m.id for m in plain], history)
    forgotten.history = len(redactions)
    deletes = [PutOp(m.namespace, m.id, None) for m in memories if (m.namespace, m.id) not in removed]
    forgotten.memories = [(m.id, m.compartment.value) for m in plain]
    changes = [Change(m.id, "DELETE", None, None, "forgotten") for m in plain]
    batch = [*ops, *redactions, *deletes, *changes_ops(scope, changes, recorded_by, history=history)]
    if batch:
        purge = purge_intent([*ops, *redactions, *deletes])  # done even if the run stops here
        yield [*batch, begin_op(purge)]
        forgotten.history_purged = yield from purge_steps(purge)
    return forgotten


def supersede_steps(
    scope: Scope, layout: MemoryLayout, memory: StoredMemory, *, by: str | None, reason: str | None
) -> StoreSteps[list[PutOp]]:
    """The writes that mark the exchanges ``memory`` came from (and their passages) no longer
    current: what they said of it was superseded by ``by`` (recall leaves them out)."""
    yield HOLD  # read, then written back marked: no other writer in between
    found = yield from _exchange_items_steps(scope, layout, memory.record.sources)
    ops: list[PutOp] = []
    for item, passages in found:
        for one in (item, *passages):
            record = read_record(one)
            if record is None or not is_current(record):
                continue
            marked = invalidated(record, by=by or memory.id, reason=reason)
            marked = marked.model_copy(update={"updated_at": record.updated_at})
            ops.append(PutOp(tuple(one.namespace), one.key, marked.to_value(), index=["content"]))
    return ops


def revise_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    compartments: Sequence[Compartment | str] | None = None,
    recorded_by: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
    **changes: Any,
) -> StoreSteps[StoredMemory]:
    """:func:`~langmem_plugin.services.operations.update_steps`, and when the content changes, the
    exchanges that stated the old content are marked superseded first (:func:`supersede_steps`):
    a crash between the two leaves them out of recall, never shown beside the new content."""
    yield HOLD  # read, then written back changed: no other writer in between
    content = changes.get("content")
    if content is not None:
        memory = yield from get_steps(scope, layout, memory_id, compartments=compartments, track_access=False)
        layout.namespace(memory.compartment, scope, write=True)  # an agent that only reads it: refused
        if content.strip() != memory.record.content.strip():
            marks = yield from supersede_steps(
                scope, layout, memory, by=memory.id, reason="the memory was updated"
            )
            if marks:
                yield marks
    return (
        yield from update_steps(
            scope,
            layout,
            memory_id,
            compartments=compartments,
            recorded_by=recorded_by,
            history=history,
            **changes,
        )
    )


def _stems(text: str) -> set[str]:
    """The words of ``text`` that say something, cut to five letters (a crude stem)."""
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def attribute_steps(
    scope: Scope, layout: MemoryLayout, candidates: Sequence[Candidate], links: Sequence[str]
) -> StoreSteps[list[Candidate]]:
    """Each candidate with the exchanges of ``links`` it was extracted from (its ``sources``).

    ``links`` are the exchanges of the conversation extraction read. A candidate gets those
    whose text (with their passages) shares the most words with it; when none shares a word,
    or none is stored yet (a background write not done), it gets them all — forgetting it
    then removes every exchange it may have come from, never too few.
    """
    links = list(dict.fromkeys(links))
    if not candidates or not links:
        return list(candidates)
    by_key = {parse_exchange_link(link)[1]: link for link in links}
    found = yield from _exchange_items_steps(scope, layout, links)
    words = {
        by_key[item.key]: _stems(" ".join(str(i.value.get("content", "")) for i in (item, *passages)))
        for item, passages in found
        if item.key in by_key
    }
    attributed = []
    for candidate in candidates:
        scores = {link: len(_stems(candidate.content) & stems) for link, stems in words.items()}
        best = max(scores.values(), default=0)
        chosen = [link for link in links if scores.get(link) == best] if best else links
        sources = tuple(dict.fromkeys([*candidate.sources, *chosen]))
        attributed.append(dataclasses.replace(candidate, sources=sources))
    return attributed


def query_words(query: Any) -> list[str]:
    """The words of a forget query that must all be found, checked.

    Raises:
        InvalidFilterError: not text, empty, longer than :data:`MAX_QUERY_CHARS`, or no word
            beyond filler ("everything about the ...").
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidFilterError(
            "the forget query is empty: say what to forget, e.g. 'half marathon'. Nothing was removed."
        )
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidFilterError(
            f"the forget query is {len(query)} characters, more than {MAX_QUERY_CHARS}: give the few "
            "words that name what to forget, e.g. 'half marathon'. Nothing was removed."
        )
    words = [w for w in _WORD.findall(query.lower()) if w not in _STOP]
    if not words:
        raise InvalidFilterError(
            f"the forget query {query!r} names nothing to look for: give the words that name what to "
            "forget, e.g. 'half marathon'. Nothing was removed."
        )
    return list(dict.fromkeys(words))


def matches_query(text: str, words: Sequence[str]) -> bool:
    """Whether ``text`` holds every word of ``words`` (a word matches a longer one it starts)."""
    held = _WORD.findall(text.lower())
    return all(any(h.startswith(w) for h in held) for w in words)


def forget_matching_steps(
    scope: Scope,
    layout: MemoryLayout,
    query: str,
    *,
    recorded_by: str | None = "forget",
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[Forgotten]:
    """Forget every memory and exchange of ``scope`` (user memory, and the thread's session memory)
    whose text holds every word of ``query``, and the scope's own stored tool results in the thread
    (:func:`~langmem_plugin.services.stored_results.result_store.results_namespace`) whose text or
    arguments hold them, in one batch; what was removed.

    Raises:
        InvalidFilterError: a bad query (:func:`query_words`); nothing is removed.
        ScopeError: the scope names neither a user nor a thread.
    """
    words = query_words(query)
    # write=True: an agent to which one of them is read-only is refused before anything is read
    namespaces = [(c, layout.namespace(c, scope, write=True)) for c in _ROOMS if _fills(layout, c, scope)]
    if not namespaces:
        layout.namespace(Compartment.USER, scope)  # raises the ScopeError that says what is missing
    matched: list[StoredMemory] = []
    for compartment, namespace in namespaces:
        items = yield from list_steps(namespace, max_items=1_000_000)
        for item in items:
            memory = to_stored(item, compartment)
            if memory is None:
                continue
            if matches_query(memory.record.content, words):
                matched.append(memory)
    results = yield from _matching_results_steps(scope, layout, words)
    return (
        yield from forget_memories_steps(
            scope, layout, matched, tool_results=results, recorded_by=recorded_by, history=history
        )
    )


def _matching_results_steps(
    scope: Scope, layout: MemoryLayout, words: Sequence[str]
) -> StoreSteps[list[Item]]:
    """The scope's own stored tool results in its thread whose text or arguments hold every word."""
    if scope.thread_id is None or not _fills(layout, Compartment.RESULTS, scope):
        return []
    layout.namespace(Compartment.RESULTS, scope, write=True)  # read-only to the agent: refused
    namespace = results_namespace(layout, scope)
    items = yield from list_steps(namespace, max_items=1_000_000)
    return [i for i in items if is_owned(i, namespace, scope) and matches_query(_result_text(i), words)]


def _result_text(item: Item) -> str:
    """What a stored tool result says: its text and the arguments of the call."""
    metadata = item.value.get("metadata") or {}
    return f"{item.value.get('content') or ''} {metadata.get('args') or ''}"


def _fills(layout: MemoryLayout, compartment: Compartment, scope: Scope) -> bool:
    try:
        layout.namespace(compartment, scope)
    except ScopeError:
        return False
    return True
