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
status transition that is not allowed, an empty text — comes back as an error
``ToolMessage`` saying what to do, and the plan does not change.

Usable alone in a hand-written graph::

    class State(MessagesState, PlanState): ...

    tools = create_plan_tools()
    builder = StateGraph(State)
    builder.add_node("tools", ToolNode(tools))

or through :class:`~langmem_plugin.Memory` (``Memory(plan=True)``: ``memory.tools`` has them,
the state key and the prompt section come with the nodes and the middleware).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from langmem_plugin.errors import ConfigurationError, PlanError
from langmem_plugin.services.plan import (
    Plan,
    PlanOp,
    PlanState,
    PlanUpdate,
    add_note_op,
    add_step_op,
    apply_op,
    as_plan,
    complete_op,
    new_plan,
    plan_progress,
    render_plan,
    update_step_op,
)
from langmem_plugin.services.turn import state_value

__all__ = ["PLAN_TOOL_NAMES", "PlanState", "create_plan_tools"]

#: Every plan tool, by name.
PLAN_TOOL_NAMES = (
    "create_plan",
    "add_plan_step",
    "update_plan_step",
    "add_context_note",
    "complete_plan",
    "get_plan",
)

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


def _error_message(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    )
    return f"Error: invalid arguments: {problems}. Fix the arguments and call the tool again."


Change = Callable[[Plan | None, dict[str, Any]], tuple[PlanUpdate, Plan, str]]


def _one_op(make: Callable[[Plan, dict[str, Any]], PlanOp], said: Callable[[Plan, PlanOp], str]) -> Change:
    def change(plan: Plan | None, args: dict[str, Any]) -> tuple[PlanUpdate, Plan, str]:
        if plan is None:
            raise PlanError("there is no plan yet; call create_plan with a goal and steps first")
        op = make(plan, args)
        changed = apply_op(plan, op)
        return {"ops": [op]}, changed, said(changed, op)

    return change


def _create(plan: Plan | None, args: dict[str, Any]) -> tuple[PlanUpdate, Plan, str]:
    if plan is not None and not plan["is_complete"]:
        raise PlanError(
            f"plan {plan['id']} is still active ({plan['goal']!r}); work on it (add_plan_step, "
            "update_plan_step) or finish it with complete_plan before creating another"
        )
    created = new_plan(args["goal"], args["steps"])
    return created, created, f"Created plan {created['id']}."


def _added(plan: Plan, op: PlanOp) -> str:
    return f"Added step {op.get('step_id')}."


def _updated(plan: Plan, op: PlanOp) -> str:
    step = next(s for s in plan["steps"] if s["id"] in (op.get("step_id"), f"s{op.get('step_id')}"))
    return f"Step {step['id']} is {step['status']}."


_CHANGES: dict[str, tuple[type[BaseModel], Change]] = {
    "create_plan": (CreatePlanInput, _create),
    "add_plan_step": (
        AddPlanStepInput,
        _one_op(lambda p, a: add_step_op(p, a["description"], after=a.get("after")), _added),
    ),
    "update_plan_step": (
        UpdatePlanStepInput,
        _one_op(
            lambda p, a: update_step_op(p, a["step_id"], status=a.get("status"), notes=a.get("notes")),
            _updated,
        ),
    ),
    "add_context_note": (
        AddContextNoteInput,
        _one_op(lambda p, a: add_note_op(p, a["note"]), lambda p, op: "Noted."),
    ),
    "complete_plan": (
        CompletePlanInput,
        _one_op(lambda p, a: complete_op(p, a.get("summary")), lambda p, op: f"Plan {p['id']} is complete."),
    ),
}


def _make_tool(name: str, key: str, messages_key: str) -> StructuredTool:
    def current(runtime: ToolRuntime[Any, Any]) -> Plan | None:
        return as_plan(state_value(runtime.state, key))

    if name == "get_plan":

        def show(runtime: ToolRuntime[Any, Any]) -> str:
            plan = current(runtime)
            return render_plan(plan, header="Current plan:") if plan else "There is no plan yet."

        async def ashow(runtime: ToolRuntime[Any, Any]) -> str:
            return show(runtime)

        # no args_schema: a tool whose schema has no field gets no injected runtime either
        return StructuredTool.from_function(
            func=show, coroutine=ashow, name=name, description=_DESCRIPTIONS[name]
        )

    schema, change = _CHANGES[name]
    fields = set(schema.model_fields)

    def run(runtime: ToolRuntime[Any, Any], **kwargs: Any) -> Command[Any]:
        call_id = runtime.tool_call_id or ""
        try:
            update, plan, said = change(current(runtime), {k: v for k, v in kwargs.items() if k in fields})
        except PlanError as exc:  # the model can fix it; nothing changes
            error = ToolMessage(f"Error: {exc}", tool_call_id=call_id, name=name, status="error")
            return Command(update={messages_key: [error]})
        shown = render_plan(plan, header="Current plan:") if name == "create_plan" else plan_progress(plan)
        answer = f"{said}\n{shown}"
        return Command(
            update={key: update, messages_key: [ToolMessage(answer, tool_call_id=call_id, name=name)]}
        )

    async def arun(runtime: ToolRuntime[Any, Any], **kwargs: Any) -> Command[Any]:
        return run(runtime, **kwargs)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=_DESCRIPTIONS[name],
        args_schema=schema,
        infer_schema=False,
        handle_validation_error=_error_message,
    )


def create_plan_tools(
    *, key: str = "plan", messages_key: str = "messages", include: tuple[str, ...] = PLAN_TOOL_NAMES
) -> list[BaseTool]:
    """The plan tools, for ``model.bind_tools(...)`` and a ``ToolNode`` (or ``create_agent``).

    Args:
        key: the state key of the plan (its reducer must be
            :func:`~langmem_plugin.services.plan.state.plan_reducer`, as in :class:`PlanState`).
        messages_key: the state key of the messages.
        include: which tools (see :data:`PLAN_TOOL_NAMES`).

    Raises:
        ConfigurationError: an unknown tool name.

    >>> [t.name for t in create_plan_tools(include=("create_plan", "get_plan"))]
    ['create_plan', 'get_plan']
    """
    unknown = [n for n in include if n not in PLAN_TOOL_NAMES]
    if unknown:
        raise ConfigurationError(f"unknown plan tool(s) {unknown}; the tools are {list(PLAN_TOOL_NAMES)}")
    return [_make_tool(name, key, messages_key) for name in dict.fromkeys(include)]
