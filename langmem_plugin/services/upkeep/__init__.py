"""Upkeep: what happens to memory after the turn.

- :mod:`.extraction`: memories proposed from a conversation by a chat model.
- :mod:`.consolidation`: proposals merged into the user's memory, facts kept in time.
- :mod:`.candidates`: what extraction hands consolidation.
- :mod:`.reflection`: extraction then consolidation, in the background after a run.
- :mod:`.forgetting`: deleting memories, threads and users.
- :mod:`.erasure`: how ``forget_user`` and ``delete_threads_steps`` write: the intent, the pages, the purge.
- :mod:`.provenance`: which exchanges a memory came from; forgetting and superseding reach them.
- :mod:`.clearing`: clearing a compartment by category or tags, reaching the exchanges too.

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.upkeep.candidates import Candidate, ModelCall
from langmem_plugin.services.upkeep.clearing import Cleared, clear_reaching_steps
from langmem_plugin.services.upkeep.consolidation import (
    ConsolidationConfig,
    ConsolidationDecisions,
    MemoryDecision,
    consolidate_steps,
)
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.services.upkeep.forgetting import (
    THREAD_INDEX,
    ForgetReport,
    delete_threads_steps,
    drop_queued,
    forget_steps,
    forget_user_steps,
    index_thread_ops,
    resume_forgetting_steps,
)
from langmem_plugin.services.upkeep.provenance import (
    Forgotten,
    exchange_namespaces,
    forget_matching_steps,
    forget_memories_steps,
    link_memories_steps,
    revise_steps,
    supersede_steps,
)
from langmem_plugin.services.upkeep.reflection import Reflector

__all__ = [
    "THREAD_INDEX",
    "Candidate",
    "Cleared",
    "ConsolidationConfig",
    "ConsolidationDecisions",
    "ExtractionConfig",
    "ForgetReport",
    "Forgotten",
    "MemoryDecision",
    "ModelCall",
    "Reflector",
    "clear_reaching_steps",
    "consolidate_steps",
    "delete_threads_steps",
    "drop_queued",
    "exchange_namespaces",
    "forget_matching_steps",
    "forget_memories_steps",
    "forget_steps",
    "forget_user_steps",
    "index_thread_ops",
    "link_memories_steps",
    "resume_forgetting_steps",
    "revise_steps",
    "supersede_steps",
]
