"""``Memory``'s imports: a conversation, or many streamed, written as remember writes them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal

from langchain_core.runnables import RunnableConfig

from langmem_plugin.services.remember import (
    History,
    ImportProgress,
    ImportReport,
    RememberConfig,
    aimport_histories,
    aimport_history,
    import_histories,
    import_history,
)
from langmem_plugin.surfaces._agents import AgentMethods

__all__ = ["ImportingMethods"]


class ImportingMethods(AgentMethods):
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    remember_config: RememberConfig

    def import_history(
        self,
        history: History,
        config: RunnableConfig | None = None,
        *,
        per: Literal["exchange", "message"] = "exchange",
        batch_size: int = 64,
        progress: bool | None = None,
    ) -> ImportReport:
        """Import an existing conversation into the thread of ``config``, as remember writes it.

        ``history`` is a list of messages (LangChain messages, ``{"role", "content"}`` dicts or pairs),
        or of sessions ``{"date": ..., "id": ..., "messages": [...]}`` (the date stamps the episodes
        and BM25 reads it; the id is kept apart). Each exchange becomes an episode
        with the same key, fields and passages remember gives it, in the compartments of
        :attr:`remember_config`; the store embeds ``batch_size`` episodes per round. Episodes
        already stored are left as they are, so importing twice writes nothing new. See
        :mod:`langmem_plugin.services.remember.history_import`.

        >>> from langmem_plugin import Memory
        >>> memory = Memory()
        >>> report = memory.import_history(
        ...     [{"role": "user", "content": "I like green tea"}, {"role": "assistant", "content": "Noted!"}],
        ...     {"configurable": {"thread_id": "t0", "user_id": "u1"}},
        ... )
        >>> report.turns, report.written
        (1, 1)

        Args:
            history: the messages, or sessions of messages.
            config: the scope (``thread_id`` required; ``user_id`` for user memory).
            per: ``"exchange"`` (user/assistant) or ``"message"`` (one episode per message,
                for a conversation between people).
            batch_size: episodes written (and embedded) per store round.
            progress: show a progress bar (default: for 200 turns or more).

        Returns:
            turns found, written, already stored, passages, failed, seconds, turns per second.

        Raises:
            ConfigurationError: ``history`` is not a history (a message of no known shape, bad
                tool calls, a date that does not parse...: the message names its place and the
                fix), or ``config`` is not a config; nothing is written.
            ScopeError: no ``thread_id`` in ``config``, or an id that is not one.
        """
        return import_history(
            self._source.now(),
            history,
            self._scope_of(config),
            layout=self.layout,
            config=self.remember_config,
            per=per,
            batch_size=batch_size,
            progress=progress,
        )

    async def aimport_history(
        self,
        history: History,
        config: RunnableConfig | None = None,
        *,
        per: Literal["exchange", "message"] = "exchange",
        batch_size: int = 64,
        progress: bool | None = None,
    ) -> ImportReport:
        """Async :meth:`import_history`."""
        return await aimport_history(
            self._source.now(),
            history,
            self._scope_of(config),
            layout=self.layout,
            config=self.remember_config,
            per=per,
            batch_size=batch_size,
            progress=progress,
        )

    def import_histories(
        self,
        conversations: Iterable[tuple[str, History]],
        config: RunnableConfig | None = None,
        *,
        per: Literal["exchange", "message"] = "exchange",
        batch_size: int = 64,
        progress: bool | None = None,
        on_progress: Callable[[ImportProgress], None] | None = None,
    ) -> ImportReport:
        """Import many conversations, ``(thread_id, history)`` each, streamed: one report.

        Each conversation is read, checked and written as :meth:`import_history` does, into its
        own thread of ``config``'s user, then let go: memory stays bounded by one conversation
        (a generator over files is never held whole). Run again after a crash or a kill and
        only what is missing is written. ``on_progress`` gets an ``ImportProgress`` after each
        batch. See :func:`~langmem_plugin.services.remember.history_import.import_histories`.

        >>> from langmem_plugin import Memory
        >>> memory = Memory()
        >>> chats = [(f"chat-{n}", [("user", f"I have {n} cats"), ("assistant", "Noted!")]) for n in range(3)]
        >>> report = memory.import_histories(chats, {"configurable": {"user_id": "u1"}})
        >>> report.conversations, report.written
        (3, 3)
        """
        return import_histories(
            self._source.now(),
            conversations,
            self._scope_of(config),
            layout=self.layout,
            config=self.remember_config,
            per=per,
            batch_size=batch_size,
            progress=progress,
            on_progress=on_progress,
        )

    async def aimport_histories(
        self,
        conversations: Iterable[tuple[str, History]],
        config: RunnableConfig | None = None,
        *,
        per: Literal["exchange", "message"] = "exchange",
        batch_size: int = 64,
        progress: bool | None = None,
        on_progress: Callable[[ImportProgress], None] | None = None,
    ) -> ImportReport:
        """Async :meth:`import_histories`."""
        return await aimport_histories(
            self._source.now(),
            conversations,
            self._scope_of(config),
            layout=self.layout,
            config=self.remember_config,
            per=per,
            batch_size=batch_size,
            progress=progress,
            on_progress=on_progress,
        )
