"""Memory across agents: what each compartment does for a sub-agent, set once.

A graph with several agents — a supervisor and its workers, a swarm, an agent that calls another
through a tool, a compiled subgraph as a node — runs the same :class:`~langmem_plugin.Memory` in
each. Who runs is part of the :class:`~langmem_plugin.core.scope.Scope`, resolved from the run and
never from a model's arguments (:func:`~langmem_plugin.core.scope.resolve_scope`): the top of the
graph is the *root*; a run inside a subgraph or inside another agent's tool is a *sub-agent*,
named by ``create_agent(name=...)``, by the subgraph's node path, or by ``memory.agent("name")``.

Each compartment has one rule for sub-agents (:class:`Sharing`):

- ``shared``: the sub-agent reads and writes the root's compartment;
- ``isolated``: it has its own, which no other agent (the root included) reads — stored
  compartments under ``("memories", "agent", "{agent}", ...)``, run notes and plan in state
  marked with their agent;
- ``read_only``: it reads the root's compartment and changes nothing there: its tools answer with
  an error it can act on, and what its turns would write there automatically (episodes, stored
  tool results, summaries) is not written.

The root always uses the shared compartments. Defaults (:class:`AgentRules`) follow the design:
run notes and the plan are each agent's own; session, user memory, tool results and knowledge
are shared. Every surface (nodes, middleware, callback, tools, ``wrap``, the inspector) reads
the rule through :class:`~langmem_plugin.services.layout.MemoryLayout`, so it is written once.

>>> rules = AgentRules(results="isolated", agents={"auditor": {"user": "read_only"}})
>>> rules.rule("results", "researcher").value, rules.rule("user", "auditor").value
('isolated', 'read_only')
>>> rules.rule("run", None).value  # the root
'shared'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType

from langmem_plugin.core.scope import exact_id
from langmem_plugin.errors import ConfigurationError

__all__ = ["AGENT_COMPARTMENTS", "AgentRules", "Sharing"]


class Sharing(StrEnum):
    """What a compartment is to a sub-agent."""

    SHARED = "shared"
    """It reads and writes the root's compartment."""
    ISOLATED = "isolated"
    """It has its own; no other agent reads it."""
    READ_ONLY = "read_only"
    """It reads the root's compartment and writes nothing there."""


#: The compartments a rule names: the stored ones, run notes and the plan (both in graph state).
AGENT_COMPARTMENTS: tuple[str, ...] = ("user", "session", "results", "knowledge", "run", "plan")


def _sharing(value: Sharing | str, where: str) -> Sharing:
    try:
        return Sharing(value)
    except ValueError:
        raise ConfigurationError(
            f"{where} is {value!r}, which is no rule. Fix: use one of {[s.value for s in Sharing]}."
        ) from None


@dataclass(frozen=True)
class AgentRules:
    """The rule of each compartment for sub-agents, and the agents that differ from it.

    Attributes:
        user: the user's memories and exchanges.
        session: the thread's session memory (summaries, archived plans).
        results: stored tool results.
        knowledge: agent knowledge; ``shared``: the root agent's documents, ``isolated``: the
            sub-agent's own (``memory.add_documents(..., agent="researcher")``).
        run: run notes (graph state).
        plan: the plan (graph state).
        agents: per agent name, the compartments whose rule differs for it, e.g.
            ``{"auditor": {"user": "read_only"}}``.
    """

    user: Sharing | str = Sharing.SHARED
    session: Sharing | str = Sharing.SHARED
    results: Sharing | str = Sharing.SHARED
    knowledge: Sharing | str = Sharing.SHARED
    run: Sharing | str = Sharing.ISOLATED
    plan: Sharing | str = Sharing.ISOLATED
    agents: Mapping[str, Mapping[str, Sharing | str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "agents":
                object.__setattr__(self, f.name, _sharing(getattr(self, f.name), f"AgentRules.{f.name}"))
        if not isinstance(self.agents, Mapping):
            raise ConfigurationError(
                f"AgentRules.agents must map agent names to rules, got {type(self.agents).__name__}. "
                'Fix: agents={"auditor": {"user": "read_only"}}.'
            )
        checked: dict[str, Mapping[str, Sharing]] = {}
        for name, rules in self.agents.items():
            agent = exact_id("agent", name)
            if not isinstance(rules, Mapping):
                raise ConfigurationError(
                    f"AgentRules.agents[{agent!r}] must map compartments to rules, got {rules!r}. "
                    'Fix: {"user": "read_only"}.'
                )
            own: dict[str, Sharing] = {}
            for compartment, value in rules.items():
                if compartment not in AGENT_COMPARTMENTS:
                    raise ConfigurationError(
                        f"AgentRules.agents[{agent!r}] names the compartment {compartment!r}, which has "
                        f"no rule. Fix: use one of {list(AGENT_COMPARTMENTS)}."
                    )
                own[compartment] = _sharing(value, f"AgentRules.agents[{agent!r}][{compartment!r}]")
            checked[agent] = MappingProxyType(own)
        object.__setattr__(self, "agents", MappingProxyType(checked))

    def rule(self, compartment: str, agent: str | None, *, subagent: bool = True) -> Sharing:
        """The rule of ``compartment`` for ``agent``: :attr:`Sharing.SHARED` for the root (no agent,
        or ``subagent=False``), else the agent's own rule or the default.

        Raises:
            ConfigurationError: ``compartment`` has no rule.
        """
        key = str(compartment)
        if key not in AGENT_COMPARTMENTS:
            raise ConfigurationError(
                f"the compartment {key!r} has no rule across agents; use one of {list(AGENT_COMPARTMENTS)}"
            )
        if agent is None or not subagent:
            return Sharing.SHARED
        own = self.agents.get(agent, {})
        return Sharing(own.get(key) or getattr(self, key))

    def isolates(self, compartment: str) -> bool:
        """Whether some sub-agent has its own ``compartment`` (by default or as its own rule)."""
        return getattr(self, compartment) is Sharing.ISOLATED or any(
            own.get(compartment) is Sharing.ISOLATED for own in self.agents.values()
        )

    def with_agent(self, agent: str, rules: Mapping[str, Sharing | str]) -> AgentRules:
        """These rules, with ``agent``'s own ``rules`` on top of what it had."""
        agents = {name: dict(own) for name, own in self.agents.items()}
        agents[agent] = {**agents.get(agent, {}), **rules}
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "agents"}
        return AgentRules(**values, agents=agents)
