"""The steps of one search op: engine queries, the exact filter re-checked, stable pages.

A search without a query lists newest ``updated_us`` first; with a query it
ranks by the engine's score (dense, BM25 or both fused), then lists the items
that have no search vector after the scored ones, newest first, with score
None. Ties are broken by namespace and key, and :func:`_fetch` makes sure a
whole group of tied hits is read, so pages stay stable whatever their size.

A listing deep enough (:data:`_LIGHT_FROM`) is read light (:func:`_listing`):
the order from ids and ``updated_us`` alone, then the page's payloads by id,
so a page deep in a big namespace does not read every payload above it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langgraph.store.base import SearchItem, SearchOp

from langmem_plugin.core.steps import Steps
from langmem_plugin.stores._common import Condition, parse_filter
from langmem_plugin.stores.qdrant._calls import (
    Call,
    Count,
    Fused,
    Hit,
    Nearest,
    OrderBy,
    Payload,
    Query,
    QueryBatch,
    Retrieve,
)
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._filters import Filter, Match, Range, live, native
from langmem_plugin.stores.qdrant._layout import DENSE, SPARSE, search_item_of, tiebreak

__all__ = ["fetch_ranked_batch", "search"]

_ALL = 1_000_000  # "every match" for a query whose filter already bounds the result

# A listing reads light (:func:`_listing`) once offset + limit reaches this. Measured at 100k items
# written in batches of ten: from here on the light read is as fast or faster, and the pages above
# it, the ones most read, keep their one call (one round trip to a server).
_LIGHT_FROM = 1_000


def search(
    config: BatchConfig, op: SearchOp, now_us: int, dense_query: list[float] | None
) -> Steps[Call, tuple[list[SearchItem], list[Hit]]]:
    """The page of results of ``op``, and the hits they came from (for a TTL refresh)."""
    conditions = parse_filter(op.filter)
    # Expiry is checked here rather than by the engine: a range condition on every
    # candidate costs a vector search more than re-checking the few hits it returns.
    base = Filter(live(now_us, op.namespace_prefix).must[:-1]).and_(*native(conditions))

    def check(hit: Hit) -> bool:
        if int(hit.payload["expires_us"]) <= now_us:
            return False
        value = hit.payload["value"]
        return all(c.matches(value) for c in conditions)

    limit, offset = max(op.limit, 0), max(op.offset, 0)
    need = offset + limit
    if not op.query:
        if need >= _LIGHT_FROM:
            window = yield from _listing(base, conditions, now_us, offset, need)
        else:
            hits, _ = yield from _fetch(
                lambda n: Query(base, OrderBy("updated_us"), n), need, check, _updated, _tied(base)
            )
            hits.sort(key=lambda h: (-_updated(h), *tiebreak(h.payload)))
            window = hits[offset:need]
        return [search_item_of(h.payload, None) for h in window], window

    rank = _rank(config, op.query, dense_query)
    scored: list[Hit] = []
    exhausted = True
    if rank is not None:
        scored, exhausted = yield from _fetch(
            lambda n: Query(base, _with_candidates(rank, n), n), need, check, _score
        )
        scored.sort(key=lambda h: (-_score(h), *tiebreak(h.payload)))
    unscored: list[Hit] = []
    if exhausted and len(scored) < need:
        # Items that have no search vector (index=False, or no text) come after the scored ones,
        # newest first, with score None — as LangGraph's InMemoryStore lists them.
        rest, _ = yield from _fetch(
            lambda n: Query(base.and_(Match("indexed", 0)), OrderBy("updated_us"), n),
            need - len(scored),
            check,
            _updated,
            _tied(base.and_(Match("indexed", 0))),
        )
        rest.sort(key=lambda h: (-_updated(h), *tiebreak(h.payload)))
        unscored = rest
    ranked: list[tuple[Hit, float | None]] = [(h, h.score) for h in scored] + [(h, None) for h in unscored]
    page = ranked[offset:need]
    return [search_item_of(h.payload, s) for h, s in page], [h for h, _ in page]


def _listing(
    base: Filter, conditions: list[Condition], now_us: int, offset: int, need: int
) -> Steps[Call, list[Hit]]:
    """The hits of the page ``offset:need`` of a listing (no query), with their whole payloads.

    The engine gives the order as ids and ``updated_us`` only, checking expiry itself (which costs
    an order-by query nothing). Without a filter it skips the hits above the page itself
    (:func:`_span_at`); with one, every hit above the page is read with its value, to re-check
    the filter (:func:`_fetch`). Either way the items tied on ``updated_us`` with the page's first
    and last ones are then ordered by namespace and key, and the page's payloads read by id
    (:func:`_page_of`).
    """
    live = base.and_(Range("expires_us", gt=float(now_us)))
    if not conditions:
        span, start = yield from _span_at(live, offset, need)
        return (yield from _page_of(span, start, offset, need))

    def check(hit: Hit) -> bool:
        return all(c.matches(hit.payload["value"]) for c in conditions)

    hits, _ = yield from _fetch(
        lambda n: Query(live, OrderBy("updated_us"), n, with_payload=("value",)),
        need,
        check,
        _updated,
        _tied(live, ("value",)),
    )
    if offset >= len(hits):
        return []
    hits.sort(key=_updated, reverse=True)  # groups of ties together, each ordered by _page_of
    end = min(need, len(hits))
    start, stop = offset, end
    while start > 0 and _updated(hits[start - 1]) == _updated(hits[offset]):
        start -= 1
    while stop < len(hits) and _updated(hits[stop]) == _updated(hits[end - 1]):
        stop += 1
    return (yield from _page_of(hits[start:stop], start, offset, need))


def _span_at(live: Filter, offset: int, need: int) -> Steps[Call, tuple[list[Hit], int]]:
    """The hits of the listing's places ``offset:need`` and those tied with the first or last of
    them, in no set order, and the place of the first of them all (ids and ``updated_us`` only).

    The engine skips the first ``offset`` hits; the tied hits above the page are found by asking
    for the whole group of the page's first ``updated_us``, and its place by counting the newer
    hits.
    """
    page: list[Hit] = yield Query(
        live, OrderBy("updated_us"), need - offset, with_payload=False, offset=offset
    )
    if not page:
        return [], offset
    first, last = _updated(page[0]), _updated(page[-1])
    tied = _tied(live, False)
    groups: list[list[Hit]] = yield QueryBatch((tied(first),) if first == last else (tied(first), tied(last)))
    newer: int = yield Count(live.and_(Range("updated_us", gt=first)))
    between = [h for h in page if last < _updated(h) < first]
    return [h for group in groups for h in group] + between, newer


def _page_of(span: list[Hit], start: int, offset: int, need: int) -> Steps[Call, list[Hit]]:
    """The hits of places ``offset:need`` with their whole payloads, from ``span``: the hits of
    places ``start`` on, ordered by ``updated_us`` but not yet by namespace and key among ties.

    Read by id in one call when the ties add little to the page, else the tied hits' namespaces
    and keys first, then the page. A hit deleted meanwhile is left out.
    """
    if not span:
        return []
    updated = {h.id: _updated(h) for h in span}
    twice = len(updated) > 2 * (need - offset)
    read: list[Hit] = yield Retrieve(tuple(updated), with_payload=("ns", "key") if twice else True)
    read.sort(key=lambda h: (-updated[h.id], *tiebreak(h.payload)))
    page = read[max(offset - start, 0) : max(need - start, 0)]
    if not twice:
        return page
    full: list[Hit] = yield Retrieve(tuple(h.id for h in page))
    by_id = {h.id: h for h in full}
    return [by_id[h.id] for h in page if h.id in by_id]


def fetch_ranked_batch(
    wanted: Sequence[tuple[Filter, Nearest, int, Callable[[Hit], bool]]],
) -> Steps[Call, list[list[Hit]]]:
    """For each ``(base, rank, need, check)``: the best ``need`` hits by ``rank`` among points matching
    ``base`` that pass ``check``.

    One :class:`QueryBatch` per round: one round trip when every list is filled at once, another
    only for the lists whose hits failed their ``check`` (each asks for twice as many). Unlike a
    search page, ties at the cut are not completed (no page follows).
    """
    out: list[list[Hit]] = [[] for _ in wanted]
    fetch = {i: need for i, (_, _, need, _) in enumerate(wanted) if need > 0}
    while fetch:
        order = list(fetch)
        calls = tuple(Query(wanted[i][0], wanted[i][1], fetch[i]) for i in order)
        pages: list[list[Hit]] = yield QueryBatch(calls)
        for i, hits in zip(order, pages, strict=True):
            _, _, need, check = wanted[i]
            kept = [h for h in hits if check(h)]
            if len(kept) >= need or len(hits) < fetch[i]:
                out[i] = kept[:need]
                del fetch[i]
            else:
                fetch[i] *= 2
    return out


def _fetch(
    make: Callable[[int], Query],
    need: int,
    check: Callable[[Hit], bool],
    primary: Callable[[Hit], float],
    tied: Callable[[float], Query] | None = None,
) -> Steps[Call, tuple[list[Hit], bool]]:
    """Fetch hits in the engine's order until ``need`` of them pass ``check`` (the exact filter).

    Also makes sure the group of hits tied with the ``need``-th one on
    ``primary`` is complete, so that sorting ties by namespace and key gives the
    same order whatever the page size: pagination stays stable. ``tied(value)``,
    when given, queries that whole group at once (items written by one batch
    share their timestamp); otherwise the fetch grows until the group ends.
    Returns the hits that pass and whether the engine had no more.
    """
    if need <= 0:
        return [], False
    fetch = need + 1
    while True:
        hits: list[Hit] = yield make(fetch)
        kept = [h for h in hits if check(h)]
        if len(hits) < fetch:
            return kept, True
        if len(kept) >= need:
            boundary = primary(kept[need - 1])
            if primary(hits[-1]) != boundary:
                return kept, False
            if tied is not None:
                group: list[Hit] = yield tied(boundary)
                above = [h for h in kept if primary(h) != boundary]  # all better: the engine's order
                return above + [h for h in group if check(h)], False
        fetch *= 2


def _tied(base: Filter, with_payload: Payload = True) -> Callable[[float], Query]:
    def tied(updated: float) -> Query:
        group = base.and_(Range("updated_us", gte=updated, lte=updated))
        return Query(group, OrderBy("updated_us"), _ALL, with_payload)

    return tied


def _updated(hit: Hit) -> float:
    """The ``updated_us`` of a hit: the value an order-by query gave, else its payload's."""
    return float(hit.order if hit.order is not None else hit.payload["updated_us"])


def _score(hit: Hit) -> float:
    return hit.score if hit.score is not None else float("-inf")


def _rank(config: BatchConfig, query: str, dense_query: list[float] | None) -> Nearest | Fused | None:
    threshold = config.score_threshold
    sparse = config.encoder.encode_query(query) if config.mode != "dense" or dense_query is None else None
    lexical = Nearest(SPARSE, sparse, threshold if dense_query is None else None) if sparse else None
    if dense_query is None:
        return lexical
    dense = Nearest(DENSE, [dense_query], threshold)
    if config.mode == "dense" or lexical is None:
        return dense
    return Fused((dense, lexical), config.candidates, config.rrf_k, config.fusion)


def _with_candidates(rank: Nearest | Fused, fetch: int) -> Nearest | Fused:
    if isinstance(rank, Fused):
        return Fused(rank.parts, max(rank.prefetch_limit, fetch), rank.k, rank.fusion)
    return rank
