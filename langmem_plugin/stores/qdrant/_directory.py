"""An embedded store's directory: ``store.json`` written whole and checked, the shard loaded or created.

What :class:`~._edge.EdgeEngine` does to its files when it opens, before any engine call:
:func:`write_meta` (a temporary file, fsynced, renamed over the old one: never seen half
written), :func:`check_meta` (the recorded index config and embedder against this open's),
:func:`load_shard` (room checked first, the engine's refusal a
:class:`~langmem_plugin.errors.StoreFileError` naming the fix) and :func:`create_shard` (under
the :data:`CREATING` marker, removed last, so a creation cut short is redone by the next open:
:func:`undo_cut_creation`). Reading ``store.json`` is :mod:`._meta`'s; room is :mod:`._space`'s.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from langmem_plugin.errors import StoreConfigMismatchError, StoreError, StoreFileError
from langmem_plugin.stores._embedder import check_embedder
from langmem_plugin.stores.qdrant._edge_requests import CORE_INDEXES, shard_config
from langmem_plugin.stores.qdrant._meta import check_shard
from langmem_plugin.stores.qdrant._space import (
    MEMORY_FILE_SYSTEMS,
    RESERVE,
    file_system_type,
    free_bytes,
    full,
    is_full,
    require,
    shard_bytes,
)

__all__ = ["CREATING", "check_meta", "create_shard", "load_shard", "undo_cut_creation", "write_meta"]

#: A file that exists while a store is being created (a creation cut short leaves it behind).
CREATING = ".creating"


def write_meta(path: Path, meta: Mapping[str, Any], directory: Path | None = None) -> None:
    """Write ``meta`` as ``store.json`` of the store at ``path`` (into ``directory``; default
    ``path``), whole: a temporary file, fsynced, renamed over the old one.

    Raises:
        StoreFullError: the file system is full (the old file is left as it was).
        StoreError: another failure to write it.
    """
    meta_path = (directory or path) / "store.json"
    tmp = meta_path.with_suffix(".json.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(dict(meta)))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, meta_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_full(exc):
            raise full(path, free=free_bytes(path), needed=RESERVE, doing="write store.json") from exc
        raise StoreError(f"could not write {meta_path}: {exc}") from exc


def check_meta(
    path: Path, meta: Mapping[str, Any], given: Mapping[str, Any], embedder: str | None
) -> str | None:
    """``meta`` (read and checked by :func:`._meta.read_meta`) against this open's ``given`` index
    config (``dims``, ``fields``, ``lexical_fields``) and ``embedder``; the embedder it records.

    Raises:
        StoreConfigMismatchError: another index config (the message says how to move the items).
        EmbedderMismatchError: another known embedder made its vectors.
    """
    for name, now in given.items():
        then = meta[name]
        then = tuple(then) if isinstance(then, list) else then
        if then != now:
            shown_then = list(then) if isinstance(then, tuple) else then
            shown_now = list(now) if isinstance(now, tuple) else now
            raise StoreConfigMismatchError(
                f"the store at {path} was written with index {name}={shown_then!r} but is opened "
                f"with {name}={shown_now!r} (None: not set). Its vectors were computed from the first: "
                f"fix: open it with index {name}={shown_then!r}, or export it (export_jsonl) and import "
                "it into a new store with the new index config, which re-indexes every item."
            )
    return check_embedder(f"the store at {path}", meta.get("embedder"), embedder)


def load_shard(path: Path, dims: int | None, *, compact: bool = False) -> qe.EdgeShard:
    """Load the shard of the store at ``path`` with its optimizer settings (``compact``: uncapped).

    Raises:
        StoreFileError: ``shard/`` is missing, holds no shard, or the engine refuses its files.
        StoreFullError: too little room to load it (see :mod:`._space`).
    """
    shard_dir = path / "shard"
    check_shard(shard_dir)
    needed = RESERVE
    if file_system_type(path) in MEMORY_FILE_SYSTEMS:  # loading fills the files' holes
        needed += shard_bytes(shard_dir)[1]
    require(path, needed, "open the shard")
    try:
        return qe.EdgeShard.load(str(shard_dir), shard_config(dims, compact=compact))
    except Exception as exc:  # the engine's own error types
        if is_full(exc):
            raise full(path, free=free_bytes(path), needed=needed, doing="open the shard") from exc
        raise StoreFileError(
            f"the Qdrant Edge shard at {shard_dir} cannot be opened: {exc}. Its files are damaged or "
            "were not written by Qdrant Edge. Fix: restore the store's directory from a backup (a copy "
            "made while no process held it); store.json alone cannot rebuild the items.",
            path=str(shard_dir),
        ) from exc


def undo_cut_creation(path: Path) -> None:
    """Remove what a creation cut short made (its marker is there: no write was ever acknowledged)."""
    if (path / CREATING).exists():
        shutil.rmtree(path / "shard", ignore_errors=True)
        (path / "store.json").unlink(missing_ok=True)


def create_shard(path: Path, dims: int | None, write_settings: Callable[[], None]) -> qe.EdgeShard:
    """Create the shard (with its core payload indexes) and, by ``write_settings``, ``store.json``,
    under the :data:`CREATING` marker, removed last; a failure removes what was made."""
    marker = path / CREATING
    shard_dir = path / "shard"
    require(path, RESERVE, "create the store")
    shard: qe.EdgeShard | None = None
    try:
        marker.touch()
        try:
            shard = qe.EdgeShard.create(str(shard_dir), shard_config(dims))
            for name, schema in CORE_INDEXES:
                shard.update(qe.UpdateOperation.create_field_index(name, schema))
            shard.flush()
        except Exception as exc:  # the engine's own error types
            if is_full(exc):
                raise full(path, free=free_bytes(path), needed=RESERVE, doing="create the store") from exc
            raise StoreError(f"could not create a Qdrant Edge shard at {shard_dir}: {exc}") from exc
        write_settings()
        marker.unlink()
    except BaseException:
        if shard is not None:
            shard.close()
        shutil.rmtree(shard_dir, ignore_errors=True)
        (path / "store.json").unlink(missing_ok=True)
        marker.unlink(missing_ok=True)
        raise
    return shard
