"""The embedder is part of the store: the rule every durable store of ours follows, in one place.

A store records :func:`~langmem_plugin.core.embeddings.embedder_id` of its embedder beside
its dims — QdrantStore in ``store.json`` (embedded) or the collection's metadata (server),
PostgresMemoryStore in its table ``langmem_store_embedder`` — and:

- records it when the store is created, or, while it has none recorded (a store made before
  identities were recorded, or only ever written with an unknown embedder), with the first
  write of vectors by a known embedder;
- refuses to open with another known embedder (:func:`check_embedder`): an
  :class:`~langmem_plugin.errors.EmbedderMismatchError` naming both and the fix;
- records and checks nothing for an unknown embedder (``embedder_id`` is ``None``: a plain
  function, an ``Embeddings`` that names no model).

Pure: no I/O.
"""

from __future__ import annotations

from langmem_plugin.errors import EmbedderMismatchError

__all__ = ["check_embedder", "embedder_mismatch"]

_SPEC_PREFIXES = ("local:", "openai:")


def check_embedder(where: str, recorded: object, opened_with: str | None) -> str | None:
    """The embedder ``where`` has recorded (None: none), after checking ``opened_with`` against it.

    Args:
        where: the store, for the message (``"the store at ./memory"``).
        recorded: what the store holds (anything but a non-empty ``str`` counts as nothing recorded).
        opened_with: the ``embedder_id`` of the embedder the store is opened with (None: unknown).

    Raises:
        EmbedderMismatchError: both are known and differ.

    >>> check_embedder("the store at ./m", "local:all-MiniLM-L6-v2", None)
    'local:all-MiniLM-L6-v2'
    >>> check_embedder("the store at ./m", None, "local:all-MiniLM-L6-v2") is None
    True
    """
    known = recorded if isinstance(recorded, str) and recorded else None
    if known is not None and opened_with is not None and known != opened_with:
        raise embedder_mismatch(where, known, opened_with)
    return known


def embedder_mismatch(where: str, written_with: str, opened_with: str) -> EmbedderMismatchError:
    """The error of a store ``where``, written with ``written_with``, opened with ``opened_with``.

    >>> error = embedder_mismatch("the store at ./m", "local:all-MiniLM-L6-v2", "openai:x")
    >>> str(error).startswith("the store at ./m was written with the embedder 'local:all-MiniLM-L6-v2'")
    True
    >>> error.written_with, error.opened_with
    ('local:all-MiniLM-L6-v2', 'openai:x')
    """
    again = (
        f" ({written_with!r} is also its spec string: Memory(path=..., embeddings={written_with!r}), "
        f"memory_index({written_with!r}) or index={{'embed': {written_with!r}, ...}})"
        if written_with.startswith(_SPEC_PREFIXES)
        else ""
    )
    return EmbedderMismatchError(
        f"{where} was written with the embedder {written_with!r} but is opened with {opened_with!r}: "
        "vectors of two embedders are not comparable, so its searches would rank by noise. Fix: open "
        f"it with the embedder it was written with{again}; or, to change embedders, open it so and copy "
        "its items into a new store made with the new one (langmem_plugin.stores.copy_items, or "
        "export_jsonl then import_jsonl), which embeds every item again (docs/stores.md, 'Moving "
        "memory between stores').",
        written_with=written_with,
        opened_with=opened_with,
    )
