"""Steps that write items: timestamps decided, texts embedded, then the writes as one call.

Used by a batch's puts (:mod:`._batch`) and by an import (:mod:`._maintenance`). Every
embedding is made before the first write: an embedder that raises leaves the store as it
was (deletes never run ahead of the puts of their batch), and the writes go to the engine
as one :class:`~._calls.Writes`, applied whole.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.store.base import PutOp

from langmem_plugin.core.steps import Steps
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import index_texts
from langmem_plugin.stores.qdrant._calls import (
    Call,
    Delete,
    EmbedDocuments,
    Hit,
    PointData,
    SetPayload,
    SetPayloads,
    Upsert,
    WriteCall,
    Writes,
)
from langmem_plugin.stores.qdrant._config import BatchConfig
from langmem_plugin.stores.qdrant._layout import NEVER_US, minutes_us, ns_fields

__all__ = ["Entry", "checked", "upsert", "write", "write_calls"]


def checked(config: BatchConfig, vector: Any) -> list[float]:
    """An embedding of the configured dimension, as a list."""
    if len(vector) != config.dims:
        raise ConfigurationError(
            f"the embeddings returned vectors of {len(vector)} dimensions but the IndexConfig says "
            f"dims={config.dims}. Fix: set 'dims' to the embedder's dimension."
        )
    return vector if isinstance(vector, list) else [float(x) for x in vector]


@dataclass(frozen=True)
class Entry:
    """An item to write, with its timestamps decided."""

    pid: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    index: Literal[False] | list[str] | None
    created_us: int
    updated_us: int
    ttl: float | None
    expires_us: int


def write(
    config: BatchConfig,
    puts: Iterable[tuple[str, PutOp, dict[str, Any] | None]],
    existing: Mapping[str, Hit],
    now_us: int,
    *,
    before: Sequence[SetPayload] = (),
) -> Steps[Call, None]:
    """Apply a batch's final puts ``(point id, op, validated value)`` and the ``before`` payload
    updates (TTL refreshes of what the batch read) as one :class:`Writes`, after every embedding.

    An item that exists (``existing``, read before the batch's writes) keeps its ``created_us``.
    """
    deletes: list[str] = []
    entries: list[Entry] = []
    for pid, op, value in puts:
        if value is None:
            deletes.append(pid)
            continue
        old = existing.get(pid)
        ttl = float(op.ttl) if op.ttl is not None else None
        entries.append(
            Entry(
                pid=pid,
                namespace=tuple(op.namespace),
                key=op.key,
                value=value,
                index=op.index,
                created_us=int(old.payload["created_us"]) if old is not None else now_us,
                updated_us=now_us,
                ttl=ttl,
                expires_us=now_us + minutes_us(ttl) if ttl is not None else NEVER_US,
            )
        )
    calls: list[WriteCall] = list(before)
    if deletes:
        calls.append(Delete(tuple(deletes)))
    calls += yield from write_calls(config, entries, existing)
    if calls:
        yield Writes(tuple(calls))


def upsert(
    config: BatchConfig, entries: Sequence[Entry], existing: Mapping[str, Hit] | None = None
) -> Steps[Call, None]:
    """Embed the entries' texts and write their points, as one :class:`Writes` (see :func:`write_calls`)."""
    calls = yield from write_calls(config, entries, existing)
    if calls:
        yield Writes(tuple(calls))


def write_calls(
    config: BatchConfig, entries: Sequence[Entry], existing: Mapping[str, Hit] | None = None
) -> Steps[Call, list[WriteCall]]:
    """Embed the entries' texts (each distinct text once): the calls that write their points.

    An entry whose point exists (in ``existing``) and is indexed by the same texts (its
    ``index_hash``) keeps its vectors: only its payload is written (one :class:`SetPayloads`
    for all such entries), so a write that changes bookkeeping alone embeds nothing. Nothing
    is written here: the steps yield only the embedding request.
    """
    calls: list[WriteCall] = []
    if not entries:
        return calls
    indexed = [_indexed_by(config, e) for e in entries]
    kept: list[tuple[str, dict[str, Any]]] = []
    changes: list[tuple[dict[str, Any], dict[str, Any]] | None] = []
    fresh: list[tuple[Entry, list[str], list[str], str]] = []
    for e, (texts, words, digest) in zip(entries, indexed, strict=True):
        old = existing.get(e.pid) if existing is not None else None
        if old is not None and old.payload.get("index_hash") == digest:
            kept.append((e.pid, _bookkeeping(e)))
            changes.append(_changed(old.payload, kept[-1][1]))
        else:
            fresh.append((e, texts, words, digest))
    if kept:
        calls.append(SetPayloads(tuple(kept), tuple(changes)))
    if not fresh:
        return calls
    dense_of: dict[str, list[float]] = {}
    if config.dims is not None:
        unique = sorted({t for _, texts, _, _ in fresh for t in texts})
        if unique:
            vectors: list[list[float]] = yield EmbedDocuments(tuple(unique))
            if len(vectors) != len(unique):
                raise ConfigurationError(
                    f"the embeddings returned {len(vectors)} vectors for {len(unique)} texts"
                )
            dense_of = dict(zip(unique, (checked(config, v) for v in vectors), strict=True))
    points: list[PointData] = []
    for e, texts, words, digest in fresh:
        token, prefixes = ns_fields(e.namespace)
        sparse = config.encoder.encode_document("\n".join(words)) if words else None
        dense = [dense_of[t] for t in texts] if config.dims is not None and texts else None
        payload = {
            "ns": token,
            "ns_prefix": prefixes,
            "key": e.key,
            **_bookkeeping(e),
            "indexed": int(bool(dense) if config.dims is not None else bool(sparse)),
            "index_hash": digest,
        }
        points.append(PointData(e.pid, payload, dense, sparse if sparse else None))
    calls.append(Upsert(tuple(points)))
    return calls


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """What ``new`` (a kept point's bookkeeping payload) changes in ``old``: the value's top-level keys
    and the other fields, or ``None`` when a key left the value (only a whole write removes it)."""
    before, after = old.get("value"), new["value"]
    if not isinstance(before, dict) or not before.keys() <= after.keys():
        return None
    value = {k: v for k, v in after.items() if k not in before or before[k] != v}
    other = {k: v for k, v in new.items() if k != "value" and (k not in old or old[k] != v)}
    return value, other


def _bookkeeping(e: Entry) -> dict[str, Any]:
    """The payload fields a put writes whether or not its texts changed."""
    return {
        "value": e.value,
        "created_us": e.created_us,
        "updated_us": e.updated_us,
        "expires_us": e.expires_us,
        "ttl": e.ttl,
    }


def _indexed_by(config: BatchConfig, e: Entry) -> tuple[list[str], list[str], str]:
    """The texts an entry is embedded by, the texts BM25 reads, and a hash of both.

    With lexical_fields, BM25 reads other fields than the embedded ones — of indexed items
    only, so that an item is either scored by both halves or listed unscored.
    """
    texts = _texts_for(config, e.index, e.value)
    words = index_texts(e.value, list(config.lexical_fields)) if config.lexical_fields and texts else texts
    digest = hashlib.blake2b(
        json.dumps([texts, words], ensure_ascii=False).encode(), digest_size=16
    ).hexdigest()
    return texts, words, digest


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [text for v in value.values() for text in _string_leaves(v)]
    if isinstance(value, list):
        return [text for v in value for text in _string_leaves(v)]
    return []


def _texts_for(
    config: BatchConfig, index: Literal[False] | list[str] | None, value: Mapping[str, Any]
) -> list[str]:
    """The texts an item is indexed by (empty: not indexed)."""
    if index is False:
        return []
    fields = list(index) if index is not None else config.fields
    if config.dims is None and fields is None:
        return _string_leaves(value)  # lexical only: the words, not the JSON keys
    return index_texts(value, fields)
