"""Tokens per model call of a thread, with memory and without: :meth:`Memory.token_usage`.

A thread's checkpoints say what each model call saw. For every model call (a checkpoint whose
new last message is an ``AIMessage``) the state the model node read is the call's parent
checkpoint, and two counts are made from it with
:func:`~langmem_plugin.core.tokens.count_message_tokens`, in the memory's tokenizer:

- **with memory**: what the memory's model node sends —
  :meth:`~langmem_plugin.services.turn.MemoryTurn.model_messages`: the instructions and the
  memory prompt in one system message, then the window. It is pure: it renders from the state
  (``memory_prompt``, ``summary``, ``plan``, ``run_memory``, ``tool_results``, ``compacted``)
  and reads no store, so the count is the one the model was sent.
- **without memory**: what an agent without memory resends — the same instructions, then every
  message of the conversation so far.

``recalled`` is what recall injected for the call (``memory_context["tokens"]["total"]``).

Each model call is a row, a call that asked for tools too: every call resends its context, so
every call costs. Only the thread's current branch counts (from its latest checkpoint, or the
config's ``checkpoint_id``, back through the parents): a fork's abandoned checkpoints do not.
Messages that came with the input and ``update_state`` writes are not model calls.

The logic is pure (:func:`usage_of` over the snapshots); :func:`token_usage` and
:func:`atoken_usage` only read the history, with ``get_state_history`` or
``aget_state_history``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START
from langgraph.types import StateSnapshot

from langmem_plugin.core.html import cell, table
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.errors import ConfigurationError, shown
from langmem_plugin.services.turn import MemoryTurn, state_value
from langmem_plugin.surfaces._arguments import scope_of

__all__ = ["TokenUsage", "TurnTokens", "atoken_usage", "token_usage", "usage_of"]

_QUESTION_CHARS = 100


@dataclass(frozen=True)
class TurnTokens:
    """The tokens of one model call.

    Attributes:
        number: the call's place in the thread, from 1.
        question: the last user message before the call (cut to 100 characters).
        with_memory: tokens the model was sent: system prompt (instructions + recalled memory)
            and the window.
        without_memory: tokens an agent without memory would send: the instructions and the
            whole conversation so far.
        recalled: tokens of the memory prompt recall injected (part of ``with_memory``).
        tool_calls: the tools the call asked for; empty when it answered.
    """

    number: int
    question: str
    with_memory: int
    without_memory: int
    recalled: int
    tool_calls: tuple[str, ...] = ()

    @property
    def saved(self) -> float | None:
        """The share of ``without_memory`` that memory did not send (negative: memory sent more)."""
        return 1 - self.with_memory / self.without_memory if self.without_memory else None


@dataclass(frozen=True)
class TokenUsage:
    """Tokens per model call of one thread, with memory and without; a chart in a notebook.

    Attributes:
        thread_id: the thread.
        turns: one row per model call, oldest first (empty: the thread has no checkpoint).
    """

    thread_id: str
    turns: list[TurnTokens]

    @property
    def total_with(self) -> int:
        """Tokens sent with memory, over every call."""
        return sum(t.with_memory for t in self.turns)

    @property
    def total_without(self) -> int:
        """Tokens an agent without memory would have sent, over every call."""
        return sum(t.without_memory for t in self.turns)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready): the thread, its rows and the totals."""
        rows = [{**asdict(t), "tool_calls": list(t.tool_calls)} for t in self.turns]
        return {
            "thread_id": self.thread_id,
            "turns": rows,
            "total_with": self.total_with,
            "total_without": self.total_without,
        }

    def summary(self) -> str:
        """One line: calls, the two totals and the share saved."""
        if not self.turns:
            return f"thread {self.thread_id!r}: no model calls yet"
        saved = _percent(1 - self.total_with / self.total_without) if self.total_without else "-"
        return (
            f"thread {self.thread_id!r}: {len(self.turns)} model calls, {self.total_with} tokens sent with "
            f"memory, {self.total_without} without (saved {saved})"
        )

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.turns:
            lines.append(
                f"{'call':>5} {'with memory':>12} {'without memory':>15} "
                f"{'recalled':>9} {'saved':>6}  question"
            )
            for t in self.turns:
                asked = f"  [-> {', '.join(t.tool_calls)}]" if t.tool_calls else ""
                lines.append(
                    f"{t.number:>5} {t.with_memory:>12} {t.without_memory:>15} {t.recalled:>9} "
                    f"{_percent(t.saved):>6}  {t.question}{asked}"
                )
            lines.append(f"{'total':>5} {self.total_with:>12} {self.total_without:>15}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        caption = self.summary()
        if not self.turns:
            return f"<p>{cell(caption)}</p>"
        rows = [
            (
                t.number,
                t.with_memory,
                t.without_memory,
                t.recalled,
                _percent(t.saved),
                t.question,
                ", ".join(t.tool_calls),
            )
            for t in self.turns
        ]
        headers = ("call", "with memory", "without memory", "recalled", "saved", "question", "tools asked")
        return f"<div>{_chart(self)}{table(headers, rows, caption=caption)}</div>"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


# -- the chart: inline SVG, no script, every text escaped ---------------------------------------

_WIDTH, _HEIGHT = 640, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 16, 30, 34
_SERIES = (("without memory", "without_memory", "#c0392b"), ("with memory", "with_memory", "#2471a3"))


def _nice_ceiling(value: int) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``value`` (1 for 0)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value))


def _chart(usage: TokenUsage) -> str:
    """Both series as lines over the calls, with a y axis, call numbers and a legend."""
    turns = usage.turns
    top = _nice_ceiling(max(max(t.with_memory, t.without_memory) for t in turns))
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(i: int) -> float:
        return _LEFT + (i + 0.5) * plot_w / len(turns)

    def y(v: float) -> float:
        return _TOP + plot_h * (1 - v / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="{cell(usage.summary())}" '
        'style="font-family:sans-serif;font-size:11px">'
    ]
    for k in range(5):  # the y grid and its labels
        v = top * k / 4
        parts.append(
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
            f'<text x="{_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#555">{v:g}</text>'
        )
    step = max(1, math.ceil(len(turns) / 12))  # at most a dozen call numbers on the x axis
    for i, t in enumerate(turns):
        if i % step == 0 or i == len(turns) - 1:
            parts.append(
                f'<text x="{x(i):.1f}" y="{_HEIGHT - _BOTTOM + 14}" text-anchor="middle" fill="#555">'
                f"{t.number}</text>"
            )
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_HEIGHT - 4}" text-anchor="middle" '
        f'fill="#555">model call</text>'
        f'<text x="12" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" fill="#555" '
        f'transform="rotate(-90 12 {_TOP + plot_h / 2:.1f})">tokens sent</text>'
    )
    markers = len(turns) <= 60
    for n, (label, field, colour) in enumerate(_SERIES):
        points = " ".join(f"{x(i):.1f},{y(getattr(t, field)):.1f}" for i, t in enumerate(turns))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        if markers:
            for i, t in enumerate(turns):
                tip = cell(f"call {t.number}, {label}: {getattr(t, field)} tokens · {t.question}")
                parts.append(
                    f'<circle cx="{x(i):.1f}" cy="{y(getattr(t, field)):.1f}" r="3" fill="{colour}">'
                    f"<title>{tip}</title></circle>"
                )
        legend_x = _LEFT + 10 + n * 150
        parts.append(
            f'<line x1="{legend_x}" x2="{legend_x + 18}" y1="12" y2="12" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{legend_x + 24}" y="16" fill="#333">{cell(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


# -- the rows, from the snapshots (no I/O) -------------------------------------------------------


def _checkpoint_id(config: Mapping[str, Any] | None) -> str | None:
    configurable = (config or {}).get("configurable") or {}
    value = configurable.get("checkpoint_id")
    return value if isinstance(value, str) else None


def _branch(history: Sequence[StateSnapshot], head: str | None) -> list[StateSnapshot]:
    """The checkpoints from the root to ``head`` (``None``: the latest), oldest first."""
    if not history:
        return []
    by_id = {_checkpoint_id(s.config): s for s in history}
    snapshot = by_id.get(head) if head is not None else history[0]
    chain: list[StateSnapshot] = []
    seen: set[str | None] = set()
    while snapshot is not None and _checkpoint_id(snapshot.config) not in seen:
        seen.add(_checkpoint_id(snapshot.config))
        chain.append(snapshot)
        snapshot = by_id.get(_checkpoint_id(snapshot.parent_config))
    chain.reverse()
    return chain


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        p if isinstance(p, str) else str(p.get("text", ""))
        for p in content
        if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
    )


def _question(messages: Sequence[BaseMessage]) -> str:
    """The last user message's text on one line, cut."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            text = " ".join(_text(message).split())
            return text if len(text) <= _QUESTION_CHARS else text[: _QUESTION_CHARS - 1] + "…"
    return ""


def _same(a: BaseMessage, b: BaseMessage) -> bool:
    return a.id == b.id if a.id is not None or b.id is not None else a == b


def _model_call(snapshot: StateSnapshot, parent: StateSnapshot | None, key: str) -> AIMessage | None:
    """The ``AIMessage`` a model call added in ``snapshot``; ``None``: the step was no model call."""
    if (snapshot.metadata or {}).get("source") != "loop":  # input, update_state, fork
        return None
    messages = state_value(snapshot.values, key) or []
    if not messages or not isinstance(messages[-1], AIMessage):
        return None
    if parent is not None:
        if START in parent.next:  # the step that applied the input: its messages are the caller's
            return None
        before = state_value(parent.values, key) or []
        if before and _same(before[-1], messages[-1]):  # the answer of an earlier step
            return None
    last: AIMessage = messages[-1]
    return last


def model_node_instructions(graph: Any, turn: MemoryTurn) -> dict[str, str | None]:
    """The instructions of the graph's model nodes that use ``turn`` (``memory.add_to``,
    ``memory.model_node``), by node name."""
    nodes = getattr(getattr(graph, "builder", None), "nodes", None)
    if not isinstance(nodes, Mapping):
        return {}
    found: dict[str, str | None] = {}
    for name, spec in nodes.items():
        runnable = getattr(spec, "runnable", None)
        instructions = getattr(runnable, "instructions", 0)
        if getattr(runnable, "turn", None) is turn and (
            instructions is None or isinstance(instructions, str)
        ):
            found[name] = instructions
    return found


def usage_of(
    history: Sequence[StateSnapshot],
    *,
    thread_id: str,
    turn: MemoryTurn,
    instructions: Mapping[str, str | None] | None = None,
    default_instructions: str | None = None,
    head: str | None = None,
) -> TokenUsage:
    """The rows of ``history`` (``get_state_history``'s snapshots, newest first).

    Args:
        history: the thread's snapshots, newest first.
        thread_id: the thread they belong to.
        turn: the memory's turn service (window, state keys, tokenizer).
        instructions: the instructions of the memory's model nodes, by node name.
        default_instructions: the instructions of any other node that makes a model call.
        head: the checkpoint the branch ends at (``None``: the latest).
    """
    nodes = dict(instructions or {})
    key, model = turn.keys.messages, turn.model
    rows: list[TurnTokens] = []
    chain = _branch(history, head)
    for i, snapshot in enumerate(chain):
        parent = chain[i - 1] if i else None
        answer = _model_call(snapshot, parent, key)
        if answer is None:
            continue
        if parent is not None:
            state: Any = parent.values
            ran = parent.next
        else:  # no parent kept (a checkpointer that keeps only the latest): the state minus the answer
            state = {**snapshot.values, key: list(state_value(snapshot.values, key))[:-1]}
            ran = tuple(nodes)
        said = next((nodes[name] for name in ran if name in nodes), default_instructions)
        messages: list[BaseMessage] = list(state_value(state, key) or [])
        whole = [SystemMessage(said), *messages] if said else messages
        context = state_value(state, turn.keys.memory_context) or {}
        rows.append(
            TurnTokens(
                number=len(rows) + 1,
                question=_question(messages),
                with_memory=count_message_tokens(turn.model_messages(state, instructions=said), model=model),
                without_memory=count_message_tokens(whole, model=model),
                recalled=int((context.get("tokens") or {}).get("total", 0)),
                tool_calls=tuple(call["name"] for call in answer.tool_calls),
            )
        )
    return TokenUsage(thread_id=thread_id, turns=rows)


# -- the drivers: the checks, then the history read ----------------------------------------------


def _checked(graph: Any, config: Any) -> tuple[str, RunnableConfig, str | None]:
    """The thread id, the config that lists the whole thread, and the checkpoint the branch ends at.

    Raises:
        ConfigurationError: ``graph`` is not a compiled graph with a checkpointer.
        ScopeError: ``config`` names no thread (or an id that is not one).
    """
    if not callable(getattr(graph, "get_state_history", None)):
        raise ConfigurationError(
            f"token_usage(graph) takes a compiled graph, got {type(graph).__name__} {shown(graph)}. "
            "Fix: pass builder.compile(checkpointer=InMemorySaver(), store=memory.store) — the graph "
            "you ran the thread with."
        )
    checkpointer = getattr(graph, "checkpointer", None)
    if checkpointer is None or isinstance(checkpointer, bool):
        raise ConfigurationError(
            f"token_usage(graph): the graph was compiled without a checkpointer (checkpointer="
            f"{checkpointer!r}), so it keeps no thread history to read. Fix: compile with a "
            "checkpointer, builder.compile(checkpointer=InMemorySaver(), store=memory.store), and "
            "run the thread with it."
        )
    thread_id = scope_of(config).require("thread_id", purpose="token_usage(graph, config)")
    given = config.get("configurable") or {}
    configurable = {k: v for k, v in given.items() if k != "checkpoint_id"}
    listing: RunnableConfig = {"configurable": {**configurable, "thread_id": thread_id}}
    return thread_id, listing, _checkpoint_id(config)


def token_usage(turn: MemoryTurn, graph: Any, config: Any, *, instructions: str | None = None) -> TokenUsage:
    """Tokens per model call of the thread ``config`` names (see :meth:`Memory.token_usage`)."""
    thread_id, listing, head = _checked(graph, config)
    history = list(graph.get_state_history(listing))
    return _usage(history, graph, turn, thread_id, head, instructions)


async def atoken_usage(
    turn: MemoryTurn, graph: Any, config: Any, *, instructions: str | None = None
) -> TokenUsage:
    """Async :func:`token_usage` (``aget_state_history``)."""
    thread_id, listing, head = _checked(graph, config)
    history = [snapshot async for snapshot in graph.aget_state_history(listing)]
    return _usage(history, graph, turn, thread_id, head, instructions)


def _usage(
    history: list[Any],
    graph: Any,
    turn: MemoryTurn,
    thread_id: str,
    head: str | None,
    instructions: str | None,
) -> TokenUsage:
    return usage_of(
        history,
        thread_id=thread_id,
        turn=turn,
        instructions=model_node_instructions(graph, turn),
        default_instructions=instructions,
        head=head,
    )
