"""``store.json`` and ``shard/`` of an embedded store, read and checked before the engine opens them.

``store.json`` is a JSON object written whole (a temporary file, fsynced, then renamed over the
old one), so it is never seen half-written by this package. Anything else found there (an empty
file, a truncated one, text that is not JSON, a JSON array, another program's settings, a key
missing or of the wrong type) is a :class:`~langmem_plugin.errors.StoreFileError` that names the
file, what is wrong and the fix, and a format this version does not read is a
:class:`~langmem_plugin.errors.StoreFormatError`. The keys, all written by every format-2 store:

- ``format``: ``2`` (an int);
- ``dims``: the dense dimension, a positive int, or null (no dense vectors);
- ``fields``, ``lexical_fields``: lists of strings, or null;
- ``pending``: points written since the last index build, an int from 0;
- ``embedder`` (since it was recorded, so optional): a string, or null.

Pure but for reading the file; nothing is ever written here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langmem_plugin.errors import StoreFileError, StoreFormatError, shown
from langmem_plugin.stores.qdrant._layout import FORMAT

__all__ = ["check_shard", "read_meta"]

# The keys every format-2 store.json holds, each with what it must be.
_REQUIRED = {
    "dims": "a positive whole number or null",
    "fields": "a list of strings or null",
    "lexical_fields": "a list of strings or null",
    "pending": "a whole number from 0",
}
_OPTIONAL = {"embedder": "a string or null"}
_JSON_TYPES = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _valid(name: str, value: Any) -> bool:
    whole = isinstance(value, int) and not isinstance(value, bool)
    if name == "dims":
        return value is None or (whole and value > 0)
    if name in ("fields", "lexical_fields"):
        return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if name == "pending":
        return whole and value >= 0
    return value is None or isinstance(value, str)  # embedder


def _fix(meta_path: Path, expected: Mapping[str, Any]) -> str:
    return (
        f"Fix: restore {meta_path.name} from a backup of the store; or, if the store was written "
        f"with the index config it is opened with now, write this into {meta_path}: "
        f"{json.dumps(dict(expected))} (nothing else in the directory needs to change)"
    )


def read_meta(meta_path: Path, expected: Mapping[str, Any]) -> dict[str, Any]:
    """The settings in ``meta_path``, checked.

    Args:
        meta_path: the store's ``store.json``.
        expected: what this open would write there (shown in the fix of a broken file).

    Raises:
        StoreFileError: the file cannot be read, or is not a format-2 ``store.json``.
        StoreFormatError: its ``format`` is another version's.
    """
    where = str(meta_path)
    try:
        raw = meta_path.read_bytes()
    except OSError as exc:
        raise StoreFileError(
            f"cannot read {meta_path} ({exc.strerror or exc}). Fix: make it a readable file (it holds "
            "the store's settings), or restore it from a backup of the store",
            path=where,
        ) from exc
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested past the parser
        what = "is empty" if not raw.strip() else f"is not JSON (it may be truncated: {exc})"
        raise StoreFileError(f"{meta_path} {what}. {_fix(meta_path, expected)}", path=where) from None
    if not isinstance(meta, dict):
        raise StoreFileError(
            f"{meta_path} holds a JSON {_JSON_TYPES.get(type(meta), 'value')} ({shown(meta)}), not the "
            f"object of settings a store writes. {_fix(meta_path, expected)}",
            path=where,
        )
    if "format" not in meta:
        raise StoreFileError(
            f"{meta_path} has no 'format' key (keys: {', '.join(sorted(map(str, meta))) or 'none'}): it "
            f"is not a store.json this package wrote (another program's file?). {_fix(meta_path, expected)}",
            path=where,
        )
    _check_format(meta_path, meta["format"], expected)
    missing = [name for name in _REQUIRED if name not in meta]
    if missing:
        raise StoreFileError(
            f"{meta_path} lacks {', '.join(map(repr, missing))}, which every format-{FORMAT} store.json "
            f"holds: it was cut or edited. {_fix(meta_path, expected)}",
            path=where,
        )
    for name, rule in {**_REQUIRED, **_OPTIONAL}.items():
        if name in meta and not _valid(name, meta[name]):
            raise StoreFileError(
                f"{meta_path} holds {name}={shown(meta[name])}, which must be {rule}. "
                f"{_fix(meta_path, expected)}",
                path=where,
            )
    return meta


def _check_format(meta_path: Path, found: Any, expected: Mapping[str, Any]) -> None:
    where = str(meta_path)
    if found == FORMAT and type(found) is int:
        return
    if found == 1 and type(found) is int:
        raise StoreFormatError(
            f"the store at {meta_path.parent} is in format 1 ({meta_path}; one multivector per item, "
            f"written by an earlier langmem-plugin); this version reads format {FORMAT} only. Fix: with the "
            "version that wrote it, export it (export_jsonl), then import the file into a new store "
            "here (import_jsonl): every item keeps its timestamps and TTL and is re-indexed.",
            path=where,
        )
    if type(found) is int and found > 0:
        raise StoreFormatError(
            f"the store at {meta_path.parent} has format {found} ({meta_path}); this version reads "
            f"format {FORMAT}. Fix: open it with the version that wrote it, or export it there "
            "(export_jsonl) and import the file here (import_jsonl).",
            path=where,
        )
    raise StoreFileError(
        f"{meta_path} holds format={shown(found)}, which is no format this package writes (a whole "
        f"number; this version's is {FORMAT}). {_fix(meta_path, expected)}",
        path=where,
    )


def check_shard(shard_dir: Path) -> None:
    """Refuse a ``shard/`` that is missing or holds no shard (the engine would make an empty one).

    Raises:
        StoreFileError: naming the directory and the fix.
    """
    if not shard_dir.is_dir():
        what = "is missing" if not shard_dir.exists() else "is not a directory"
    elif not (shard_dir / "edge_config.json").is_file():
        what = "holds no Qdrant Edge shard (no edge_config.json)"
    else:
        return
    raise StoreFileError(
        f"{shard_dir} {what}: the store's items live there ({shard_dir.parent / 'store.json'} holds "
        "only its settings). Fix: restore the directory from a backup of the store; to start over "
        f"instead, remove {shard_dir.parent} and open the store again, which creates an empty one.",
        path=str(shard_dir),
    )
