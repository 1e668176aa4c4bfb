"""The requests the store's steps yield: engine calls and embedding requests, with no I/O.

Each engine (:mod:`._edge`, :mod:`._remote`) carries out an :data:`EngineCall`
in its own API and nothing more; the store carries out the two embedding
requests with its ``Embeddings``. The docstring of each call names what it
returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langmem_plugin.core.lexical import SparseVector
from langmem_plugin.stores.qdrant._filters import Filter

__all__ = [
    "Call",
    "Count",
    "Delete",
    "EmbedDocuments",
    "EmbedQueries",
    "EngineCall",
    "Facet",
    "Fused",
    "Fusion",
    "Hit",
    "Nearest",
    "OrderBy",
    "Payload",
    "PointData",
    "Query",
    "QueryBatch",
    "Retrieve",
    "Scroll",
    "SearchMode",
    "SetPayload",
    "SetPayloads",
    "Upsert",
    "WriteCall",
    "Writes",
]

SearchMode = Literal["hybrid", "dense", "lexical"]
Fusion = Literal["rrf", "dbsf"]

Payload = bool | tuple[str, ...]
"""What a read returns of each point's payload: all of it (True), nothing (False or ``()``: hits carry
an empty payload), or these top-level fields (each one the point has)."""

# --------------------------------------------------------------------------- what the calls carry


@dataclass(frozen=True, slots=True)
class PointData:
    """A point to upsert: its payload, its texts' dense vectors (None: none) and its BM25 vector."""

    id: str
    payload: dict[str, Any]
    dense: list[list[float]] | None
    sparse: SparseVector | None


@dataclass(frozen=True, slots=True)
class Hit:
    """A point read back: its id, payload, (for scored queries) score and (for :class:`OrderBy`
    queries) the value it was ordered by."""

    id: str
    payload: dict[str, Any]
    score: float | None = None
    order: float | None = None


@dataclass(frozen=True, slots=True)
class OrderBy:
    """Order by a numeric payload field, descending."""

    key: str


@dataclass(frozen=True, slots=True)
class Nearest:
    """Nearest neighbours on one named vector (dense: a list of vectors, compared with MaxSim)."""

    using: str
    vector: list[list[float]] | SparseVector
    score_threshold: float | None = None


@dataclass(frozen=True, slots=True)
class Fused:
    """Several :class:`Nearest` prefetches, each of ``prefetch_limit``, fused by the engine.

    ``fusion``: ``"rrf"`` (reciprocal rank fusion with ``k``) or ``"dbsf"``
    (distribution-based score fusion: each prefetch's scores normalised by
    their mean ± 3 standard deviations, then summed; ``k`` unused).
    """

    parts: tuple[Nearest, ...]
    prefetch_limit: int
    k: int
    fusion: Fusion


# --------------------------------------------------------------------------- engine calls


@dataclass(frozen=True, slots=True)
class Retrieve:
    """Points by id (missing ids are left out) → ``list[Hit]``, in no set order."""

    ids: tuple[str, ...]
    with_payload: Payload = True


@dataclass(frozen=True, slots=True)
class Upsert:
    """Insert or replace points → ``None``."""

    points: tuple[PointData, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete points by id → ``None``."""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SetPayload:
    """Merge ``payload`` into the payload of the points → ``None``."""

    ids: tuple[str, ...]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SetPayloads:
    """Merge each ``(id, payload)`` into its point's payload, in one round trip → ``None``.

    What a put that changes no indexed text writes instead of an :class:`Upsert`: the
    point keeps its vectors, so nothing is embedded again.
    """

    updates: tuple[tuple[str, dict[str, Any]], ...]
    changes: tuple[tuple[dict[str, Any], dict[str, Any]] | None, ...] = ()
    """For each update (when given), only what changed: the value's top-level keys that changed and
    the other payload fields that changed, or ``None`` when the whole payload must be written (a
    key left the value). An engine that merges into a nested key writes just these (an access
    count: a few bytes instead of the whole value)."""


@dataclass(frozen=True, slots=True)
class Query:
    """The first ``limit`` points matching ``filter`` in the order of ``rank``, after the first
    ``offset`` (which the engine skips without returning them) → ``list[Hit]``."""

    filter: Filter
    rank: OrderBy | Nearest | Fused
    limit: int
    with_payload: Payload = True
    offset: int = 0


@dataclass(frozen=True, slots=True)
class QueryBatch:
    """Several :class:`Query` calls in one round trip → ``list[list[Hit]]``, in order."""

    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True)
class Scroll:
    """A page of points matching ``filter``, in id order, from id ``offset`` on.

    → ``(list[Hit], next_offset)``; ``next_offset`` is None after the last page. ``with_payload``
    may name fields inside the value by a dot path (``"value.kind"``): the hits carry the value
    with those keys alone (``{}`` when it has none of them).
    """

    filter: Filter
    limit: int
    offset: str | None = None
    with_payload: Payload = True


@dataclass(frozen=True, slots=True)
class Count:
    """How many points match ``filter`` → ``int``; ``exact=False``: the engine's estimate from its
    payload indexes (exact for one indexed match, such as a namespace prefix alone)."""

    filter: Filter
    exact: bool = True


@dataclass(frozen=True, slots=True)
class Facet:
    """Distinct values of a keyword field among points matching ``filter`` → ``list[str]``."""

    key: str
    filter: Filter
    limit: int


# --------------------------------------------------------------------------- embedding requests


@dataclass(frozen=True, slots=True)
class EmbedDocuments:
    """Embed texts as documents → ``list[list[float]]`` (done by the store, not the engine)."""

    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EmbedQueries:
    """Embed texts as queries → ``list[list[float]]`` (done by the store, not the engine)."""

    texts: tuple[str, ...]


WriteCall = Upsert | Delete | SetPayload | SetPayloads
"""An engine call that writes."""


@dataclass(frozen=True, slots=True)
class Writes:
    """The writes of one batch, applied whole or not at all → ``None``.

    Everything that can fail before a write (validation, reads, embeddings) is done before
    this call is made. The embedded engine journals the calls before the first of them when
    there is more than one engine update, so that a process killed part-way (or an engine
    error) is completed before anything else reads the store (:mod:`._journal`); a server
    receives them as one request.
    """

    calls: tuple[WriteCall, ...]


EngineCall = (
    Retrieve
    | Upsert
    | Delete
    | SetPayload
    | SetPayloads
    | Writes
    | Query
    | QueryBatch
    | Scroll
    | Facet
    | Count
)
Call = EngineCall | EmbedDocuments | EmbedQueries
