"""``Memory``'s history and forgetting: what changed, and removing it for good."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from langchain_core.runnables import RunnableConfig

from langmem_plugin.services import aexecute, execute
from langmem_plugin.services.history import HistoryEntry, history_steps
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.remember import EpisodeWriter
from langmem_plugin.services.upkeep import (
    ForgetReport,
    Forgotten,
    Reflector,
    drop_queued,
    forget_matching_steps,
    forget_steps,
    forget_user_steps,
)
from langmem_plugin.surfaces._agents import AgentMethods
from langmem_plugin.surfaces._arguments import memory_id_of

__all__ = ["ForgettingMethods"]


class ForgettingMethods(AgentMethods):
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    writer: EpisodeWriter
    reflector: Reflector | None

    def history(self, memory_id: str, config: RunnableConfig | None = None) -> list[HistoryEntry]:
        """Every recorded change of ``memory_id`` in the user memory of ``config``'s user, oldest first."""
        return execute(self._source.now(), history_steps(self._scope_of(config), memory_id_of(memory_id)))

    async def ahistory(self, memory_id: str, config: RunnableConfig | None = None) -> list[HistoryEntry]:
        """Async :meth:`history`."""
        return await aexecute(
            self._source.now(), history_steps(self._scope_of(config), memory_id_of(memory_id))
        )

    def forget(self, memory_id: str, config: RunnableConfig | None = None) -> StoredMemory:
        """Delete one memory (user or session memory of ``config``'s scope); recorded in history.

        Raises:
            MemoryNotFoundError: no such id there.
        """
        return execute(
            self._source.now(), forget_steps(self._scope_of(config), self.layout, memory_id_of(memory_id))
        )

    async def aforget(self, memory_id: str, config: RunnableConfig | None = None) -> StoredMemory:
        """Async :meth:`forget`."""
        scope = self._scope_of(config)
        return await aexecute(self._source.now(), forget_steps(scope, self.layout, memory_id_of(memory_id)))

    def forget_about(self, query: str, config: RunnableConfig | None = None) -> Forgotten:
        """Forget every memory and past exchange of ``config``'s user (and thread) whose text holds
        every word of ``query`` (:func:`~langmem_plugin.services.upkeep.forget_matching_steps`);
        what was removed.

        Raises:
            InvalidFilterError: ``query`` is empty, too long or names nothing; nothing is removed.
        """
        return execute(self._source.now(), forget_matching_steps(self._scope_of(config), self.layout, query))

    async def aforget_about(self, query: str, config: RunnableConfig | None = None) -> Forgotten:
        """Async :meth:`forget_about`."""
        return await aexecute(
            self._source.now(), forget_matching_steps(self._scope_of(config), self.layout, query)
        )

    def forget_user(self, user_id: str, *, threads: Iterable[str] = ()) -> ForgetReport:
        """Remove everything of ``user_id`` (see :mod:`~langmem_plugin.services.upkeep.forgetting`).

        The user's queued reflections and failed writes are dropped first (``report.queued``),
        so none writes the user's memories back afterwards.

        Raises:
            ScopeError: ``user_id`` (or one of ``threads``) is not an id: not a ``str``, empty,
                or with a ``.`` or a control character; raised before anything is read or written.
        """
        steps = forget_user_steps(user_id, self.layout, threads=threads)  # checks the ids first
        queued = drop_queued(user_id, self.writer, self.reflector)
        report = execute(self._source.now(), steps)
        report.queued = queued
        self.turn.reset_thread_index(user_id)
        return report

    async def aforget_user(self, user_id: str, *, threads: Iterable[str] = ()) -> ForgetReport:
        """Async :meth:`forget_user`."""
        steps = forget_user_steps(user_id, self.layout, threads=threads)  # checks the ids first
        await self.writer.aflush()
        queued = await asyncio.to_thread(drop_queued, user_id, self.writer, self.reflector)
        report = await aexecute(self._source.now(), steps)
        report.queued = queued
        self.turn.reset_thread_index(user_id)
        return report
