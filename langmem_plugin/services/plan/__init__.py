"""Plan mode: the plan in graph state, by thread.

- :mod:`.state`: the plan, its operations and the reducer that applies them.
- :mod:`.render`: the plan as the model and a reader see it, and archiving finished plans.

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

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
    "Plan",
    "PlanConfig",
    "PlanOp",
    "PlanState",
    "PlanUpdate",
    "add_note_op",
    "add_step_op",
    "apply_op",
    "archive_key",
    "archive_steps",
    "as_plan",
    "complete_op",
    "new_plan",
    "plan_progress",
    "plan_prompt_lines",
    "plan_reducer",
    "render_plan",
    "update_step_op",
]
