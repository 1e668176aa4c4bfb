"""``Memory``'s knowledge methods: add and remove an agent's documents (the knowledge room's service)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from langchain_text_splitters import TextSplitter

from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.knowledge import (
    AddedDocument,
    DocumentSource,
    aadd_documents,
    add_documents,
    aremove_documents,
    remove_documents,
)
from langmem_plugin.services.layout import MemoryLayout

__all__ = ["DocumentMethods"]


class DocumentMethods:
    """Mixed into :class:`~langmem_plugin.Memory`, which sets these attributes."""

    _source: StoreSource
    layout: MemoryLayout
    model: str | None

    def _knowledge_agent(self, agent: str | None) -> str | None:
        """Whose knowledge: ``agent``; for ``memory.agent(name)``, that agent's own when its
        knowledge is isolated (else the root's, which it reads)."""
        own = self._source.agent
        if agent is not None or own is None:
            return agent
        return own if self.layout.agents.rule("knowledge", own) is Sharing.ISOLATED else None

    def add_documents(
        self,
        sources: Iterable[DocumentSource],
        *,
        agent: str | None = None,
        splitter: TextSplitter | None = None,
        progress: bool | None = None,
    ) -> list[AddedDocument]:
        """Add files (``.txt``, ``.md``, ``.pdf``, ``.docx``), folders, texts or LangChain ``Document``
        values from any loader as ``agent``'s knowledge (``memory.agent(name)``: that agent's own when
        its knowledge is isolated, else the root's).

        See :func:`langmem_plugin.services.knowledge.add_documents` for what each source may be.
        """
        return add_documents(
            self._source.now(),
            sources,
            agent=self._knowledge_agent(agent),
            layout=self.layout,
            model=self.model,
            splitter=splitter,
            progress=progress,
        )

    async def aadd_documents(
        self,
        sources: Iterable[DocumentSource],
        *,
        agent: str | None = None,
        splitter: TextSplitter | None = None,
        progress: bool | None = None,
    ) -> list[AddedDocument]:
        """Async :meth:`add_documents`."""
        return await aadd_documents(
            self._source.now(),
            sources,
            agent=self._knowledge_agent(agent),
            layout=self.layout,
            model=self.model,
            splitter=splitter,
            progress=progress,
        )

    def remove_documents(
        self, names: Iterable[str | Path], *, agent: str | None = None
    ) -> list[AddedDocument]:
        """Remove every chunk of the sources ``names`` (as :meth:`add_documents` reported them)."""
        return remove_documents(
            self._source.now(), names, agent=self._knowledge_agent(agent), layout=self.layout
        )

    async def aremove_documents(
        self, names: Iterable[str | Path], *, agent: str | None = None
    ) -> list[AddedDocument]:
        """Async :meth:`remove_documents`."""
        return await aremove_documents(
            self._source.now(), names, agent=self._knowledge_agent(agent), layout=self.layout
        )
