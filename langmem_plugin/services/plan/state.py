"""The agent's plan: typed state, its operations, a reducer, the prompt section and the archive.

"Plan" here means one thing only: the plan an agent keeps in graph state (``state["plan"]``),
persisted by the graph's checkpointer under the run's ``thread_id``. This module is pure
logic, no I/O:

- **State** — :class:`Plan` (a goal, :class:`PlanStep` items with ids, status, notes and
  times, timestamped context notes, a short history), plain JSON-able dicts that every
  checkpointer serialises. :class:`PlanState` is the state mixin with the ``plan`` key.
- **Operations** — :func:`new_plan`, then ops made against the current plan
  (:func:`add_step_op`, :func:`update_step_op`, :func:`add_note_op`, :func:`complete_op`)
  and :func:`apply_op`, which returns a new plan or raises
  :class:`~langmem_plugin.errors.PlanError` (an unknown step id, a transition
  :data:`TRANSITIONS` does not allow, an op made for another plan, a text too long).
- **Reducer** — :func:`plan_reducer` merges updates of the ``plan`` key: a
  :class:`PlanPatch` (a list of ops, each carrying the ids it acts on) is applied to the
  plan *as it is now*, so two tool calls of one step (parallel tool calls) both stick;
  a whole :class:`Plan` sets the plan; ``None`` clears it. The reducer never raises for
  an op that no longer applies (a parallel op got there first): it is skipped and noted
  in the plan's history.
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
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Annotated, Any, Literal, TypeAlias, cast, get_args

from typing_extensions import TypedDict  # pydantic (state schemas) needs it before Python 3.12

from langmem_plugin.core.record import utc_now
from langmem_plugin.errors import ConfigurationError, PlanError

__all__ = [
    "MAX_CONTEXT_NOTES",
    "MAX_STEPS",
    "MAX_TEXT_CHARS",
    "PLAN_CATEGORY",
    "STEP_STATUSES",
    "TRANSITIONS",
    "Plan",
    "PlanConfig",
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

StepStatus: TypeAlias = Literal["pending", "in_progress", "completed", "skipped", "blocked"]
#: Every step status.
STEP_STATUSES: tuple[StepStatus, ...] = get_args(StepStatus)

#: The status a step may move to from each status (``completed`` is final).
TRANSITIONS: Mapping[StepStatus, frozenset[StepStatus]] = MappingProxyType(
    {
        "pending": frozenset({"in_progress", "completed", "skipped", "blocked"}),
        "in_progress": frozenset({"pending", "completed", "skipped", "blocked"}),
        "blocked": frozenset({"pending", "in_progress", "skipped"}),
        "skipped": frozenset({"pending", "in_progress"}),
        "completed": frozenset(),
    }
)

#: The most steps a plan may have.
MAX_STEPS = 50
#: The most context notes a plan may have.
MAX_CONTEXT_NOTES = 50
#: The most notes one step may have.
MAX_STEP_NOTES = 20
#: The longest goal, step description, note or summary, in characters.
MAX_TEXT_CHARS = 1000
#: The most history entries kept (the oldest go first).
MAX_HISTORY = 100
#: The most completed plans a plan keeps for the archive (see :attr:`Plan.finished`).
MAX_FINISHED = 10
#: The category of archived plans in session memory.
PLAN_CATEGORY = "plans"

_OPEN: frozenset[StepStatus] = frozenset({"pending", "in_progress", "blocked"})
_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


class PlanStep(TypedDict):
    """One step of a plan."""

    id: str
    """``s1``, ``s2``, ...: what the tools and the model call the step."""
    description: str
    status: StepStatus
    notes: list[str]
    """What the agent noted while working on it, oldest first."""
    updated_at: str
    """ISO 8601, UTC."""


class PlanNote(TypedDict):
    """A timestamped text: a context note, or an entry of the history."""

    at: str
    text: str


class Plan(TypedDict):
    """The agent's plan, as it lives in graph state (JSON-able)."""

    id: str
    goal: str
    steps: list[PlanStep]
    notes: list[PlanNote]
    """Context notes: what the agent learned that the plan should keep."""
    history: list[PlanNote]
    """What happened to the plan, newest last (at most :data:`MAX_HISTORY`)."""
    created_at: str
    updated_at: str
    completed_at: str | None
    is_complete: bool
    summary: str | None
    finished: list[Plan]
    """Completed plans this one replaced before they were archived (the turn service archives
    them when the run ends; at most :data:`MAX_FINISHED`)."""


class PlanOp(TypedDict, total=False):
    """One change of a plan, made against the plan with id ``plan_id``.

    ``op`` is ``add_step`` (``description``, ``after``, proposed ``step_id``),
    ``update_step`` (``step_id``, ``status``, ``notes``), ``add_note`` (``note``) or
    ``complete`` (``summary``); ``at`` is when the op was made (so replaying it gives
    the same plan).
    """

    op: Literal["add_step", "update_step", "add_note", "complete"]
    plan_id: str
    at: str
    step_id: str
    description: str
    after: str | None
    status: StepStatus | None
    notes: str | None
    note: str
    summary: str | None


class PlanPatch(TypedDict):
    """An update of the ``plan`` key that applies ``ops`` to the plan as it is when merged."""

    ops: list[PlanOp]


#: What may be written to the ``plan`` key: a patch, a whole plan (or a goal), or ``None`` to clear.
PlanUpdate: TypeAlias = PlanPatch | Plan | str | None


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


def _stamp(now: datetime | None = None) -> str:
    return (now or utc_now()).isoformat(timespec="seconds")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanError(f"{what} must be a non-empty text, got {value!r}")
    text = value.strip()
    if len(text) > MAX_TEXT_CHARS:
        raise PlanError(
            f"{what} is {len(text)} characters, more than {MAX_TEXT_CHARS}; shorten it "
            "(keep details in a context note or in memory)"
        )
    return text


def _event(plan: Plan, at: str, text: str) -> list[PlanNote]:
    return [*plan["history"], PlanNote(at=at, text=text)][-MAX_HISTORY:]


def _step(step_id: str, description: str, at: str) -> PlanStep:
    return PlanStep(id=step_id, description=description, status="pending", notes=[], updated_at=at)


def new_plan(
    goal: str, steps: Sequence[str] = (), *, now: datetime | None = None, plan_id: str | None = None
) -> Plan:
    """A new plan: ``goal`` and ``steps`` (descriptions, all pending, ids ``s1``, ``s2``, ...).

    Raises:
        PlanError: an empty goal or step, a text over :data:`MAX_TEXT_CHARS`, more than
            :data:`MAX_STEPS` steps.
    """
    goal = _text(goal, "the goal")
    if isinstance(steps, str):
        raise PlanError("steps must be a list of step descriptions, got one text")
    if len(steps) > MAX_STEPS:
        raise PlanError(f"a plan has at most {MAX_STEPS} steps, got {len(steps)}; group them")
    at = _stamp(now)
    made = [_step(f"s{i}", _text(d, f"step {i}"), at) for i, d in enumerate(steps, start=1)]
    plan_id = plan_id or uuid.uuid4().hex[:8]
    return Plan(
        id=plan_id,
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
    )


def _next_id(plan: Plan) -> str:
    taken = {s["id"] for s in plan["steps"]}
    n = len(plan["steps"]) + 1
    while f"s{n}" in taken:
        n += 1
    return f"s{n}"


def _find(plan: Plan, step_id: Any) -> int:
    wanted = str(step_id).strip()
    for candidate in (wanted, f"s{wanted}"):
        for index, step in enumerate(plan["steps"]):
            if step["id"] == candidate:
                return index
    ids = ", ".join(s["id"] for s in plan["steps"]) or "none"
    raise PlanError(f"the plan has no step {step_id!r}; its steps are: {ids}")


def add_step_op(
    plan: Plan, description: str, *, after: str | None = None, now: datetime | None = None
) -> PlanOp:
    """An op that adds a pending step at the end, or after step ``after``."""
    return PlanOp(
        op="add_step",
        plan_id=plan["id"],
        at=_stamp(now),
        step_id=_next_id(plan),
        description=description,
        after=after,
    )


def update_step_op(
    plan: Plan,
    step_id: str,
    *,
    status: StepStatus | None = None,
    notes: str | None = None,
    now: datetime | None = None,
) -> PlanOp:
    """An op that moves step ``step_id`` to ``status`` and/or adds a note to it."""
    return PlanOp(
        op="update_step", plan_id=plan["id"], at=_stamp(now), step_id=step_id, status=status, notes=notes
    )


def add_note_op(plan: Plan, note: str, *, now: datetime | None = None) -> PlanOp:
    """An op that adds a timestamped context note to the plan."""
    return PlanOp(op="add_note", plan_id=plan["id"], at=_stamp(now), note=note)


def complete_op(plan: Plan, summary: str | None = None, *, now: datetime | None = None) -> PlanOp:
    """An op that completes the plan; its open steps are marked ``skipped`` (with a note)."""
    return PlanOp(op="complete", plan_id=plan["id"], at=_stamp(now), summary=summary)


def _add_step(plan: Plan, op: PlanOp, at: str) -> Plan:
    if len(plan["steps"]) >= MAX_STEPS:
        raise PlanError(f"the plan already has {MAX_STEPS} steps, the most it may have")
    description = _text(op.get("description"), "the step description")
    steps = list(plan["steps"])
    position = len(steps)
    after = op.get("after")
    if after not in (None, ""):
        position = _find(plan, after) + 1
    proposed = op.get("step_id")
    taken = {s["id"] for s in steps}
    step_id = proposed if isinstance(proposed, str) and proposed not in taken else _next_id(plan)
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
        if status not in STEP_STATUSES:
            raise PlanError(f"unknown status {status!r}; a step status is one of {', '.join(STEP_STATUSES)}")
        allowed = TRANSITIONS[step["status"]]
        if status not in allowed:
            could = ", ".join(sorted(allowed)) or "nothing (it is final)"
            raise PlanError(
                f"step {step['id']} cannot go from {step['status']} to {status}; from {step['status']} "
                f"it can go to {could}"
            )
        changed["status"] = status
        events.append(f"{step['id']} {step['status']} -> {status}")
    if note not in (None, ""):
        if len(step["notes"]) >= MAX_STEP_NOTES:
            raise PlanError(f"step {step['id']} already has {MAX_STEP_NOTES} notes; add a context note")
        changed["notes"] = [*step["notes"], _text(note, "the step note")]
        events.append(f"{step['id']} noted")
    steps = list(plan["steps"])
    steps[index] = changed
    return {**plan, "steps": steps, "history": _event(plan, at, "; ".join(events) or f"{step['id']} touched")}


def _add_note(plan: Plan, op: PlanOp, at: str) -> Plan:
    if len(plan["notes"]) >= MAX_CONTEXT_NOTES:
        raise PlanError(f"the plan already has {MAX_CONTEXT_NOTES} context notes; save the rest in memory")
    note = PlanNote(at=at, text=_text(op.get("note"), "the note"))
    return {**plan, "notes": [*plan["notes"], note], "history": _event(plan, at, "context note added")}


def _complete(plan: Plan, op: PlanOp, at: str) -> Plan:
    summary = op.get("summary")
    summary = _text(summary, "the summary") if summary not in (None, "") else None
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
    apply = _APPLY.get(str(kind))
    if apply is None:
        raise PlanError(f"unknown plan op {kind!r}; the ops are {', '.join(_APPLY)}")
    if op.get("plan_id") != plan["id"]:
        raise PlanError(f"the op was made for plan {op.get('plan_id')!r}, the current plan is {plan['id']!r}")
    if plan["is_complete"]:
        raise PlanError(f"plan {plan['id']} is complete; create a new plan for new work")
    at = str(op.get("at") or _stamp())
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
        id=step_id if isinstance(step_id, str) and _ID.fullmatch(step_id) else f"s{index}",
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
    at = str(value.get("created_at") or _stamp())
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
    return Plan(
        id=plan_id if isinstance(plan_id, str) and _ID.fullmatch(plan_id) else "p0",
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
    )


def _apply_leniently(plan: Plan | None, ops: Any) -> Plan | None:
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, Mapping):
            continue
        try:
            plan = apply_op(plan, cast(PlanOp, op))
        except PlanError as exc:  # a parallel op got there first: keep the plan, say so
            logger.info("plan op %s skipped: %s", op.get("op"), exc)
            if plan is not None and op.get("plan_id") == plan["id"]:
                at = str(op.get("at") or _stamp())
                plan = {**plan, "history": _event(plan, at, f"skipped {op.get('op')}: {exc}")}
    return plan


def plan_reducer(current: Any, update: Any) -> Plan | None:
    """The reducer of the ``plan`` state key.

    - a :class:`PlanPatch` (``{"ops": [...]}``): each op applied in order to the plan as it
      is now, so updates written in the same step (parallel tool calls) all stick; an op
      that no longer applies is skipped and noted in the plan's ``history``;
    - a whole :class:`Plan` (or a goal as a string): it becomes the plan; a completed plan it
      replaces is kept in its ``finished`` list until the turn service archives it;
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
            if old is not None and old["is_complete"] and old["id"] != found["id"]:
                replaced: Plan = {**old, "finished": []}
                waiting = [*old["finished"], replaced, *found["finished"]]
                found["finished"] = waiting[-MAX_FINISHED:]  # a new dict from as_plan
            return found
    raise PlanError(
        f"cannot update the plan with {update!r}: write a patch {{'ops': [...]}}, a plan with a goal, "
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
