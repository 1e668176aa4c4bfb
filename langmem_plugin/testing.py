"""Helpers for tests — yours and ours. Not for production use.

:class:`ScriptedChatModel` is a chat model that answers from a script: each
step is a text, an ``AIMessage`` (with real ``tool_calls``), or a function of
the messages it was sent. It binds tools (``bind_tools`` returns it as is), so
it runs in a ``ToolNode`` loop, and it keeps every input in ``calls`` for
inspection.

>>> from langchain_core.messages import HumanMessage
>>> model = ScriptedChatModel([tool_call("save_memory", content="Likes tea"), "Noted."])
>>> model.invoke([HumanMessage("I like tea")]).tool_calls[0]["name"]
'save_memory'
>>> model.invoke([HumanMessage("...")]).content
'Noted.'

:class:`FakeEmbeddings` is deterministic and fast: each word (lowercased, with a
crude plural strip) is hashed to a few dimensions with signs, and the sum is
L2-normalised, so texts that share words are similar and the same text always
gets the same vector. It knows nothing of meaning: use the real default
embedder (:class:`~langmem_plugin.MiniLMEmbeddings`) to test semantics.

>>> emb = FakeEmbeddings()
>>> a, b, c = emb.embed_documents(["green tea", "I like green tea", "tax deadline"])
>>> sum(x * y for x, y in zip(a, b)) > sum(x * y for x, y in zip(a, c))
True
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

__all__ = ["FailingEmbeddings", "FakeEmbeddings", "ScriptExhaustedError", "ScriptedChatModel", "tool_call"]

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbeddings(Embeddings):
    """Hashed bag-of-words vectors: deterministic, no model, for unit tests only.

    Its :attr:`embedder_id` names it (a store records it like a real embedder's, so tests of
    stores see what a user sees); the dims are not part of it, stores check them apart.
    """

    def __init__(self, dims: int = 256, *, hashes_per_word: int = 2) -> None:
        if dims < 2:
            raise ValueError(f"dims must be at least 2, got {dims}")
        self.dims = dims
        self.hashes_per_word = hashes_per_word

    @property
    def embedder_id(self) -> str:
        """What names these vectors (``core.embeddings.embedder_id``): stable across processes."""
        return f"testing:FakeEmbeddings(hashes_per_word={self.hashes_per_word})"

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            if len(word) > 3 and word.endswith("s"):
                word = word[:-1]
            digest = hashlib.blake2b(word.encode(), digest_size=4 * self.hashes_per_word).digest()
            for i in range(self.hashes_per_word):
                h = int.from_bytes(digest[4 * i : 4 * i + 4], "little")
                vector[h % self.dims] += 1.0 if (h >> 31) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class FailingEmbeddings(Embeddings):
    """Another embedder that fails on chosen calls: fault injection for a bad day.

    Every call (``embed_documents``, ``embed_query`` and their async twins) is counted from 1;
    the calls in ``fail_on`` (or every call from ``fail_from`` on) raise ``error`` (default: a
    ``TimeoutError``, as an embedding API's timeout would) instead of embedding. Its vectors
    and its :attr:`embedder_id` are the wrapped embedder's, so a store made with one opens with
    the other.

    >>> emb = FailingEmbeddings(FakeEmbeddings(8), fail_on={2})
    >>> len(emb.embed_query("tea")), emb.calls
    (8, 1)
    >>> emb.embed_query("tea")
    Traceback (most recent call last):
    ...
    TimeoutError: embedding call 2 failed (injected)
    >>> emb.failed, len(emb.embed_query("tea"))
    (1, 8)
    """

    def __init__(
        self,
        inner: Embeddings,
        *,
        fail_on: Sequence[int] | set[int] = (),
        fail_from: int | None = None,
        error: Callable[[int], BaseException] | None = None,
    ) -> None:
        self.inner = inner
        self.fail_on = frozenset(fail_on)
        self.fail_from = fail_from
        self.error = error or (lambda n: TimeoutError(f"embedding call {n} failed (injected)"))
        #: Calls made so far (failed ones included), and how many of them failed.
        self.calls = 0
        self.failed = 0
        self._lock = threading.Lock()

    @property
    def embedder_id(self) -> str | None:
        """The wrapped embedder's name: the same vectors."""
        from langmem_plugin.core.embeddings import embedder_id

        return embedder_id(self.inner)

    def _count(self) -> None:
        with self._lock:
            self.calls += 1
            n = self.calls
            fails = n in self.fail_on or (self.fail_from is not None and n >= self.fail_from)
            if fails:
                self.failed += 1
        if fails:
            raise self.error(n)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._count()
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._count()
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self._count()
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self._count()
        return await self.inner.aembed_query(text)


_call_ids = itertools.count(1)


def tool_call(name: str, /, **args: Any) -> AIMessage:
    """An ``AIMessage`` that calls tool ``name`` with ``args`` (a fresh call id)."""
    return AIMessage(
        "", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_call_ids)}", "type": "tool_call"}]
    )


ScriptStep = str | AIMessage | Callable[[list[BaseMessage]], "str | AIMessage"]


class ScriptExhaustedError(IndexError):
    """The scripted model was called more times than its script has steps."""


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a script; for tests and offline demos.

    Attributes:
        script: the steps, played in order (see the module docstring).
        calls: the messages of every call, in order.
    """

    script: list[Any]
    model_name: str = "scripted"
    _position: int = PrivateAttr(default=0)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    def __init__(self, script: Sequence[ScriptStep], **kwargs: Any) -> None:
        super().__init__(script=list(script), **kwargs)  # type: ignore[call-arg]

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"

    @property
    def remaining(self) -> int:
        """Steps not played yet."""
        return len(self.script) - self._position

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            if self._position >= len(self.script):
                raise ScriptExhaustedError(
                    f"the scripted model has played all {len(self.script)} steps of its script; "
                    "add more steps"
                )
            step = self.script[self._position]
            self._position += 1
            self.calls.append(list(messages))
        if callable(step) and not isinstance(step, AIMessage):
            step = step(list(messages))
        message = step if isinstance(step, AIMessage) else AIMessage(str(step))
        message = message.model_copy(update={"id": message.id or f"scripted-{uuid.uuid4().hex[:12]}"})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Accepts any tools and returns the model itself: the script decides the calls."""
        return self
