"""Whose plan is in state, and what each agent may do with it.

A compiled subgraph that is a node of its parent shares the parent's state keys its schema has,
so the root agent and a sub-agent (:mod:`langmem_plugin.services.agents`) can find one plan in
one ``plan`` channel. The plan says whose it is (:attr:`~.schema.Plan.agent`: the sub-agent that
created it as its own; absent: the root's), and the rule ``plan`` of the agent that runs says
what it sees and may change:

- the root, and a ``shared`` sub-agent: the root's plan, as a single agent has it;
- ``isolated`` (the default for sub-agents): only its own plan. It does not see another agent's
  plan in its prompt, and its plan tools do not change it; it creates its own when the state
  holds none. The root does not see or change a sub-agent's plan either;
- ``read_only``: it sees the root's plan and changes nothing.

A plan tool asked to do what the rule forbids answers with an :class:`~langmem_plugin.errors.AgentAccessError`
the model can act on, which also says how to give the sub-agent a state of its own. The end of
a run archives and clears only the plan of the agent whose run it is (:func:`owns_plan_lifetime`):
a sub-agent that shares or reads the root's plan leaves it to the root's run.

>>> from langmem_plugin.core.scope import Scope
>>> from langmem_plugin.services.plan.state import new_plan
>>> layout = MemoryLayout()
>>> researcher = Scope(agent="researcher", subagent=True)
>>> root_plan = new_plan("Write the report", ["Outline"], plan_id="p1")
>>> visible_plan(root_plan, researcher, layout) is None  # isolated: not its plan
True
>>> visible_plan(root_plan, Scope(), layout)["goal"]
'Write the report'
"""

from __future__ import annotations

from typing import Any

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import AgentAccessError
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.plan.schema import Plan
from langmem_plugin.services.plan.state import as_plan

__all__ = ["check_plan_access", "owns_plan_lifetime", "plan_owner", "plan_rule", "visible_plan"]

#: The compartment's name in :class:`~langmem_plugin.services.agents.AgentRules`.
PLAN = "plan"


def plan_rule(scope: Scope, layout: MemoryLayout) -> Sharing:
    """The rule of the plan for the agent ``scope`` runs as (the root: ``shared``)."""
    return layout.agents.rule(PLAN, scope.agent, subagent=scope.subagent)


def plan_owner(scope: Scope, layout: MemoryLayout) -> str | None:
    """Whose plan the agent ``scope`` runs as works on: its own name when its plan is ``isolated``;
    ``None`` (the root's plan) for the root and a ``shared`` or ``read_only`` sub-agent."""
    return scope.agent if plan_rule(scope, layout) is Sharing.ISOLATED else None


def visible_plan(value: Any, scope: Scope, layout: MemoryLayout) -> Plan | None:
    """The plan in ``value`` (what ``state["plan"]`` holds) when the agent ``scope`` runs as may see
    it; ``None`` when there is none or it is another agent's."""
    plan = as_plan(value)
    return plan if plan is not None and plan.get("agent") == plan_owner(scope, layout) else None


def owns_plan_lifetime(scope: Scope, layout: MemoryLayout) -> bool:
    """Whether the end of the run of the agent ``scope`` runs as archives and clears its plan: the
    root's run, and an ``isolated`` sub-agent's (its own plan); not a sub-agent that shares or
    reads the root's plan."""
    return not scope.subagent or plan_rule(scope, layout) is Sharing.ISOLATED


def _whose(agent: str | None) -> str:
    return "the root agent's" if agent is None else f"the agent {agent!r}'s"


def check_plan_access(plan: Plan | None, scope: Scope, layout: MemoryLayout, *, write: bool) -> None:
    """Check that the agent ``scope`` runs as may read (``write=False``) or change ``plan`` (the plan
    in state, ``None``: none; creating one is a change).

    Raises:
        AgentAccessError: ``plan`` is another agent's, or ``write`` of a plan that is read-only to
            the agent. Its message says what the model can do and how to give the agent its own.
    """
    me = scope.agent if scope.subagent else None
    rule = plan_rule(scope, layout)
    if write and rule is Sharing.READ_ONLY:
        raise AgentAccessError(
            f"the plan is read-only to the agent {me!r}: it sees the plan of the agent that called it "
            "and changes nothing. Work without changing it and say in your answer what should change. "
            f"Fix (for the graph's author): give this agent its own plan with AgentRules(agents={{{me!r}: "
            "{'plan': 'isolated'}})",
            agent=me or "",
            compartment=PLAN,
        )
    owner = plan.get("agent") if plan is not None else None
    if plan is None or owner == plan_owner(scope, layout):
        return
    who = "the root agent" if me is None else f"the agent {me!r}"
    raise AgentAccessError(
        f"the plan in this graph state is {_whose(owner)} and kept apart from {who}: you can neither see "
        "nor change it, nor create another beside it (the state holds one plan). Work without a plan "
        "here (keep what you need in your messages). Fix (for the graph's author): give the sub-agent "
        "a state of its own (invoke its graph from a node with only the messages it needs, instead of "
        "adding it as a node that shares the parent's 'plan' key), or share the plan with "
        "AgentRules(plan='shared')",
        agent=me or "",
        compartment=PLAN,
    )
