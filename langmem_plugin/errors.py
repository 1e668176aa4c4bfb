"""Every error langmem_plugin raises on purpose.

Each error subclasses :class:`LangMemPluginError` *and* the nearest builtin, so
``except ValueError`` keeps working for callers who do not know this package.
Messages name the bad value, the rule it broke, and the fix.

The tree::

    LangMemPluginError (Exception)
    ├── BlockingCallError (RuntimeError)      a synchronous call that would block (deadlock) an event loop
    ├── ConfigurationError (ValueError)       the package was configured wrongly
    │   ├── InvalidTimeError                  a time (a session's date, recall's as_of) that is not one
    │   │                                     instant: unknown, incomplete or ambiguous text, a bad number
    │   ├── ReadOnlyError                     a change asked of a read-only inspector
    │   ├── ScopeError (KeyError)             a scope value (user_id, ...) is missing, or is not an exact id
    │   ├── StoreConfigMismatchError          a store reopened with another config than it was written with
    │   │   └── EmbedderMismatchError         ... with another embedder than its vectors were made by
    │   └── UnknownEmbeddingsError            an embeddings spec that names no known provider
    ├── InvalidNamespaceError (langgraph.store.base.InvalidNamespaceError, a ValueError)
    │                                         so ``except`` of either class catches it
    ├── InvalidRecordError (ValueError)       a memory record field is invalid
    ├── InvalidValueError (ValueError)        a store value that is not a JSON object, too large or too deep;
    │                                         a key that is not a str; text that is not valid Unicode
    ├── InvalidFilterError (ValueError)       an unknown filter operator or a bad operand
    ├── MemoryNotFoundError (KeyError)        no memory with that id in the caller's compartments
    ├── MemoryLimitError (ValueError)         a compartment is full, or a memory is too long for it
    ├── CompartmentError (ValueError)         an unknown compartment, or one this surface may not use
    │   └── AgentAccessError                  a sub-agent's change of a compartment its rule makes
    │                                         read-only to it, or of a memory that is not its own
    ├── MissingDependencyError (ImportError)  an optional extra is not installed
    ├── OfflineResourceError (RuntimeError)   a bundled file (token encoding, model) is missing or corrupt
    ├── PlanError (ValueError)                a plan change that does not apply (unknown step, bad transition)
    ├── ProviderError (RuntimeError)          a model provider could not be used: its server is unreachable,
    │   │                                     it refused the key, it has no such model, no key was given;
    │   │                                     says what was called (class, model, base URL), why, and the fix
    │   ├── ChatModelError                    ... a chat model's call
    │   │   └── ChatModelUnavailableError     ... that may answer if asked again
    │   ├── EmbeddingsError                   ... an embeddings call (e.g. the one that learns the dims)
    │   │   └── EmbeddingsUnavailableError    ... that may answer if asked again
    │   └── ProviderUnavailableError          ... no answer, a rate limit, an HTTP 5xx: a ConnectionError
    │                                         too, so retry policies retry it (the two above are ones)
    └── StoreError (RuntimeError)             the storage engine failed
        ├── StoreLockedError                  another process holds the store's path
        ├── StoreFileError                    a store directory's files are unusable: store.json garbled,
        │   │                                 truncated, foreign, missing keys; shard/ missing or garbled
        │   └── StoreFormatError              ... a store.json format this version does not read
        │                                     (also a StoreConfigMismatchError)
        └── StoreFullError (OSError)          no room on the store's file system for the next step
"""

from __future__ import annotations

import errno
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.store.base import InvalidNamespaceError as _LangGraphInvalidNamespaceError

__all__ = [
    "AgentAccessError",
    "BlockingCallError",
    "ChatModelError",
    "ChatModelUnavailableError",
    "CompartmentError",
    "ConfigurationError",
    "EmbedderMismatchError",
    "EmbeddingsError",
    "EmbeddingsUnavailableError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidTimeError",
    "InvalidValueError",
    "LangMemPluginError",
    "MemoryLimitError",
    "MemoryNotFoundError",
    "MissingDependencyError",
    "OfflineResourceError",
    "PlanError",
    "ProviderError",
    "ProviderUnavailableError",
    "ReadOnlyError",
    "ScopeError",
    "StoreConfigMismatchError",
    "StoreError",
    "StoreFileError",
    "StoreFormatError",
    "StoreFullError",
    "StoreLockedError",
    "UnknownEmbeddingsError",
]


class LangMemPluginError(Exception):
    """Base class of every error langmem_plugin raises on purpose."""


class BlockingCallError(LangMemPluginError, RuntimeError):
    """A synchronous call that would block, or deadlock, an event loop; the message names the async method."""


class ConfigurationError(LangMemPluginError, ValueError):
    """The package was configured with a value it cannot use."""


class ScopeError(ConfigurationError, KeyError):
    """A value the scope needs (``user_id``, ``thread_id``, ...) was not in the run's config, or an id
    that cannot be one: not a ``str``, empty, or holding a ``.``, a control character or a lone
    surrogate (see :func:`langmem_plugin.core.scope.exact_id`).

    Attributes:
        key: the missing or refused key, e.g. ``"user_id"``.
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class InvalidTimeError(ConfigurationError):
    """A time that does not read as one instant: text no date format reads, a date without its
    year, month or day, numeric text that reads both day-first and month-first, a weekday that is
    not the date's, a named timezone, a number outside epoch seconds of 1980-2100, a bool.

    Attributes:
        value: the value that was refused.
    """

    def __init__(self, message: str, *, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class StoreConfigMismatchError(ConfigurationError):
    """A durable store was reopened with a config that changes what it stores (dims, fields, ...).

    The message names the value the store was written with, the value given now, and the fix.
    """


class EmbedderMismatchError(StoreConfigMismatchError):
    """A durable store reopened with another embedder than the one its vectors were made by.

    Vectors of two embedders are not comparable, even at the same dimension: a query embedded by
    one against documents embedded by the other ranks by noise. The message names both embedders
    and the fix (open the store with the one it was written with, or copy its items into a new
    store, which embeds them again).

    Attributes:
        written_with: the embedder the store recorded (``core.embeddings.embedder_id``).
        opened_with: the embedder it was opened with.
    """

    def __init__(self, message: str, *, written_with: str = "", opened_with: str = "") -> None:
        super().__init__(message)  # defaults: a pickled error is rebuilt from its message, then its __dict__
        self.written_with = written_with
        self.opened_with = opened_with


class UnknownEmbeddingsError(ConfigurationError):
    """An embeddings spec (``"provider:model"``) that names no provider we know."""


class InvalidNamespaceError(LangMemPluginError, _LangGraphInvalidNamespaceError):
    """A namespace LangGraph's rules reject, or with a label that is not valid Unicode text.

    Also a ``langgraph.store.base.InvalidNamespaceError``: ``except`` of either class catches it.
    """


class InvalidRecordError(LangMemPluginError, ValueError):
    """A memory record field is invalid.

    Attributes:
        field: the first invalid field, e.g. ``"priority"``.
        errors: ``(field, message)`` for every invalid field.
    """

    def __init__(self, message: str, *, field: str, errors: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.errors = errors if errors is not None else [(field, message)]


class InvalidValueError(LangMemPluginError, ValueError):
    """A write a store refuses: a value that is not a JSON object of JSON values, larger or deeper than
    the limits (``stores._common.MAX_VALUE_BYTES``, ``MAX_VALUE_DEPTH``), holding text that is not valid
    Unicode (a lone surrogate); or an item key that is not a ``str``. Nothing of the write is stored."""


class ReadOnlyError(ConfigurationError):
    """A change (edit, forget) asked of an inspector that was made read-only."""


class InvalidFilterError(LangMemPluginError, ValueError):
    """A search filter with an unknown ``$`` operator or an operand of the wrong type."""


class MemoryNotFoundError(LangMemPluginError, KeyError):
    """No memory with that id exists in the compartments the caller may use.

    Attributes:
        memory_id: the id that was asked for.
    """

    def __init__(self, memory_id: str, message: str) -> None:
        super().__init__(message)
        self.memory_id = memory_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class MemoryLimitError(LangMemPluginError, ValueError):
    """A compartment holds its maximum number of memories, or a memory is longer than its limit."""


class CompartmentError(LangMemPluginError, ValueError):
    """A compartment name that does not exist, or that this tool set is not allowed to use."""


class AgentAccessError(CompartmentError):
    """A change a sub-agent may not make: a write to a compartment that is read-only to it
    (:class:`~langmem_plugin.services.agents.AgentRules`), or a promotion of a memory that is
    not the caller's. Nothing is read or written.

    Attributes:
        agent: the agent that asked.
        compartment: the compartment it asked to change.
    """

    def __init__(self, message: str, *, agent: str = "", compartment: str = "") -> None:
        super().__init__(message)
        self.agent = agent
        self.compartment = compartment


class MissingDependencyError(LangMemPluginError, ImportError):
    """An optional dependency is not installed; the message has the ``pip install`` line."""


class OfflineResourceError(LangMemPluginError, RuntimeError):
    """A file that ships with an installed package (token encoding, model) is missing or corrupt."""


class PlanError(LangMemPluginError, ValueError):
    """A change of the agent's plan that does not apply: no plan, an unknown step id, a status
    transition that is not allowed, a second active plan, a text that is empty or too long."""


class ProviderError(LangMemPluginError, RuntimeError):
    """A model provider (a chat model or an embeddings API: OpenAI, Azure, Ollama, vLLM, ...) could
    not be used: its server did not answer, it refused the API key, it has no such model, or the
    object could not be made without a key. The provider's own exception is the ``__cause__``.

    The message says why the call was made, what was called and the fix.

    Attributes:
        provider: what was called, e.g. ``"OpenAIEmbeddings(model='nomic-embed-text',
            base_url='http://localhost:11434/v1')"``.
        reason: why it was called, e.g. ``"to learn the dimension of its vectors"``.
    """

    def __init__(self, message: str, *, provider: str = "", reason: str = "") -> None:
        super().__init__(message)  # defaults: a pickled error is rebuilt from its message, then its __dict__
        self.provider = provider
        self.reason = reason


class ChatModelError(ProviderError):
    """A chat model's call failed (see :class:`ProviderError`)."""


class EmbeddingsError(ProviderError):
    """An embeddings provider's call failed, or the embedder could not be made (see
    :class:`ProviderError`): the call that learns the dimension of its vectors, or one that
    embeds what a store writes or searches."""


class ProviderUnavailableError(ProviderError, ConnectionError):
    """A provider that may answer if asked again: its server did not answer (down, a timeout) or
    asked to wait (rate limit, HTTP 5xx). A ``ConnectionError`` too, so the retries of LangGraph's
    ``RetryPolicy`` and of the background writer retry it as they retried the provider's own
    exception."""


class ChatModelUnavailableError(ChatModelError, ProviderUnavailableError):
    """A chat model that may answer if asked again (see :class:`ProviderUnavailableError`)."""


class EmbeddingsUnavailableError(EmbeddingsError, ProviderUnavailableError):
    """An embeddings provider that may answer if asked again (see :class:`ProviderUnavailableError`)."""


class StoreError(LangMemPluginError, RuntimeError):
    """The storage engine failed; the engine's own exception is the ``__cause__``."""


class StoreLockedError(StoreError):
    """Another process (or another store object) holds the store's path."""


def shown(value: Any) -> str:
    """A short repr of ``value`` for an error message: never raises, never longer than 80 characters."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


def redacted_url(url: str) -> str:
    """``url`` without its password, for an error message (``postgresql://u:***@host/db``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a connection string that is not a URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def one_line(text: str) -> str:
    """``text`` on one line with no character a terminal would act on: each character that is
    not printable (controls, line breaks, format characters such as bidi overrides) as its
    escape, e.g. ``\\x1b``."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class StoreFileError(StoreError):
    """A store directory whose files this version cannot use: its ``store.json`` is empty,
    truncated, not JSON, not a JSON object, another program's file, or lacks a key or holds one of
    the wrong type; or its ``shard/`` is missing, not a directory, or refused by the engine.

    The message names the file, what is wrong with it and the fix. Nothing is changed on disk.

    Attributes:
        path: the file or directory that is wrong.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)  # defaults: a pickled error is rebuilt from its message, then its __dict__
        self.path = path


class StoreFormatError(StoreFileError, StoreConfigMismatchError):
    """A ``store.json`` of a format this version does not read (written by an older or a newer
    version); also a :class:`StoreConfigMismatchError`, as it was before it was a store error."""


class StoreFullError(StoreError, OSError):
    """The file system of an embedded store has not enough free space for the next step (a write,
    opening, an index build): refused before the engine writes, so nothing of the step is written
    and every write acknowledged before it is kept. ``errno`` is ``ENOSPC``.

    Attributes:
        path: the store's directory.
        free: the bytes free on its file system.
        needed: the bytes the step needed.
    """

    def __init__(self, message: str, *, path: str = "", free: int = 0, needed: int = 0) -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC
        self.path = path
        self.free = free
        self.needed = needed
