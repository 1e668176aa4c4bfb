"""``langmem-plugin bench realtalk``: the LoCoMo benchmark's rows on REALTALK's real chats.

REALTALK (Lee, Maharana, Pujara, Ren, Barbieri, 2025) is 21 days of real messaging-app chats
between two people, by LoCoMo's authors and in LoCoMo's schema, with memory-probing questions
(1 multi-hop, 2 temporal, 3 commonsense) whose evidence names turns. It is not shipped (its
repository carries no licence): ``--data`` points at the folder of chat files, by default
:data:`REALTALK_DATA` (``data/realtalk`` in the checkout, or under ``$LANGMEM_PLUGIN_DATA``).

Nothing here is a second benchmark: :func:`run_realtalk_bench` is
:func:`~langmem_plugin.bench.locomo.run_locomo_bench` on that folder — the same rows (the
``product`` rows through ``import_history`` and ``Memory.recall``), the same per-category table
over REALTALK's categories — with the data read by the one loader,
:func:`~langmem_plugin.bench.locomo.load_conversations`, and its evidence by the one reading,
:func:`~langmem_plugin.bench.locomo.normalise_evidence` (questions whose evidence does not all
name turns are skipped and counted in the summary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.embeddings import Embeddings

from langmem_plugin.bench.locomo import (
    REALTALK_CATEGORIES,
    VARIANTS,
    LocomoResult,
    load_realtalk,
    normalise_evidence,
    run_locomo_bench,
)
from langmem_plugin.bench.locomo.cli import REALTALK_DATA

__all__ = [
    "REALTALK_CATEGORIES",
    "REALTALK_DATA",
    "load_realtalk",
    "normalise_evidence",
    "run_realtalk_bench",
]


def run_realtalk_bench(
    data: str | Path = REALTALK_DATA,
    *,
    conversations: int | None = None,
    variants: Sequence[str] = VARIANTS,
    embeddings: Embeddings | None = None,
    progress: Callable[[str], None] | None = None,
) -> LocomoResult:
    """The LoCoMo rows on REALTALK (``data``: the folder of chats, or one chat file)."""
    return run_locomo_bench(
        data, conversations=conversations, variants=variants, embeddings=embeddings, progress=progress
    )
