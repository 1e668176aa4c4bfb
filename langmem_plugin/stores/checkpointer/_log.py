"""The store's log inside a checkpointer: thread names, records, checkpoints, and the I/O requests.

Pure: nothing here does I/O. The steps of the store (``_batch``, ``_history``)
yield the requests defined here; ``_store`` carries them out against the saver
and the embeddings.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

__all__ = [
    "CheckpointIds",
    "DeleteThread",
    "DropCheckpoints",
    "Embed",
    "EmbedQueries",
    "Exclusive",
    "GetCheckpoint",
    "ListCheckpoints",
    "PutCheckpoint",
    "Request",
    "StoreThreads",
    "Write",
    "checkpoint_request",
    "decode_vectors",
    "encode_vectors",
    "namespace_thread",
    "parse_time",
    "registry_thread",
    "rewrite_request",
    "thread_config",
]

_THREAD_PREFIX = "langmem_plugin.store"


# --------------------------------------------------------------------------- thread names


def namespace_thread(name: str, namespace: Sequence[str]) -> str:
    """The reserved checkpoint thread that holds ``namespace``'s log.

    >>> namespace_thread("store", ("users", "u1"))
    'langmem_plugin.store:store:["users","u1"]'
    """
    return f"{_THREAD_PREFIX}:{name}:" + json.dumps(
        list(namespace), ensure_ascii=False, separators=(",", ":")
    )


def threads_prefix(name: str) -> str:
    """What every thread of the store called ``name`` starts with (its namespaces' and its registry)."""
    return f"{_THREAD_PREFIX}:{name}:"


def thread_namespace(name: str, thread: str) -> tuple[str, ...] | None:
    """The namespace whose log ``thread`` holds (:func:`namespace_thread`), or None (another thread).

    >>> thread_namespace("store", 'langmem_plugin.store:store:["users","u1"]')
    ('users', 'u1')
    """
    prefix = threads_prefix(name)
    if not thread.startswith(prefix + "["):
        return None
    try:
        labels = json.loads(thread[len(prefix) :])
    except ValueError:
        return None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        return None
    return tuple(labels)


def registry_thread(name: str) -> str:
    """The reserved thread that lists every namespace thread of the store called ``name``."""
    return f"{_THREAD_PREFIX}:{name}:registry"


def thread_config(thread: str, checkpoint_id: str | None = None) -> RunnableConfig:
    """The config that addresses ``thread`` (checkpoint namespace ``""``), or one checkpoint of it."""
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


# --------------------------------------------------------------------------- record codec


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def encode_vectors(vectors: np.ndarray | None) -> bytes | None:
    return None if vectors is None else np.ascontiguousarray(vectors, dtype=np.float32).tobytes()


def decode_vectors(data: bytes | None, dims: int) -> np.ndarray | None:
    if not data:
        return None
    array = np.frombuffer(data, dtype=np.float32)
    if array.size % dims:
        return None
    return array.reshape(-1, dims)


@dataclass(slots=True)
class Write:
    """One record to write: the channel ``key`` of namespace ``namespace``'s next checkpoint."""

    namespace: tuple[str, ...]
    key: str
    record: dict[str, Any]
    vectors: np.ndarray | None = None
    value: dict[str, Any] | None = None  # a put's value, already a private copy


# --------------------------------------------------------------------------- I/O requests


@dataclass(frozen=True, slots=True)
class PutCheckpoint:
    """Write one checkpoint (``BaseCheckpointSaver.put``)."""

    config: RunnableConfig
    checkpoint: Any
    metadata: Any
    versions: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ListCheckpoints:
    """List a thread's checkpoints (``BaseCheckpointSaver.list``)."""

    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class GetCheckpoint:
    """Read one checkpoint (``BaseCheckpointSaver.get_tuple``); the answer may be None."""

    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class Embed:
    """Embed documents (``Embeddings.embed_documents``)."""

    texts: list[str]


@dataclass(frozen=True, slots=True)
class EmbedQueries:
    """Embed search queries (``Embeddings.embed_query`` each): every query of a batch in one request."""

    texts: list[str]


@dataclass(frozen=True, slots=True)
class CheckpointIds:
    """The ids of every checkpoint of a thread (``list[str]``), or ``[]`` when it holds just
    ``known`` of them (those the store has folded: nothing new); only inside an :class:`Exclusive`."""

    thread: str
    known: int = -1


@dataclass(frozen=True, slots=True)
class StoreThreads:
    """How many checkpoints each thread whose id starts with ``prefix`` holds (``dict[str, int]``),
    in one query; only inside an :class:`Exclusive`."""

    prefix: str


@dataclass(frozen=True, slots=True)
class DropCheckpoints:
    """Delete checkpoints of ``thread`` (``ids``), or all of them (``ids=None``), with their writes;
    only inside an :class:`Exclusive` (the saver has no call that deletes one checkpoint)."""

    thread: str
    ids: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DeleteThread:
    """Delete a thread, every checkpoint of it (``BaseCheckpointSaver.delete_thread``)."""

    thread: str


#: What an exclusive section yields: reads and writes of the log, nothing else (no embedding).
HeldRequest = PutCheckpoint | GetCheckpoint | CheckpointIds | ListCheckpoints | DropCheckpoints | StoreThreads


@dataclass(frozen=True, slots=True)
class Exclusive:
    """Run ``steps`` in one exclusive section of the checkpointer's storage (a SQLite write
    transaction): no other writer, in any process, lands between its reads and its writes,
    and its writes commit together or not at all. Answers what ``steps`` return.

    ``lock=False``: the same reads without the write lock (a catch-up before the section, so
    that the section itself has little left to read while every other writer waits).
    ``scrub=True``: once committed, the WAL is written back into the file and emptied (what a
    purge deleted leaves no copy there), if no reader holds it.
    """

    steps: Generator[HeldRequest, Any, Any]
    lock: bool = True
    scrub: bool = False


Request = PutCheckpoint | ListCheckpoints | GetCheckpoint | DeleteThread | Embed | EmbedQueries | Exclusive


def checkpoint_request(thread: str, channels: dict[str, Any], ts: str, parent: str | None) -> PutCheckpoint:
    """The request that writes a new checkpoint of ``thread`` holding only ``channels``.

    Each channel's version is the new checkpoint's id; ``parent`` is the thread's
    previous checkpoint, if any.
    """
    cid = str(uuid6(clock_seq=0))
    checkpoint = empty_checkpoint()
    checkpoint["id"] = cid
    checkpoint["ts"] = ts
    checkpoint["channel_values"] = channels
    checkpoint["channel_versions"] = dict.fromkeys(channels, cid)
    checkpoint["updated_channels"] = list(channels)
    config = thread_config(thread)
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent
    metadata = {
        "source": "update",
        "step": -1,
        "parents": {},
        "writer": "langmem_plugin.CheckpointerStore",
    }
    return PutCheckpoint(config, checkpoint, metadata, dict.fromkeys(channels, cid))


def rewrite_request(thread: str, saved: CheckpointTuple, channels: dict[str, Any]) -> PutCheckpoint:
    """The request that writes checkpoint ``saved`` of ``thread`` again, under its own id and parent,
    holding only ``channels`` (a saver's ``put`` of an existing id replaces that checkpoint)."""
    checkpoint = dict(saved.checkpoint)
    versions = saved.checkpoint["channel_versions"]
    checkpoint["channel_values"] = channels
    checkpoint["channel_versions"] = {k: versions[k] for k in channels}
    checkpoint["updated_channels"] = list(channels)
    parent = (saved.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    config = thread_config(thread, parent)
    new_versions = {k: versions[k] for k in channels}
    return PutCheckpoint(config, checkpoint, dict(saved.metadata or {}), new_versions)
