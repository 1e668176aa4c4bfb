"""Filters a caller (often a model) writes to narrow a read: compartments, category, tags, dates.

Each one narrows, never widens: a category that is not a category path is an
:class:`~langmem_plugin.errors.InvalidFilterError`, never "no filter", so a clear can never
reach the whole compartment by accident; a date that is not ISO 8601 is the same error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time

from langmem_plugin.core.record import CATEGORY_PATTERN, MemoryKind, MemoryRecord
from langmem_plugin.errors import InvalidFilterError
from langmem_plugin.services.layout import STORED_COMPARTMENTS, Compartment, parse_compartment

__all__ = [
    "DEFAULT_READ",
    "category_filter",
    "clean_category",
    "clean_tags",
    "matches",
    "parse_when",
    "read_compartments",
]

#: The compartments a read covers when the caller names none.
DEFAULT_READ: tuple[Compartment, ...] = (Compartment.USER, Compartment.SESSION)


def read_compartments(
    compartments: Iterable[Compartment | str] | None, *, default: Sequence[Compartment] = DEFAULT_READ
) -> list[Compartment]:
    chosen = [parse_compartment(c, allowed=STORED_COMPARTMENTS) for c in compartments or default]
    return list(dict.fromkeys(chosen))


def parse_when(value: str | datetime | date | None, *, name: str, end: bool = False) -> datetime | None:
    """A bound of a date filter: an ISO date or datetime (naive means UTC).

    A date alone means its start (``end=False``) or its end (``end=True``).

    Raises:
        InvalidFilterError: not an ISO 8601 date or datetime.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime.combine(value, time.max if end else time.min)
    else:
        text = str(value).strip()
        try:
            if len(text) == 10:
                parsed = datetime.combine(date.fromisoformat(text), time.max if end else time.min)
            else:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidFilterError(
                f"{name} must be an ISO 8601 date or datetime such as '2025-01-31' or "
                f"'2025-01-31T09:00:00Z', got {value!r}"
            ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def matches(
    record: MemoryRecord,
    *,
    category: str | None,
    tags: Sequence[str] | None,
    since: datetime | None,
    until: datetime | None,
    kinds: Sequence[MemoryKind] | None = None,
) -> bool:
    if category and not (record.category == category or record.category.startswith(category + "/")):
        return False
    if tags and not set(tags) <= set(record.tags):
        return False
    if since is not None and record.created_at < since:
        return False
    if until is not None and record.created_at > until:
        return False
    return not (kinds and record.kind not in kinds)


def clean_category(category: str | None) -> str | None:
    if category is None:
        return None
    category = category.strip().strip("/")
    return category or None


def category_filter(category: str | None, *, omit: str) -> str | None:
    """A category that narrows a read or a clear: ``None``, or a valid category path.

    Never normalised to "no filter": ``"/"``, ``"//"``, ``""``, ``"a//b"``, ``"../x"``, ``"a b"``
    and a NUL are errors, so a clear can never widen to the whole compartment by accident.
    """
    if category is None:
        return None
    text = category.strip() if isinstance(category, str) else category
    if not isinstance(text, str) or not CATEGORY_PATTERN.fullmatch(text):
        raise InvalidFilterError(
            f"category {category!r} is not a category path: use segments of letters, digits, '_' or '-' "
            f"joined by '/', e.g. 'project/rockbot' (no leading or trailing '/', no empty segment, no "
            f"spaces). {omit}"
        )
    return text


def clean_tags(tags: Sequence[str] | str | None) -> list[str] | None:
    if tags is None:
        return None
    if isinstance(tags, str):
        tags = [tags]
    cleaned = [t.strip() for t in tags if isinstance(t, str) and t.strip()]
    return cleaned or None
