"""The agent's plan, rendered: a prompt section within a token budget, and a memory when archived.

- :func:`plan_prompt_lines` / :func:`render_plan`: the plan as compact lines within a token
  budget (counted with :func:`~langmem_plugin.core.tokens.count_tokens`). When the whole plan
  does not fit, completed steps collapse first; the steps in progress are never dropped; every
  text the model or a user wrote (goal, steps, notes, summary) is quoted like a memory, so it
  can neither close the ``<memory_context>`` fence nor start a line of its own.
- :func:`plan_record` / :func:`archive_steps`: a completed plan becomes one
  :class:`~langmem_plugin.core.record.MemoryRecord` of kind ``plan`` (its goal, steps, notes
  and summary) in session memory, under a key made from the plan id, so archiving it twice
  leaves one record that ``search_memory`` finds.

>>> from langmem_plugin.services.plan.state import new_plan
>>> plan = new_plan("Ship 2.0", [f"step {i}" for i in range(1, 31)], plan_id="p1")
>>> print(render_plan(plan, budget=60))
[plan]
goal: "Ship 2.0" (0 of 30 steps done)
- s1 [pending] "step 1"
- s2 [pending] "step 2"
- pending later: s3-s30
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import PutOp

from langmem_plugin.core.fence import quote
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.operations import INDEX_FIELDS, count_steps
from langmem_plugin.services.plan.state import MAX_TEXT_CHARS, PLAN_CATEGORY, Plan, StepStatus, as_plan
from langmem_plugin.services.store_steps import StoreSteps

__all__ = ["archive_key", "archive_steps", "plan_progress", "plan_prompt_lines", "plan_record", "render_plan"]


# -- the prompt section -----------------------------------------------------------------------


def _ids(ids: list[str]) -> str:
    """``s1, s2, s3, s5`` as ``s1-s3, s5``."""
    runs: list[list[str]] = []
    for step_id in ids:
        last = runs[-1][-1] if runs else ""
        numbered = last[1:].isdecimal() and step_id[1:].isdecimal() and last[0] == step_id[0] == "s"
        if numbered and int(step_id[1:]) == int(last[1:]) + 1:
            runs[-1].append(step_id)
            continue
        runs.append([step_id])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _short(text: str, chars: int | None) -> str:
    return text if chars is None or len(text) <= chars else text[: max(chars - 1, 1)] + "…"


@dataclass(frozen=True)
class _Detail:
    """How much of a plan to show; each shrink step of :func:`_details` lowers one knob."""

    collapse: frozenset[StepStatus] = frozenset()  # statuses shown as one line of ids
    counts_only: bool = False  # collapsed statuses as counts, not ids
    step_notes: str = "all"  # "all" | "current" | "none"
    context_notes: int | None = None  # newest this many (None: all)
    pending: int | None = None  # first this many pending steps (None: all)
    goal_chars: int | None = None
    step_chars: int | None = None
    show_goal: bool = True
    folded: bool = True  # lines that stand for collapsed or later steps
    corrections: bool = True  # tool answers the merge contradicted (see Plan.corrections)


def _details(plan: Plan) -> Iterator[_Detail]:
    d = _Detail()
    yield d
    d = dataclasses.replace(d, collapse=frozenset({"completed"}))
    yield d
    d = dataclasses.replace(d, step_notes="current")
    yield d
    d = dataclasses.replace(d, collapse=frozenset({"completed", "skipped"}))
    yield d
    for keep in range(len(plan["notes"]) - 1, -1, -1):
        d = dataclasses.replace(d, context_notes=keep)
        yield d
    pending = sum(s["status"] == "pending" for s in plan["steps"])
    for keep in range(pending - 1, 0, -1):
        d = dataclasses.replace(d, pending=keep)
        yield d
    d = dataclasses.replace(d, step_notes="none")
    yield d
    d = dataclasses.replace(d, collapse=frozenset({"completed", "skipped", "blocked"}), counts_only=True)
    yield d
    d = dataclasses.replace(d, pending=0)
    yield d
    d = dataclasses.replace(d, folded=False)
    yield d
    for chars in (200, 80, 30):
        d = dataclasses.replace(d, goal_chars=chars, step_chars=chars)
        yield d
    d = dataclasses.replace(d, show_goal=False)
    yield d
    yield dataclasses.replace(d, corrections=False)


def _lines(plan: Plan, d: _Detail) -> list[str]:
    steps = plan["steps"]
    done = sum(s["status"] == "completed" for s in steps)
    progress = f"{'complete, ' if plan['is_complete'] else ''}{done} of {len(steps)} steps done"
    top = [f"goal: {quote(_short(plan['goal'], d.goal_chars))} ({progress})" if d.show_goal else progress]
    if plan["is_complete"] and plan["summary"]:
        top.append(f"summary: {quote(_short(plan['summary'], d.goal_chars))}")
    collapsed: dict[str, list[str]] = {}
    body: list[str] = []
    later: list[str] = []
    shown_pending = 0
    for step in steps:
        status = step["status"]
        if status in d.collapse:
            collapsed.setdefault(status, []).append(step["id"])
            continue
        if status == "pending":
            if d.pending is not None and shown_pending >= d.pending:
                later.append(step["id"])
                continue
            shown_pending += 1
        line = f"- {step['id']} [{status}] {quote(_short(step['description'], d.step_chars))}"
        current = status in ("in_progress", "blocked")
        if step["notes"] and (d.step_notes == "all" or (d.step_notes == "current" and current)):
            shown = step["notes"] if d.step_notes == "all" else step["notes"][-2:]
            line += " notes: " + "; ".join(quote(_short(n, d.step_chars)) for n in shown)
        body.append(line)
    head = [
        f"- {status}: " + (f"{len(ids)} steps" if d.counts_only else _ids(ids))
        for status, ids in collapsed.items()
    ]
    if not d.folded:
        head, later = [], []
    if later:
        body.append(f"- pending later: {f'{len(later)} steps' if d.counts_only else _ids(later)}")
    notes = plan["notes"]
    if d.context_notes is not None:
        notes = notes[len(notes) - d.context_notes :] if d.context_notes else []
    tail = [
        "notes:",
        *(f"- ({n['at'][:16] or '?'}) {quote(_short(n['text'], d.step_chars))}" for n in notes),
    ]
    fixes = plan["corrections"] if d.corrections else []
    fixed = [
        "corrections (answers to your last plan tool calls that did not hold):",
        *(f"- {quote(_short(c['text'], d.step_chars))}" for c in fixes),
    ]
    return [*top, *(fixed if fixes else []), *head, *body, *(tail if notes else [])]


def plan_prompt_lines(
    plan: Any, *, budget: int | None = None, model: str | None = None, header: str = "[plan]"
) -> list[str]:
    """The lines of the plan section (after ``header``), fitted so that ``header`` and the
    lines, joined by newlines, count at most ``budget`` tokens (``None``: no limit).

    When the whole plan does not fit, it shrinks in this order: completed steps collapse to
    a line of ids, notes of steps not in progress go, skipped steps collapse, the oldest
    context notes go, later pending steps fold into one line, ... The steps in progress
    are never dropped (their texts are shortened last). ``[]`` when there is no plan, the
    budget is 0, or not even the current step fits.
    """
    found = as_plan(plan)
    if found is None or budget == 0:
        return []
    for detail in _details(found):
        lines = _lines(found, detail)
        if budget is None or count_tokens("\n".join([header, *lines]), model=model) <= budget:
            return lines
    return []


def plan_progress(plan: Any) -> str:
    """One line for a tool's answer: the goal, how many steps are done, the steps in progress
    or blocked, and the next pending step (the whole plan is in the system prompt)."""
    found = as_plan(plan)
    if found is None:
        return "There is no plan."
    steps = found["steps"]
    done = sum(s["status"] == "completed" for s in steps)
    parts = [f"Plan {quote(_short(found['goal'], 80))}: {done} of {len(steps)} steps done"]
    if found["is_complete"]:
        parts.append("complete")
    for status in ("in_progress", "blocked"):
        ids = [s["id"] for s in steps if s["status"] == status]
        if ids:
            parts.append(f"{status.replace('_', ' ')}: {_ids(ids)}")
    upcoming = next((s for s in steps if s["status"] == "pending"), None)
    if upcoming is not None and not found["is_complete"]:
        parts.append(f"next: {upcoming['id']} {quote(_short(upcoming['description'], 80))}")
    return "; ".join(parts) + "."


def render_plan(
    plan: Any, *, budget: int | None = None, model: str | None = None, header: str = "[plan]"
) -> str:
    """The plan section: ``header`` and :func:`plan_prompt_lines` ('' when there is nothing to show)."""
    lines = plan_prompt_lines(plan, budget=budget, model=model, header=header)
    return "\n".join([header, *lines]) if lines else ""


# -- the archive ------------------------------------------------------------------------------


def archive_key(plan: Plan) -> str:
    """The session-memory key of an archived plan (one record per plan id)."""
    return f"plan-{plan['id']}"


def plan_record(
    plan: Plan, *, thread_id: str | None = None, max_chars: int = MAX_TEXT_CHARS * 8
) -> MemoryRecord:
    """The archived plan: a memory of kind ``plan`` with its goal, steps, notes and summary."""
    lines = [f"Plan: {plan['goal']}"]
    if plan["summary"]:
        lines.append(f"Summary: {plan['summary']}")
    lines.append("Steps:")
    for step in plan["steps"]:
        notes = f" (notes: {'; '.join(step['notes'])})" if step["notes"] else ""
        lines.append(f"- {step['id']} [{step['status']}] {step['description']}{notes}")
    if plan["notes"]:
        lines.append("Notes:")
        lines.extend(f"- {n['at']} {n['text']}" for n in plan["notes"])
    content = "\n".join(lines)
    if len(content) > max_chars:
        content = content[: max_chars - 1] + "…"
    metadata = {"plan_id": plan["id"], "created_at": plan["created_at"]}
    if plan["completed_at"]:
        metadata["completed_at"] = plan["completed_at"]
    if thread_id:
        metadata["thread_id"] = thread_id
    if "agent" in plan:  # a sub-agent's own plan
        metadata["agent"] = plan["agent"]
    return MemoryRecord(
        content=content,
        category=PLAN_CATEGORY,
        kind=MemoryKind.PLAN,
        source="plan",
        tags=["plan"],
        metadata=metadata,
    )


def archive_steps(scope: Scope, layout: MemoryLayout, plan: Plan) -> StoreSteps[tuple[tuple[str, ...], str]]:
    """Write ``plan`` to session memory (kind ``plan``); returns ``(namespace, key)``.

    Raises:
        ScopeError: the scope has no ``thread_id``.
        MemoryLimitError: session memory is full.
    """
    namespace = layout.namespace(Compartment.SESSION, scope)
    limits = layout.limits_for(Compartment.SESSION)
    if limits.max_items is not None and (yield from count_steps(namespace, at_least=limits.max_items)):
        layout.check_room(Compartment.SESSION, limits.max_items)
    record = plan_record(plan, thread_id=scope.thread_id, max_chars=limits.max_chars)
    key = archive_key(plan)
    yield [PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS)]
    return namespace, key
