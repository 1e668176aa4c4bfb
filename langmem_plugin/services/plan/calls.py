"""Plan tool calls of one model message, replayed in order, so that every answer tells the truth.

A model that calls tools in parallel sends one message with several tool calls. The
``ToolNode`` runs them concurrently, each against the plan *as it was before the message*,
and only then does the ``plan`` key's reducer merge their writes, in the order of the calls.
An answer computed from the plan before the message alone could say what the merge does not
do: two ``add_plan_step`` calls both claiming step ``s4``, two ``create_plan`` calls both
saying "created", a step moved by a call that a sibling made impossible.

So each plan tool replays the pending plan calls of its message, in order, with the same
functions and the same reducer the merge uses (:func:`replay_calls`), and answers from its
place in that replay (:func:`answer`):

- a call refused in the replay (a second ``create_plan`` while the first one's plan is
  active, an update of a step an earlier call completed) writes nothing and answers with an
  error that says why — and that earlier calls of the same message caused it;
- a call that applies names what it did with the ids the merge gives (a new step's id, a
  new plan's id — derived from the message and the call id, so that every sibling computes the
  same one), and what the later calls of the message made of it;
- the plan shown is the plan after *all* the plan calls of the message: what the model
  finds in state, and in its prompt, next.

Should the merge still differ (a node beside the tools writing the plan in the same step), the
reducer reports every contradicted answer in :attr:`~.schema.Plan.corrections`.

>>> from langmem_plugin.services.plan.state import new_plan
>>> plan = new_plan("Ship", ["a", "b"], plan_id="p1")
>>> calls = [PlanCall("add_plan_step", {"description": d}, f"c{d}") for d in "cd"]
>>> outcomes = replay_calls(plan, calls, batch="m1")
>>> [answer(outcomes, i)[0].splitlines()[0] for i in range(2)]
['Added step s3 "c".', 'Added step s4 "d".']
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langmem_plugin.core.fence import quote
from langmem_plugin.errors import PlanError
from langmem_plugin.services.plan.render import plan_progress, render_plan
from langmem_plugin.services.plan.schema import Plan, PlanOp, PlanStep, PlanUpdate
from langmem_plugin.services.plan.state import (
    add_note_op,
    add_step_op,
    apply_op,
    complete_op,
    new_plan,
    plan_reducer,
    update_step_op,
)

__all__ = ["PLAN_CALLS", "CallOutcome", "PlanCall", "answer", "plan_id_for", "replay_calls", "run_call"]

#: The plan tools, by name, in the order ``memory.tools`` lists them.
PLAN_CALLS = (
    "create_plan",
    "add_plan_step",
    "update_plan_step",
    "add_context_note",
    "complete_plan",
    "get_plan",
)


@dataclass(frozen=True)
class PlanCall:
    """One plan tool call of a model message.

    Attributes:
        name: the tool (one of :data:`PLAN_CALLS`).
        args: its arguments, as the tool's schema validated them.
        call_id: the tool call's id.
        refusal: why the call is refused whatever the plan (arguments the tool's schema refused,
            an id that two calls of the message share); ``None``: it runs.
    """

    name: str
    args: Mapping[str, Any]
    call_id: str = ""
    refusal: str | None = None


@dataclass(frozen=True)
class CallOutcome:
    """What one call did in the replay.

    Attributes:
        call: the call.
        before: the plan before it (after the calls before it in the message).
        after: the plan after it (``before`` when it was refused or only reads).
        update: what it writes to the ``plan`` key (``writes`` says whether it writes).
        writes: it changes the plan.
        error: why it was refused (``None``: it applied).
        alone: it was refused only because of the calls before it (alone it would apply).
    """

    call: PlanCall
    before: Plan | None
    after: Plan | None
    update: PlanUpdate = None
    writes: bool = False
    error: str | None = None
    alone: bool = False


def plan_id_for(batch: str | None, call_id: str, plan: Plan | None) -> str | None:
    """The id of the plan that call ``call_id`` of model message ``batch`` creates: the same in every
    replay of the message, unlike the ids of ``plan`` and the completed plans it holds; ``None``
    (a random id) without a message or a call id."""
    if not batch or not call_id:
        return None
    taken = {plan["id"], *(p["id"] for p in plan["finished"])} if plan is not None else set()
    salt = 0
    while True:
        seed = f"{batch}\x00{call_id}\x00{salt}".encode("utf-8", "surrogatepass")
        made = hashlib.sha256(seed).hexdigest()[:8]
        if made not in taken:
            return made
        salt += 1


_Make = Callable[[Plan, Mapping[str, Any], str, str | None], PlanOp]
_OPS: dict[str, _Make] = {
    "add_plan_step": lambda p, a, c, b: add_step_op(
        p, a["description"], after=a.get("after"), call_id=c, batch=b
    ),
    "update_plan_step": lambda p, a, c, b: update_step_op(
        p, a["step_id"], status=a.get("status"), notes=a.get("notes"), call_id=c, batch=b
    ),
    "add_context_note": lambda p, a, c, b: add_note_op(p, a["note"], call_id=c, batch=b),
    "complete_plan": lambda p, a, c, b: complete_op(p, a.get("summary"), call_id=c, batch=b),
}


def _change(plan: Plan | None, call: PlanCall, batch: str | None, agent: str | None) -> PlanUpdate:
    """What ``call`` writes to the plan key when the plan is ``plan`` (``agent``: whose plan it creates).

    Raises:
        PlanError: the call does not apply to ``plan``.
    """
    if call.name == "create_plan":
        if plan is not None and not plan["is_complete"]:
            raise PlanError(
                f"plan {plan['id']} is still active ({quote(plan['goal'][:80])}); work on it (add_plan_step, "
                "update_plan_step) or finish it with complete_plan before creating another"
            )
        plan_id = plan_id_for(batch, call.call_id, plan)
        return new_plan(call.args.get("goal", ""), call.args.get("steps", ()), plan_id=plan_id, agent=agent)
    make = _OPS.get(call.name)
    if make is None:
        raise PlanError(f"{call.name!r} is not a plan tool; the plan tools are {', '.join(PLAN_CALLS)}")
    if plan is None:
        raise PlanError("there is no plan yet; call create_plan with a goal and steps first")
    try:
        op = make(plan, call.args, call.call_id, batch)
    except KeyError as exc:
        raise PlanError(f"{call.name} needs the argument {exc}") from None
    apply_op(plan, op)  # raises when it does not apply
    return {"ops": [op]}


def run_call(
    plan: Plan | None, call: PlanCall, *, batch: str | None = None, agent: str | None = None
) -> CallOutcome:
    """``call`` run against ``plan`` (``batch``: the id of its model message; ``agent``: the sub-agent
    whose own plan a ``create_plan`` makes, ``None``: the root's)."""
    if call.refusal is not None:
        return CallOutcome(call, plan, plan, error=call.refusal)
    if call.name == "get_plan":
        return CallOutcome(call, plan, plan)
    try:
        update = _change(plan, call, batch, agent)
    except PlanError as exc:
        return CallOutcome(call, plan, plan, error=str(exc))
    return CallOutcome(call, plan, plan_reducer(plan, update), update=update, writes=True)


def replay_calls(
    plan: Plan | None, calls: Sequence[PlanCall], *, batch: str | None = None, agent: str | None = None
) -> list[CallOutcome]:
    """The calls of one model message run in order from ``plan``, each against the plan the calls
    before it left — what the ``plan`` reducer does with their writes (``agent``: see :func:`run_call`)."""
    outcomes: list[CallOutcome] = []
    start, current = plan, plan
    for call in calls:
        outcome = run_call(current, call, batch=batch, agent=agent)
        if outcome.error is not None and call.refusal is None and current is not start:
            alone = run_call(start, call, batch=batch, agent=agent).error is None
            outcome = CallOutcome(call, current, current, error=outcome.error, alone=alone)
        outcomes.append(outcome)
        current = outcome.after
    return outcomes


def _step(plan: Plan | None, step_id: str | None) -> PlanStep | None:
    return next((s for s in plan["steps"] if s["id"] == step_id), None) if plan and step_id else None


def _new_step(outcome: CallOutcome) -> PlanStep | None:
    before = {s["id"] for s in outcome.before["steps"]} if outcome.before else set()
    return next((s for s in outcome.after["steps"] if s["id"] not in before), None) if outcome.after else None


def _did(outcome: CallOutcome, final: Plan | None) -> str:
    """What an applied call did, in the ids the merge gives, and what the later calls made of it."""
    plan, args = outcome.after, outcome.call.args
    if plan is None:  # an applied call leaves a plan
        return "There is no plan."
    later = ""
    if final is None or final["id"] != plan["id"]:
        now = f"the current plan is {final['id']}" if final else "there is no plan now"
        later = f" A later call of this message replaced plan {plan['id']}: {now}."
    name = outcome.call.name
    if name == "create_plan":
        count = len(plan["steps"])
        steps = (
            f"{count} step{'s' if count > 1 else ''}"
            if count
            else "no steps yet: add them with add_plan_step"
        )
        return f"Created plan {plan['id']} with {steps}.{later}"
    if name == "complete_plan":
        before = outcome.before["steps"] if outcome.before else []
        left = [s["id"] for s in before if s["status"] in ("pending", "in_progress", "blocked")]
        skipped = f"; its open steps are skipped now: {', '.join(left)}" if left else ""
        return f"Plan {plan['id']} is complete{skipped}.{later}"
    if name == "add_context_note":
        return f"Added a context note to plan {plan['id']}.{later}"
    if name == "add_plan_step":
        step = _new_step(outcome)
        where = f" after {args['after']}" if args.get("after") else ""
        said = f"Added step {step['id']} {quote(step['description'])}{where}." if step else ""
    else:
        step = _step(plan, args.get("step_id"))
        said = f"Step {step['id']} is {step['status']}." if step else ""
    ended = [p for p in ([final, *final["finished"]] if final else []) if p["id"] == plan["id"]]
    end = _step(ended[0], step["id"]) if step and ended else None
    if end is not None and step is not None and end["status"] != step["status"]:
        said += f" After the later calls of this message, step {end['id']} is {end['status']}."
    return said + later


def answer(outcomes: Sequence[CallOutcome], index: int) -> tuple[str, bool]:
    """The answer of call ``index`` of a replay (``replay_calls``), and whether it is an error.

    An error says why the call was refused (and when the calls before it in the message are why)
    and that nothing changed. An applied call says what it did, with the ids the merge gives and
    what the later calls of the message made of it, then shows the plan after all the calls of
    the message (the whole plan for ``create_plan`` and ``get_plan``, a line of progress for the
    others).
    """
    me = outcomes[index]
    final = outcomes[-1].after
    if me.error is not None:
        text = "Error: " + me.error.removeprefix("Error: ")  # a refusal of its arguments says it already
        if me.alone:
            earlier = ", ".join(f"{o.call.call_id} ({o.call.name})" for o in outcomes[:index] if o.writes)
            text += f"\n(Refused because of the plan calls before it in this message: {earlier}.)"
        return f"{text}\nThe plan did not change.", True
    changes = sum(o.writes for o in outcomes)
    if me.call.name == "get_plan":
        if final is None:
            return "There is no plan yet.", False
        header = (
            "Current plan:"
            if not changes
            else f"Current plan, after the {changes} plan changes of this message:"
        )
        return render_plan(final, header=header), False
    said = _did(me, final)
    shown = (
        render_plan(final, header="Current plan:") if me.call.name == "create_plan" else plan_progress(final)
    )
    return f"{said}\n{shown}", False
