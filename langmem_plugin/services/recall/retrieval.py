"""Hybrid retrieval over any ``BaseStore``: the store's candidate lists, fused here, in one place.

Every hybrid search of the package goes through :class:`HybridRetriever`:

1. **candidates** — the store answers a :class:`~langmem_plugin.core.candidates.CandidateQuery`
   with the dense top-N (cosine) and the lexical top-N (BM25) under a namespace
   prefix, raw and unfused, in one call (QdrantStore and CheckpointerStore:
   :class:`~langmem_plugin.core.candidates.CandidateStore`). Before embedding the
   query, the store drops the words found in at least ``background_df`` of the
   searched items: in a conversation those are the participants' names, which
   carry no information there but dominate a small embedder's vector. Nothing is
   copied into the process: the retriever holds no index and no state, so a write
   made anywhere is seen by the next search, on a server as on a laptop. A store
   without candidate lists (LangGraph's ``InMemoryStore``, ``PostgresStore``) gives
   its own search as the dense list and no lexical one: no BM25 signal (rare
   names, exact words) and no background-word drop (``docs/recall.md``).
2. **fusion** — a weighted sum of z-scores, each signal standardised over its own
   candidates (a candidate missing from one list gets that list's lowest score).
   Unlike reciprocal-rank fusion this keeps how far ahead a candidate is, which is
   what a lopsided query (a rare name that BM25 nails, or a paraphrase only the
   embedder sees) needs.
3. **lifts**, in standard deviations of the fused score, from what remember writes
   on every episode:

   - a candidate next to a strong match (``neighbours_field``: the turn answering a
     question often shares no word with it; the question does);
   - a candidate whose group (``group_fields``: the session, else the thread) holds
     other strong matches;
   - whatever a :class:`Lift` in :attr:`RetrievalConfig.lifts` adds (the LoCoMo
     benchmark's speaker, date and salience lifts are written this way, in
     :mod:`langmem_plugin.bench.locomo.lifts`, and stay there: they were fitted on
     that dataset).

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.testing import FakeEmbeddings
>>> store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
>>> store.put(("notes",), "tea", {"content": "Prefers green tea in the morning"})
>>> store.put(("notes",), "tax", {"content": "The tax deadline is in April"})
>>> [hit.key for hit in HybridRetriever(store).search(("notes",), "green tea", limit=1)]
['tea']
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

from langgraph.store.base import BaseStore, Item, SearchItem

from langmem_plugin.core.candidates import CandidateQuery, Candidates, check_background_df
from langmem_plugin.core.record import utc_now
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall.fusion import field_text, zscores
from langmem_plugin.services.recall.signals import SPEAKERS, dated, time_lift
from langmem_plugin.services.recall.when import Period, check_languages, question_periods
from langmem_plugin.services.store_steps import CandidateSearch, StoreSteps, aexecute, execute

__all__ = [
    "HybridRetriever",
    "Lift",
    "RetrievalConfig",
    "RetrievalMode",
    "RetrievedItem",
    "fused_search_steps",
]

RetrievalMode = Literal["hybrid", "dense", "lexical"]
_MODES: tuple[str, ...] = ("hybrid", "dense", "lexical")
Namespace: TypeAlias = tuple[str, ...]
_DocKey: TypeAlias = tuple[Namespace, str]
F = TypeVar("F")


class Lift(Protocol[F]):
    """An addition to the fused score of hybrid search, from what the items and the query say.

    A lift has two parts. :meth:`feature` reads what the lift needs from one stored item
    (its ``namespace``, ``key``, ``value``, ``created_at``); the retriever calls it once per
    candidate and search. :meth:`__call__` runs on each hybrid search
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
    >>> store.put(("notes",), "tea", {"content": "Likes green tea"})
    >>> store.put(("notes",), "oolong", {"content": "Likes oolong tea", "pinned": True})
    >>> retriever = HybridRetriever(store, RetrievalConfig(lifts=(Pinned(),)))
    >>> [hit.key for hit in retriever.search(("notes",), "green tea")]
    ['oolong', 'tea']
    """

    def feature(self, item: Item) -> F:
        """What the lift reads from one stored item (a candidate of the search)."""
        ...

    def __call__(self, query: str, features: Sequence[F], scores: Sequence[float]) -> Sequence[float]:
        """One addition per candidate (``features`` and ``scores`` are the candidates', in order)."""
        ...


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How :class:`HybridRetriever` searches; the defaults are recall's.

    Attributes:
        mode: ``"hybrid"`` (dense + BM25, fused), ``"dense"`` or ``"lexical"`` (one list only).
        dense_weight: the dense signal's share of the fused score, 0 to 1; BM25 gets the rest.
        candidates: how many candidates each signal contributes before fusion.
        background_df: drop from the embedded query the words found in at least this
            fraction of the searched items; ``None`` keeps the query as it is.
        background_min_docs: below this many items, nothing counts as background.
        neighbours_field: a dot path into the value naming the keys of its neighbours in the
            same namespace (a list of keys, or one string of space-separated keys); remember
            writes ``metadata.neighbours`` on every episode. ``None``: no neighbour lift.
        neighbour_weight: hybrid mode: each candidate's fused score gains this share of its
            best neighbour's (an answer next to a strong match is likely).
        group_fields: dot paths into the value naming the group a memory belongs to, the first
            one present wins (an imported session writes ``metadata.session_id`` when it has an
            id and ``metadata.session``, its date or number, always; remember writes
            ``metadata.thread_id`` always). Empty: no group lift.
        group_weight: hybrid mode: each candidate gains this share of the mean fused score of
            the best ``group_top`` candidates of its group (evidence that clusters in one
            session outranks a lone match elsewhere).
        group_top: how many of a group's best candidates make its score.
        time_weight: hybrid mode: a candidate dated inside a period the query names ("in May
            2023", "on 21.01.2024", "last week"; :mod:`.when`), or up to ``time_after_days``
            after it (what happened is often told later), gains this much. 0: no time lift.
        time_after_days: see ``time_weight``.
        time_languages: the languages time is read in (dateparser's codes); ``()``: none.
        time_field: the dot path of a candidate's date in its value (a memory's ``created_at``,
            which an import sets to the session's date), else the store's ``created_at``.
        speaker_weight: hybrid mode: a candidate whose speaker (``speaker_field``) the query
            names gains this much ("What did Kevin watch?" lifts what Kevin said). 0: none.
        speaker_field: the dot path of who said a memory (remember writes ``metadata.speaker``).
        lifts: hybrid mode: more additions to the fused score (:class:`Lift`), applied in order
            after the neighbour, group and time lifts.

    The weights were chosen on LoCoMo conversations 0-4 and checked on 5-9
    (``docs/benchmarks.md``); the lifts are in the fused score's units.
    """

    mode: RetrievalMode = "hybrid"
    dense_weight: float = 0.5
    candidates: int = 50
    background_df: float | None = 0.2
    background_min_docs: int = 20
    neighbours_field: str | None = "metadata.neighbours"
    neighbour_weight: float = 0.45
    group_fields: tuple[str, ...] = ("metadata.session_id", "metadata.session", "metadata.thread_id")
    group_weight: float = 0.5
    group_top: int = 3
    time_weight: float = 1.4
    time_after_days: float = 30.0
    time_languages: tuple[str, ...] = ("en",)
    time_field: str = "created_at"
    speaker_weight: float = 0.6
    speaker_field: str = "metadata.speaker"
    lifts: tuple[Lift[Any], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigurationError(f"mode must be one of {', '.join(_MODES)}; got {self.mode!r}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ConfigurationError(f"dense_weight must be from 0 to 1, got {self.dense_weight!r}")
        if self.neighbour_weight < 0 or (self.neighbour_weight and not self.neighbours_field):
            raise ConfigurationError(
                f"neighbour_weight must be 0 or more and needs neighbours_field, got "
                f"neighbour_weight={self.neighbour_weight!r}, neighbours_field={self.neighbours_field!r}"
            )
        if isinstance(self.group_fields, str) or not all(  # type: ignore[unreachable]
            isinstance(f, str) and f for f in self.group_fields
        ):
            raise ConfigurationError(
                "group_fields must be a tuple of dot paths such as ('metadata.session',), "
                f"got {self.group_fields!r}"
            )
        object.__setattr__(self, "group_fields", tuple(self.group_fields))
        if self.group_weight < 0 or (self.group_weight and not self.group_fields):
            raise ConfigurationError(
                f"group_weight must be 0 or more and needs group_fields, got "
                f"group_weight={self.group_weight!r}, group_fields={self.group_fields!r}"
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
        for name in ("time_weight", "time_after_days", "speaker_weight"):
            number = getattr(self, name)
            if (
                isinstance(number, bool)
                or not isinstance(number, int | float)
                or not (math.isfinite(number) and number >= 0)
            ):
                raise ConfigurationError(f"{name} must be a finite number of 0 or more, got {number!r}")
        if self.speaker_weight and not (isinstance(self.speaker_field, str) and self.speaker_field):
            raise ConfigurationError(
                f"speaker_weight needs speaker_field, a dot path such as 'metadata.speaker'; "
                f"got {self.speaker_field!r}"
            )
        object.__setattr__(self, "time_languages", check_languages(self.time_languages))
        check_background_df(self.background_df)


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
    lifts: tuple[tuple[str, float], ...] = ()
    """What each lift added to the fused score (``("neighbours", 0.3)``, ``("group", 0.1)``, then
    each of :attr:`RetrievalConfig.lifts` by its class name), in the order applied; empty outside
    hybrid mode."""


def lift_name(lift: object) -> str:
    """A lift's name in :attr:`RetrievedItem.lifts`: its ``name`` attribute, else its class name."""
    name = getattr(lift, "name", None)
    return name if isinstance(name, str) and name else type(lift).__name__


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


def _doc(item: Item) -> _DocKey:
    return (tuple(item.namespace), item.key)


class HybridRetriever:
    """Hybrid search over any ``BaseStore``: the store's candidate lists, fused (see the module docs).

    Args:
        store: the store to search.
        config: how to search (:class:`RetrievalConfig`; its defaults are recall's).

    It holds no state beyond these two: every search asks the store.
    """

    def __init__(self, store: BaseStore, config: RetrievalConfig | None = None) -> None:
        self.store = store
        self.config = config or RetrievalConfig()

    def __repr__(self) -> str:
        return f"HybridRetriever(store={type(self.store).__name__}, config={self.config!r})"

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
            self.store, self.search_steps(namespace_prefix, query, limit=limit, filter=filter)
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
            self.store, self.search_steps(namespace_prefix, query, limit=limit, filter=filter)
        )
        return result

    def search_steps(
        self,
        namespace_prefix: Sequence[str],
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
    ) -> StoreSteps[list[RetrievedItem]]:
        """:meth:`search` as store steps, to run inside other steps (:mod:`.store_steps`): one request."""
        prefixes = [_prefix(namespace_prefix)]
        (result,) = yield from self.batch_steps(prefixes, query, limit=limit, filter=filter)
        return result

    def batch_steps(
        self,
        prefixes: Sequence[Namespace],
        query: str,
        *,
        limit: int = 10,
        filter: dict[str, Any] | None = None,
    ) -> StoreSteps[list[list[RetrievedItem]]]:
        """One search of ``query`` under each prefix, as one candidate request; one list per prefix."""
        found: list[list[RetrievedItem]] = yield from fused_search_steps(
            self.config, prefixes, query, limit=limit, filter=filter
        )
        return found


def fused_search_steps(
    config: RetrievalConfig,
    prefixes: Sequence[Namespace],
    query: str,
    *,
    limit: int = 10,
    filter: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> StoreSteps[list[list[RetrievedItem]]]:
    """Hybrid search of ``query`` under each prefix as store steps: one :class:`CandidateSearch`
    request for all of them, each answer fused; one list per prefix, best first. ``now``: the time
    a relative time in the query ("last week") is measured from (default: now)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigurationError(f"limit must be a whole number of at least 1, got {limit!r}")
    queries = tuple(
        CandidateQuery(
            _prefix(prefix),
            query,
            max(config.candidates, limit),
            filter,
            config.background_df,
            config.background_min_docs,
        )
        for prefix in prefixes
    )
    if not queries:
        return []
    found: list[Candidates] = yield CandidateSearch(queries)
    periods = (
        question_periods(query, now or utc_now(), config.time_languages)
        if config.time_weight and config.mode == "hybrid"
        else ()
    )
    fusion = _Fusion(config, periods)
    return [fusion.fused(query, candidates, limit) for candidates in found]


class _Fusion:
    """The fusion and the lifts of one :class:`RetrievalConfig` (no I/O)."""

    def __init__(self, config: RetrievalConfig, periods: Sequence[Period] = ()) -> None:
        self.config = config
        self.periods = tuple(periods)

    def fused(self, query: str, candidates: Candidates, limit: int) -> list[RetrievedItem]:
        mode = self.config.mode
        items: dict[_DocKey, SearchItem] = {}
        dense: dict[_DocKey, float] = {}
        lexical: dict[_DocKey, float] = {}
        if mode != "lexical":
            for item in candidates.dense:
                doc = _doc(item)
                items.setdefault(doc, item)
                dense[doc] = float(item.score) if item.score is not None else 0.0
        if mode != "dense":
            for item in candidates.lexical:
                doc = _doc(item)
                items.setdefault(doc, item)
                lexical[doc] = float(item.score) if item.score is not None else 0.0
        if not items:  # a store without a search index: its listing, unranked, scored 0
            return [
                RetrievedItem(tuple(i.namespace), i.key, i.value, 0.0) for i in candidates.unscored[:limit]
            ]
        lifts: dict[_DocKey, list[tuple[str, float]]] = {}
        fused = self.fuse(dense, lexical, items, query, lifts)
        order = sorted(fused, key=lambda d: (-fused[d], d))[:limit]
        return [
            RetrievedItem(
                namespace=doc[0],
                key=doc[1],
                value=items[doc].value,
                score=fused[doc],
                dense_score=dense.get(doc),
                lexical_score=lexical.get(doc),
                lifts=tuple(lifts.get(doc, ())),
            )
            for doc in order
        ]

    def fuse(
        self,
        dense: dict[_DocKey, float],
        lexical: dict[_DocKey, float],
        items: Mapping[_DocKey, Item],
        query: str,
        lifts: dict[_DocKey, list[tuple[str, float]]] | None = None,
    ) -> dict[_DocKey, float]:
        """The fused score of each candidate; what each lift added goes into ``lifts`` when given."""
        config = self.config
        if config.mode == "dense":
            return dense
        if config.mode == "lexical":
            return lexical
        union = list(items)
        if not lexical:  # no lexical index, or no shared word: the dense signal alone, lifted
            scores = zscores(dense, union)
        elif not dense:
            scores = zscores(lexical, union)
        else:
            w = config.dense_weight
            scores = [
                w * d + (1.0 - w) * x
                for d, x in zip(zscores(dense, union), zscores(lexical, union), strict=True)
            ]

        def noted(name: str, lifted: list[float]) -> list[float]:
            if lifts is not None:
                for doc, before, after in zip(union, scores, lifted, strict=True):
                    if after != before:
                        lifts.setdefault(doc, []).append((name, after - before))
            return lifted

        if config.neighbour_weight:
            scores = noted("neighbours", self._with_neighbours(union, scores, items))
        if config.group_weight:
            scores = noted("group", self._with_groups(union, scores, items))
        if self.periods:
            dates = [dated(items[doc], config.time_field) for doc in union]
            scores = noted(
                "time", time_lift(dates, scores, self.periods, config.time_weight, config.time_after_days)
            )
        if config.speaker_weight:
            speakers = [field_text(items[doc].value, config.speaker_field) for doc in union]
            scores = noted("speaker", SPEAKERS.lift(query, speakers, scores, config.speaker_weight))
        for lift in config.lifts:
            features = [lift.feature(items[doc]) for doc in union]
            scores = noted(lift_name(lift), _lifted(lift, query, features, scores))
        return dict(zip(union, scores, strict=True))

    def _with_neighbours(
        self, union: Sequence[_DocKey], scores: list[float], items: Mapping[_DocKey, Item]
    ) -> list[float]:
        """Add ``neighbour_weight`` times the best fused score among each candidate's neighbours."""
        field = self.config.neighbours_field
        assert field is not None  # checked by RetrievalConfig
        floor = min(scores, default=0.0)
        weight = self.config.neighbour_weight
        get = dict(zip(union, scores, strict=True)).get
        out: list[float] = []
        for doc, score in zip(union, scores, strict=True):
            best = floor
            for key in field_text(items[doc].value, field).split():
                near = get((doc[0], key), floor)
                if near > best:
                    best = near
            out.append(score + weight * best)
        return out

    def _group_of(self, doc: _DocKey, value: Mapping[str, Any]) -> tuple[Namespace, str] | None:
        for path in self.config.group_fields:
            group = field_text(value, path)
            if group:
                return (doc[0], f"{path}={group}")
        return None

    def _with_groups(
        self, union: Sequence[_DocKey], scores: list[float], items: Mapping[_DocKey, Item]
    ) -> list[float]:
        """Add ``group_weight`` times the mean of its group's best ``group_top`` fused scores."""
        groups = [self._group_of(doc, items[doc].value) for doc in union]
        members: dict[tuple[Namespace, str], list[float]] = {}
        for score, group in zip(scores, groups, strict=True):
            if group is not None:
                members.setdefault(group, []).append(score)
        top = self.config.group_top
        strength = {g: sum(sorted(found, reverse=True)[:top]) / top for g, found in members.items()}
        weight = self.config.group_weight
        return [
            score if group is None else score + weight * strength[group]
            for score, group in zip(scores, groups, strict=True)
        ]
