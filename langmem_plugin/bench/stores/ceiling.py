"""The engine's ceiling in ``bench stores``: Qdrant Edge alone, on the items an embedded store writes.

:func:`engine_ceiling` loads the first points of the load, laid out as an embedded QdrantStore lays
them out, into a fresh shard configured as the store's, and times the ``qdrant_edge.Point``
conversion and the update apart; none of the package's store code runs.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langmem_plugin.bench.stores.data import DIMS, StoresData

__all__ = ["engine_ceiling"]

_CEILING_POINTS = 20_000


@dataclass
class _RawPoint:
    """One point as the engine takes it, before conversion: id, vectors and payload."""

    id: uuid.UUID
    dense: list[float]
    sparse: tuple[list[int], list[float]] | None
    payload: dict[str, Any]


def _ns_token(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False, separators=(",", ":"))


def _raw_points(data: StoresData, n: int) -> list[_RawPoint]:
    """The first ``n`` points of the load, laid out as an embedded store lays them out.

    A point has the item's vector (``dense``), its text's BM25 terms (``bm25``) and a
    payload with the namespace, its prefixes, the key, the value and the timestamps.
    """
    from langmem_plugin.core.lexical import BM25Encoder

    encoder = BM25Encoder()
    now_us = int(time.time() * 1e6)
    points: list[_RawPoint] = []
    for op in data.puts[:n]:
        value = dict(op.value or {})
        ns = tuple(op.namespace)
        text = str(value.get("text", ""))
        terms = encoder.encode_document(text)
        payload = {
            "ns": _ns_token(ns),
            "ns_prefix": [_ns_token(ns[:i]) for i in range(1, len(ns) + 1)],
            "key": op.key,
            "value": value,
            "created_us": now_us,
            "updated_us": now_us,
            "expires_us": None,
            "ttl": None,
            "indexed": 1,
        }
        sparse = (list(terms.indices), list(terms.values)) if terms.indices else None
        point_id = uuid.uuid5(uuid.NAMESPACE_URL, json.dumps([list(ns), op.key]))
        points.append(_RawPoint(point_id, data.embeddings.vectors[text], sparse, payload))
    return points


def _ceiling_shard(path: Path) -> Any:
    """A fresh Qdrant Edge shard configured as an embedded QdrantStore's: cosine dense vectors with
    int8 quantization and HNSW (m 16, ef_construct 64), BM25 terms with IDF, the payload indexes of
    namespace and time; no index builds while loading."""
    import qdrant_edge as qe

    config = qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=DIMS, distance=qe.Distance.Cosine)},
        sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=64, full_scan_threshold=10_000),
        quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, always_ram=True),
    )
    shard = qe.EdgeShard.create(str(path), config)
    for name, schema in (
        ("ns_prefix", qe.KeywordIndexParams(is_tenant=True, enable_hnsw=False)),
        ("ns", qe.KeywordIndexParams(enable_hnsw=False)),
        ("updated_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
        ("expires_us", qe.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
        ("indexed", qe.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False)),
    ):
        shard.update(qe.UpdateOperation.create_field_index(name, schema))
    return shard


def engine_ceiling(data: StoresData, workdir: Path) -> tuple[float, float, float]:
    """Points/s of Qdrant Edge alone on the load's first points, and µs per point of conversion
    (``qdrant_edge.Point``) and of the update, in batches of 500 as the bench writes them."""
    import qdrant_edge as qe

    points = _raw_points(data, _CEILING_POINTS)
    shard = _ceiling_shard(workdir / "ceiling")
    convert = update = 0.0
    try:
        for i in range(0, len(points), 500):
            start = time.perf_counter()
            batch = []
            for p in points[i : i + 500]:
                vectors: dict[str, Any] = {"dense": p.dense}
                if p.sparse is not None:
                    vectors["bm25"] = qe.SparseVector(*p.sparse)
                batch.append(qe.Point(p.id, vectors, p.payload))
            middle = time.perf_counter()
            shard.update(qe.UpdateOperation.upsert_points(batch))
            convert += middle - start
            update += time.perf_counter() - middle
    finally:
        shard.close()
    n = max(len(points), 1)
    return n / (convert + update), convert / n * 1e6, update / n * 1e6
