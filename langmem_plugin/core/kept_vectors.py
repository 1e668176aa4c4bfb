"""Bookkeeping writes on LangGraph's ``InMemoryStore`` without embedding again.

A memory's bookkeeping (its access count, validity marks, provenance links, forget marks)
changes by putting the whole record again. ``QdrantStore`` and ``CheckpointerStore`` see
that the texts an item is indexed by did not change and keep its vectors. LangGraph's
``InMemoryStore`` embeds every put; but a put with ``index=False`` replaces the value and
leaves the item's vectors as they were. :func:`keep_vectors` sends such a put instead of
the caller's when the item is already indexed by exactly the texts the put would embed.
The memory services pass every batch through it (``services.store_steps``), so this is
transparent to them; any other store gets the ops unchanged.

>>> from langgraph.store.base import PutOp
>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.testing import FakeEmbeddings
>>> store = InMemoryStore(index={"dims": 8, "embed": FakeEmbeddings(8), "fields": ["content"]})
>>> store.put(("u",), "k", {"content": "green tea", "access_count": 0})
>>> bump = PutOp(("u",), "k", {"content": "green tea", "access_count": 1})
>>> [op.index for op in keep_vectors(store, [bump])]
[False]
>>> [op.index for op in keep_vectors(store, [PutOp(("u",), "k", {"content": "black tea"})])]
[None]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import Op, PutOp, get_text_at_path, tokenize_path
from langgraph.store.memory import InMemoryStore

__all__ = ["keep_vectors"]


def keep_vectors(store: object, ops: Sequence[Op]) -> Sequence[Op]:
    """``ops``, where a put to an ``InMemoryStore`` that changes no indexed text has ``index=False``.

    The store embeds nothing for such a put and keeps the item's vectors, which are those of
    the same texts. Any other store, or a put that changes a text, is left as it is.
    """
    if not isinstance(store, InMemoryStore) or not store.index_config:
        return ops
    data = getattr(store, "_data", None)
    vectors = getattr(store, "_vectors", None)
    if not isinstance(data, Mapping) or not isinstance(vectors, Mapping):
        return ops  # another InMemoryStore than the one this was written against: embed as asked
    config: Mapping[str, Any] = store.index_config
    out: list[Op] = []
    for op in ops:
        if isinstance(op, PutOp) and op.value is not None and op.index is not False:
            item = data.get(op.namespace, {}).get(op.key)
            stored = vectors.get(op.namespace, {}).get(op.key)
            if item is not None and stored:
                paths = (
                    config["__tokenized_fields"]
                    if op.index is None
                    else [(p, tokenize_path(p)) for p in op.index]
                )
                texts = _indexed_texts(op.value, paths)
                if texts and texts.keys() == stored.keys() and texts == _indexed_texts(item.value, paths):
                    op = op._replace(index=False)
        out.append(op)
    return out


def _indexed_texts(value: Mapping[str, Any], paths: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """The texts ``InMemoryStore`` embeds for ``value``, by the name it keeps each vector under."""
    texts: dict[str, str] = {}
    for path, field in paths:
        found = get_text_at_path(value, field)
        if len(found) == 1:
            texts[path] = found[0]
        else:
            texts.update((f"{path}.{i}", text) for i, text in enumerate(found))
    return texts
