"""The agent's plan: its operations, the reducer that merges them, and reading what is in state.

"Plan" here means one thing only: the plan an agent keeps in graph state (``state["plan"]``),
persisted by the graph's checkpointer under the run's ``thread_id``. This module is pure
logic, no I/O:

- **State** — :class:`Plan` (a goal, :class:`PlanStep` items with ids, status, notes and
  times, timestamped context notes, a short history), plain JSON-able dicts that every
  checkpointer serialises (the types and the checks of texts and step ids live in
  :mod:`.schema`). :class:`PlanState` is the state mixin with the ``plan`` key.
- **Operations** — :func:`new_plan`, then ops made against the current plan
  (:func:`add_step_op`, :func:`update_step_op`, :func:`add_note_op`, :func:`complete_op`)
  and :func:`apply_op`, which returns a new plan or raises
  :class:`~langmem_plugin.errors.PlanError` (an unknown or malformed step id, a transition
  :data:`TRANSITIONS` does not allow, an op made for another plan, a blank or too long text).
- **Reducer** — :func:`plan_reducer` merges updates of the ``plan`` key: a
  :class:`PlanPatch` (a list of ops, each carrying the ids it acts on) is applied to the
  plan *as it is now*, so two tool calls of one step (parallel tool calls) both stick;
  a whole :class:`Plan` sets the plan; ``None`` clears it. The reducer never raises for
  an op that no longer applies: it is skipped and noted in the plan's history, and when a
  tool call made it (its answer said it applied) in :attr:`Plan.corrections` too, which the
  model sees with the plan. The plan tools replay the calls of a model message in order
  (:mod:`.calls`), so in a graph their answers already say what the merge does.
- **Prompt and archive** — :mod:`langmem_plugin.services.plan.render`: the plan section
  within a token budget, and the archived plan (a memory of kind ``plan``).

>>> plan = new_plan("Ship 2.0", ["Write changelog", "Run tests"], plan_id="p1")
>>> [(s["id"], s["status"]) for s in plan["steps"]]
[('s1', 'pending'), ('s2', 'pending')]
>>> a = update_step_op(plan, "s1", status="completed")
>>> b = update_step_op(plan, "s2", status="in_progress")
>>> merged = plan_reducer(plan_reducer(plan, {"ops": [a]}), {"ops": [b]})  # two parallel tool calls
>>> [(s["id"], s["status"]) for s in merged["steps"]]
[('s1', 'completed'), ('s2', 'in_progress')]
>>> merged["history"][-1]["text"]
's2 pending -> in_progress'
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, cast

from typing_extensions import TypedDict  # pydantic (state schemas) needs it before Python 3.12

from langmem_plugin.core.fence import quote
from langmem_plugin.errors import ConfigurationError, PlanError
from langmem_plugin.services.plan.schema import (
    MAX_CONTEXT_NOTES,
    MAX_CORRECTIONS,
    MAX_FINISHED,
    MAX_HISTORY,
    MAX_STEP_NOTES,
    MAX_STEPS,
    MAX_TEXT_CHARS,
    PLAN_CATEGORY,
    STEP_ID_PATTERN,
    STEP_STATUSES,
    TRANSITIONS,
    Plan,
    PlanCorrection,
    PlanNote,
    PlanOp,
    PlanPatch,
    PlanStep,
    PlanUpdate,
    StepStatus,
    check_step_id,
    clip,
    plan_text,
    stamp,
)

__all__ = [
    "MAX_CONTEXT_NOTES",
    "MAX_STEPS",
    "MAX_TEXT_CHARS",
    "PLAN_CATEGORY",
    "STEP_STATUSES",
    "TRANSITIONS",
    "Plan",
    "PlanConfig",
    "PlanCorrection",
    "PlanNote",
    "PlanOp",
    "PlanPatch",
    "PlanState",
    "PlanStep",
    "PlanUpdate",
    "StepStatus",
    "add_note_op",
    "add_step_op",
    "apply_op",
    "as_plan",
    "complete_op",
    "current_steps",
    "new_plan",
    "plan_reducer",
    "update_step_op",
]

logger = logging.getLogger(__name__)

_OPEN: frozenset[StepStatus] = frozenset({"pending", "in_progress", "blocked"})
#: The tool that makes each op (named in a correction).
_TOOL_OF = {
    "add_step": "add_plan_step",
    "update_step": "update_plan_step",
    "add_note": "add_context_note",
    "complete": "complete_plan",
}


@dataclass(frozen=True)
class PlanConfig:
    """Plan mode of the turn service (``Memory(plan=True)`` or ``Memory(plan=PlanConfig(...))``).

    The plan's token budget is ``RecallConfig.budgets.plan``.

    Attributes:
        lifetime: ``"session"``: the plan stays in the thread's state until it is completed;
            ``"run"``: it is cleared when the run ends (the model answered).
        archive: a completed plan is written to session memory (kind ``plan``) when the run
            ends, then cleared from state.
    """

    lifetime: Literal["session", "run"] = "session"
    archive: bool = True

    def __post_init__(self) -> None:
        if self.lifetime not in ("session", "run"):
            raise ConfigurationError(f"PlanConfig.lifetime must be 'session' or 'run', got {self.lifetime!r}")


def _event(plan: Plan, at: str, text: str) -> list[PlanNote]:
    return [*plan["history"], PlanNote(at=at, text=text)][-MAX_HISTORY:]


def _step(step_id: str, description: str, at: str) -> PlanStep:
    return PlanStep(id=step_id, description=description, status="pending", notes=[], updated_at=at)


def new_plan(
    goal: str,
    steps: Sequence[str] = (),
    *,
    now: datetime | None = None,
    plan_id: str | None = None,
    agent: str | None = None,
) -> Plan:
    """A new plan: ``goal`` and ``steps`` (descriptions, all pending, ids ``s1``, ``s2``, ...);
    ``agent``: the sub-agent whose own plan it is (``None``: the root's).

    A plan may have no steps (a goal alone); steps are added later with :func:`add_step_op`.

    Raises:
        PlanError: a blank goal or step (see :func:`~.schema.plan_text`), a text over
            :data:`MAX_TEXT_CHARS`, more than :data:`MAX_STEPS` steps, steps that are not a list of
            texts, a ``plan_id`` that is not letters, digits, ``_`` and ``-``.
    """
    goal = plan_text(goal, "the goal")
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        raise PlanError(f"steps must be a list of step descriptions, got {clip(steps)}")
    if len(steps) > MAX_STEPS:
        raise PlanError(f"a plan has at most {MAX_STEPS} steps, got {len(steps)}; group them")
    if plan_id is not None and not (isinstance(plan_id, str) and STEP_ID_PATTERN.fullmatch(plan_id)):
        raise PlanError(f"a plan id has only letters, digits, '_' and '-' (at most 40), got {clip(plan_id)}")
    at = stamp(now)
    made = [_step(f"s{i}", plan_text(d, f"step {i}"), at) for i, d in enumerate(steps, start=1)]
    plan = Plan(
        id=plan_id or uuid.uuid4().hex[:8],
        goal=goal,
        steps=made,
        notes=[],
        history=[PlanNote(at=at, text=f"created with {len(made)} steps")],
        created_at=at,
        updated_at=at,
        completed_at=None,
        is_complete=False,
        summary=None,
        finished=[],
        corrections=[],
    )
    if agent is not None:
        plan["agent"] = agent
    return plan


def _next_id(plan: Plan) -> str:
    taken = {s["id"] for s in plan["steps"]}
    n = len(plan["steps"]) + 1
    while f"s{n}" in taken:
        n += 1
    return f"s{n}"


def _find(plan: Plan, step_id: Any) -> int:
    """The index of step ``step_id`` (exactly; see :func:`~.schema.check_step_id`)."""
    found = check_step_id(step_id, [s["id"] for s in plan["steps"]])
    return next(i for i, step in enumerate(plan["steps"]) if step["id"] == found)


def _op(plan: Plan, now: datetime | None, call_id: str | None, batch: str | None, **fields: Any) -> PlanOp:
    op = cast(PlanOp, {"plan_id": plan["id"], "at": stamp(now), **fields})
    if call_id:
        op["call_id"] = call_id
    if batch:
        op["batch"] = batch
    return op


def add_step_op(
    plan: Plan,
    description: str,
    *,
    after: str | None = None,
    now: datetime | None = None,
    call_id: str | None = None,
    batch: str | None = None,
) -> PlanOp:
    """An op that adds a pending step at the end, or after step ``after``; it proposes the id the
    step gets when the plan is still ``plan`` when the op is applied.

    ``call_id`` and ``batch`` name the tool call that made it and its model message (see
    :attr:`Plan.corrections`); the other op makers take them too.
    """
    return _op(
        plan, now, call_id, batch, op="add_step", step_id=_next_id(plan), description=description, after=after
    )


def update_step_op(
    plan: Plan,
    step_id: str,
    *,
    status: StepStatus | None = None,
    notes: str | None = None,
    now: datetime | None = None,
    call_id: str | None = None,
    batch: str | None = None,
) -> PlanOp:
    """An op that moves step ``step_id`` to ``status`` and/or adds a note to it."""
    return _op(plan, now, call_id, batch, op="update_step", step_id=step_id, status=status, notes=notes)


def add_note_op(
    plan: Plan,
    note: str,
    *,
    now: datetime | None = None,
    call_id: str | None = None,
    batch: str | None = None,
) -> PlanOp:
    """An op that adds a timestamped context note to the plan."""
    return _op(plan, now, call_id, batch, op="add_note", note=note)


def complete_op(
    plan: Plan,
    summary: str | None = None,
    *,
    now: datetime | None = None,
    call_id: str | None = None,
    batch: str | None = None,
) -> PlanOp:
    """An op that completes the plan; its open steps are marked ``skipped`` (with a note)."""
    return _op(plan, now, call_id, batch, op="complete", summary=summary)


def _add_step(plan: Plan, op: PlanOp, at: str) -> Plan:
    if len(plan["steps"]) >= MAX_STEPS:
        raise PlanError(f"the plan already has {MAX_STEPS} steps, the most it may have")
    description = plan_text(op.get("description"), "the step description")
    steps = list(plan["steps"])
    position = len(steps)
    after = op.get("after")
    if after is not None and after != "":
        position = _find(plan, after) + 1
    proposed = op.get("step_id")
    taken = {s["id"] for s in steps}
    fits = isinstance(proposed, str) and STEP_ID_PATTERN.fullmatch(proposed) and proposed not in taken
    step_id = cast(str, proposed) if fits else _next_id(plan)
    steps.insert(position, _step(step_id, description, at))
    where = f" after {steps[position - 1]['id']}" if position < len(steps) - 1 and position else ""
    return {**plan, "steps": steps, "history": _event(plan, at, f"added {step_id}{where}")}


def _update_step(plan: Plan, op: PlanOp, at: str) -> Plan:
    index = _find(plan, op.get("step_id"))
    step = plan["steps"][index]
    status, note = op.get("status"), op.get("notes")
    if status is None and note in (None, ""):
        raise PlanError(f"update of step {step['id']} needs a status, notes, or both")
    changed: PlanStep = {**step, "updated_at": at}
    events: list[str] = []
    if status is not None and status != step["status"]:
        if not isinstance(status, str) or status not in STEP_STATUSES:
            raise PlanError(
                f"unknown status {clip(status)}; a step status is one of {', '.join(STEP_STATUSES)}"
            )
        allowed = TRANSITIONS[step["status"]]
        if status not in allowed:
            could = ", ".join(sorted(allowed)) or "nothing (it is final)"
            raise PlanError(
                f"step {step['id']} cannot go from {step['status']} to {status}; from {step['status']} "
                f"it can go to {could}"
            )
        changed["status"] = status
        events.append(f"{step['id']} {step['status']} -> {status}")
    if note is not None and note != "":
        if len(step["notes"]) >= MAX_STEP_NOTES:
            raise PlanError(f"step {step['id']} already has {MAX_STEP_NOTES} notes; add a context note")
        changed["notes"] = [*step["notes"], plan_text(note, "the step note")]
        events.append(f"{step['id']} noted")
    steps = list(plan["steps"])
    steps[index] = changed
    return {**plan, "steps": steps, "history": _event(plan, at, "; ".join(events) or f"{step['id']} touched")}


def _add_note(plan: Plan, op: PlanOp, at: str) -> Plan:
    if len(plan["notes"]) >= MAX_CONTEXT_NOTES:
        raise PlanError(f"the plan already has {MAX_CONTEXT_NOTES} context notes; save the rest in memory")
    note = PlanNote(at=at, text=plan_text(op.get("note"), "the note"))
    return {**plan, "notes": [*plan["notes"], note], "history": _event(plan, at, "context note added")}


def _complete(plan: Plan, op: PlanOp, at: str) -> Plan:
    summary = op.get("summary")
    summary = plan_text(summary, "the summary") if summary is not None and summary != "" else None
    steps: list[PlanStep] = []
    left: list[str] = []
    for step in plan["steps"]:
        if step["status"] in _OPEN:
            left.append(step["id"])
            note = f"left {step['status']} when the plan was completed"
            step = {**step, "status": "skipped", "notes": [*step["notes"], note], "updated_at": at}
        steps.append(step)
    event = "completed" + (f" (skipped open steps {', '.join(left)})" if left else "")
    return {
        **plan,
        "steps": steps,
        "is_complete": True,
        "completed_at": at,
        "summary": summary,
        "history": _event(plan, at, event),
    }


_APPLY = {"add_step": _add_step, "update_step": _update_step, "add_note": _add_note, "complete": _complete}


def apply_op(plan: Plan | None, op: PlanOp) -> Plan:
    """``plan`` with ``op`` applied (a new dict; ``plan`` is not changed).

    Raises:
        PlanError: there is no plan, the op was made for another plan, the plan is complete,
            or the op itself is invalid (unknown step, impossible transition, bad text).
    """
    if plan is None:
        raise PlanError("there is no plan yet; create one with a goal and steps first")
    kind = op.get("op")
    apply = _APPLY.get(kind) if isinstance(kind, str) else None
    if apply is None:
        raise PlanError(f"unknown plan op {clip(kind)}; the ops are {', '.join(_APPLY)}")
    if op.get("plan_id") != plan["id"]:
        raise PlanError(
            f"the op was made for plan {clip(op.get('plan_id'))}, the current plan is {plan['id']!r}"
        )
    if plan["is_complete"]:
        raise PlanError(f"plan {plan['id']} is complete; create a new plan for new work")
    at = str(op.get("at") or stamp())
    changed = apply(plan, op, at)
    changed["updated_at"] = at
    return changed


# -- reading what is in state -----------------------------------------------------------------


def _clip(value: Any) -> str:
    return str(value).strip()[:MAX_TEXT_CHARS]


def _as_step(value: Any, index: int, at: str) -> PlanStep | None:
    if isinstance(value, str):
        return _step(f"s{index}", _clip(value), at) if value.strip() else None
    if not isinstance(value, Mapping):
        return None
    text = value.get("description") or value.get("content") or value.get("step")
    if not text:
        return None
    step_id = value.get("id")
    status = value.get("status")
    notes = value.get("notes")
    return PlanStep(
        id=step_id if isinstance(step_id, str) and STEP_ID_PATTERN.fullmatch(step_id) else f"s{index}",
        description=_clip(text),
        status=status if status in STEP_STATUSES else "pending",
        notes=[_clip(n) for n in notes if n] if isinstance(notes, list) else [],
        updated_at=str(value.get("updated_at") or at),
    )


def _as_notes(value: Any) -> list[PlanNote]:
    notes: list[PlanNote] = []
    for note in value if isinstance(value, list) else []:
        if isinstance(note, Mapping) and note.get("text"):
            notes.append(PlanNote(at=str(note.get("at") or ""), text=_clip(note["text"])))
        elif isinstance(note, str) and note.strip():
            notes.append(PlanNote(at="", text=_clip(note)))
    return notes


def _as_corrections(value: Any) -> list[PlanCorrection]:
    found = [
        PlanCorrection(at=str(c.get("at") or ""), text=_clip(c["text"]), batch=str(c.get("batch") or ""))
        for c in (value if isinstance(value, list) else [])
        if isinstance(c, Mapping) and c.get("text")
    ]
    return found[-MAX_CORRECTIONS:]


def as_plan(value: Any) -> Plan | None:
    """The plan in ``value`` (what ``state["plan"]`` holds), normalised; ``None`` when there is none.

    Lenient, for reading: a goal given as a string, a mapping with ``goal`` and ``steps``
    (strings or ``{"content"/"description", "status"}`` items, as ``TodoListMiddleware``
    writes them), or a :class:`PlanPatch` stored as the first value of a new thread. Unknown
    statuses read as ``pending``; ids that are not ``[A-Za-z0-9_-]`` are replaced; texts are
    cut to :data:`MAX_TEXT_CHARS`. Never raises.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return new_plan(_clip(value), plan_id="p0") if value.strip() else None
    if not isinstance(value, Mapping):
        return None
    if "ops" in value and "goal" not in value:  # a patch stored as a thread's first value
        return _apply_leniently(None, value.get("ops"))
    goal = value.get("goal") or value.get("objective")
    if not goal:
        return None
    at = str(value.get("created_at") or stamp())
    steps: list[PlanStep] = []
    for index, item in enumerate(value.get("steps") or value.get("todos") or [], start=1):
        step = _as_step(item, index, at)
        if step is not None and len(steps) < MAX_STEPS:
            steps.append(step)
    seen: set[str] = set()
    for i, step in enumerate(steps):  # ids must be unique
        if step["id"] in seen:
            taken, n = {s["id"] for s in steps} | seen, len(steps)
            while f"s{n}" in taken:
                n += 1
            steps[i] = {**step, "id": f"s{n}"}
        seen.add(steps[i]["id"])
    plan_id = value.get("id")
    raw = value.get("finished")
    finished: list[Any] = raw if isinstance(raw, list) else []
    completed_at = value.get("completed_at")
    summary = value.get("summary")
    plan = Plan(
        id=plan_id if isinstance(plan_id, str) and STEP_ID_PATTERN.fullmatch(plan_id) else "p0",
        goal=_clip(goal),
        steps=steps,
        notes=_as_notes(value.get("notes")),
        history=_as_notes(value.get("history"))[-MAX_HISTORY:],
        created_at=at,
        updated_at=str(value.get("updated_at") or at),
        completed_at=str(completed_at) if completed_at else None,
        is_complete=bool(value.get("is_complete")),
        summary=_clip(summary) if summary else None,
        finished=[p for f in finished if (p := as_plan(f)) is not None and p["is_complete"]][-MAX_FINISHED:],
        corrections=_as_corrections(value.get("corrections")),
    )
    agent = value.get("agent")
    if isinstance(agent, str) and agent:
        plan["agent"] = agent
    return plan


def _correct(plan: Plan, op: Mapping[str, Any], at: str, text: str) -> Plan:
    """``plan`` with ``text`` in its history, and — when a tool call made ``op``, so that its answer
    said it applied — in its corrections."""
    call, batch = op.get("call_id"), op.get("batch")
    if not isinstance(call, str) or not isinstance(batch, str):
        return {**plan, "history": _event(plan, at, text)}
    said = f"call {call} ({_TOOL_OF.get(str(op.get('op')), 'plan tool')}), answered as applied: {text}"
    correction = PlanCorrection(at=at, text=said, batch=batch)
    corrections = [*plan["corrections"], correction][-MAX_CORRECTIONS:]
    return {**plan, "history": _event(plan, at, said), "corrections": corrections}


def _apply_leniently(plan: Plan | None, ops: Any) -> Plan | None:
    """``ops`` applied in order; one that no longer applies is skipped and noted (see :func:`_correct`)."""
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, Mapping):
            continue
        batch = op.get("batch")
        if plan is not None and isinstance(batch, str) and op.get("plan_id") == plan["id"]:
            # a later model message: the model has seen the corrections of the earlier one
            plan = {**plan, "corrections": [c for c in plan["corrections"] if c["batch"] == batch]}
        at = str(op.get("at") or stamp())
        try:
            changed = apply_op(plan, cast(PlanOp, op))
        except PlanError as exc:  # a parallel write got there first: keep the plan, say so
            logger.info("plan op %s skipped: %s", op.get("op"), exc)
            if plan is not None and op.get("plan_id") == plan["id"]:
                plan = _correct(plan, op, at, f"skipped {op.get('op')}: {exc}")
            continue
        if plan is not None and op.get("op") == "add_step":
            added = ({s["id"] for s in changed["steps"]} - {s["id"] for s in plan["steps"]}).pop()
            if added != op.get("step_id"):
                said = f"step id {clip(op.get('step_id'))} was taken; the step is {added}"
                changed = _correct(changed, op, at, said)
        plan = changed
    return plan


def _replaced(old: Plan, new: Plan) -> Plan:
    """``new`` as it replaces ``old``: a completed ``old`` waits in ``finished`` for the archive;
    an active one is dropped, with a trace in ``new``'s history."""
    if old["id"] == new["id"]:
        return new
    if old["is_complete"]:
        replaced: Plan = {**old, "finished": []}
        waiting = [*old["finished"], replaced, *new["finished"]]
        return {**new, "finished": waiting[-MAX_FINISHED:]}
    done = sum(s["status"] == "completed" for s in old["steps"])
    trace = (
        f"replaced plan {old['id']} ({quote(old['goal'][:80])}, {done} of {len(old['steps'])} steps done), "
        "which was not complete"
    )
    return {**new, "history": _event(new, new["created_at"], trace)}


def plan_reducer(current: Any, update: Any) -> Plan | None:
    """The reducer of the ``plan`` state key.

    - a :class:`PlanPatch` (``{"ops": [...]}``): each op applied in order to the plan as it
      is now, so updates written in the same step (parallel tool calls) all stick; an op
      that no longer applies is skipped and noted in the plan's ``history`` — and, when a tool
      call made it, in its ``corrections``, which the model sees with the plan; an added step
      whose proposed id was taken gets the next free id, reported the same way;
    - a whole :class:`Plan` (or a goal as a string): it becomes the plan; a completed plan it
      replaces is kept in its ``finished`` list until the turn service archives it; an active
      plan it replaces is dropped, with a trace in the new plan's history;
    - ``None``: the plan is cleared.

    Raises:
        PlanError: ``update`` is none of these (a bug in the code that wrote it).
    """
    if update is None:
        return None
    if isinstance(update, Mapping) and "ops" in update and "goal" not in update:
        return _apply_leniently(as_plan(current), update["ops"])
    if isinstance(update, str | Mapping):
        found = as_plan(update)
        if found is not None:
            old = as_plan(current)
            return found if old is None else _replaced(old, found)
    raise PlanError(
        f"cannot update the plan with {clip(update)}: write a patch {{'ops': [...]}}, a plan with a goal, "
        "or None to clear it"
    )


class PlanState(TypedDict, total=False):
    """A state mixin with the ``plan`` key and its reducer; usable alone in a hand-written graph.

    ``class State(MessagesState, PlanState): ...``
    """

    plan: Annotated[Plan | None, plan_reducer]


def current_steps(plan: Plan) -> list[PlanStep]:
    """The steps in progress."""
    return [s for s in plan["steps"] if s["status"] == "in_progress"]
