"""Qdrant Edge's side of the engine calls: shard settings, filters, points and query requests.

Pure translation, no I/O: the engine (:mod:`._edge`) builds its requests here
and runs them. The module docstring of :mod:`._edge` explains the settings.
"""

from __future__ import annotations

import uuid
from typing import Any

import qdrant_edge as qe

from langmem_plugin.stores.qdrant._calls import Fused, Nearest, OrderBy, Payload, PointData, Query
from langmem_plugin.stores.qdrant._filters import Filter, Match, MatchAny, Range
from langmem_plugin.stores.qdrant._layout import DENSE, DENSE_MULTI, SPARSE, FilterIndexType, dense_layout

__all__ = [
    "CORE_INDEXES",
    "FILTER_INDEX_SCHEMAS",
    "READ",
    "edge_filter",
    "edge_point",
    "payload_read",
    "query_request",
    "shard_config",
]

# HNSW: Qdrant's m; ef_construct 64 rather than 100 (build ≈ 1.5x faster; recall@10 measured 0.93-0.95
# on clustered vectors at 10k-100k over one namespace). A search whose filter selects fewer than
# _FULL_SCAN_POINTS points (one namespace among many: a user's memory in a shared store) scans them
# exactly instead: the main graph, built without per-namespace links, finds few of a small
# namespace's neighbours (recall@10 0.17 for 10k of 100k points).
_HNSW_M, _HNSW_EF_CONSTRUCT, _FULL_SCAN_POINTS = 16, 64, 20_000
# A segment gets an HNSW graph above this many points (the optimizer's threshold is in KB of vectors),
# and automatic builds merge segments up to _SEGMENT_POINTS (the bound on one pause).
_INDEX_MIN_POINTS = 1_000
_SEGMENT_POINTS = 20_000
_UNCAPPED_KB = 1 << 40

# Reads take the whole payload: leaving out the filter-only fields with PayloadSelector.Exclude measured
# slower (0.81 vs 0.67 ms for 11 hits, interleaved A/B), and an Include list no faster.
READ = True


def payload_read(with_payload: Payload) -> Any:
    """Edge's ``with_payload`` of a :data:`~._calls.Payload`: the whole payload (:data:`READ`),
    none, or these fields (a dot path reads a field inside one: ``"value.kind"``)."""
    if with_payload is True:
        return READ
    return list(with_payload) if with_payload else False


# Dense searches rescore with the original vectors: int8 alone left scores off by up to 0.005.
_EXACT_SCORES = qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=True))

_MAX = qe.Expression.Max([qe.Expression.Variable("$score[0]"), qe.Expression.Variable("$score[1]")])
_BEST_TEXT = qe.Formula(_MAX, defaults={"$score[0]": -2.0, "$score[1]": -2.0})

#: The payload indexes of every shard, created with it.
CORE_INDEXES: tuple[tuple[str, Any], ...] = (
    # Tenant-aware (points stored by namespace) without per-value HNSW subgraphs: the
    # namespace filter matches most points of a big namespace, where the main graph works.
    ("ns_prefix", qe.KeywordIndexParams(is_tenant=True, enable_hnsw=False)),
    ("ns", qe.KeywordIndexParams(enable_hnsw=False)),
    ("updated_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
    ("expires_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
    ("indexed", qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)),
)

#: The payload index of each ``filter_indexes`` type.
FILTER_INDEX_SCHEMAS: dict[
    FilterIndexType, qe.KeywordIndexParams | qe.IntegerIndexParams | qe.FloatIndexParams
] = {
    "keyword": qe.KeywordIndexParams(enable_hnsw=False),
    "integer": qe.IntegerIndexParams(lookup=True, range=True, enable_hnsw=False),
    "float": qe.FloatIndexParams(enable_hnsw=False),
}


def shard_config(dims: int | None, *, compact: bool = False) -> qe.EdgeConfig:
    """The shard's settings; ``compact``: segments uncapped, for the full :meth:`EdgeEngine.optimize`."""
    vectors = None
    if dims is not None:
        vectors = {
            DENSE: qe.EdgeVectorParams(size=dims, distance=qe.Distance.Cosine),
            DENSE_MULTI: qe.EdgeVectorParams(
                size=dims,
                distance=qe.Distance.Cosine,
                multivector_config=qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim),
            ),
        }
    point_kb = (dims or 1) * 4 / 1024
    optimizers = qe.EdgeOptimizersConfig(
        indexing_threshold=max(1, int(_INDEX_MIN_POINTS * point_kb)),
        max_segment_size=_UNCAPPED_KB if compact else max(1, int(_SEGMENT_POINTS * point_kb)),
        default_segment_number=1 if compact else None,
    )
    return qe.EdgeConfig(
        vectors=vectors,
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(
            m=_HNSW_M,
            ef_construct=_HNSW_EF_CONSTRUCT,
            full_scan_threshold=max(1, int(_FULL_SCAN_POINTS * point_kb)),
        ),
        quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, always_ram=True),
        optimizers=optimizers,
    )


def _condition(c: Match | MatchAny | Range) -> qe.FieldCondition:
    if isinstance(c, Match):
        return qe.FieldCondition(c.key, match=qe.MatchValue(c.value))
    if isinstance(c, MatchAny):
        return qe.FieldCondition(c.key, match=qe.MatchAny(list(c.values)))
    return qe.FieldCondition(c.key, range=qe.RangeFloat(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))


def edge_filter(f: Filter) -> qe.Filter | None:
    """An engine-neutral filter as Edge's (None: no condition)."""
    return qe.Filter(must=[_condition(c) for c in f.must]) if f.must else None


def edge_point(p: PointData) -> qe.Point:
    """A point to upsert as Edge's."""
    vector = dense_layout(p.dense)
    if p.sparse is not None:
        vector[SPARSE] = qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))
    # A uuid.UUID converts ≈ 10 µs faster than its string (the binding tries an integer first).
    return qe.Point(uuid.UUID(p.id), vector, p.payload)


def _sparse_query(n: Nearest) -> Any:
    assert not isinstance(n.vector, list)
    return qe.Query.Nearest(qe.SparseVector(list(n.vector.indices), list(n.vector.values)), using=SPARSE)


def _fusion(rank: Fused) -> Any:
    if rank.fusion == "dbsf":
        return qe.Fusion.Dbsf()
    return qe.Fusion.Rrf(k=rank.k)


def _dense_parts(n: Nearest, limit: int, flt: qe.Filter | None, has_multi: bool) -> list[qe.Prefetch] | None:
    """The two searches of a dense query while the store holds multi-text items, else None.

    Single-text items have the plain vector, multi-text items the MaxSim multivector; the
    caller fuses the two with :data:`_BEST_TEXT` (the better score; the missing one is -2).
    """
    if n.using == SPARSE or not has_multi:
        return None
    assert isinstance(n.vector, list)
    return [
        qe.Prefetch(
            limit=limit,
            query=qe.Query.Nearest(n.vector[0], using=DENSE),
            filter=flt,
            params=_EXACT_SCORES,
        ),
        qe.Prefetch(
            limit=limit,
            query=qe.Query.Nearest(n.vector, using=DENSE_MULTI),
            filter=flt,
            params=_EXACT_SCORES,
        ),
    ]


def _one_search(n: Nearest) -> Any:
    """The engine query of a :class:`Nearest` that is one search."""
    if n.using == SPARSE:
        return _sparse_query(n)
    assert isinstance(n.vector, list)
    return qe.Query.Nearest(n.vector[0], using=DENSE)


def _ranking(n: Nearest, limit: int, flt: qe.Filter | None, has_multi: bool) -> dict[str, Any]:
    """What a query or a prefetch needs to rank by ``n`` (the two take the same arguments)."""
    parts = _dense_parts(n, limit, flt, has_multi)
    if parts is not None:
        return {
            "limit": limit,
            "prefetches": parts,
            "query": _BEST_TEXT,
            "score_threshold": n.score_threshold,
        }
    return {
        "limit": limit,
        "query": _one_search(n),
        "filter": flt,
        "score_threshold": n.score_threshold,
        "params": _EXACT_SCORES if n.using != SPARSE else None,
    }


def query_request(call: Query, *, has_multi: bool, with_payload: Any) -> qe.QueryRequest:
    """A :class:`Query` as Edge's request; ``has_multi``: the shard holds multi-text items."""
    flt = edge_filter(call.filter)
    rank = call.rank
    offset = call.offset or None
    if isinstance(rank, OrderBy):
        return qe.QueryRequest(
            limit=call.limit,
            offset=offset,
            query=qe.OrderBy(rank.key, qe.Direction.Desc),
            filter=flt,
            with_payload=with_payload,
        )
    if isinstance(rank, Nearest):
        return qe.QueryRequest(
            **_ranking(rank, call.limit, flt, has_multi), offset=offset, with_payload=with_payload
        )
    prefetches = [qe.Prefetch(**_ranking(n, rank.prefetch_limit, flt, has_multi)) for n in rank.parts]
    return qe.QueryRequest(
        limit=call.limit,
        offset=offset,
        prefetches=prefetches,
        query=_fusion(rank),
        with_payload=with_payload,
    )
