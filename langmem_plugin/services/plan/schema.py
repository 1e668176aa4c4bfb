"""The plan's data: its typed dicts, its limits, and the checks of the texts and step ids it holds.

Everything in a plan is plain JSON (every checkpointer serialises it). A text (goal, step,
note, summary) is checked by :func:`plan_text`: not blank (nothing but spaces, control or
invisible format characters), no lone surrogate, at most :data:`MAX_TEXT_CHARS` characters.
A step id is checked by :func:`check_step_id`: exactly an id of the plan, no normalisation
(``" s1 "`` or ``"ｓ1"`` is not ``s1``); what is wrong and the id that was probably meant go
into the :class:`~langmem_plugin.errors.PlanError`, for the model to act on.

>>> check_step_id(" s1", ["s1", "s2"])
Traceback (most recent call last):
...
langmem_plugin.errors.PlanError: step id " s1" has spaces around it (did you mean 's1'?); its steps ...
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NotRequired, TypeAlias, get_args

from typing_extensions import TypedDict  # pydantic (state schemas) needs it before Python 3.12

from langmem_plugin.core.fence import quote
from langmem_plugin.core.record import utc_now
from langmem_plugin.errors import PlanError

__all__ = [
    "MAX_CONTEXT_NOTES",
    "MAX_CORRECTIONS",
    "MAX_FINISHED",
    "MAX_HISTORY",
    "MAX_STEPS",
    "MAX_STEP_ID_CHARS",
    "MAX_STEP_NOTES",
    "MAX_TEXT_CHARS",
    "PLAN_CATEGORY",
    "STEP_ID_PATTERN",
    "STEP_STATUSES",
    "TRANSITIONS",
    "Plan",
    "PlanCorrection",
    "PlanNote",
    "PlanOp",
    "PlanPatch",
    "PlanStep",
    "PlanUpdate",
    "StepStatus",
    "check_step_id",
    "clip",
    "is_blank",
    "plan_text",
    "stamp",
]

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
#: The most corrections a plan keeps (see :attr:`Plan.corrections`).
MAX_CORRECTIONS = 5
#: The longest step id.
MAX_STEP_ID_CHARS = 40
#: What a step id (and a plan id) is: letters, digits, ``_`` and ``-``.
STEP_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,40}")
#: The category of archived plans in session memory.
PLAN_CATEGORY = "plans"

# What shows nothing: a text made only of these categories and characters (and spaces) is blank.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # Hangul fillers, the blank Braille cell


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


class PlanCorrection(TypedDict):
    """A tool answer the merge of parallel calls contradicted, for the model's next view."""

    at: str
    text: str
    batch: str
    """The model message whose tool calls made the op (a later message's op clears it)."""


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
    corrections: list[PlanCorrection]
    """Tool answers of the last model message that the merge contradicted (an op made by a
    tool call that no longer applied, a step id that was taken); rendered with the plan until a
    tool call of a later model message changes the plan. Empty when the answers were true."""
    agent: NotRequired[str]
    """The sub-agent whose own plan it is (its plan rule is ``isolated``; see
    :mod:`~langmem_plugin.services.plan.owner`); absent: the root agent's plan."""


class PlanOp(TypedDict, total=False):
    """One change of a plan, made against the plan with id ``plan_id``.

    ``op`` is ``add_step`` (``description``, ``after``, proposed ``step_id``),
    ``update_step`` (``step_id``, ``status``, ``notes``), ``add_note`` (``note``) or
    ``complete`` (``summary``); ``at`` is when the op was made (so replaying it gives
    the same plan). ``call_id`` and ``batch`` name the tool call that made it and its model
    message (the reducer reports a contradicted answer under them).
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
    call_id: str
    batch: str


class PlanPatch(TypedDict):
    """An update of the ``plan`` key that applies ``ops`` to the plan as it is when merged."""

    ops: list[PlanOp]


#: What may be written to the ``plan`` key: a patch, a whole plan (or a goal), or ``None`` to clear.
PlanUpdate: TypeAlias = PlanPatch | Plan | str | None


def stamp(now: datetime | None = None) -> str:
    """``now`` (default: the current time) as the plan writes times: ISO 8601 to the second."""
    return (now or utc_now()).isoformat(timespec="seconds")


def clip(value: Any, chars: int = 60) -> str:
    """``value`` quoted for an error message (escaped, at most about ``chars`` characters)."""
    if not isinstance(value, str):
        shown = repr(value)
        return shown if len(shown) <= chars else f"{shown[:chars]}…"
    if len(value) > chars:
        return f"{quote(value[:chars])}… ({len(value)} characters)"
    return quote(value)


def is_blank(text: str) -> bool:
    """No visible character: only spaces, controls, invisible format or combining characters."""
    return all(ch.isspace() or ch in _BLANK_LETTERS or unicodedata.category(ch) in _INVISIBLE for ch in text)


def plan_text(value: Any, what: str) -> str:
    """``value`` as a text of the plan (stripped of surrounding spaces).

    Raises:
        PlanError: not a text, blank (see :func:`is_blank`), with a lone surrogate, or over
            :data:`MAX_TEXT_CHARS`.
    """
    if not isinstance(value, str):
        raise PlanError(f"{what} must be a text, got {clip(value)} ({type(value).__name__})")
    if is_blank(value):
        raise PlanError(f"{what} must be a non-empty text, got {clip(value)}")
    if any(unicodedata.category(ch) == "Cs" for ch in value):
        raise PlanError(f"{what} holds a lone surrogate, which no checkpointer keeps as written: remove it")
    text = value.strip()
    if len(text) > MAX_TEXT_CHARS:
        raise PlanError(
            f"{what} is {len(text)} characters, more than {MAX_TEXT_CHARS}; shorten it "
            "(keep details in a context note or in memory)"
        )
    return text


def _meant(value: str, ids: list[str]) -> str | None:
    """The id ``value`` probably meant: the same after NFKC, stripping and case folding, or ``s<n>``
    for a bare number ``n``."""
    folded = unicodedata.normalize("NFKC", value).strip().casefold()
    for step_id in ids:
        if step_id.casefold() in (folded, f"s{folded}"):
            return step_id
    return None


def check_step_id(value: Any, ids: Iterable[str]) -> str:
    """``value`` when it is exactly one of ``ids`` (the plan's step ids).

    Raises:
        PlanError: ``value`` is not a text, is empty, has spaces around it, is too long, holds a
            character a step id does not have, or is not a step of the plan; the message says
            which, names the plan's steps and the id ``value`` probably meant.
    """
    known = list(ids)
    steps = f"its steps are: {', '.join(known)}" if known else "the plan has no steps yet"
    if not isinstance(value, str):
        raise PlanError(f'a step id is a text like "s1", got {clip(value)} ({type(value).__name__}); {steps}')
    if value in known:
        return value
    meant = _meant(value, known)
    hint = f" (did you mean {meant!r}?)" if meant else ""
    if is_blank(value):
        problem = f"step id {clip(value)} is empty"
    elif value != value.strip():
        problem = f"step id {clip(value)} has spaces around it"
    elif len(value) > MAX_STEP_ID_CHARS:
        problem = f'step id {clip(value)} is too long; step ids are short, like "s1"'
    elif not STEP_ID_PATTERN.fullmatch(value):
        problem = f"step id {clip(value)} is not a step id (step ids have only letters, digits, '_' and '-')"
    else:  # well formed: repr shows it as it is
        problem = f"the plan has no step {value!r}"
    raise PlanError(f"{problem}{hint}; {steps}")
