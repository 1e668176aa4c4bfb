"""The memory record: the one value format every writer writes and every reader reads.

A record is stored as a plain JSON object in a ``BaseStore`` item's value, so
any BaseStore client (LangGraph Studio, another service) can read it without
this package. :meth:`MemoryRecord.to_value` and :meth:`MemoryRecord.from_value`
convert both ways; timestamps travel as ISO 8601 strings in UTC.

>>> record = MemoryRecord(content="Prefers green tea", category="preferences/drinks", tags=["tea"])
>>> value = record.to_value()
>>> value["content"], value["category"], value["priority"], value["kind"]
('Prefers green tea', 'preferences/drinks', 5, 'fact')
>>> MemoryRecord.from_value(value) == record
True
>>> MemoryRecord(content="x", priority=11)
Traceback (most recent call last):
...
langmem_plugin.errors.InvalidRecordError: invalid memory record: priority: must be a whole number ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langmem_plugin.errors import InvalidRecordError

__all__ = [
    "CATEGORY_PATTERN",
    "DEFAULT_CATEGORY",
    "DEFAULT_MAX_CONTENT_CHARS",
    "MAX_LINKS",
    "MAX_TAGS",
    "MEMORY_ARTIFACT",
    "MemoryKind",
    "MemoryRecord",
    "artifact_memories",
    "exchange_link",
    "memory_artifact",
    "parse_exchange_link",
    "record_time",
    "text_problem",
    "utc_now",
    "validate_category",
    "with_links",
]

#: Default limit of ``content`` in characters; ``validate_value(max_content_chars=)`` overrides it.
DEFAULT_MAX_CONTENT_CHARS = 16_000
DEFAULT_CATEGORY = "general"
MAX_TAGS = 32
#: The most provenance links one record keeps in ``sources`` or ``derived`` (the newest are kept).
MAX_LINKS = 64
_MAX_LINK_CHARS = 300
_MAX_TAG_CHARS = 64
_MAX_METADATA_ENTRIES = 64
_MAX_METADATA_CHARS = 2_000
CATEGORY_PATTERN = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*")
_content_limit: ContextVar[int | None] = ContextVar("langmem_plugin_content_limit", default=None)
_CATEGORY_RULE = (
    "a path of segments of letters, digits, '_' or '-' joined by '/', e.g. 'project/rockbot' "
    "(no leading or trailing '/', no empty segment, no '..')"
)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as UTF-8 text, or ``None`` when it can.

    The one text rule of every write: a memory record's fields, and (in
    ``langmem_plugin.stores``) every key, namespace label and string of a stored value.
    A lone surrogate (``"\\ud800"``, as a bad decode or ``json.loads`` of ``"\\\\ud800"`` makes)
    cannot be encoded, so a store would fail on it half-way through a write.

    >>> text_problem("ok") is None, text_problem("bad \\ud800")
    (True, "holds a lone surrogate '\\\\ud800' at index 4 (not valid Unicode text)")
    """
    if text.isascii():  # no surrogate is ASCII
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"holds a lone surrogate {found.group()!r} at index {found.start()} (not valid Unicode text)"


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so that :func:`text_problem` passes it.

    >>> clean_text("bad \\ud800 decode")
    'bad \\ufffd decode'
    """
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _check_text(value: str, what: str = "") -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(f"{what}{problem}; remove or replace the character")
    return value


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def record_time(value: Any) -> datetime:
    """A record's ``created_at`` or ``updated_at`` as it reads one: an aware datetime or ISO 8601
    string, in UTC.

    >>> record_time("2026-01-02T03:00:00+02:00").isoformat()
    '2026-01-02T01:00:00+00:00'

    Raises:
        ValueError: not a timestamp, or a naive one.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"must be an ISO 8601 timestamp, got {value!r}") from None
    if not isinstance(value, datetime):
        raise ValueError(f"must be a datetime or an ISO 8601 string, got {value!r}")
    if value.tzinfo is None:
        raise ValueError(f"must be timezone-aware (UTC), got the naive {value.isoformat()}")
    return value.astimezone(UTC)


def validate_category(category: str) -> str:
    """Return ``category`` if it is a valid category path, else raise :class:`InvalidRecordError`."""
    if not isinstance(category, str) or not CATEGORY_PATTERN.fullmatch(category):
        raise InvalidRecordError(
            f"invalid memory record: category: must be {_CATEGORY_RULE}, got {category!r}", field="category"
        )
    return category


class MemoryKind(StrEnum):
    """What a memory is."""

    FACT = "fact"
    PREFERENCE = "preference"
    EPISODE = "episode"
    DOCUMENT = "document"
    TOOL_RESULT = "tool_result"
    SUMMARY = "summary"
    INSTRUCTION = "instruction"
    NOTE = "note"
    PLAN = "plan"
    EVENT = "event"


class MemoryRecord(BaseModel):
    """One memory.

    Validation errors raise :class:`~langmem_plugin.errors.InvalidRecordError`
    (a ``ValueError``) naming every bad field. The content limit is
    :data:`DEFAULT_MAX_CONTENT_CHARS`, or the one passed to
    :meth:`validate_value`: ``MemoryRecord.validate_value(data, max_content_chars=500)``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(description="The memory itself, in plain language.")
    category: str = Field(default=DEFAULT_CATEGORY, description="A path such as 'project/rockbot'.")
    tags: list[str] = Field(default_factory=list, description="Free labels, deduplicated, order kept.")
    metadata: dict[str, str] = Field(default_factory=dict, description="String key/value pairs.")
    priority: int = Field(default=5, description="1 (low) to 10 (high); recall ranks by it.")
    kind: MemoryKind = Field(default=MemoryKind.FACT)
    source: str | None = Field(
        default=None, description="Who wrote it: 'tool:save_memory', 'extraction', ..."
    )
    access_count: int = Field(default=0, description="How often recall or a tool returned it.")
    sources: list[str] = Field(
        default_factory=list,
        description="Provenance of a memory: the exchanges it was saved or extracted from "
        "(:func:`exchange_link`: 'thread_id/episode key').",
    )
    derived: list[str] = Field(
        default_factory=list,
        description="Provenance of an exchange (an episode): the ids of the memories saved or "
        "extracted from it.",
    )
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise _translate(exc) from None

    @classmethod
    def validate_value(
        cls, value: Mapping[str, Any], *, max_content_chars: int | None = None
    ) -> MemoryRecord:
        """Validate ``value`` with an explicit content limit."""
        if not isinstance(value, Mapping):
            raise InvalidRecordError(
                f"invalid memory record: record: must be an object of fields, got {value!r}", field="record"
            )
        token = _content_limit.set(max_content_chars)
        try:
            return cls(**value)
        finally:
            _content_limit.reset(token)

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"must be text, got {type(value).__name__}")
        if not value.strip():
            raise ValueError("must not be empty; write the memory as a sentence")
        limit = _content_limit.get() or DEFAULT_MAX_CONTENT_CHARS
        if len(value) > limit:
            raise ValueError(
                f"is {len(value)} characters, more than the limit of {limit}; shorten it or split it in parts"
            )
        return _check_text(value)

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> str:
        if value is None:
            return DEFAULT_CATEGORY
        if not isinstance(value, str) or not CATEGORY_PATTERN.fullmatch(value):
            raise ValueError(f"must be {_CATEGORY_RULE}, got {value!r}")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
            raise ValueError(f"must be a list of strings, got {value!r}")
        tags: list[str] = []
        for tag in value:
            if not isinstance(tag, str) or not tag.strip():
                raise ValueError(f"each tag must be a non-empty string, got {tag!r}")
            tag = tag.strip()
            if len(tag) > _MAX_TAG_CHARS:
                raise ValueError(f"tag {tag[:20]!r}... is longer than {_MAX_TAG_CHARS} characters")
            _check_text(tag, f"tag {tag!r} ")
            if tag not in tags:
                tags.append(tag)
        if len(tags) > MAX_TAGS:
            raise ValueError(f"has {len(tags)} tags, more than {MAX_TAGS}")
        return tags

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value: Any) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError(f"must be an object of string keys and string values, got {value!r}")
        if len(value) > _MAX_METADATA_ENTRIES:
            raise ValueError(f"has {len(value)} entries, more than {_MAX_METADATA_ENTRIES}")
        out: dict[str, str] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise ValueError(f"keys must be non-empty strings, got {key!r}")
            if not isinstance(item, str):
                raise ValueError(f"value of {key!r} must be a string, got {item!r}")
            if len(item) > _MAX_METADATA_CHARS:
                raise ValueError(f"value of {key!r} is longer than {_MAX_METADATA_CHARS} characters")
            _check_text(key, f"key {key!r} ")
            _check_text(item, f"value of {key!r} ")
            out[key] = item
        return out

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"must be text or None, got {type(value).__name__}")
        return _check_text(value)

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
            raise ValueError(f"must be a whole number from 1 to 10, got {value!r}")
        return value

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> MemoryKind:
        try:
            return MemoryKind(value)
        except ValueError:
            raise ValueError(f"must be one of {[k.value for k in MemoryKind]}, got {value!r}") from None

    @field_validator("sources", "derived", mode="before")
    @classmethod
    def _links(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise ValueError(f"must be a list of strings, got {value!r}")
        links: list[str] = []
        for link in value:
            if not isinstance(link, str) or not link or len(link) > _MAX_LINK_CHARS:
                raise ValueError(
                    f"each link must be a string of 1 to {_MAX_LINK_CHARS} characters, got {link!r}"
                )
            _check_text(link, f"link {link!r} ")
            if link not in links:
                links.append(link)
        return links[-MAX_LINKS:]

    @field_validator("access_count", mode="before")
    @classmethod
    def _access_count(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"must be a whole number of at least 0, got {value!r}")
        return value

    @field_validator("created_at", "updated_at", mode="before")
    @classmethod
    def _timestamp(cls, value: Any) -> datetime:
        return record_time(value)

    def to_value(self) -> dict[str, Any]:
        """The JSON object stored as the BaseStore item value."""
        value = self.model_dump(mode="json")
        value["created_at"] = self.created_at.isoformat()
        value["updated_at"] = self.updated_at.isoformat()
        for name in ("sources", "derived"):  # a record without provenance keeps its former shape
            if not value[name]:
                del value[name]
        return value

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> MemoryRecord:
        """Read a record back from an item value (unknown keys are an error)."""
        return cls.validate_value(value)

    def touched(self, **changes: Any) -> MemoryRecord:
        """A copy with ``changes`` applied, validated, and ``updated_at`` set to now."""
        data = self.model_dump()
        data.update(changes)
        data["updated_at"] = utc_now()
        return MemoryRecord(**data)


def exchange_link(thread_id: str | None, key: str) -> str:
    """The provenance link to the exchange ``key`` of thread ``thread_id``: ``"thread_id/key"``.

    >>> exchange_link("t1", "ep-0a1b"), parse_exchange_link("t/1/ep-0a1b")
    ('t1/ep-0a1b', ('t/1', 'ep-0a1b'))
    """
    return f"{thread_id}/{key}" if thread_id else key


def parse_exchange_link(link: str) -> tuple[str | None, str]:
    """``(thread_id, key)`` of a link written by :func:`exchange_link` (an episode key has no ``/``)."""
    thread, _, key = link.rpartition("/")
    return (thread or None), key


def with_links(
    record: MemoryRecord, *, sources: Sequence[str] = (), derived: Sequence[str] = ()
) -> MemoryRecord:
    """A copy of ``record`` with ``sources`` and ``derived`` links added (``updated_at`` kept)."""
    merged = {
        "sources": list(dict.fromkeys([*record.sources, *sources])),
        "derived": list(dict.fromkeys([*record.derived, *derived])),
    }
    if merged["sources"] == record.sources and merged["derived"] == record.derived:
        return record
    data = record.model_dump()
    data.update(merged)
    return MemoryRecord(**data)


#: The key of a memory tool's ``ToolMessage.artifact`` that says which memories the call changed.
MEMORY_ARTIFACT = "langmem_plugin_memories"
_ARTIFACT_ACTIONS = ("saved", "updated", "forgotten")


def memory_artifact(action: str, ids: Sequence[str]) -> dict[str, Any]:
    """What a memory tool attaches to its ``ToolMessage`` (``artifact``): the ids it ``saved``,
    ``updated`` or ``forgotten``. Remember reads it to link the exchange and those memories.

    >>> artifact_memories(memory_artifact("saved", ["m1"]))
    ('saved', ['m1'])
    """
    if action not in _ARTIFACT_ACTIONS:
        raise ValueError(f"action must be one of {_ARTIFACT_ACTIONS}, got {action!r}")
    return {MEMORY_ARTIFACT: {"action": action, "ids": [str(i) for i in ids]}}


def artifact_memories(artifact: Any) -> tuple[str, list[str]] | None:
    """``(action, ids)`` of an artifact written by :func:`memory_artifact`, else ``None``."""
    if not isinstance(artifact, Mapping) or not isinstance(found := artifact.get(MEMORY_ARTIFACT), Mapping):
        return None
    action, ids = found.get("action"), found.get("ids")
    if action not in _ARTIFACT_ACTIONS or not isinstance(ids, list):
        return None
    return str(action), [i for i in ids if isinstance(i, str) and i]


def _translate(exc: ValidationError) -> InvalidRecordError:
    errors: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"]) or "record"
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "extra_forbidden":
            message = f"is not a field of a memory record; the fields are {list(MemoryRecord.model_fields)}"
        elif error["type"] == "missing":
            message = "is required"
        errors.append((loc, message))
    text = "; ".join(f"{field}: {message}" for field, message in errors)
    return InvalidRecordError(f"invalid memory record: {text}", field=errors[0][0], errors=errors)
