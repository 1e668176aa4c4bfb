"""Hybrid retrieval over any ``BaseStore``: dense candidates from the store, lexical ones from BM25, fused.

:class:`HybridRetriever` works over every BaseStore with a vector index
(LangGraph's ``InMemoryStore``, ``PostgresStore``, our stores):

- **dense** candidates come from ``store.search(prefix, query=...)`` — the
  store embeds the query and ranks by cosine;
- **lexical** candidates come from a BM25 index (:class:`~langmem_plugin.core.lexical.BM25Index`,
  Qdrant's BM25) that the retriever keeps in process for each namespace prefix
  it has searched. It is built on first use by paging through the store, kept
  current by :meth:`HybridRetriever.put` / :meth:`HybridRetriever.delete` and by
  every write the services run on the store (:func:`~langmem_plugin.services.store_steps.watch_writes`:
  the memory tools, remember, the services), and rebuilt when the dense search
  returns an item it has not seen (:meth:`HybridRetriever.invalidate` forces it
  after ``store.put`` calls made elsewhere). It is never trusted for content: a
  hit only the lexical index found is re-read from the store (one batch of
  ``GetOp``), dropped when it is gone and re-indexed when it changed, so an item
  deleted or updated behind the retriever's back is never returned as it was.
  The text it indexes is :attr:`RetrievalConfig.lexical_fields`, dot paths
  into the stored value, so a memory's context (the turn before it, its date)
  can be searchable without being embedded;
- the two are **fused** by a weighted sum of z-scores, each signal standardised
  over its own candidate pool (a candidate missing from one pool gets that
  pool's lowest score). Unlike reciprocal-rank fusion this keeps how far ahead a
  candidate is, which is what a lopsided query (a rare name that BM25 nails, or
  a paraphrase only the embedder sees) needs.

One more step, measured on LoCoMo (see ``langmem-plugin bench locomo``): before
the dense search, query words that occur in at least
:attr:`RetrievalConfig.background_df` of the namespace's documents are dropped
from the text that gets embedded. In a conversation those are the
participants' names; they carry no information there (BM25 already weighs them
near zero) but dominate a small embedder's vector, so every turn that mentions
the name outranks the turn that answers the question.

Then, optionally, the fused score is *lifted* by what the items' values say
(each lift off by default, each in standard-deviation units of the fused score):

- a candidate next to a strong match (``neighbours_field``: the turn answering
  a question shares no word with it, the question does);
- a candidate whose group (``group_field``: a session, a document) holds other
  strong matches;
- whatever else a :class:`Lift` in :attr:`RetrievalConfig.lifts` adds: a lift
  reads what it needs from each item once (when the item is indexed) and, per
  query, returns an addition for each candidate. The LoCoMo recipe's lifts (the
  speaker the question names, the date it names, how much a turn tells) are
  written this way, in :mod:`langmem_plugin.bench.locomo_lifts`.

The features these read are taken once per item when it is indexed, so a lift
costs a dictionary lookup per candidate.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.testing import FakeEmbeddings
>>> store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
>>> retriever = HybridRetriever(store)
>>> retriever.put(("notes",), "tea", {"content": "Prefers green tea in the morning"})
>>> retriever.put(("notes",), "tax", {"content": "The tax deadline is in April"})
>>> [hit.key for hit in retriever.search(("notes",), "green tea", limit=1)]
['tea']
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem, SearchOp

from langmem_plugin.core.lexical import BM25Encoder, BM25Index
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.fusion import field_text, zscores
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute, watch_writes

__all__ = ["HybridRetriever", "Lift", "RetrievalConfig", "RetrievalMode", "RetrievedItem"]

RetrievalMode = Literal["hybrid", "dense", "lexical"]
_MODES: tuple[str, ...] = ("hybrid", "dense", "lexical")
Namespace: TypeAlias = tuple[str, ...]
_DocKey: TypeAlias = tuple[Namespace, str]
F = TypeVar("F")


class Lift(Protocol[F]):
    """An addition to the fused score of hybrid search, from what the items and the query say.

    A lift has two parts. :meth:`feature` reads what the lift needs from one stored item
    (its ``namespace``, ``key``, ``value``, ``created_at``); the retriever calls it once, when
    it indexes the item, and keeps the result. :meth:`__call__` runs on each hybrid search
    after fusion (and after the neighbour and group lifts): it gets the query, the candidates'
    features and their fused scores so far, in the same order, and returns one addition per
    candidate, in the fused score's units (standard deviations of the signals; 0 leaves a
    candidate where it is). The lifts of :attr:`RetrievalConfig.lifts` run in order, each
    seeing the scores the previous ones left.

    >>> from langgraph.store.memory import InMemoryStore
    >>> from langmem_plugin.testing import FakeEmbeddings
    >>> class Pinned:  # a memory marked pinned gains 2 standard deviations
    ...     def feature(self, item: Item) -> bool:
    ...         return bool(item.value.get("pinned"))
    ...     def __call__(self, query: str, features: Sequence[bool], scores: Sequence[float]) -> list[float]:
    ...         return [2.0 if pinned else 0.0 for pinned in features]
    >>> store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
    >>> retriever = HybridRetriever(store, RetrievalConfig(lifts=(Pinned(),)))
    >>> retriever.put(("notes",), "tea", {"content": "Likes green tea"})
    >>> retriever.put(("notes",), "oolong", {"content": "Likes oolong tea", "pinned": True})
    >>> [hit.key for hit in retriever.search(("notes",), "green tea")]
    ['oolong', 'tea']
    """

    def feature(self, item: Item) -> F:
        """What the lift reads from one stored item, once, when the retriever indexes it."""
        ...

    def __call__(self, query: str, features: Sequence[F], scores: Sequence[float]) -> Sequence[float]:
        """One addition per candidate (``features`` and ``scores`` are the candidates', in order)."""
        ...


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How :class:`HybridRetriever` searches. The defaults are the recipe measured on LoCoMo.

    Attributes:
        mode: ``"hybrid"`` (dense + BM25, fused), ``"dense"`` (the store's vector search only)
            or ``"lexical"`` (BM25 only).
        dense_weight: the dense signal's share of the fused score, 0 to 1; BM25 gets the rest.
        lexical_fields: dot paths into an item's value whose text BM25 indexes (strings, or
            lists of strings), e.g. ``("metadata.context", "content")``.
        candidates: how many candidates each signal contributes before fusion.
        background_df: drop from the embedded query the words found in at least this
            fraction of the namespace's documents; ``None`` keeps the query as it is.
        background_min_docs: below this many documents, nothing counts as background.
        neighbours_field: a dot path into the value naming the keys of its neighbours in the
            same namespace (a list of keys, or one string of space-separated keys), e.g. the
            turns before and after a conversation turn.
        neighbour_weight: hybrid mode, with ``neighbours_field``: each candidate's fused score
            gains this share of its best neighbour's (an answer next to a strong match is likely).
        group_field: a dot path into the value naming the group a memory belongs to (a
            conversation session, a document), e.g. ``"metadata.session"``.
        group_weight: hybrid mode, with ``group_field``: each candidate gains this share of the
            mean fused score of the best ``group_top`` candidates of its group (evidence that
            clusters in one session outranks a lone match elsewhere).
        group_top: how many of a group's best candidates make its score.
        lifts: hybrid mode: more additions to the fused score (:class:`Lift`), applied in order
            after the neighbour and group lifts.

    The lifts are in the fused score's units: standard deviations of the signals.
    """

    mode: RetrievalMode = "hybrid"
    dense_weight: float = 0.5
    lexical_fields: tuple[str, ...] = ("content",)
    candidates: int = 100
    background_df: float | None = 0.2
    background_min_docs: int = 20
    neighbours_field: str | None = None
    neighbour_weight: float = 0.0
    group_field: str | None = None
    group_weight: float = 0.0
    group_top: int = 3
    lifts: tuple[Lift[Any], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigurationError(f"mode must be one of {', '.join(_MODES)}; got {self.mode!r}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ConfigurationError(f"dense_weight must be from 0 to 1, got {self.dense_weight!r}")
        if isinstance(self.lexical_fields, str) or not self.lexical_fields:  # type: ignore[unreachable]
            raise ConfigurationError(
                f"lexical_fields must be a non-empty tuple of dot paths such as ('content',), "
                f"got {self.lexical_fields!r}"
            )
        if self.neighbour_weight < 0 or (self.neighbour_weight and not self.neighbours_field):
            raise ConfigurationError(
                f"neighbour_weight must be 0 or more and needs neighbours_field, got "
                f"neighbour_weight={self.neighbour_weight!r}, neighbours_field={self.neighbours_field!r}"
            )
        if self.group_weight < 0 or (self.group_weight and not self.group_field):
            raise ConfigurationError(
                f"group_weight must be 0 or more and needs group_field, got "
                f"group_weight={self.group_weight!r}, group_field={self.group_field!r}"
            )
        if self.group_top < 1:
            raise ConfigurationError(f"group_top must be at least 1, got {self.group_top!r}")
        if not isinstance(self.lifts, tuple) or not all(
            callable(lift) and callable(getattr(lift, "feature", None)) for lift in self.lifts
        ):
            raise ConfigurationError(
                "lifts must be a tuple of Lift objects (a feature(item) method and a "
                f"__call__(query, features, scores)), got {self.lifts!r}"
            )
        if self.candidates < 1:
            raise ConfigurationError(f"candidates must be at least 1, got {self.candidates!r}")
        if self.background_df is not None and not 0.0 < self.background_df <= 1.0:
            raise ConfigurationError(
                "background_df must be above 0 and at most 1 (or None to disable), "
                f"got {self.background_df!r}"
            )


@dataclass(frozen=True, slots=True)
class RetrievedItem:
    """One search result: the stored item, its fused score and the score of each signal.

    ``score`` is comparable only within one search (a z-score mix in hybrid mode,
    the cosine in dense mode, BM25 in lexical mode). ``dense_score`` is the
    store's similarity and ``lexical_score`` the BM25 score, ``None`` when the
    item was not among that signal's candidates.
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    score: float
    dense_score: float | None = None
    lexical_score: float | None = None


@dataclass(frozen=True, slots=True)
class _Features:
    """What the lifts read from an item, taken once when it is indexed."""

    neighbours: tuple[_DocKey, ...]
    group_key: tuple[Namespace, str] | None  # (namespace, group), None without a group
    lifted: tuple[Any, ...] = ()  # each of RetrievalConfig.lifts' feature(item), in order


@dataclass
class _Lexical:
    """The BM25 index of one namespace prefix, the items it was built from, and their features."""

    index: BM25Index
    items: dict[_DocKey, Item] = field(default_factory=dict)
    features: dict[_DocKey, _Features] = field(default_factory=dict)


_SCAN_PAGE = 1000
_VERIFY_ROUNDS = 3  # re-reads of lexical-only hits per search before giving up on them


def _scan(prefix: Namespace, filter: dict[str, Any] | None) -> StoreSteps[list[Item]]:
    """Every item under ``prefix`` matching ``filter``, a page at a time."""
    out: list[Item] = []
    while True:
        (page,) = yield [SearchOp(prefix, filter, _SCAN_PAGE, len(out), None)]
        out.extend(page)
        if len(page) < _SCAN_PAGE:
            return out


def _lifted(lift: Lift[Any], query: str, features: list[Any], scores: list[float]) -> list[float]:
    """``scores`` plus what ``lift`` adds to each (checked: one finite number per candidate)."""
    added = lift(query, features, scores)
    if len(added) != len(scores) or not all(math.isfinite(x) for x in added):
        raise ConfigurationError(
            f"the lift {lift!r} returned {list(added)[:5]!r}... for {len(scores)} candidates; "
            "it must return one finite number per candidate"
        )
    return [score + x for score, x in zip(scores, added, strict=True)]


def _prefix(namespace_prefix: Sequence[str]) -> Namespace:
    if isinstance(namespace_prefix, str) or not isinstance(namespace_prefix, Sequence):
        raise ConfigurationError(
            f"namespace_prefix must be a tuple of strings such as ('users', 'u1'), got {namespace_prefix!r}"
        )
    return tuple(namespace_prefix)


class HybridRetriever:
    """Dense + BM25 search over any ``BaseStore``, fused (see the module docs for the method).

    Args:
        store: the store to search; dense and hybrid modes need it to have a vector index.
        config: how to search (:class:`RetrievalConfig`; its defaults are the measured recipe).
        encoder: the BM25 encoder for the in-process lexical index.

    Every method has an async twin (``asearch``, ``aput``, ``adelete``) that runs the
    same logic over the store's async API.
    """

    def __init__(
        self,
        store: BaseStore,
        config: RetrievalConfig | None = None,
        *,
        encoder: BM25Encoder | None = None,
    ) -> None:
        self.store = store
        self.config = config or RetrievalConfig()
        self._encoder = encoder or BM25Encoder()
        self._lexical: dict[Namespace, _Lexical] = {}
        self._lock = threading.RLock()
        watch_writes(store, self._on_writes)

    def __repr__(self) -> str:
        return f"HybridRetriever(store={type(self.store).__name__}, config={self.config!r})"

    # ------------------------------------------------------------------ public API

    def search(
        self,
        namespace_prefix: Sequence[str],
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
    ) -> list[RetrievedItem]:
        """The ``limit`` items under ``namespace_prefix`` that best match ``query``, best first."""
        result: list[RetrievedItem] = execute(
            self.store, self._search(_prefix(namespace_prefix), query, limit, filter)
        )
        return result

    async def asearch(
        self,
        namespace_prefix: Sequence[str],
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
    ) -> list[RetrievedItem]:
        """Async :meth:`search`."""
        result: list[RetrievedItem] = await aexecute(
            self.store, self._search(_prefix(namespace_prefix), query, limit, filter)
        )
        return result

    def put(self, namespace: Sequence[str], key: str, value: dict[str, Any]) -> None:
        """``store.put`` and keep the lexical indexes that cover ``namespace`` current."""
        execute(self.store, self._put(_prefix(namespace), key, value))

    async def aput(self, namespace: Sequence[str], key: str, value: dict[str, Any]) -> None:
        """Async :meth:`put`."""
        await aexecute(self.store, self._put(_prefix(namespace), key, value))

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """``store.delete`` and drop the item from the lexical indexes."""
        execute(self.store, self._delete(_prefix(namespace), key))

    async def adelete(self, namespace: Sequence[str], key: str) -> None:
        """Async :meth:`delete`."""
        await aexecute(self.store, self._delete(_prefix(namespace), key))

    def search_steps(
        self,
        namespace_prefix: Sequence[str],
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
    ) -> StoreSteps[list[RetrievedItem]]:
        """:meth:`search` as store steps, to run inside other steps (:mod:`.store_steps`).

        Run it against the store this retriever was made for: the lexical index caches that
        store's items.
        """
        result: list[RetrievedItem] = yield from self._search(_prefix(namespace_prefix), query, limit, filter)
        return result

    def invalidate(self, namespace_prefix: Sequence[str] | None = None) -> None:
        """Forget the lexical index of ``namespace_prefix`` (all of them when ``None``).

        Call it after writing to the store other than through :meth:`put`/:meth:`delete`;
        the next search rebuilds the index from the store.
        """
        with self._lock:
            if namespace_prefix is None:
                self._lexical.clear()
            else:
                self._lexical.pop(_prefix(namespace_prefix), None)

    # ------------------------------------------------------------------ the logic (no I/O)

    def _lexical_text(self, value: Mapping[str, Any]) -> str:
        return "\n".join(t for t in (field_text(value, p) for p in self.config.lexical_fields) if t)

    def _build(self, prefix: Namespace, items: Iterable[Item]) -> _Lexical:
        lexical = _Lexical(BM25Index(self._encoder))
        for item in items:
            doc = (tuple(item.namespace), item.key)
            lexical.items[doc] = item
            lexical.features[doc] = self._features(doc, item)
            lexical.index.add(doc, self._lexical_text(item.value))
        with self._lock:
            self._lexical[prefix] = lexical
        return lexical

    def _covering(self, namespace: Namespace) -> list[_Lexical]:
        with self._lock:
            return [lex for p, lex in self._lexical.items() if namespace[: len(p)] == p]

    def _dense_query(self, query: str, lexical: _Lexical | None) -> str:
        threshold = self.config.background_df
        if threshold is None or lexical is None:
            return query
        total = len(lexical.index)
        if total < self.config.background_min_docs:
            return query
        limit = threshold * total
        index = lexical.index
        kept = []
        for word in query.split():
            terms = self._encoder.encode_query(word).indices
            if terms and max(index.doc_freq(t) for t in terms) >= limit:
                continue
            kept.append(word)
        return " ".join(kept) if kept else query

    def _search(
        self, prefix: Namespace, query: str, limit: int, filter: dict[str, Any] | None
    ) -> StoreSteps[Any]:
        if not isinstance(query, str) or not query.strip():
            raise ConfigurationError(f"query must be a non-empty string, got {query!r}")
        if limit < 1:
            raise ConfigurationError(f"limit must be at least 1, got {limit!r}")
        mode = self.config.mode
        candidates = max(self.config.candidates, limit)
        lexical: _Lexical | None = None
        if mode != "dense" or self.config.background_df is not None:
            with self._lock:
                lexical = self._lexical.get(prefix)
            if lexical is None:
                lexical = self._build(prefix, (yield from _scan(prefix, None)))

        dense_items: list[SearchItem] = []
        if mode != "lexical":
            dense_query = self._dense_query(query, lexical)
            (dense_items,) = yield [SearchOp(prefix, filter, candidates, 0, dense_query)]
            if lexical is not None and any(
                (tuple(i.namespace), i.key) not in lexical.items for i in dense_items
            ):
                lexical = self._build(prefix, (yield from _scan(prefix, None)))  # written behind our back

        dense: dict[_DocKey, float] = {}
        verified: dict[_DocKey, Item] = {}  # items as the store holds them now
        for item in dense_items:
            doc = (tuple(item.namespace), item.key)
            verified[doc] = item
            dense[doc] = float(item.score) if item.score is not None else 0.0
            if lexical is not None:
                cached = lexical.items.get(doc)
                if cached is None or cached.value != item.value:
                    self._refresh(lexical, doc, item)  # updated behind our back: index the text it has now

        allowed: set[_DocKey] | None = None
        if mode != "dense" and lexical is not None and filter:
            matching = yield from _scan(prefix, filter)
            allowed = {(tuple(i.namespace), i.key) for i in matching}

        for _ in range(_VERIFY_ROUNDS):
            found: dict[_DocKey, Item] = dict(verified)
            with self._lock:  # writes from other threads change the index (see _on_writes)
                lexical_scores = self._lexical_scores(lexical, query, candidates, allowed)
                if lexical is not None:
                    for doc in lexical_scores:
                        found.setdefault(doc, lexical.items[doc])
            fused = self._fuse(dense, lexical_scores, found, query, lexical)
            order = sorted(fused, key=lambda d: (-fused[d], d))[:limit]
            unverified = [doc for doc in order if doc not in verified]
            if not unverified or lexical is None:
                break
            # Lexical-only hits come from our index: re-read them, so a memory deleted or
            # changed behind our back is never returned as it was.
            fresh = yield [GetOp(doc[0], doc[1]) for doc in unverified]
            changed = False
            for doc, item in zip(unverified, fresh, strict=True):
                if item is not None:
                    verified[doc] = item
                changed = self._refresh(lexical, doc, item) or changed
            if not changed:
                break
        order = [doc for doc in order if doc in verified]
        return [
            RetrievedItem(
                namespace=doc[0],
                key=doc[1],
                value=verified[doc].value,
                score=fused[doc],
                dense_score=dense.get(doc),
                lexical_score=lexical_scores.get(doc),
            )
            for doc in order
        ]

    def _lexical_scores(
        self, lexical: _Lexical | None, query: str, candidates: int, allowed: set[_DocKey] | None
    ) -> dict[_DocKey, float]:
        if self.config.mode == "dense" or lexical is None:
            return {}
        return cast(dict[_DocKey, float], lexical.index.top(query, candidates, keys=allowed))

    def _fuse(
        self,
        dense: dict[_DocKey, float],
        lexical_scores: dict[_DocKey, float],
        found: Mapping[_DocKey, Item],
        query: str,
        lexical: _Lexical | None,
    ) -> dict[_DocKey, float]:
        config = self.config
        if config.mode == "dense":
            return dense
        if config.mode == "lexical":
            return lexical_scores
        union = list(found)
        w = config.dense_weight
        scores = [
            w * d + (1.0 - w) * x
            for d, x in zip(zscores(dense, union), zscores(lexical_scores, union), strict=True)
        ]
        if not (config.neighbour_weight or config.group_weight or config.lifts):
            return dict(zip(union, scores, strict=True))
        known = lexical.features if lexical is not None else {}
        features = [known.get(doc) or self._features(doc, found[doc]) for doc in union]
        if config.neighbour_weight:
            scores = self._with_neighbours(union, scores, features)
        if config.group_weight:
            scores = self._with_groups(scores, features)
        for n, lift in enumerate(config.lifts):
            scores = _lifted(lift, query, [feature.lifted[n] for feature in features], scores)
        return dict(zip(union, scores, strict=True))

    def _on_writes(self, puts: Sequence[PutOp]) -> None:
        """Keep the lexical indexes current with writes the services made on the store."""
        now = datetime.now(UTC)
        for op in puts:
            namespace = tuple(op.namespace)
            item = None
            if op.value is not None:
                value = dict(op.value)
                item = Item(value=value, key=op.key, namespace=namespace, created_at=now, updated_at=now)
            for lexical in self._covering(namespace):
                self._refresh(lexical, (namespace, op.key), item)

    def _refresh(self, lexical: _Lexical, doc: _DocKey, item: Item | None) -> bool:
        """Bring ``doc`` in ``lexical`` in line with ``item`` as the store holds it; whether it changed."""
        with self._lock:
            cached = lexical.items.get(doc)
            if item is None:
                if cached is None:
                    return False
                lexical.items.pop(doc, None)
                lexical.features.pop(doc, None)
                lexical.index.remove(doc)
                return True
            if cached is not None and cached.value == item.value:
                return False
            lexical.items[doc] = item
            lexical.features[doc] = self._features(doc, item)
            lexical.index.add(doc, self._lexical_text(item.value))
            return True

    def _features(self, doc: _DocKey, item: Item) -> _Features:
        config = self.config
        value = item.value
        neighbours: tuple[_DocKey, ...] = ()
        if config.neighbours_field:
            neighbours = tuple((doc[0], k) for k in field_text(value, config.neighbours_field).split())
        group = field_text(value, config.group_field) if config.group_field else ""
        group_key = (doc[0], group) if group else None
        return _Features(neighbours, group_key, tuple(lift.feature(item) for lift in config.lifts))

    def _with_neighbours(
        self, union: Sequence[_DocKey], scores: list[float], features: Sequence[_Features]
    ) -> list[float]:
        """Add ``neighbour_weight`` times the best fused score among each candidate's neighbours."""
        floor = min(scores, default=0.0)
        weight = self.config.neighbour_weight
        by_doc = dict(zip(union, scores, strict=True))
        get = by_doc.get
        out: list[float] = []
        for score, feature in zip(scores, features, strict=True):
            best = floor
            for other in feature.neighbours:
                near = get(other, floor)
                if near > best:
                    best = near
            out.append(score + weight * best)
        return out

    def _with_groups(self, scores: list[float], features: Sequence[_Features]) -> list[float]:
        """Add ``group_weight`` times the mean of its group's best ``group_top`` fused scores."""
        members: dict[tuple[Namespace, str], list[float]] = {}
        for score, feature in zip(scores, features, strict=True):
            if feature.group_key is not None:
                members.setdefault(feature.group_key, []).append(score)
        top = self.config.group_top
        strength = {g: sum(sorted(group, reverse=True)[:top]) / top for g, group in members.items()}
        weight = self.config.group_weight
        return [
            score if feature.group_key is None else score + weight * strength[feature.group_key]
            for score, feature in zip(scores, features, strict=True)
        ]

    def _put(self, namespace: Namespace, key: str, value: dict[str, Any]) -> StoreSteps[Any]:
        yield [PutOp(namespace, key, value)]
        covering = self._covering(namespace)
        if covering:
            (stored,) = yield [GetOp(namespace, key)]  # the stored item, with its timestamps
            for lexical in covering:
                self._refresh(lexical, (namespace, key), stored)

    def _delete(self, namespace: Namespace, key: str) -> StoreSteps[Any]:
        yield [PutOp(namespace, key, None)]
        for lexical in self._covering(namespace):
            self._refresh(lexical, (namespace, key), None)
