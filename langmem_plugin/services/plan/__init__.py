"""Plan mode: the plan in graph state, by thread.

- :mod:`.schema`: the plan's typed dicts, its limits, the checks of its texts and step ids.
- :mod:`.state`: the plan, its operations and the reducer that applies them.
- :mod:`.render`: the plan as the model and a reader see it, and archiving finished plans.
- :mod:`.calls`: the plan tool calls of one model message replayed in order, so each answer
  says what the merge of their writes does.
- :mod:`.owner`: whose plan is in state, and what each agent (root, sub-agents) may do with it.

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.plan.calls import PLAN_CALLS, CallOutcome, PlanCall, answer, replay_calls
from langmem_plugin.services.plan.owner import (
    check_plan_access,
    owns_plan_lifetime,
    plan_owner,
    plan_rule,
    visible_plan,
)
from langmem_plugin.services.plan.render import (
    archive_key,
    archive_steps,
    plan_progress,
    plan_prompt_lines,
    render_plan,
)
from langmem_plugin.services.plan.state import (
    Plan,
    PlanConfig,
    PlanOp,
    PlanState,
    PlanUpdate,
    add_note_op,
    add_step_op,
    apply_op,
    as_plan,
    complete_op,
    new_plan,
    plan_reducer,
    update_step_op,
)

__all__ = [
    "PLAN_CALLS",
    "CallOutcome",
    "Plan",
    "PlanCall",
    "PlanConfig",
    "PlanOp",
    "PlanState",
    "PlanUpdate",
    "add_note_op",
    "add_step_op",
    "answer",
    "apply_op",
    "archive_key",
    "archive_steps",
    "as_plan",
    "check_plan_access",
    "complete_op",
    "new_plan",
    "owns_plan_lifetime",
    "plan_owner",
    "plan_progress",
    "plan_prompt_lines",
    "plan_reducer",
    "plan_rule",
    "render_plan",
    "replay_calls",
    "update_step_op",
    "visible_plan",
]
