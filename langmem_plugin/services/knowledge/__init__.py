"""Knowledge: an agent's documents, read, split and kept in its knowledge compartment.

What it owns:

- ``sources``: what ``add_documents`` reads — ``.txt``/``.md`` files, ``.pdf`` and ``.docx`` (the
  ``documents`` extra), folders of them, texts, and LangChain ``Document`` values from any loader —
  all read before anything is written; a source it cannot read is an error, never knowledge.
- ``splitting``: chunks by any LangChain ``TextSplitter``; the default splits on Markdown structure,
  then sentences, counting our tokenizer's tokens.
- ``files``: reading files safely: a folder never leads out of itself through a link, only
  regular files, archives and PDFs that inflate past the size cap refused before they inflate.
- ``steps``: writing a source's chunks (only the changed ones), removing a source, the report.
- ``versions``: one version of a source at a time: intent recorded before the writes, a new
  version staged hidden and revealed after its commit, :func:`resume_knowledge_steps` to finish
  what a killed process left, and the in-process lock that makes writers of one source take turns.

Recall injects the whole knowledge when it fits its token budget and searches it otherwise
(:mod:`langmem_plugin.services.recall`); each chunk is shown with its ``source``, ``page`` and
``title`` through the fence.

This is the door: other rooms and the surfaces use the names below.

>>> [s.name for s in read_sources(["Support hours: 9 to 5."])]
['text-2910de70bc']
"""

from langmem_plugin.services.knowledge.sources import READ_SUFFIXES, Source, read_sources
from langmem_plugin.services.knowledge.splitting import (
    DEFAULT_CHUNK_TOKENS,
    MIN_CHUNK_TOKENS,
    default_splitter,
    section_splitter,
)
from langmem_plugin.services.knowledge.steps import (
    AddedDocument,
    DocumentSource,
    aadd_documents,
    add_documents,
    add_documents_steps,
    aremove_documents,
    remove_documents,
    remove_documents_steps,
)
from langmem_plugin.services.knowledge.versions import STEPS_NAMESPACE, resume_knowledge_steps

__all__ = [
    "DEFAULT_CHUNK_TOKENS",
    "MIN_CHUNK_TOKENS",
    "READ_SUFFIXES",
    "STEPS_NAMESPACE",
    "AddedDocument",
    "DocumentSource",
    "Source",
    "aadd_documents",
    "add_documents",
    "add_documents_steps",
    "aremove_documents",
    "default_splitter",
    "read_sources",
    "remove_documents",
    "remove_documents_steps",
    "resume_knowledge_steps",
    "section_splitter",
]
