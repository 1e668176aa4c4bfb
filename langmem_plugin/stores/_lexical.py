"""BM25 beside any ``BaseStore``'s own search: hybrid candidates from a store that has no lexical index.

LangGraph's ``InMemoryStore`` and ``PostgresStore`` (the stores ``langgraph dev`` and LangGraph
Platform give a graph) search by their vector index only, so a recall on them misses what only
the words of a question find (names, dates, rare terms: the BM25 half of recall). A
:class:`LexicalStore` wraps such a store: every operation goes to the wrapped store unchanged, so
the items stay where the runtime (and LangGraph Studio's store view) reads them, and it answers
recall's candidate lists (:class:`~langmem_plugin.core.candidates.CandidateStore`) with the
store's own search as the dense list and an in-process BM25 index as the lexical one.

The BM25 index is a cache, never a source of truth:

- one index per searched namespace prefix, built on the first search under it by listing the
  prefix's items, kept current by every write that goes through the wrapper, and rebuilt after
  ``refresh_seconds`` (writes that did not go through it: another process, Studio);
- every lexical candidate is read again from the store before it is answered: an item deleted or
  changed elsewhere is answered as the store has it now, or not at all, so a forgotten item is
  never recalled from the cache.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.core.candidates import CandidateQuery
>>> store = LexicalStore(InMemoryStore())
>>> store.put(("u",), "a", {"content": "Caroline adopted a cat named Luna"})
>>> store.put(("u",), "b", {"content": "We went hiking in the Alps"})
>>> (found,) = store.search_candidates([CandidateQuery(("u",), "Luna")])
>>> [item.key for item in found.lexical]
['a']
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from langmem_plugin.core.candidates import CandidateQuery, Candidates, without_background
from langmem_plugin.core.kept_vectors import keep_vectors
from langmem_plugin.core.lexical import BM25Index
from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import compile_filter

__all__ = ["LexicalStore", "lexical_view"]

#: Items listed per request when an index is built.
LIST_PAGE = 1000
#: Lexical candidates read again per query, as a multiple of the query's limit (some may be gone).
_CONFIRM_FACTOR = 2

_Key = tuple[tuple[str, ...], str]
_Steps = Generator[list[Op], list[Result], Any]


@dataclass
class _PrefixIndex:
    """The BM25 index of the items under one namespace prefix, and the items themselves."""

    bm25: BM25Index
    items: dict[_Key, Item] = field(default_factory=dict)
    built: float = field(default_factory=time.monotonic)


class LexicalStore(BaseStore):
    """``store`` with a BM25 index beside its own search (see the module docstring).

    Args:
        store: any LangGraph ``BaseStore``; every read and write goes to it unchanged.
        fields: the value paths BM25 reads (``"metadata.session"``, ``"content"``, ...);
            ``None``: every text in the value.
        refresh_seconds: an index older than this is built again from the store at its next
            search, to see writes that did not go through this wrapper.
    """

    def __init__(
        self, store: BaseStore, *, fields: Sequence[str] | None = None, refresh_seconds: float = 60.0
    ) -> None:
        self._strong: BaseStore | None = store
        self._weak: weakref.ref[BaseStore] | None = None
        self.fields = list(fields) if fields else None
        self.refresh_seconds = refresh_seconds
        self._indexes: dict[tuple[str, ...], _PrefixIndex] = {}
        self._lock = threading.Lock()

    @property
    def store(self) -> BaseStore:
        """The wrapped store."""
        store = self._strong if self._weak is None else self._weak()
        if store is None:
            raise ConfigurationError("the store this LexicalStore wrapped is gone (garbage-collected)")
        return store

    # -- what the wrapped store says about itself ----------------------------------------------

    @property
    def index_config(self) -> Any:
        """The wrapped store's ``index_config`` (its vector index), ``None`` without one."""
        return getattr(self.store, "index_config", None)

    @property
    def supports_ttl(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.store, "supports_ttl", False))

    @property
    def ttl_config(self) -> Any:  # type: ignore[override]
        return getattr(self.store, "ttl_config", None)

    def __repr__(self) -> str:
        return f"LexicalStore({self.store!r})"

    # -- BaseStore ---------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """The wrapped store's ``batch``; the BM25 indexes see its writes."""
        ops = list(ops)
        results = self.store.batch(keep_vectors(self.store, ops))
        self._observe(ops)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """The wrapped store's ``abatch``; the BM25 indexes see its writes."""
        ops = list(ops)
        results = await self.store.abatch(keep_vectors(self.store, ops))
        self._observe(ops)
        return results

    # -- CandidateStore ----------------------------------------------------------------------------

    def search_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """The wrapped store's search as the dense list, BM25 as the lexical one, per query."""
        return [run_steps(self._candidates(q), self.store.batch) for q in queries]

    async def asearch_candidates(self, queries: Sequence[CandidateQuery]) -> list[Candidates]:
        """:meth:`search_candidates`, from async code."""
        return [await arun_steps(self._candidates(q), self.store.abatch) for q in queries]

    # -- the indexes -------------------------------------------------------------------------------

    def _text(self, value: Mapping[str, Any]) -> str:
        if self.fields is None:
            return "\n".join(_leaves(value))
        return "\n".join(text for path in self.fields for text in get_text_at_path(value, path))

    def _observe(self, ops: Sequence[Op]) -> None:
        puts = [op for op in ops if isinstance(op, PutOp)]
        if not puts:
            return
        now = datetime.now(UTC)
        with self._lock:
            for prefix, index in self._indexes.items():
                for op in puts:
                    if tuple(op.namespace[: len(prefix)]) == prefix:
                        self._apply(index, op, now)

    def _apply(self, index: _PrefixIndex, op: PutOp, now: datetime) -> None:
        key = (tuple(op.namespace), op.key)
        known = index.items.get(key)
        if op.value is None:
            index.items.pop(key, None)
            index.bm25.remove(key)
            return
        if op.index is False and known is None:
            return  # an item kept out of search is kept out of BM25 too
        created = known.created_at if known is not None else now
        index.items[key] = Item(
            value=dict(op.value), key=op.key, namespace=op.namespace, created_at=created, updated_at=now
        )
        if op.index is not False:
            index.bm25.add(key, self._text(op.value))

    def _prefix_index(self, prefix: tuple[str, ...]) -> Generator[list[Op], list[Result], _PrefixIndex]:
        with self._lock:
            index = self._indexes.get(prefix)
        if index is not None and time.monotonic() - index.built < self.refresh_seconds:
            return index
        fresh = _PrefixIndex(BM25Index())
        offset = 0
        while True:
            (listed,) = yield [SearchOp(prefix, None, LIST_PAGE, offset, None)]
            page = cast(list[SearchItem], listed)
            for item in page:
                key = (tuple(item.namespace), item.key)
                fresh.items[key] = item
                fresh.bm25.add(key, self._text(item.value))
            if len(page) < LIST_PAGE:
                break
            offset += len(page)
        with self._lock:
            self._indexes[prefix] = fresh
        return fresh

    def _candidates(self, q: CandidateQuery) -> _Steps:
        prefix = tuple(q.namespace_prefix)
        index = yield from self._prefix_index(prefix)
        match = compile_filter(q.filter) if q.filter else None
        with self._lock:
            keys = [k for k, item in index.items.items() if match(item.value)] if match else None
            dense_query = without_background(
                q.query,
                index.bm25.encoder,
                index.bm25.doc_freq,
                len(index.items),
                q.background_df,
                q.background_min_docs,
            )
            top = index.bm25.top(q.query, q.limit * _CONFIRM_FACTOR, keys)
        ranked = cast(list[_Key], sorted(top, key=lambda k: -top[k]))
        dense_page, *fresh = yield [
            SearchOp(prefix, q.filter, q.limit, 0, dense_query),
            *(GetOp(ns, key) for ns, key in ranked),
        ]
        page = cast(list[SearchItem], dense_page)
        lexical = self._confirmed(index, q, ranked, cast(list[Item | None], fresh), match)
        dense = [item for item in page if item.score is not None]
        unscored = [] if dense or lexical else list(page)
        return Candidates(dense, lexical[: q.limit], dense_query, lexical_index=True, unscored=unscored)

    def _confirmed(
        self,
        index: _PrefixIndex,
        q: CandidateQuery,
        ranked: list[_Key],
        fresh: Sequence[Item | None],
        match: Callable[[Any], bool] | None,
    ) -> list[SearchItem]:
        """The ranked keys as the store has them now, rescored: the gone and the changed updated."""
        now = datetime.now(UTC)
        live: dict[_Key, Item] = {}
        with self._lock:
            for key, item in zip(ranked, fresh, strict=True):
                if item is None:
                    self._apply(index, PutOp(key[0], key[1], None), now)
                    continue
                if index.items.get(key) is None or index.items[key].value != item.value:
                    index.items[key] = item
                    index.bm25.add(key, self._text(item.value))
                if match is None or match(item.value):
                    live[key] = item
            scores = index.bm25.scores(q.query, live) if live else {}
        out = [
            SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, scores[key])
            for key, item in live.items()
            if scores.get(key)
        ]
        out.sort(key=lambda hit: -(hit.score or 0.0))
        return out


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)


_views: weakref.WeakKeyDictionary[BaseStore, LexicalStore] = weakref.WeakKeyDictionary()
_views_lock = threading.Lock()


def lexical_view(store: BaseStore, *, fields: Sequence[str] | None = None) -> BaseStore:
    """``store`` itself when it answers candidate lists; else its one :class:`LexicalStore`.

    The same wrapper for the same store object every time (it holds the BM25 indexes), so every
    surface that finds this store in a run shares them.
    """
    from langmem_plugin.core.candidates import CandidateStore

    if isinstance(store, CandidateStore):
        return store
    with _views_lock:
        view = _views.get(store)
        if view is None:
            # the cache must not keep the store alive: the wrapper holds it weakly, and goes with it
            view = _views[store] = LexicalStore(store, fields=fields)
            view._strong, view._weak = None, weakref.ref(store)
        return view
