"""When a memory is true: bi-temporal facts on the one record format, no graph database.

A memory's *validity* lives in its record's ``metadata`` (string values, so any
BaseStore client reads it):

- ``valid_at`` — when the fact became true, if the conversation said so (ISO 8601);
- ``invalid_at`` — when it stopped being true: a later fact superseded it;
- ``superseded_by`` — the id of the memory that replaced it;
- ``invalid_reason`` — why, in the words of the decision that invalidated it.

The record's own ``created_at``/``updated_at`` are the other time axis (when the
memory was written). A superseded memory is never deleted by consolidation: it
leaves recall (:func:`is_current` is ``False``) and stays findable by search, so
"what did Sam eat before?" has an answer.

>>> from langmem_plugin.core.record import MemoryRecord
>>> old = MemoryRecord(content="Sam eats meat", kind="preference")
>>> is_current(old)
True
>>> gone = invalidated(old, by="m2", reason="Sam went vegetarian")
>>> is_current(gone), gone.metadata["superseded_by"]
(False, 'm2')
"""

from __future__ import annotations

from datetime import datetime

from langmem_plugin.core.record import MemoryRecord, utc_now

__all__ = ["INVALID_AT", "INVALID_REASON", "SUPERSEDED_BY", "VALID_AT", "invalidated", "is_current"]

VALID_AT = "valid_at"
INVALID_AT = "invalid_at"
SUPERSEDED_BY = "superseded_by"
INVALID_REASON = "invalid_reason"
_MAX_REASON = 500


def is_current(record: MemoryRecord) -> bool:
    """Whether ``record`` is still true: it has no ``invalid_at``."""
    return INVALID_AT not in record.metadata


def invalidated(
    record: MemoryRecord, *, by: str | None, reason: str | None = None, at: datetime | None = None
) -> MemoryRecord:
    """A copy of ``record`` marked no longer true at ``at`` (default: now), superseded by ``by``."""
    metadata = dict(record.metadata)
    metadata[INVALID_AT] = (at or utc_now()).isoformat()
    if by:
        metadata[SUPERSEDED_BY] = by
    if reason:
        metadata[INVALID_REASON] = reason.strip()[:_MAX_REASON]
    return record.touched(metadata=metadata)
