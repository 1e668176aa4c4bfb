"""``Memory``'s team memory: promote a memory, the promote tool, and recall reading the team."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.services import aexecute, execute
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.recall import RecallConfig
from langmem_plugin.services.team import Promoted, promote_steps
from langmem_plugin.surfaces._arguments import memory_id_of
from langmem_plugin.surfaces.tools import TEAM_TOOL_NAMES, create_memory_tools

if TYPE_CHECKING:
    from collections.abc import Callable

    from langmem_plugin.surfaces.memory import ToolsConfig

__all__ = ["TeamMethods", "with_team"]

_DEFAULT_READ = (Compartment.USER, Compartment.SESSION)


def with_team(recall: RecallConfig, layout: MemoryLayout) -> RecallConfig:
    """``recall`` reading the team memory too, when ``layout`` has a team compartment and recall
    reads the default compartments (an explicit ``RecallConfig(compartments=...)`` is kept); a
    run that names no ``team_id`` recalls without it."""
    if not layout.team or tuple(recall.compartments) != _DEFAULT_READ:
        return recall
    return dataclasses.replace(recall, compartments=(*_DEFAULT_READ, Compartment.TEAM))


class TeamMethods:
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    _source: StoreSource
    layout: MemoryLayout
    tools_config: ToolsConfig
    _scope_of: Callable[[Any], Scope]

    def promote(self, memory_id: str, config: RunnableConfig | None = None) -> Promoted:
        """Copy ``memory_id``, a memory of ``config``'s scope (its user or session memory, as its
        agent sees it), into the team memory of the run's ``team_id``, with who promoted it from
        where, recorded in history (:mod:`langmem_plugin.services.team`). Promoting it again keeps
        one copy. Needs ``MemoryLayout(team=True)``.

        Raises:
            CompartmentError: the layout has no team compartment.
            ScopeError: ``config`` names no ``team_id`` (or no user, for user memory).
            MemoryNotFoundError: no memory of the caller has that id; nothing is written.
            AgentAccessError: the id is team memory already, or its compartment is read-only to
                the agent; nothing is written.
            InvalidRecordError: the memory is a past exchange, or superseded; nothing is written.
        """
        steps = promote_steps(self._scope_of(config), self.layout, memory_id_of(memory_id))
        return execute(self._source.now(), steps)

    async def apromote(self, memory_id: str, config: RunnableConfig | None = None) -> Promoted:
        """Async :meth:`promote`."""
        steps = promote_steps(self._scope_of(config), self.layout, memory_id_of(memory_id))
        return await aexecute(self._source.now(), steps)

    def _team_tools(self) -> list[BaseTool]:
        """``promote_memory`` when the layout has a team compartment, else none."""
        if not self.layout.team:
            return []
        config = self.tools_config
        return create_memory_tools(
            store=self._source,
            layout=self.layout,
            include=list(TEAM_TOOL_NAMES),
            names=config.names,
            instructions=config.instructions,
        )
