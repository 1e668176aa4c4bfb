"""``langmem-plugin bench tools``: what the memory tools cost in tokens, and when memory pays.

Every tool bound to a model is sent with every call, so its schema is a cost per call. Two parts:

1. **Schema tokens.** Each tool as OpenAI function calling sends it — ``convert_to_openai_tool``
   (what ``ChatOpenAI.bind_tools`` sends), serialized with ``json.dumps`` and counted with
   :func:`~langmem_plugin.count_tokens` for the tokenizer model — per tool and per set:
   ``Memory()``'s default (``"lean"``), ``Memory(tools="full")``, and what plan mode
   (``Memory(plan=True)``) and stored tool results (``ContextConfig(results=ResultsConfig())``)
   add; beside LangMem's two tools (``create_manage_memory_tool`` and
   ``create_search_memory_tool``, from the ``langmem`` package, made as its README makes them),
   with the ratio of each set to those two.
2. **Where memory starts saving tokens.** One generated chat of ``turns`` user–assistant turns
   (:func:`~langmem_plugin.bench.longchat.make_long_chat`, one session, seeded; the assistant's
   answers are played by a scripted model) runs through ``memory.add_to`` with ``Memory()``'s
   defaults but the window: once with the window kept to the last ``window`` turns
   (``ContextConfig(window=WindowConfig(max_turns=window))``), once with the default window (the
   whole thread). :meth:`~langmem_plugin.Memory.token_usage` counts each model call as sent —
   instructions, recalled memory, the window — and what an agent without memory sends (the
   instructions and the whole thread); the bound tools' schemas are added to the calls with
   memory. The break-even turn is the first from which every call with memory costs less than
   without; the cumulative break-even, the first turn by which the thread as a whole cost less.
   One model call a turn (the scripted model calls no tool); each turn's writes are flushed before
   the next, as a thread whose writes finish between messages.

Nothing here is fitted to the numbers: they are measured on every run.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ContextConfig, Memory, MemoryState, ResultsConfig, WindowConfig, count_tokens
from langmem_plugin.bench.longchat import make_long_chat
from langmem_plugin.bench.report import format_table
from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.surfaces.tools import DESTRUCTIVE_TOOL_NAMES
from langmem_plugin.testing import ScriptedChatModel

__all__ = [
    "INSTRUCTIONS",
    "SETS",
    "ThreadTokens",
    "ToolCost",
    "ToolsBenchResult",
    "chat_turns",
    "langmem_tools",
    "run_thread",
    "run_tools_bench",
    "schema_tokens",
]

#: The instructions of the agent, with memory and without.
INSTRUCTIONS = "You are a helpful assistant."


def schema_tokens(tool: BaseTool | dict[str, Any], *, model: str) -> int:
    """Tokens of ``tool``'s schema as OpenAI function calling sends it, in ``model``'s tokenizer."""
    return count_tokens(json.dumps(convert_to_openai_tool(tool)), model=model)


def langmem_tools() -> list[BaseTool]:
    """LangMem's two memory tools, made as its README makes them.

    Raises:
        MissingDependencyError: ``langmem`` is not installed.
    """
    try:
        with warnings.catch_warnings():  # langmem's imports warn about LangGraph's moved names
            warnings.simplefilter("ignore")
            from langmem import create_manage_memory_tool, create_search_memory_tool
    except ImportError as exc:
        raise MissingDependencyError(
            "bench tools compares with LangMem's tools, and langmem is not installed. "
            "Fix: pip install 'langmem-plugin[bench]'"
        ) from exc
    namespace = ("memories", "{langgraph_user_id}")
    return [create_manage_memory_tool(namespace=namespace), create_search_memory_tool(namespace=namespace)]


@dataclass(frozen=True)
class ToolCost:
    """One tool's schema tokens, and the set it comes in."""

    name: str
    comes_in: str
    tokens: int


@dataclass(frozen=True)
class ThreadTokens:
    """Tokens per model call of one thread, with memory and without.

    Attributes:
        window: the window of the run with memory, in words.
        schemas: tokens of the schemas bound with memory (the lean set), sent with every call.
        with_memory: per call: what the model was sent with memory, the schemas included.
        without_memory: per call: the instructions and the whole thread.
    """

    window: str
    schemas: int
    with_memory: tuple[int, ...]
    without_memory: tuple[int, ...]

    def shifted(self, extra: int) -> tuple[int, ...]:
        """The calls with memory had ``extra`` more schema tokens been bound (another set)."""
        return tuple(n + extra for n in self.with_memory)

    def break_even(self, extra: int = 0) -> int | None:
        """The first call from which every call with memory costs less than without (``None``:
        none in this thread)."""
        found: int | None = None
        for number, (with_, without) in enumerate(
            zip(self.shifted(extra), self.without_memory, strict=True), 1
        ):
            found = (found or number) if with_ < without else None
        return found

    def cumulative_break_even(self, extra: int = 0) -> int | None:
        """The first call by which the thread so far cost less with memory (``None``: none)."""
        total = 0
        for number, (with_, without) in enumerate(
            zip(self.shifted(extra), self.without_memory, strict=True), 1
        ):
            total += without - with_
            if total > 0:
                return number
        return None


@dataclass(frozen=True)
class ToolsBenchResult:
    """Schema tokens per tool and per set, LangMem's beside them, and the threads."""

    model: str
    tools: tuple[ToolCost, ...]
    sets: dict[str, tuple[tuple[str, ...], int]]
    langmem: int
    threads: tuple[ThreadTokens, ...]

    @property
    def lean(self) -> int:
        return self.sets["lean"][1]

    @property
    def full(self) -> int:
        return self.sets["full"][1]

    def tools_table(self) -> str:
        rows = [[t.name, t.comes_in, t.tokens] for t in self.tools]
        return format_table(["tool", "comes in", f"schema tokens ({self.model})"], rows)

    def sets_table(self) -> str:
        labels = {"lean": "lean: Memory() default", "full": "full: Memory(tools='full')"}
        rows = [
            [labels.get(name, name), len(names), tokens, f"{tokens / self.langmem:.2f}x"]
            for name, (names, tokens) in self.sets.items()
        ]
        rows.append(["langmem's manage_memory + search_memory", 2, self.langmem, "1.00x"])
        return format_table(["set", "tools", "schema tokens, every call", "vs langmem"], rows)

    def thread_table(self, thread: ThreadTokens) -> str:
        extra = self.full - self.lean
        full = thread.shifted(extra)
        rows = []
        for i, (with_, without) in enumerate(zip(thread.with_memory, thread.without_memory, strict=True)):
            number = i + 1
            if number in _SHOWN or number == len(thread.with_memory):
                rows.append(
                    [number, without, with_, _saved(with_, without), full[i], _saved(full[i], without)]
                )
        rows.append(
            [
                "total",
                sum(thread.without_memory),
                sum(thread.with_memory),
                _saved(sum(thread.with_memory), sum(thread.without_memory)),
                sum(full),
                _saved(sum(full), sum(thread.without_memory)),
            ]
        )
        headers = ["call", "without memory", "with memory (lean)", "saved", "with memory (full)", "saved"]
        return format_table(headers, rows)

    def break_even_lines(self) -> list[str]:
        extra = self.full - self.lean
        lines = []
        for thread in self.threads:
            for name, shift in (("lean", 0), ("full", extra)):
                lines.append(
                    f"window {thread.window}, {name} tools: each call costs less from call "
                    f"{_turn(thread.break_even(shift))}; the thread as a whole from call "
                    f"{_turn(thread.cumulative_break_even(shift))}"
                )
        return lines

    def report(self) -> str:
        parts = [self.tools_table(), "", self.sets_table()]
        for thread in self.threads:
            parts += ["", f"tokens per model call, window {thread.window}:", self.thread_table(thread)]
        parts += ["", *self.break_even_lines()]
        return "\n".join(parts)


_SHOWN = (1, 2, 3, 5, 10, 15, 20, 30, 50, 100)


def _saved(with_: int, without: int) -> str:
    return f"{1 - with_ / without:.0%}" if without else "-"


def _turn(number: int | None) -> str:
    return str(number) if number is not None else "- (not within this thread)"


#: Each set the bench measures: its label, and the ``Memory`` keywords that bind it.
SETS: dict[str, dict[str, Any]] = {
    "lean": {},
    "full": {"tools": "full"},
    "plan=True adds": {"tools": (), "plan": True},
    "results=ResultsConfig() adds": {"tools": (), "context": ContextConfig(results=ResultsConfig())},
}


def _tool_sets(model: str) -> tuple[list[ToolCost], dict[str, tuple[tuple[str, ...], int]]]:
    """Each set's tools as ``Memory(...).tools`` binds them, and their schema tokens."""
    bound: dict[str, list[BaseTool]] = {}
    for name, keywords in SETS.items():
        with Memory(tokenizer_model=model, **keywords) as memory:
            bound[name] = memory.tools
    lean = {t.name for t in bound["lean"]}
    costs: list[ToolCost] = []
    for name in SETS:
        for tool in bound[name] if name != "lean" else []:
            if tool.name in lean:
                comes_in = "lean, full"
            elif name == "full":
                comes_in = "full (destructive)" if tool.name in DESTRUCTIVE_TOOL_NAMES else "full"
            else:
                comes_in = name
            costs.append(ToolCost(tool.name, comes_in, schema_tokens(tool, model=model)))
    per_tool = {c.name: c.tokens for c in costs}
    sets = {}
    for name, tools in bound.items():
        names = tuple(t.name for t in tools)
        sets[name] = (names, sum(per_tool[n] for n in names))
    return costs, sets


def run_thread(
    turns: Sequence[tuple[str, str]],
    *,
    window: int | None,
    model: str = "gpt-4o-mini",
) -> ThreadTokens:
    """Tokens per model call of one thread of ``turns`` (user message, answer) through
    ``memory.add_to`` with ``Memory()``'s defaults and the last ``window`` turns in the window
    (``None``: the default window, the whole thread); the bound tools' schemas are counted in."""
    context = ContextConfig(window=WindowConfig(max_turns=window)) if window is not None else None
    memory = Memory(tokenizer_model=model, context=context)
    try:
        agent = ScriptedChatModel([answer for _, answer in turns])
        builder = StateGraph(MemoryState)
        memory.add_to(builder, agent, instructions=INSTRUCTIONS)
        graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
        config: RunnableConfig = {"configurable": {"user_id": "bench", "thread_id": "chat"}}
        for user, _ in turns:
            graph.invoke({"messages": [HumanMessage(user)]}, config)
            memory.flush()
        usage = memory.token_usage(graph, config, instructions=INSTRUCTIONS)
        schemas = sum(schema_tokens(t, model=model) for t in memory.tools)
    finally:
        memory.close()
    return ThreadTokens(
        window=f"last {window} turn{'s' if window != 1 else ''}"
        if window is not None
        else "whole thread (the default)",
        schemas=schemas,
        with_memory=tuple(t.with_memory + schemas for t in usage.turns),
        without_memory=tuple(t.without_memory for t in usage.turns),
    )


def chat_turns(
    turns: int, *, seed: int = 0, answer_chars: tuple[int, int] = (400, 2000)
) -> list[tuple[str, str]]:
    """``turns`` generated (user message, answer) pairs of one session."""
    chat = make_long_chat(seed, sessions=1, exchanges=turns, facts=0, answer_chars=answer_chars, days=1)
    messages = chat.sessions[0]["messages"]
    return [(messages[i]["content"], messages[i + 1]["content"]) for i in range(0, len(messages), 2)]


def run_tools_bench(
    *,
    turns: int = 30,
    window: int = 4,
    model: str = "gpt-4o-mini",
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> ToolsBenchResult:
    """Schema tokens per tool and set, LangMem's two tools, and a thread of ``turns`` turns with
    the window at ``window`` turns and at the default.

    Raises:
        MissingDependencyError: ``langmem`` is not installed (``pip install 'langmem-plugin[bench]'``).
        ValueError: ``turns`` or ``window`` under 1.
    """
    if turns < 1 or window < 1:
        raise ValueError(f"turns and window must be at least 1, got turns={turns}, window={window}")
    theirs = sum(schema_tokens(t, model=model) for t in langmem_tools())
    costs, sets = _tool_sets(model)
    chat = chat_turns(turns, seed=seed)
    threads = []
    for kept in (window, None):
        if progress is not None:
            progress(f"thread of {turns} turns, window {kept or 'whole thread'}...")
        threads.append(run_thread(chat, window=kept, model=model))
    return ToolsBenchResult(model, tuple(costs), sets, theirs, tuple(threads))
