"""What extraction hands consolidation: a proposed memory and a structured model call.

Both :mod:`~langmem_plugin.services.upkeep.extraction` and
:mod:`~langmem_plugin.services.upkeep.consolidation` use these; they live here so that
consolidation does not import extraction back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from langmem_plugin.core.record import DEFAULT_CATEGORY, MemoryKind

__all__ = ["Candidate", "ModelCall"]


@dataclass(frozen=True)
class Candidate:
    """A memory proposed by extraction (or by any caller), before consolidation.

    Attributes:
        content: the memory's text.
        kind: fact, preference, event or instruction (any :class:`MemoryKind`).
        category: a valid category path.
        tags: labels.
        priority: 1–10.
        valid_at: when it became true, when known.
        metadata: string pairs kept on the memory (a source id, the evidence it came from).
        sources: the exchanges it was extracted from, as links ``"thread_id/episode key"``
            (:func:`~langmem_plugin.core.record.exchange_link`); kept on the memory, so
            forgetting or superseding it reaches them (:mod:`.provenance`).
    """

    content: str
    kind: MemoryKind = MemoryKind.FACT
    category: str = DEFAULT_CATEGORY
    tags: tuple[str, ...] = ()
    priority: int = 5
    valid_at: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelCall:
    """A request for a chat model: the structured output of ``schema`` for ``messages``.

    Attributes:
        schema: the pydantic model the answer is parsed into (its name is the tool's name).
        messages: what the model is sent.
        purpose: ``"extraction"`` or ``"consolidation"`` (which configured model answers).
    """

    schema: type[BaseModel]
    messages: list[BaseMessage]
    purpose: Literal["extraction", "consolidation"]

    def _runnable(self, model: BaseChatModel) -> Any:
        return model.with_structured_output(self.schema, method="function_calling")

    def run(self, model: BaseChatModel) -> BaseModel:
        """Ask ``model`` (blocking)."""
        return self._check(self._runnable(model).invoke(self.messages))

    async def arun(self, model: BaseChatModel) -> BaseModel:
        """Ask ``model`` (awaited)."""
        return self._check(await self._runnable(model).ainvoke(self.messages))

    def _check(self, answer: Any) -> BaseModel:
        if not isinstance(answer, self.schema):
            raise ValueError(
                f"the {self.purpose} model did not call the {self.schema.__name__} tool "
                f"(got {type(answer).__name__}); use a chat model that supports tool calling"
            )
        return answer
