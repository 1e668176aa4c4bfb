"""The run's context as configured: the window, tool results as memory, and the state keys.

:class:`ContextConfig` is what ``Memory(context=...)`` and
:class:`~langmem_plugin.services.turn.MemoryTurn` take: :class:`WindowConfig` (how much of the
conversation the model sees, summarized or trimmed), ``ResultsConfig`` (tool results as
memory) and :class:`StateKeys` (where in graph state each of them lives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.context.results import ResultsConfig
from langmem_plugin.services.context.summary import SummaryConfig

__all__ = ["DEFAULT_KEYS", "ContextConfig", "StateKeys", "WindowConfig", "latest"]


def latest(current: Any, update: Any) -> Any:
    """The reducer of ``memory_prompt`` and ``memory_context``: the value written last. Several
    agents (workers fanned out with ``Send``, subgraphs side by side) may each recall in one step;
    each model call read the prompt its own recall made."""
    return update


@dataclass(frozen=True)
class StateKeys:
    """The names of the graph state keys memory reads and writes."""

    messages: str = "messages"
    memory_prompt: str = "memory_prompt"
    memory_context: str = "memory_context"
    run_memory: str = "run_memory"
    plan: str = "plan"
    tool_results: str = "tool_results"
    compacted: str = "compacted"
    summary: str = "summary"


#: The default state key names.
DEFAULT_KEYS = StateKeys()


@dataclass(frozen=True)
class WindowConfig:
    """How much of the conversation the model sees (the checkpointed history is not changed).

    Attributes:
        max_turns: the last this many user turns (``None``: all).
        max_tokens: at most this many tokens of messages (``None``: no limit).
        summary: summarize what the window would drop (:mod:`~langmem_plugin.services.context.summary`);
            ``None``: the window trims (and ``memory_context["window"]`` says so).
    """

    max_turns: int | None = None
    max_tokens: int | None = None
    summary: SummaryConfig | None = None

    def __post_init__(self) -> None:
        if self.summary is not None and not (self.max_turns or self.max_tokens):
            raise ConfigurationError("WindowConfig(summary=...) needs max_turns or max_tokens")


@dataclass(frozen=True)
class ContextConfig:
    """What the model's context holds during a run, and the graph state keys it lives under.

    Attributes:
        window: how much of the conversation the model sees (``None``: all of it).
        results: tool results as memory: large results stored, shown in full once, then as a
            citation (:mod:`~langmem_plugin.services.context.results`); ``None``: off.
        keys: the names of the graph state keys memory reads and writes.
    """

    window: WindowConfig | None = None
    results: ResultsConfig | None = None
    keys: StateKeys = DEFAULT_KEYS
