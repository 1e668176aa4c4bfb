"""Plan tools: the agent keeps its plan in graph state, step by step.

:func:`create_plan_tools` returns six LangChain tools — ``create_plan``,
``add_plan_step``, ``update_plan_step``, ``add_context_note``, ``complete_plan``
and ``get_plan`` — that read the plan from the graph state (``ToolRuntime``) and
change it by returning ``Command(update={"plan": <patch>, "messages": [ToolMessage]})``.
A patch carries ops with the ids they act on, and the ``plan`` key's reducer
(:func:`~langmem_plugin.services.plan.state.plan_reducer`) applies them to the plan as
it is when merged: two tool calls of one model turn both stick, and no call
rewrites the whole list. ``create_plan`` and ``get_plan`` answer with the whole
plan (its step ids); the others with one line of progress, since the turn service
renders the whole plan into the system prompt before every model call.

What the model can fix — no plan yet, a second active plan, an unknown step id, a
step id that is not exactly one (spaces around it, another type, odd characters), a
status transition that is not allowed, a blank text — comes back as an error
``ToolMessage`` saying what to do, and the plan does not change.

Parallel tool calls tell the truth: each plan tool replays the pending plan calls of its
model message in order, as the reducer merges them
(:mod:`~langmem_plugin.services.plan.calls`), so its answer names the step id really
assigned, refuses a second ``create_plan`` while the first one's plan is active, refuses an
update an earlier call made impossible, and shows the plan as it is after the whole message.

Across agents (:mod:`~langmem_plugin.services.plan.owner`): the agent that runs comes from the
run (a subgraph, ``create_agent(name=...)``) or from ``agent=`` (``memory.agent(name)``'s tools).
A sub-agent whose plan is isolated (the default) creates and changes only its own plan, and only
when the state holds no other agent's; one to which the plan is read-only reads the root's plan
with ``get_plan`` and changes nothing. What the rule forbids is answered with an error that says
whose the plan is and how to give the sub-agent its own, and the plan does not change.

Usable alone in a hand-written graph::

    class State(MessagesState, PlanState): ...

    tools = create_plan_tools()
    builder = StateGraph(State)
    builder.add_node("tools", ToolNode(tools))

or through :class:`~langmem_plugin.Memory` (``Memory(plan=True)``: ``memory.tools`` has them,
the state key and the prompt section come with the nodes and the middleware).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from langmem_plugin.errors import AgentAccessError, ConfigurationError
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.plan import (
    PLAN_CALLS,
    PlanCall,
    PlanState,
    answer,
    as_plan,
    check_plan_access,
    plan_owner,
    replay_calls,
)
from langmem_plugin.services.turn import state_value
from langmem_plugin.surfaces._runtime import resolve_agent_scope
from langmem_plugin.surfaces._tooling import strict_schema, validation_message

__all__ = ["PLAN_TOOL_NAMES", "PlanState", "create_plan_tools"]

#: Every plan tool, by name.
PLAN_TOOL_NAMES = PLAN_CALLS

Status = Literal["pending", "in_progress", "completed", "skipped", "blocked"]


class CreatePlanInput(BaseModel):
    goal: str = Field(description="What the plan achieves, in one sentence.")
    steps: list[str] = Field(description="The steps, in order, each a short action.")


class AddPlanStepInput(BaseModel):
    description: str = Field(description="The new step, a short action.")
    after: str | None = Field(default=None, description="Insert after this step id (default: at the end).")


class UpdatePlanStepInput(BaseModel):
    step_id: str = Field(description="The step's id, e.g. 's2'.")
    status: Status | None = Field(
        default=None, description="The new status: pending, in_progress, completed, skipped or blocked."
    )
    notes: str | None = Field(default=None, description="A note to add to the step (a result, a blocker).")


class AddContextNoteInput(BaseModel):
    note: str = Field(description="A fact learned while working that the plan should keep.")


class CompletePlanInput(BaseModel):
    summary: str | None = Field(default=None, description="What was achieved, in a sentence or two.")


class GetPlanInput(BaseModel):
    pass


_SCHEMAS: dict[str, type[BaseModel]] = {
    "create_plan": CreatePlanInput,
    "add_plan_step": AddPlanStepInput,
    "update_plan_step": UpdatePlanStepInput,
    "add_context_note": AddContextNoteInput,
    "complete_plan": CompletePlanInput,
    "get_plan": GetPlanInput,
}
#: The schemas as the tools take them: an argument a tool does not take is refused, not dropped.
_STRICT: dict[str, type[BaseModel]] = {name: strict_schema(schema) for name, schema in _SCHEMAS.items()}

_DESCRIPTIONS = {
    "create_plan": "Create a plan for a multi-step task: a goal and its steps (ids s1, s2, ...). "
    "Only one plan is active at a time; it stays in the conversation until completed.",
    "add_plan_step": "Add a step to the current plan, at the end or after a given step id.",
    "update_plan_step": "Change one step of the plan: its status (pending -> in_progress -> completed, "
    "or skipped / blocked) and/or add a note. Mark a step in_progress before working on it and "
    "completed right after. Several calls in one turn are fine.",
    "add_context_note": "Add a note to the plan: a fact, decision or constraint to keep while working.",
    "complete_plan": "Complete the plan when its work is done (open steps are marked skipped); "
    "it is archived in memory.",
    "get_plan": "Show the current plan with its step ids, statuses and notes.",
}
_STEP_ID_FIELDS = frozenset({"step_id", "after"})


def _error_message(exc: ValidationError, name: str | None = None) -> str:
    """The answer to arguments the schema of tool ``name`` refuses (an argument it does not take
    is named, with those it takes); the plan is not changed."""
    message = validation_message(exc, name, list(_SCHEMAS[name].model_fields) if name else ())
    if any(e["loc"] and e["loc"][0] in _STEP_ID_FIELDS for e in exc.errors(include_url=False)):
        message = message.replace(
            " Nothing was done.",
            ' A step id is a text, exactly as the plan shows it, like "s2". Nothing was done.',
        )
    return message


def _validated(name: str, args: Any, call_id: str) -> PlanCall:
    """A call of tool ``name``, with its arguments as the tool's schema validates them (or refused)."""
    try:
        return PlanCall(name, _STRICT[name].model_validate(args).model_dump(), call_id)
    except ValidationError as exc:
        return PlanCall(name, {}, call_id, refusal=_error_message(exc, name))


def _message_calls(
    messages: Sequence[Any], me: PlanCall, names: frozenset[str]
) -> tuple[str | None, list[PlanCall], int]:
    """The id of the model message that made call ``me``, its pending plan calls in order (those
    no tool message answers yet), and ``me``'s place among them; just ``me`` without the message."""

    def made_me(m: Any) -> bool:
        return isinstance(m, AIMessage) and any(c.get("id") == me.call_id for c in m.tool_calls)

    at = next((i for i in range(len(messages) - 1, -1, -1) if made_me(messages[i])), None)
    if not me.call_id or at is None:
        return None, [me], 0
    message: AIMessage = messages[at]
    # answered after the message (a resumed run): already merged. Ids of earlier messages may repeat.
    answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
    ids = Counter(str(c.get("id") or "") for c in message.tool_calls)
    calls: list[PlanCall] = []
    index = -1
    for tool_call in message.tool_calls:
        call_id, tool = str(tool_call.get("id") or ""), tool_call["name"]
        mine = call_id == me.call_id
        if tool not in names or (call_id in answered and not mine) or (mine and index >= 0):
            continue
        # the call as the model sent it, checked strictly (LangChain drops an argument the schema
        # does not declare before the tool runs: refused here, the plan is left as it is)
        call = _validated(tool, tool_call.get("args"), call_id)
        if ids[call_id] > 1:
            refusal = (
                f"{ids[call_id]} tool calls of this message have the id {call_id!r}; each tool call "
                "needs an id of its own, so none of them was run: call the tools again"
            )
            call = dataclasses.replace(call, refusal=refusal)
        index = len(calls) if mine else index
        calls.append(call)
    batch = message.id or "|".join(str(c.get("id")) for c in message.tool_calls)
    return batch, calls, index


@dataclasses.dataclass(frozen=True)
class _Setup:
    """What every plan tool of one :func:`create_plan_tools` shares."""

    key: str
    messages_key: str
    names: frozenset[str]
    layout: MemoryLayout
    agent: str | None


def _make_tool(name: str, setup: _Setup) -> StructuredTool:
    fields = set(_SCHEMAS[name].model_fields)
    key, messages_key = setup.key, setup.messages_key

    def reply(runtime: ToolRuntime[Any, Any], kwargs: dict[str, Any]) -> tuple[dict[str, Any], str, bool]:
        """What this call writes to the plan key (``{}`` or ``{key: update}``), its answer, and
        whether the answer is an error."""
        me = PlanCall(name, {k: v for k, v in kwargs.items() if k in fields}, runtime.tool_call_id or "")
        messages = state_value(runtime.state, messages_key)
        batch, calls, index = _message_calls(messages if isinstance(messages, list) else [], me, setup.names)
        plan = as_plan(state_value(runtime.state, key))
        scope = resolve_agent_scope(runtime.config, runtime=runtime, agent=setup.agent)  # from the run
        try:  # another agent's plan, or one read-only to this agent: refused whatever the call
            check_plan_access(plan, scope, setup.layout, write=name != "get_plan")
        except AgentAccessError as exc:
            return {}, f"Error: {exc}.\nThe plan did not change.", True
        outcomes = replay_calls(plan, calls, batch=batch, agent=plan_owner(scope, setup.layout))
        text, error = answer(outcomes, index)
        return ({key: outcomes[index].update} if outcomes[index].writes else {}), text, error

    if name == "get_plan":

        def show(runtime: ToolRuntime[Any, Any]) -> ToolMessage:
            _, text, error = reply(runtime, {})  # arguments it does not take: refused, with the reason
            status: Literal["success", "error"] = "error" if error else "success"
            return ToolMessage(text, tool_call_id=runtime.tool_call_id or "", name=name, status=status)

        async def ashow(runtime: ToolRuntime[Any, Any]) -> ToolMessage:
            return show(runtime)

        # no args_schema: a tool whose schema has no field gets no injected runtime either
        return StructuredTool.from_function(
            func=show, coroutine=ashow, name=name, description=_DESCRIPTIONS[name]
        )

    def run(runtime: ToolRuntime[Any, Any], **kwargs: Any) -> Command[Any]:
        update, text, error = reply(runtime, kwargs)
        status: Literal["success", "error"] = "error" if error else "success"
        message = ToolMessage(text, tool_call_id=runtime.tool_call_id or "", name=name, status=status)
        return Command(update={messages_key: [message], **update})

    async def arun(runtime: ToolRuntime[Any, Any], **kwargs: Any) -> Command[Any]:
        return run(runtime, **kwargs)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=_DESCRIPTIONS[name],
        args_schema=_SCHEMAS[name],  # not strict: ToolNode injects `runtime` into the arguments
        infer_schema=False,
        handle_validation_error=functools.partial(_error_message, name=name),
    )


def create_plan_tools(
    *,
    key: str = "plan",
    messages_key: str = "messages",
    include: tuple[str, ...] = PLAN_TOOL_NAMES,
    layout: MemoryLayout | None = None,
    agent: str | None = None,
) -> list[BaseTool]:
    """The plan tools, for ``model.bind_tools(...)`` and a ``ToolNode`` (or ``create_agent``).

    Args:
        key: the state key of the plan (its reducer must be
            :func:`~langmem_plugin.services.plan.state.plan_reducer`, as in :class:`PlanState`).
        messages_key: the state key of the messages.
        include: which tools (see :data:`PLAN_TOOL_NAMES`).
        layout: its rules across agents (``layout.agents``: the rule ``plan``) say whose plan each
            agent sees and changes; ``None``: the default rules.
        agent: the sub-agent the tools run as (``memory.agent(name)``'s); ``None``: the run says.

    Raises:
        ConfigurationError: an unknown tool name.

    >>> [t.name for t in create_plan_tools(include=("create_plan", "get_plan"))]
    ['create_plan', 'get_plan']
    """
    unknown = [n for n in include if n not in PLAN_TOOL_NAMES]
    if unknown:
        raise ConfigurationError(f"unknown plan tool(s) {unknown}; the tools are {list(PLAN_TOOL_NAMES)}")
    setup = _Setup(key, messages_key, frozenset(include), layout or MemoryLayout(), agent)
    return [_make_tool(name, setup) for name in dict.fromkeys(include)]
