"""``python -m langmem_plugin.bench.plan``: plan mode beside LangChain's ``TodoListMiddleware``.

The same scripted 12-step task runs through ``create_agent`` twice: once with
``TodoListMiddleware`` (``write_todos`` rewrites the whole list in ``state["todos"]``;
the model sees the list only in its tool calls and their answers), once with
``Memory(plan=True)`` (plan tools change ``state["plan"]`` by patches; the turn
service renders the plan into the system prompt before every model call). Each
step the scripted model does the step's work (a ``do_step`` tool) and moves the
plan on, in one message of parallel tool calls. Everything is offline: the model
is a :class:`~langmem_plugin.testing.ScriptedChatModel`, tokens are counted with
``gpt-4o-mini``'s tokenizer.

For every model call it measures the tokens of plan text the model was sent (in
the system prompt, in the messages: plan tool calls and their answers), and what
the model can still read of the plan: how many of the 12 steps' current status,
and whether the note of step 1 (a result kept with the step) is visible. Each
agent runs twice: with the whole conversation, and with the messages trimmed to
their last ~``window`` tokens before each call (the same trimming middleware for
both), as a long run or a summarizer would.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver

from langmem_plugin import Memory, count_tokens, trim_window
from langmem_plugin.bench.report import format_table
from langmem_plugin.surfaces.plan_tools import PLAN_TOOL_NAMES
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel

__all__ = ["PlanBenchResult", "SideResult", "run_plan_bench"]

_MODEL = "gpt-4o-mini"
GOAL = "Release version 2.0 of the billing service"
STEPS = (
    "Freeze the main branch and announce the freeze",
    "Collect merged pull requests since 1.9",
    "Write the changelog from the merged pull requests",
    "Bump the version to 2.0.0 in pyproject and the docs",
    "Run the full test suite on Python 3.11 to 3.13",
    "Fix the flaky invoice rounding test",
    "Run the database migration on a staging copy",
    "Load-test the invoice endpoint on staging",
    "Build and sign the wheels and the container image",
    "Tag the release and push the tag",
    "Publish to the package index and the registry",
    "Announce the release and lift the freeze",
)
_ID = re.compile(r"^- (s\d+) \[(\w+)\]")
_COLLAPSED = re.compile(r"^- (completed|skipped|blocked): (.+)$")


@tool
def do_step(step: int, part: int) -> str:
    """Do one part of the work of a step of the task."""
    log = "\n".join(f"[{step}.{part}] check {i}: ok ({7 * i + step} ms, 0 warnings)" for i in range(1, 9))
    return f"step {step}, part {part}: all checks green\n{log}"


def _calls(*pairs: tuple[str, dict[str, Any]], turn: int) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{turn}_{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(pairs)
        ],
    )


def _todos(done: int, current: int | None) -> list[dict[str, str]]:
    return [
        {
            "content": text,
            "status": "completed" if i <= done else "in_progress" if i == current else "pending",
        }
        for i, text in enumerate(STEPS, start=1)
    ]


def _todo_script() -> list[Any]:
    n = len(STEPS)
    script: list[Any] = [_calls(("write_todos", {"todos": _todos(0, 1)}), turn=0)]
    for k in range(1, n + 1):
        work = ("do_step", {"step": k, "part": 1})
        if k == 1:
            script.append(_calls(work, turn=k))
        else:
            script.append(_calls(("write_todos", {"todos": _todos(k - 1, k)}), work, turn=k))
        script.append(_calls(("do_step", {"step": k, "part": 2}), turn=k))
    script.append(_calls(("write_todos", {"todos": _todos(n, None)}), turn=n + 1))
    script.append("Version 2.0 is released.")
    return script


def _plan_script() -> list[Any]:
    n = len(STEPS)
    script: list[Any] = [_calls(("create_plan", {"goal": GOAL, "steps": list(STEPS)}), turn=0)]
    for k in range(1, n + 1):
        moves: list[tuple[str, dict[str, Any]]] = [
            ("update_plan_step", {"step_id": f"s{k}", "status": "in_progress"})
        ]
        if k > 1:
            note = f"done: all checks green, 3 files changed (step {k - 1})"
            moves.insert(
                0, ("update_plan_step", {"step_id": f"s{k - 1}", "status": "completed", "notes": note})
            )
        script.append(_calls(*moves, ("do_step", {"step": k, "part": 1}), turn=k))
        script.append(_calls(("do_step", {"step": k, "part": 2}), turn=k))
    last = {"step_id": f"s{n}", "status": "completed", "notes": f"done (step {n})"}
    script.append(_calls(("update_plan_step", last), turn=n + 1))
    script.append(_calls(("complete_plan", {"summary": "2.0 released"}), turn=n + 2))
    script.append("Version 2.0 is released.")
    return script


@dataclass
class CallSeen:
    """What one model call was sent of the plan."""

    system_tokens: int
    message_tokens: int
    steps_known: int
    note_visible: bool

    @property
    def tokens(self) -> int:
        return self.system_tokens + self.message_tokens


@dataclass
class SideResult:
    """One agent's run: what each model call saw."""

    name: str
    trimmed: bool
    calls: list[CallSeen] = field(default_factory=list)
    fixed_tokens: int = 0
    note_kept: bool = False
    state_after: str = ""


def _schema_tokens(tools: Sequence[BaseTool]) -> int:
    """Tokens of the tools' schemas and descriptions, sent with every model call."""
    return sum(count_tokens(json.dumps(convert_to_openai_tool(t)), model=_MODEL) for t in tools)


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.text)


def _plan_messages(messages: Sequence[BaseMessage], names: set[str]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            texts.extend(json.dumps(c["args"]) for c in message.tool_calls if c["name"] in names)
        elif isinstance(message, ToolMessage) and message.name in names:
            texts.append(_text(message))
    return texts


def _todo_known(messages: Sequence[BaseMessage], truth: dict[int, str]) -> tuple[int, bool]:
    """Steps whose current status the last visible ``write_todos`` call shows; notes: never."""
    latest: list[dict[str, str]] | None = None
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == "write_todos":
                    latest = call["args"]["todos"]
        elif isinstance(message, ToolMessage) and message.name == "write_todos":
            latest = ast.literal_eval(_text(message).removeprefix("Updated todo list to "))
    if latest is None:
        return 0, False
    known = sum(truth.get(i) == item["status"] for i, item in enumerate(latest, start=1))
    return known, False


def _plan_section(system: str) -> str:
    if "[plan]" not in system:
        return ""
    return system[system.index("[plan]") :].split("</memory_context>")[0].rstrip("\n")


def _plan_known(section: str, truth: dict[int, str]) -> tuple[int, bool]:
    known = 0
    for line in section.splitlines():
        if match := _ID.match(line):
            known += truth.get(int(match.group(1)[1:])) == match.group(2)
        elif match := _COLLAPSED.match(line):
            for part in match.group(2).split(", "):
                first, _, last = part.partition("-")
                if not first[1:].isdigit():
                    continue
                for i in range(int(first[1:]), int((last or first)[1:]) + 1):
                    known += truth.get(i) == match.group(1)
    return known, "step 1)" in section


def _truth(call: int, plan: bool) -> dict[int, str]:
    """Each step's status in state when model call ``call`` (0-based) is made, from the scripts.

    Both scripts make the plan at call 0; step ``k`` is two calls, ``2k - 1`` (complete step
    ``k - 1``, start step ``k``, first part of the work) and ``2k`` (second part); the todo list
    starts step 1 when it is written.
    """
    n = len(STEPS)
    if call == 0:
        return {}
    k = call // 2  # the last step started by the calls before this one
    done = min(max(k - 1, 0), n) if call <= 2 * n + 1 else n
    current = 1 if not plan and call == 1 else k
    return {
        i: "completed" if i <= done else "in_progress" if i == current else "pending" for i in range(1, n + 1)
    }


class _Window:
    """A middleware factory: trims the messages to their last ``tokens`` tokens before each model call."""

    @staticmethod
    def make(tokens: int) -> Any:
        from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

        class TrimMessages(AgentMiddleware[Any, Any, Any]):
            def wrap_model_call(
                self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
            ) -> ModelResponse[Any]:
                trimmed = trim_window(request.messages, max_tokens=tokens, model=_MODEL)
                return handler(request.override(messages=cast("list[AnyMessage]", trimmed)))

        return TrimMessages()


def _run(name: str, window: int | None) -> SideResult:
    from langchain.agents import create_agent
    from langchain.agents.middleware import TodoListMiddleware

    plan = name != "todo"
    model = ScriptedChatModel(_plan_script() if plan else _todo_script())
    middleware: list[Any] = []
    tools: list[Any] = [do_step]
    result = SideResult("Memory(plan=True)" if plan else "TodoListMiddleware", window is not None)
    memory: Memory | None = None
    if plan:
        memory = Memory(embeddings=FakeEmbeddings(), tokenizer_model=_MODEL, plan=True)
        middleware.append(memory.middleware())
        plan_tools = [t for t in memory.tools if t.name in PLAN_TOOL_NAMES]
        tools += plan_tools
        result.fixed_tokens = _schema_tokens(plan_tools)
    else:
        todo = TodoListMiddleware()
        middleware.append(todo)
        result.fixed_tokens = count_tokens(todo.system_prompt, model=_MODEL) + _schema_tokens(todo.tools)
    if window is not None:
        middleware.append(_Window.make(window))
    agent = create_agent(
        model,
        tools=tools,
        middleware=middleware,
        checkpointer=InMemorySaver(),
        store=memory.store if memory else None,
    )
    config: RunnableConfig = {"configurable": {"thread_id": "bench", "user_id": "bench"}}
    task = HumanMessage(f"{GOAL}. Follow the release checklist.")
    out = agent.invoke({"messages": [task]}, config)
    names = set(PLAN_TOOL_NAMES) if plan else {"write_todos"}
    for index, messages in enumerate(model.calls):
        system = _text(messages[0]) if messages and isinstance(messages[0], SystemMessage) else ""
        section = _plan_section(system) if plan else ""
        in_messages = _plan_messages(messages, names)
        truth = _truth(index, plan)
        known, note = _plan_known(section, truth) if plan else _todo_known(messages, truth)
        result.calls.append(
            CallSeen(
                count_tokens(section, model=_MODEL) if section else 0,
                sum(count_tokens(t, model=_MODEL) for t in in_messages),
                known,
                note,
            )
        )
    if plan and memory is not None:
        archived = memory.store.search(("memories", "session", "bench"), filter={"kind": "plan"})
        result.state_after = f"plan archived in session memory ({len(archived)} record), state cleared"
        result.note_kept = any("(step 1)" in item.value["content"] for item in archived)
    else:
        result.state_after = f"state['todos'] keeps {len(out.get('todos') or [])} items (content, status)"
    return result


@dataclass
class PlanBenchResult:
    """Both agents, with and without trimming."""

    sides: list[SideResult]
    window: int

    def _side(self, name: str, trimmed: bool) -> SideResult:
        return next(s for s in self.sides if s.name.startswith(name) and s.trimmed is trimmed)

    def per_call_table(self) -> str:
        todo, ours = self._side("Todo", False), self._side("Memory", False)
        todo_t, ours_t = self._side("Todo", True), self._side("Memory", True)
        rows = []
        for i in range(max(len(todo.calls), len(ours.calls))):
            cells: list[object] = [i + 1]
            for side in (todo, ours, todo_t, ours_t):
                call = side.calls[i] if i < len(side.calls) else None
                cells.append(f"{call.tokens} ({call.steps_known}/12)" if call else "")
            rows.append(cells)
        return format_table(
            [
                "model call",
                "todo: plan tokens (steps known)",
                "ours",
                f"todo, trimmed to {self.window} tok",
                f"ours, trimmed to {self.window} tok",
            ],
            rows,
        )

    def summary_table(self) -> str:
        rows: list[list[object]] = []
        for side in self.sides:
            tokens = [c.tokens for c in side.calls]
            mid = side.calls[2 * 7 + 1]  # the second call of step 7
            last = side.calls[2 * len(STEPS) + 1]  # the second call of step 12
            in_system = [c.system_tokens for c in side.calls]
            rows.append(
                [
                    side.name + (f", trimmed to {self.window} tok" if side.trimmed else ""),
                    len(side.calls),
                    f"{sum(tokens) / len(tokens):.0f} / {max(tokens)}",
                    f"{sum(in_system) / len(in_system):.0f}",
                    sum(tokens),
                    side.fixed_tokens,
                    f"{mid.steps_known}/12, {last.steps_known}/12",
                    ("kept" if side.note_kept else "no notes") + (", shown" if mid.note_visible else ""),
                ]
            )
        return format_table(
            [
                "agent",
                "model calls",
                "plan text tokens per call (mean / max)",
                "of it in the system prompt (mean)",
                "plan text tokens, whole run",
                "instructions + tool schemas per call",
                "statuses readable (step 7, step 12)",
                "step 1's result note",
            ],
            rows,
        )

    def kept_table(self) -> str:
        todo, ours = self._side("Todo", False), self._side("Memory", False)
        rows = [
            ["a completed step", "content, status", "id, description, status, notes, updated_at, history"],
            ["parallel updates in one turn", "refused (one write_todos per turn)", "merged by the reducer"],
            [
                "after the messages are trimmed",
                "only what a visible write_todos call showed",
                "the whole plan",
            ],
            ["when the run ends", todo.state_after, ours.state_after],
        ]
        return format_table(["what is kept", "TodoListMiddleware", "Memory(plan=True)"], rows)

    def table(self) -> str:
        return "\n\n".join([self.summary_table(), self.kept_table(), self.per_call_table()])


def run_plan_bench(*, window: int = 800) -> PlanBenchResult:
    """Run the scripted 12-step task through both agents, with and without trimming."""
    sides = [_run(name, w) for w in (None, window) for name in ("todo", "plan")]
    return PlanBenchResult(sides, window)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m langmem_plugin.bench.plan", description=__doc__)
    parser.add_argument(
        "--window", type=int, default=800, help="tokens the trimmed runs keep of the messages"
    )
    args = parser.parse_args(argv)
    print(
        f"plan mode beside TodoListMiddleware — the same scripted {len(STEPS)}-step task, tokens of {_MODEL}"
    )
    print(run_plan_bench(window=args.window).table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
