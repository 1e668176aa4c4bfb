"""The index configuration of a CheckpointerStore: its ``TypedDict`` and its validation. Pure: no I/O."""

from __future__ import annotations

import inspect
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig
from langgraph.store.base.embed import ensure_embeddings

from langmem_plugin.core.embeddings import resolve_embeddings
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores._common import lexical_fields_of
from langmem_plugin.stores.checkpointer._entries import Mode

__all__ = ["CheckpointerIndexConfig", "embeddings_of", "index_settings"]


class CheckpointerIndexConfig(IndexConfig, total=False):
    """``IndexConfig`` plus the search mode of a :class:`CheckpointerStore`."""

    mode: Mode
    """``"semantic"`` (default with ``embed``), ``"lexical"`` (BM25 over ``fields``) or ``"hybrid"``."""

    lexical_fields: list[str]
    """The fields whose text BM25 indexes, same syntax as ``fields`` (e.g. ``["metadata.context",
    "content"]``); default: ``fields``. Needs a BM25 index (mode ``"lexical"`` or ``"hybrid"``). It
    applies to every item not put with ``index=False`` (an item's own ``index=[...]`` chooses what is
    embedded, not what BM25 reads). The BM25 index is rebuilt on open, so changing it needs no re-index."""


def index_settings(index: Any) -> tuple[Mode, int | None, list[str] | None, list[str] | None]:
    """``(mode, dims, fields, lexical_fields)`` of an index config, validated."""
    if not index:
        return "lexical", None, None, None
    mode = index.get("mode", "semantic" if "embed" in index else "lexical")
    if mode not in ("semantic", "lexical", "hybrid"):
        raise ConfigurationError(f"index mode {mode!r} is not one of 'semantic', 'lexical', 'hybrid'")
    fields = index.get("fields")
    if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
        raise ConfigurationError(f"index fields must be a list of field paths, got {fields!r}")
    lexical_fields = _lexical_fields(index.get("lexical_fields"), mode)
    if mode == "lexical":
        return mode, None, list(fields) if fields else None, lexical_fields
    dims = index.get("dims")
    if "embed" not in index or not isinstance(dims, int) or dims <= 0:
        raise ConfigurationError(
            f"index mode {mode!r} needs 'embed' and a positive int 'dims', got {dict(index)!r}. "
            "Fix: e.g. {'dims': 384, 'embed': MiniLMEmbeddings()}, or {'mode': 'lexical'}."
        )
    return mode, dims, list(fields) if fields else None, lexical_fields


def _lexical_fields(value: Any, mode: Mode) -> list[str] | None:
    """The ``lexical_fields`` of an index config, validated (None: BM25 reads ``fields``)."""
    fields = lexical_fields_of(value)
    if fields is None:
        return None
    if mode == "semantic":
        raise ConfigurationError(
            f"index lexical_fields {list(fields)!r} needs a BM25 index, but the mode is 'semantic'. "
            'Fix: index={..., "mode": "hybrid"} (or "lexical"), or drop lexical_fields.'
        )
    return list(fields)


def embeddings_of(embed: Any) -> Embeddings:
    """The ``Embeddings`` an index config's ``embed`` names (an object, a function, ``"provider:model"``)."""
    if inspect.iscoroutinefunction(embed):  # an async function: LangGraph's wrapper runs it for both paths
        return ensure_embeddings(embed)
    return resolve_embeddings(embed)
