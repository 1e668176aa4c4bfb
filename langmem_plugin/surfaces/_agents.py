"""``Memory``'s sub-agents: the same memory, with surfaces that run as one named agent."""

from __future__ import annotations

import copy
import dataclasses
from functools import cached_property
from typing import Any, Self

from langmem_plugin.core.scope import Scope, exact_id
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.surfaces._arguments import scope_of

__all__ = ["AgentMethods"]


class AgentMethods:
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    _source: StoreSource
    layout: MemoryLayout
    turn: MemoryTurn

    def agent(self, name: str, **rules: Sharing | str) -> Self:
        """This memory for the sub-agent ``name``: its nodes, middleware, callback, tools, ``wrap``
        and methods run as that agent (:mod:`langmem_plugin.services.agents`), on the same stores,
        writer and configuration.

        ``rules``: this agent's own rule of a compartment (``user="read_only"``,
        ``results="isolated"``, ...), on top of the memory's ``agents=`` rules.

        >>> from langmem_plugin import Memory
        >>> from langgraph.store.memory import InMemoryStore
        >>> researcher = Memory(InMemoryStore()).agent("researcher", results="isolated")
        >>> researcher.layout.agents.rule("results", "researcher").value
        'isolated'

        Raises:
            ScopeError: ``name`` cannot be an agent id (:func:`~langmem_plugin.core.scope.exact_id`).
            ConfigurationError: a rule names no compartment, or is no :class:`Sharing`.
        """
        agent = exact_id("agent", name)
        layout = self.layout
        if rules:
            layout = dataclasses.replace(layout, agents=layout.agents.with_agent(agent, rules))
        view = copy.copy(self)
        for base in type(self).__mro__:  # surfaces built for the other agent are built again
            for attribute, value in vars(base).items():
                if isinstance(value, cached_property):
                    view.__dict__.pop(attribute, None)
        view._source = self._source.as_agent(agent)
        view.layout = layout
        view.turn = self.turn.for_agent(view._source, layout)
        return view

    @property
    def agent_name(self) -> str | None:
        """The sub-agent this memory's surfaces run as (``memory.agent(name)``); ``None``: the run says."""
        return self._source.agent

    def _scope_of(self, config: Any) -> Scope:
        scope = scope_of(config)
        return scope.as_subagent(self._source.agent) if self._source.agent is not None else scope
