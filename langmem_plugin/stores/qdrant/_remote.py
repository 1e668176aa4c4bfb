"""The remote engine: a Qdrant server or cluster through qdrant-client (or its local mode).

Each engine-neutral call becomes one qdrant-client method name and its keyword
arguments (:func:`_request`), then the sync client or the async client makes
the same request: the only difference between the two paths is an ``await``.
When no ``AsyncQdrantClient`` is given (qdrant-client's local mode cannot share
one between a sync and an async client), the async path runs the sync client in
the default executor.

qdrant-client's local mode (``location=":memory:"`` or ``path=``) scans in
Python — about a second per filtered search at 100k points — and ignores
payload indexes and is not thread-safe (the engine serialises its calls); it is
for experiments, not for load.

The point layout is the embedded engine's (:mod:`._layout`): an item with one
indexed text has the plain vector ``dense``, an item with several the MaxSim
multivector ``dense_multi``, and a dense query searches both and keeps the
better score (a ``max`` formula), so the score is the best text's cosine, as in
LangGraph's stores. Other clients may write to a server collection, so both are
always searched (the embedded engine skips the multivector while it holds no
multi-text item). A collection created by an earlier version (one MaxSim
multivector ``dense`` per point, format 1) is recognised by its vector config
and refused with a :class:`~langmem_plugin.errors.StoreConfigMismatchError`.

The embedder that made the vectors is recorded in the collection's metadata
(``{"langmem_plugin": {"embedder": ..., "dims": ...}}``, Qdrant 1.16+) and checked on
open as :mod:`langmem_plugin.stores._embedder` says; a collection that names none
gets one with the first vectors a known embedder writes (``update_collection``: a
client that only reads never writes the metadata).

The engine opens in ``QdrantStore.setup()`` (or on first use), not in the
store's constructor: a server may be slow or briefly away, and the constructor
should not wait on the network; the embedded engine opens at construction.

Every call is idempotent (points are written and deleted by id, payloads set to
values, reads are reads), so a call that fails in transport is retried
(:class:`Retries`): a connection refused or dropped before an answer, a connect
timeout, or a server answering 429, 502, 503 or 504 (overloaded, or a proxy in
front of a restarting node). A read timeout is not retried: the server may
still be working on the request, and piling the same request on it would not
help. Between attempts the engine waits with exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.runnables.config import run_in_executor
from qdrant_client import AsyncQdrantClient, QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from langmem_plugin.errors import (
    ConfigurationError,
    LangMemPluginError,
    StoreConfigMismatchError,
    StoreError,
)
from langmem_plugin.stores._embedder import check_embedder
from langmem_plugin.stores.qdrant._calls import (
    Count,
    Delete,
    EngineCall,
    Facet,
    Fused,
    Hit,
    Nearest,
    OrderBy,
    Payload,
    PointData,
    Query,
    QueryBatch,
    Retrieve,
    Scroll,
    SetPayload,
    SetPayloads,
    Upsert,
    WriteCall,
    Writes,
)
from langmem_plugin.stores.qdrant._filters import Filter, Match, MatchAny, Range
from langmem_plugin.stores.qdrant._layout import DENSE, DENSE_MULTI, SPARSE, FilterIndexType, dense_layout

__all__ = ["METADATA_KEY", "MIN_SERVER", "ClientEngine", "Retries", "is_local", "is_transient"]

#: The oldest Qdrant server QdrantStore works with.
MIN_SERVER = (1, 16)

#: The key of the collection's metadata where the store records its embedder and dims.
METADATA_KEY = "langmem_plugin"

_RETRIED_STATUS = frozenset({429, 502, 503, 504})


def is_transient(exc: BaseException) -> bool:
    """Whether a failed call may succeed if made again: no answer in transport, or an overloaded server."""
    if isinstance(exc, ResponseHandlingException):
        exc = exc.source
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in _RETRIED_STATUS
    if isinstance(exc, httpx.TimeoutException):
        return isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout)  # the request never left
    return isinstance(exc, httpx.TransportError | ConnectionError)


@dataclass(frozen=True)
class Retries:
    """How many times the remote engine makes a call again after a transient failure, and how it waits.

    The wait before retry ``n`` (1, 2, ...) is ``backoff_s * 2 ** (n - 1)``, at most ``max_backoff_s``,
    times a random factor in [0.5, 1) so that many clients do not retry in step.
    """

    retries: int = 2
    backoff_s: float = 0.25
    max_backoff_s: float = 4.0

    def delay(self, retry: int) -> float:
        wait = min(self.max_backoff_s, self.backoff_s * 2.0 ** (retry - 1))
        return float(wait * (0.5 + random.random() / 2))

    def again(self, exc: BaseException, retry: int) -> bool:
        """Whether to make the call a ``retry``-th time after it failed with ``exc``."""
        return retry <= self.retries and is_transient(exc)


def _writes(call: EngineCall) -> tuple[WriteCall, ...]:
    """The write calls ``call`` holds (itself for one that writes; none for a read)."""
    if isinstance(call, Writes):
        return call.calls
    return (call,) if isinstance(call, Upsert | Delete | SetPayload | SetPayloads) else ()


def is_local(client: QdrantClient) -> bool:
    """Whether ``client`` is qdrant-client's in-process local mode (not a server)."""
    from qdrant_client.local.qdrant_local import QdrantLocal

    return isinstance(getattr(client, "_client", None), QdrantLocal)


def _condition(c: Match | MatchAny | Range) -> models.FieldCondition:
    if isinstance(c, Match):
        return models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value))
    if isinstance(c, MatchAny):
        return models.FieldCondition(key=c.key, match=models.MatchAny(any=list(c.values)))
    return models.FieldCondition(key=c.key, range=models.Range(gt=c.gt, gte=c.gte, lt=c.lt, lte=c.lte))


def _filter(f: Filter) -> models.Filter | None:
    return models.Filter(must=[_condition(c) for c in f.must]) if f.must else None


def _sparse_query(n: Nearest) -> models.SparseVector:
    assert not isinstance(n.vector, list)
    return models.SparseVector(indices=list(n.vector.indices), values=list(n.vector.values))


# The better of a point's two dense scores (single-text vector, multi-text multivector); -2 when absent.
_BEST_TEXT = models.FormulaQuery(
    formula=models.MaxExpression(max=["$score[0]", "$score[1]"]),
    defaults={"$score[0]": -2.0, "$score[1]": -2.0},
)


def _hits(response: models.QueryResponse, scored: bool) -> list[Hit]:
    if scored:
        return [Hit(str(p.id), p.payload or {}, float(p.score)) for p in response.points]
    return [Hit(str(p.id), p.payload or {}, None, p.order_value) for p in response.points]


def _selector(with_payload: Payload) -> bool | list[str]:
    """qdrant-client's ``with_payload`` of a :data:`~._calls.Payload`: a list is an include selector."""
    return list(with_payload) if isinstance(with_payload, tuple) and with_payload else bool(with_payload)


def _integer_range() -> models.IntegerIndexParams:
    return models.IntegerIndexParams(
        type=models.IntegerIndexType.INTEGER, lookup=False, range=True, enable_hnsw=False
    )


def _page(result: tuple[list[models.Record], Any]) -> tuple[list[Hit], str | None]:
    records, next_offset = result
    hits = [Hit(str(r.id), r.payload or {}) for r in records]
    return hits, str(next_offset) if next_offset is not None else None


_FILTER_SCHEMAS: dict[str, Any] = {
    "keyword": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, enable_hnsw=False),
    "integer": models.IntegerIndexParams(
        type=models.IntegerIndexType.INTEGER, lookup=True, range=True, enable_hnsw=False
    ),
    "float": models.FloatIndexParams(type=models.FloatIndexType.FLOAT, enable_hnsw=False),
}


#: The payload indexes every collection of the store has (``_set_up`` adds those missing).
_CORE_SCHEMAS: tuple[tuple[str, Any], ...] = (
    ("ns_prefix", models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)),
    ("ns", models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, enable_hnsw=False)),
    ("updated_us", _integer_range()),
    ("expires_us", _integer_range()),
    (
        "indexed",
        models.IntegerIndexParams(
            type=models.IntegerIndexType.INTEGER, lookup=True, range=False, enable_hnsw=False
        ),
    ),
)

Request = tuple[str, dict[str, Any], Callable[[Any], Any]]


class ClientEngine:
    """One collection through qdrant-client.

    Args:
        client: the sync client (always needed: setup uses it).
        aclient: an async client on the same server, for native async; None: the sync client in an executor.
        collection: the collection's name (created with the store's layout when missing).
        dims: the dense dimension (None: no dense vector).
        owns: close the clients on :meth:`close`.
        filter_indexes: payload indexes for value keys.
        retries: what to do when a call fails in transport (:class:`Retries`).
        embedder: the ``embedder_id`` of the store's embedder (None: unknown, or no index).
    """

    def __init__(
        self,
        client: QdrantClient,
        *,
        aclient: AsyncQdrantClient | None,
        collection: str,
        dims: int | None,
        owns: bool,
        filter_indexes: tuple[tuple[str, FilterIndexType], ...] = (),
        retries: Retries | None = None,
        embedder: str | None = None,
    ) -> None:
        self.embedder = embedder
        #: The embedder the collection's metadata names (None: none recorded yet).
        self.recorded_embedder: str | None = None
        self.filter_indexes = filter_indexes
        self.retries = retries or Retries()
        self.client = client
        self.aclient = aclient
        self.collection = collection
        self.dims = dims
        self.owns = owns
        self.local = is_local(client)
        self._open = False
        # Local mode is plain Python objects, not safe for concurrent use: one call at a time.
        self._serial: threading.Lock | contextlib.nullcontext[None] = (
            threading.Lock() if self.local else contextlib.nullcontext()
        )

    @property
    def is_open(self) -> bool:
        return self._open

    def open(self) -> None:
        """Create the collection and its payload indexes when missing; check its layout when present.

        A transient failure makes the whole set-up again (each step checks before it creates).
        """
        if self._open:
            return
        retry = 0
        while True:
            try:
                self._set_up()
                break
            except LangMemPluginError:
                raise
            except Exception as exc:
                retry += 1
                if not self.retries.again(exc, retry):
                    raise StoreError(
                        f"could not set up the Qdrant collection {self.collection!r}: {exc}"
                    ) from exc
                time.sleep(self.retries.delay(retry))
        self._open = True

    def _set_up(self) -> None:
        if not self.local:
            self._check_version()
        exists = self.client.collection_exists(self.collection)
        if exists:
            self._check(self.client.get_collection(self.collection))
        else:
            self._create()
        if not self.local:  # local mode ignores payload indexes (and warns)
            # the store's own indexes too, on a collection made by someone else (a cluster's, created
            # with its shard_number and replication_factor before the store first opened it)
            existing = set(self.client.get_collection(self.collection).payload_schema)
            wanted = [*_CORE_SCHEMAS, *((name, _FILTER_SCHEMAS[kind]) for name, kind in self.filter_indexes)]
            for name, schema in wanted:
                if name not in existing:
                    self.client.create_payload_index(self.collection, name, field_schema=schema, wait=True)

    def _check_version(self) -> None:
        version = self.client.info().version
        numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
        if numbers < MIN_SERVER:
            raise ConfigurationError(
                f"the Qdrant server runs {version}; QdrantStore needs {'.'.join(map(str, MIN_SERVER))} or "
                "newer (named vectors with MaxSim multivectors, RRF with k). Fix: upgrade the server."
            )

    def _create(self) -> None:
        vectors: dict[str, models.VectorParams] = {}
        if self.dims is not None:
            vectors[DENSE] = models.VectorParams(size=self.dims, distance=models.Distance.COSINE)
            vectors[DENSE_MULTI] = models.VectorParams(
                size=self.dims,
                distance=models.Distance.COSINE,
                multivector_config=models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM),
            )
        self.client.create_collection(
            self.collection,
            vectors_config=vectors,
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata=self._metadata() if self.embedder is not None else None,
        )
        self.recorded_embedder = self.embedder  # the payload indexes: _set_up

    def _check(self, info: models.CollectionInfo) -> None:
        vectors = info.config.params.vectors
        params = vectors.get(DENSE) if isinstance(vectors, dict) else None
        size = params.size if params is not None else None
        if params is not None and params.multivector_config is not None:
            raise StoreConfigMismatchError(
                f"the Qdrant collection {self.collection!r} has the format-1 layout (one multivector "
                "'dense' per item, written by an earlier langmem-plugin); this version reads format 2 "
                "only. Fix: with the version that wrote it, export it (export_jsonl), then import the "
                "file into another collection here (import_jsonl); or point this store at another "
                "collection name."
            )
        if size != self.dims:
            raise ConfigurationError(
                f"the Qdrant collection {self.collection!r} has dense dims={size!r} but the store is "
                f"opened with dims={self.dims!r} (from the IndexConfig; None: no index). Fix: use the same "
                "IndexConfig, or another collection name."
            )
        ours = (info.config.metadata or {}).get(METADATA_KEY)
        recorded = ours.get("embedder") if isinstance(ours, dict) else None
        where = f"the Qdrant collection {self.collection!r}"
        self.recorded_embedder = check_embedder(where, recorded, self.embedder)

    def _metadata(self) -> dict[str, Any]:
        """The collection metadata that records this store's embedder and dims."""
        return {METADATA_KEY: {"embedder": self.embedder, "dims": self.dims}}

    def _records_embedder(self, call: EngineCall) -> bool:
        """Whether ``call`` writes the first vectors of a known embedder into a collection naming none."""
        return (
            self.recorded_embedder is None
            and self.embedder is not None
            and any(isinstance(c, Upsert) and any(p.dense for p in c.points) for c in _writes(call))
        )

    def _record_request(self) -> Request:
        kwargs = {"collection_name": self.collection, "metadata": self._metadata()}
        return "update_collection", kwargs, lambda _: None

    def _request(self, call: EngineCall) -> Request:
        name = self.collection
        if isinstance(call, Query):
            return self._query(call)
        if isinstance(call, QueryBatch):
            return self._query_batch(call)
        if isinstance(call, Retrieve):
            kwargs: dict[str, Any] = {
                "collection_name": name,
                "ids": list(call.ids),
                "with_payload": _selector(call.with_payload),
                "with_vectors": False,
            }
            return "retrieve", kwargs, lambda records: [Hit(str(r.id), r.payload or {}) for r in records]
        if isinstance(call, Upsert):
            kwargs = {"collection_name": name, "points": [self._point(p) for p in call.points], "wait": True}
            return "upsert", kwargs, lambda _: None
        if isinstance(call, Delete):
            selector = models.PointIdsList(points=list(call.ids))
            return (
                "delete",
                {"collection_name": name, "points_selector": selector, "wait": True},
                lambda _: None,
            )
        if isinstance(call, SetPayload):
            kwargs = {
                "collection_name": name,
                "payload": call.payload,
                "points": list(call.ids),
                "wait": True,
            }
            return "set_payload", kwargs, lambda _: None
        if isinstance(call, SetPayloads | Writes):  # one request: a client killed part-way sends all or none
            operations = [op for c in _writes(call) for op in self._operations(c)]
            kwargs = {"collection_name": name, "update_operations": operations, "wait": True}
            return "batch_update_points", kwargs, lambda _: None
        if isinstance(call, Scroll):
            kwargs = {
                "collection_name": name,
                "scroll_filter": _filter(call.filter),
                "limit": call.limit,
                "offset": call.offset,
                "with_payload": _selector(call.with_payload),
                "with_vectors": False,
            }
            return "scroll", kwargs, _page
        if isinstance(call, Facet):
            kwargs = {
                "collection_name": name,
                "key": call.key,
                "facet_filter": _filter(call.filter),
                "limit": call.limit,
                "exact": True,
            }
            return "facet", kwargs, lambda response: [str(h.value) for h in response.hits]
        if isinstance(call, Count):
            kwargs = {"collection_name": name, "count_filter": _filter(call.filter), "exact": call.exact}
            return "count", kwargs, lambda response: int(response.count)
        raise AssertionError(call)

    def _operations(self, call: WriteCall) -> list[models.UpdateOperation]:
        """A write call as the operations of one ``batch_update_points`` request."""
        if isinstance(call, Upsert):
            points = models.PointsList(points=[self._point(p) for p in call.points])
            return [models.UpsertOperation(upsert=points)]
        if isinstance(call, Delete):
            return [models.DeleteOperation(delete=models.PointIdsList(points=list(call.ids)))]
        if isinstance(call, SetPayload):
            update = models.SetPayload(payload=call.payload, points=list(call.ids))
            return [models.SetPayloadOperation(set_payload=update)]
        return [
            models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=[pid]))
            for pid, payload in call.updates
        ]

    def _point(self, p: PointData) -> models.PointStruct:
        vector = dense_layout(p.dense)
        if p.sparse is not None:
            vector[SPARSE] = models.SparseVector(indices=list(p.sparse.indices), values=list(p.sparse.values))
        return models.PointStruct(id=p.id, vector=vector, payload=p.payload)

    def _ranking(self, n: Nearest, limit: int, flt: models.Filter | None, filter_key: str) -> dict[str, Any]:
        """What a query (``filter_key="query_filter"``) or a prefetch (``"filter"``) needs to rank by n."""
        if n.using == SPARSE:
            return {
                "query": _sparse_query(n),
                "using": n.using,
                filter_key: flt,
                "limit": limit,
                "score_threshold": n.score_threshold,
            }
        assert isinstance(n.vector, list)
        parts = [
            models.Prefetch(query=n.vector[0], using=DENSE, filter=flt, limit=limit),
            models.Prefetch(query=n.vector, using=DENSE_MULTI, filter=flt, limit=limit),
        ]
        return {"prefetch": parts, "query": _BEST_TEXT, "limit": limit, "score_threshold": n.score_threshold}

    def _query(self, call: Query) -> Request:
        kwargs: dict[str, Any] = {
            "collection_name": self.collection,
            "limit": call.limit,
            "with_payload": _selector(call.with_payload),
            "with_vectors": False,
        }
        if call.offset:
            kwargs["offset"] = call.offset
        flt = _filter(call.filter)
        rank = call.rank
        if isinstance(rank, OrderBy):
            order = models.OrderBy(key=rank.key, direction=models.Direction.DESC)
            kwargs.update(query=models.OrderByQuery(order_by=order), query_filter=flt)
            return "query_points", kwargs, lambda r: _hits(r, scored=False)
        if isinstance(rank, Nearest):
            kwargs.update(self._ranking(rank, call.limit, flt, "query_filter"))
        else:
            assert isinstance(rank, Fused)
            kwargs.update(
                prefetch=[
                    models.Prefetch(**self._ranking(n, rank.prefetch_limit, flt, "filter"))
                    for n in rank.parts
                ],
                query=(
                    models.FusionQuery(fusion=models.Fusion.DBSF)
                    if rank.fusion == "dbsf"
                    else models.RrfQuery(rrf=models.Rrf(k=rank.k))
                ),
            )
        return "query_points", kwargs, lambda r: _hits(r, scored=True)

    def _query_batch(self, call: QueryBatch) -> Request:
        """The queries of ``call`` as one ``query_batch_points``, each built as :meth:`_query` builds it."""
        requests: list[models.QueryRequest] = []
        posts: list[Callable[[Any], Any]] = []
        for query in call.queries:
            _, kwargs, post = self._query(query)
            del kwargs["collection_name"]
            kwargs["filter"] = kwargs.pop("query_filter", None)
            kwargs["with_vector"] = kwargs.pop("with_vectors")
            requests.append(models.QueryRequest(**kwargs))
            posts.append(post)

        def each(responses: list[Any]) -> list[Any]:
            return [post(response) for post, response in zip(posts, responses, strict=True)]

        return "query_batch_points", {"collection_name": self.collection, "requests": requests}, each

    def execute(self, call: EngineCall) -> Any:
        """Carry out one call with the sync client, retrying transient failures."""
        result = self._run(self._request(call))
        if self._records_embedder(call):
            self._run(self._record_request())
            self.recorded_embedder = self.embedder
        return result

    async def aexecute(self, call: EngineCall) -> Any:
        """Carry out one call with the async client (or the sync one in an executor), retrying alike."""
        if self.aclient is None:
            return await run_in_executor(None, self.execute, call)
        result = await self._arun(self._request(call))
        if self._records_embedder(call):
            await self._arun(self._record_request())
            self.recorded_embedder = self.embedder
        return result

    def _run(self, request: Request) -> Any:
        """Make one request with the sync client, retrying transient failures."""
        method, kwargs, post = request
        retry = 0
        while True:
            try:
                with self._serial:
                    return post(getattr(self.client, method)(**kwargs))
            except Exception as exc:
                retry += 1
                self._failed(method, exc, retry)
                time.sleep(self.retries.delay(retry))

    async def _arun(self, request: Request) -> Any:
        """Make one request with the async client, retrying alike."""
        assert self.aclient is not None
        method, kwargs, post = request
        retry = 0
        while True:
            try:
                return post(await getattr(self.aclient, method)(**kwargs))
            except Exception as exc:
                retry += 1
                self._failed(method, exc, retry)
                await asyncio.sleep(self.retries.delay(retry))

    def _failed(self, method: str, exc: Exception, retry: int) -> None:
        """Return if the call is to be made again, else raise (qdrant-client's errors are translated here)."""
        if isinstance(exc, LangMemPluginError):
            raise exc
        if not self.retries.again(exc, retry):
            tries = f" after {retry} attempts" if retry > 1 else ""
            raise StoreError(f"Qdrant failed on {method} ({self.collection!r}){tries}: {exc}") from exc

    def count(self) -> int:
        """How many points the collection holds (expired ones included until swept)."""
        return int(self.client.count(self.collection, exact=True).count)

    def optimize(self) -> bool:
        """A server optimizes on its own; nothing to do."""
        return False

    @property
    def optimize_seconds(self) -> float:
        """Always 0.0: a server builds its indexes in the background."""
        return 0.0

    def describe(self) -> str:
        return f"collection={self.collection!r}"

    def close(self) -> None:
        """Close the clients the store created (idempotent)."""
        self._open = False
        if self.owns:
            self.client.close()

    async def aclose(self) -> None:
        self.close()
        if self.owns and self.aclient is not None:
            await self.aclient.close()
