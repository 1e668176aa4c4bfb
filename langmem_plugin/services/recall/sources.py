"""A memory is never less relevant than the exchange it came from.

Recall drops a candidate under its threshold: one that shares no word with the question and
whose dense similarity is under ``min_relevance`` (or, without the fused search, whose store
score is). A memory saved or extracted from an exchange says in a few words what the exchange
said in many ("Sam is vegetarian again: no fish, no meat" from "By the way, I've gone fully
vegetarian again: no more fish for me."), and that short text can miss a threshold the exchange
itself passes, so the exchange was injected and what the user said about themselves was not.

A memory keeps its sources (``MemoryRecord.sources``: the exchanges it was saved or extracted
from, :mod:`langmem_plugin.services.upkeep.provenance`). :func:`source_scores` reads the best
score of each exchange that passed, and :func:`inherited_score` gives a memory under the
threshold the score of its best source that passed and is still current: it is kept, ranked
at least as high as that source (then by its own priority and recency). An exchange that was
superseded lends nothing, and a memory without sources is held to the threshold as before.

>>> from langmem_plugin.core.record import MemoryKind, MemoryRecord
>>> from langmem_plugin.services.layout import Compartment
>>> from langmem_plugin.services.operations import StoredMemory
>>> episode = MemoryRecord(content="User: I'm vegetarian again", kind=MemoryKind.EPISODE)
>>> passed = [StoredMemory("ep-1", Compartment.USER, ("memories", "user", "sam"), episode, 0.4)]
>>> fact = MemoryRecord(content="Sam is vegetarian", sources=["t1/ep-1"])
>>> inherited_score(fact, source_scores(passed))
0.4
>>> inherited_score(MemoryRecord(content="Sam runs"), source_scores(passed)) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from langmem_plugin.core.record import MemoryKind, MemoryRecord, parse_exchange_link
from langmem_plugin.core.validity import INVALID_AT, is_current
from langmem_plugin.services.operations import StoredMemory

__all__ = ["SOURCE_LIFT", "current_at", "inherited_score", "source_scores"]

#: The name of the lift a memory kept by its source shows (``RetrievedItem.lifts``, ``Considered``).
SOURCE_LIFT = "source"


def current_at(record: MemoryRecord, as_of: datetime | None) -> bool:
    """Whether ``record`` was still true at ``as_of`` (now, without one): not invalidated by then."""
    if as_of is None or is_current(record):
        return is_current(record)
    try:
        invalid_at = datetime.fromisoformat(record.metadata[INVALID_AT])
    except (TypeError, ValueError):
        return False
    return (invalid_at if invalid_at.tzinfo else invalid_at.replace(tzinfo=UTC)) > as_of


def source_scores(passed: Iterable[StoredMemory], as_of: datetime | None = None) -> dict[str, float]:
    """The best score of each exchange (episode key) among ``passed``, the candidates that passed
    the threshold: an episode by its key, a passage by its episode's; superseded ones left out."""
    best: dict[str, float] = {}
    for memory in passed:
        record = memory.record
        if record.kind is not MemoryKind.EPISODE or memory.score is None or not current_at(record, as_of):
            continue
        key = record.metadata.get("episode") or memory.id
        best[key] = max(memory.score, best.get(key, memory.score))
    return best


def inherited_score(record: MemoryRecord, scores: Mapping[str, float]) -> float | None:
    """The best score among ``scores`` of the exchanges ``record`` came from; ``None`` if none passed."""
    found = [scores[key] for link in record.sources if (key := parse_exchange_link(link)[1]) in scores]
    return max(found) if found else None
