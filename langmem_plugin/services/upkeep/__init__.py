"""Upkeep: what happens to memory after the turn.

- :mod:`.extraction`: memories proposed from a conversation by a chat model.
- :mod:`.consolidation`: proposals merged into the user's memory, facts kept in time.
- :mod:`.candidates`: what extraction hands consolidation.
- :mod:`.reflection`: extraction then consolidation, in the background after a run.
- :mod:`.forgetting`: deleting memories, threads and users.

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.upkeep.candidates import Candidate, ModelCall
from langmem_plugin.services.upkeep.consolidation import (
    ConsolidationConfig,
    ConsolidationDecisions,
    MemoryDecision,
    consolidate_steps,
)
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.services.upkeep.forgetting import (
    ForgetReport,
    delete_threads_steps,
    forget_steps,
    forget_user_steps,
    index_thread_ops,
)
from langmem_plugin.services.upkeep.reflection import Reflector

__all__ = [
    "Candidate",
    "ConsolidationConfig",
    "ConsolidationDecisions",
    "ExtractionConfig",
    "ForgetReport",
    "MemoryDecision",
    "ModelCall",
    "Reflector",
    "consolidate_steps",
    "delete_threads_steps",
    "forget_steps",
    "forget_user_steps",
    "index_thread_ops",
]
