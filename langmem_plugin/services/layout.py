"""Compartments: where each kind of memory lives, and how much of it may live there.

- ``user``: long-term memory of one user, ``("memories", "user", "{user_id}")``; until deleted.
- ``session``: memory of one conversation, ``("memories", "session", "{thread_id}")``; until deleted.
- ``knowledge``: static documents of one agent, ``("memories", "agent", "{agent}", "knowledge")``.
- ``run``: notes of one run, kept in graph state (``run_memory``) and cleared when the run ends.
- ``results``: tool results of one conversation, ``("memories", "results", "{thread_id}")``; written
  with a TTL (:class:`~langmem_plugin.services.context.results.ResultsConfig`), so storage stays bounded.
- ``team``: memory several agents and users of one team read, ``("memories", "team", "{team_id}")``
  (the run's ``team_id``); only with ``MemoryLayout(team=True)``, and written only by promotion
  (:mod:`langmem_plugin.services.team`).

The three stored compartments sit side by side under ``"memories"``, each under
its own label, so no user id or thread id can ever collide with another
compartment's namespace (a user called ``"session"`` stays in
``("memories", "user", "session")``). Every template is configurable
(:class:`MemoryLayout`) and filled from the run's :class:`~langmem_plugin.Scope`
only — never from anything a model writes. When the scope carries no
``agent``, :attr:`MemoryLayout.default_agent` fills it.

Limits are per compartment (:class:`CompartmentLimits`): the most memories a
namespace may hold, and the most characters one memory's content may have.
Going over either raises :class:`~langmem_plugin.errors.MemoryLimitError`
naming the compartment, the limit and the fix.

The item limit is a count followed by a write, made one *bounded write*
(:mod:`langmem_plugin.services.limits`): a store that holds limits where its
data lives (CheckpointerStore over a SQLite file, embedded QdrantStore) counts
and writes in one exclusive section of its engine, so two store objects or two
processes writing one compartment never overshoot it. With any other store
the count and the write are two batches; writers that add memories hold
:func:`room_held` (or :func:`aroom_held`) around them, one lock per (store,
namespace): within one process, 8 threads filling a compartment limited to 20
store exactly 20 — but a second store object or process writing the same data
is not held by that lock, and the limit can be overshot by about one item per
concurrent writer (docs/security.md, "Limits hold where the data lives").

>>> from langmem_plugin.core.scope import Scope
>>> layout = MemoryLayout()
>>> layout.namespace("user", Scope(user_id="u1"))
('memories', 'user', 'u1')
>>> layout.namespace("knowledge", Scope())
('memories', 'agent', 'assistant', 'knowledge')
>>> layout.limits_for("session").max_items
2000
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from langgraph.store.base import BaseStore

from langmem_plugin.core.bounded import item_limits
from langmem_plugin.core.scope import NamespaceTemplate, Scope, template_keys, templates_may_meet
from langmem_plugin.errors import (
    AgentAccessError,
    CompartmentError,
    ConfigurationError,
    MemoryLimitError,
    ScopeError,
)
from langmem_plugin.services.agents import AgentRules, Sharing

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_NAMESPACES",
    "STORED_COMPARTMENTS",
    "Compartment",
    "CompartmentLimits",
    "MemoryLayout",
    "add_run_note",
    "aroom_held",
    "parse_compartment",
    "room_held",
    "room_lock",
]


class Compartment(StrEnum):
    """The kinds of memory (DESIGN.md, "where each kind of memory lives")."""

    USER = "user"
    """Long-term memory of one user, across threads."""
    SESSION = "session"
    """Memory of one conversation (thread)."""
    KNOWLEDGE = "knowledge"
    """Static documents of one agent."""
    RUN = "run"
    """Scratch notes of one run, in graph state; cleared when the run ends."""
    RESULTS = "results"
    """Tool results of one conversation (thread), kept with a TTL."""
    TEAM = "team"
    """Memory of one team (``team_id``), which its agents and users read; written by promotion only."""


#: The compartments that live in a store (run memory lives in graph state).
STORED_COMPARTMENTS: tuple[Compartment, ...] = (
    Compartment.USER,
    Compartment.SESSION,
    Compartment.KNOWLEDGE,
    Compartment.RESULTS,
    Compartment.TEAM,
)

# The stored compartments a sub-agent may have its own of (knowledge is keyed by agent already).
_PRIVATE = (Compartment.USER, Compartment.SESSION, Compartment.RESULTS)


def _private(template: NamespaceTemplate) -> NamespaceTemplate:
    return (template[0], "agent", "{agent}", *template[1:])


DEFAULT_NAMESPACES: Mapping[Compartment, NamespaceTemplate] = MappingProxyType(
    {
        Compartment.USER: ("memories", "user", "{user_id}"),
        Compartment.SESSION: ("memories", "session", "{thread_id}"),
        Compartment.KNOWLEDGE: ("memories", "agent", "{agent}", "knowledge"),
        Compartment.RESULTS: ("memories", "results", "{thread_id}"),
        Compartment.TEAM: ("memories", "team", "{team_id}"),
    }
)


@dataclass(frozen=True)
class CompartmentLimits:
    """How much one compartment may hold.

    Attributes:
        max_items: the most memories one namespace of the compartment may hold (``None``: no limit).
        max_chars: the most characters one memory's content may have.
    """

    max_items: int | None = 1000
    max_chars: int = 4000

    def __post_init__(self) -> None:
        if self.max_items is not None and self.max_items < 1:
            raise ConfigurationError(f"max_items must be at least 1 or None, got {self.max_items!r}")
        if self.max_chars < 1:
            raise ConfigurationError(f"max_chars must be at least 1, got {self.max_chars!r}")


DEFAULT_LIMITS: Mapping[Compartment, CompartmentLimits] = MappingProxyType(
    {
        Compartment.USER: CompartmentLimits(max_items=10_000, max_chars=4000),
        Compartment.SESSION: CompartmentLimits(max_items=2000, max_chars=8000),
        Compartment.KNOWLEDGE: CompartmentLimits(max_items=100_000, max_chars=8000),
        Compartment.RUN: CompartmentLimits(max_items=50, max_chars=2000),
        Compartment.RESULTS: CompartmentLimits(max_items=None, max_chars=250_000),
        Compartment.TEAM: CompartmentLimits(max_items=10_000, max_chars=4000),
    }
)


def parse_compartment(
    value: str | Compartment, *, allowed: Iterable[Compartment] | None = None
) -> Compartment:
    """``value`` as a :class:`Compartment`, checked against ``allowed``.

    Raises:
        CompartmentError: an unknown name, or one not in ``allowed``.
    """
    allowed_list = list(allowed) if allowed is not None else list(Compartment)
    names = [c.value for c in allowed_list]
    try:
        compartment = Compartment(value.strip().lower() if isinstance(value, str) else value)
    except ValueError:
        raise CompartmentError(f"unknown compartment {value!r}; use one of {names}") from None
    if compartment not in allowed_list:
        raise CompartmentError(
            f"the compartment {compartment.value!r} is not available here; use one of {names}"
        )
    return compartment


@dataclass(frozen=True)
class MemoryLayout:
    """Namespace templates and size limits of every compartment.

    Attributes:
        namespaces: a template per stored compartment; missing ones use :data:`DEFAULT_NAMESPACES`.
        limits: limits per compartment; missing ones use :data:`DEFAULT_LIMITS`.
        default_agent: the agent name used when the scope has none (knowledge namespace).
        agents: what each compartment is to a sub-agent (:class:`~langmem_plugin.services.agents.AgentRules`):
            :meth:`namespace` gives an isolated sub-agent its own namespace (:meth:`private_template`)
            and refuses its writes to a read-only one.
        team: the ``team`` compartment is on: recall reads the team memory of a run that names a
            ``team_id``, and the tools can promote a memory into it
            (:mod:`langmem_plugin.services.team`). Off, it has no namespace.
    """

    namespaces: Mapping[Compartment | str, NamespaceTemplate] = field(default_factory=dict)
    limits: Mapping[Compartment | str, CompartmentLimits] = field(default_factory=dict)
    default_agent: str = "assistant"
    agents: AgentRules = field(default_factory=AgentRules)
    team: bool = False

    def __post_init__(self) -> None:
        namespaces = dict(DEFAULT_NAMESPACES)
        for key, template in self.namespaces.items():
            compartment = parse_compartment(key, allowed=STORED_COMPARTMENTS)
            template = tuple(template)
            if not template or not all(isinstance(label, str) and label for label in template):
                raise ConfigurationError(
                    f"the namespace template of {compartment.value!r} must be a non-empty tuple of "
                    f"non-empty strings, got {template!r}"
                )
            template_keys(template)  # validates the placeholders
            namespaces[compartment] = template
        limits = dict(DEFAULT_LIMITS)
        for key, value in self.limits.items():
            if not isinstance(value, CompartmentLimits):
                raise ConfigurationError(f"limits[{key!r}] must be a CompartmentLimits, got {value!r}")
            limits[parse_compartment(key)] = value
        if not isinstance(self.team, bool):
            raise ConfigurationError(
                f"team must be True or False, got {self.team!r}. Fix: MemoryLayout(team=True)."
            )
        if not isinstance(self.agents, AgentRules):
            raise ConfigurationError(
                f"agents must be an AgentRules, got {self.agents!r}. "
                "Fix: MemoryLayout(agents=AgentRules(...)).",
            )
        used = [c for c in STORED_COMPARTMENTS if c is not Compartment.TEAM or self.team]
        places = [(c.value, namespaces[c]) for c in used]
        places += [  # a sub-agent's own, where the rules give one
            (f"{c.value} (a sub-agent's own)", _private(namespaces[c]))
            for c in _PRIVATE
            if self.agents.isolates(c.value)
        ]
        for i, (one, first) in enumerate(places):  # no id of one may reach another's namespace
            for two, second in places[i + 1 :]:
                if templates_may_meet(first, second):
                    raise ConfigurationError(
                        f"the {one} and {two} compartments could share one namespace: "
                        f"{first!r} and {second!r} fill alike for some ids (or one "
                        "inside the other). Fix: give each its own fixed label, e.g. ('memories', "
                        f"'{one.split()[0]}', ...)."
                    )
        object.__setattr__(self, "namespaces", MappingProxyType(namespaces))
        object.__setattr__(self, "limits", MappingProxyType(limits))

    def template(self, compartment: Compartment | str) -> NamespaceTemplate:
        """The namespace template of a stored compartment."""
        return self.namespaces[parse_compartment(compartment, allowed=STORED_COMPARTMENTS)]

    def private_template(self, compartment: Compartment | str) -> NamespaceTemplate:
        """The template of a sub-agent's own ``compartment`` (rule ``isolated``): the shared one with
        ``("agent", "{agent}")`` after its first label — ``("memories", "agent", "{agent}", "user",
        "{user_id}")`` — beside the knowledge of that agent, never inside another compartment."""
        comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
        return self.template(comp) if comp is Compartment.KNOWLEDGE else _private(self.template(comp))

    def rule(self, compartment: Compartment | str, scope: Scope) -> Sharing:
        """What ``compartment`` is to the agent ``scope`` runs as (the root: shared; the team's
        memory is the same for every agent)."""
        if Compartment(compartment) is Compartment.TEAM:
            return Sharing.SHARED
        return self.agents.rule(str(Compartment(compartment)), scope.agent, subagent=scope.subagent)

    def namespace(
        self, compartment: Compartment | str, scope: Scope, *, write: bool = False
    ) -> tuple[str, ...]:
        """The namespace of ``compartment`` for ``scope``, as the agent's rule gives it: the shared
        one, or the sub-agent's own (``isolated``). ``write``: the caller is about to change it.

        Raises:
            ScopeError: the scope lacks a value the template needs (e.g. ``user_id``).
            AgentAccessError: ``write`` of a compartment that is read-only to the scope's agent,
                or of the team's memory (which only a promotion writes).
            CompartmentError: the ``team`` compartment of a layout without it.
        """
        comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
        if comp is Compartment.TEAM:
            return self._team_namespace(scope, write=write)
        rule = self.rule(comp, scope)
        if write and rule is Sharing.READ_ONLY:
            raise AgentAccessError(
                f"the {comp.value} memory is read-only to the agent {scope.agent!r}: it reads the shared "
                f"{comp.value} memory and changes nothing there. Fix: leave the change to the agent that "
                "owns it, or give this agent its own (AgentRules(agents={"
                f"{scope.agent!r}: {{{comp.value!r}: 'isolated'}}}})).",
                agent=scope.agent or "",
                compartment=comp.value,
            )
        if comp is Compartment.KNOWLEDGE and scope.subagent and rule is not Sharing.ISOLATED:
            scope = dataclasses.replace(scope, agent=scope.root_agent, subagent=False)
        if scope.agent is None:
            scope = dataclasses.replace(scope, agent=self.default_agent)
        private = rule is Sharing.ISOLATED and comp is not Compartment.KNOWLEDGE
        return scope.namespace(self.private_template(comp) if private else self.template(comp))

    def _team_namespace(self, scope: Scope, *, write: bool) -> tuple[str, ...]:
        if not self.team:
            raise CompartmentError(
                "this layout has no team compartment. Fix: MemoryLayout(team=True), and give runs "
                'a team_id (config={"configurable": {"team_id": ...}}).'
            )
        if write:
            raise AgentAccessError(
                "team memory is not changed directly: a memory enters it by promotion (the "
                "promote_memory tool, Memory.promote) and leaves it when its original is forgotten. "
                "Fix: change or forget your own memory, then promote it again.",
                agent=scope.agent or "",
                compartment=Compartment.TEAM.value,
            )
        return scope.namespace(self.template(Compartment.TEAM))

    def writable(self, compartment: Compartment | str, scope: Scope) -> bool:
        """Whether the agent ``scope`` runs as may change ``compartment`` (not ``read_only`` to it;
        the team's memory: no one, but by promotion)."""
        if Compartment(compartment) is Compartment.TEAM:
            return False
        return self.rule(compartment, scope) is not Sharing.READ_ONLY

    def named(self, compartments: Sequence[Compartment | str], scope: Scope) -> list[Compartment | str]:
        """Those of ``compartments`` whose namespace ``scope`` can name (no thread: no session memory).

        Raises:
            ScopeError: the scope names none of them (the first one's error, saying what is missing).
        """
        usable = []
        for compartment in compartments:
            try:
                self.namespace(compartment, scope)
            except ScopeError:
                continue
            usable.append(compartment)
        if not usable and compartments:
            self.namespace(compartments[0], scope)
        return usable

    def limits_for(self, compartment: Compartment | str) -> CompartmentLimits:
        """The limits of ``compartment``."""
        return self.limits[parse_compartment(compartment)]

    def check_content(self, compartment: Compartment | str, content: str) -> None:
        """Raise :class:`MemoryLimitError` when ``content`` is longer than the compartment allows."""
        comp = parse_compartment(compartment)
        limit = self.limits_for(comp).max_chars
        if len(content) > limit:
            raise MemoryLimitError(
                f"the memory is {len(content)} characters; {comp.value} memory takes at most {limit}. "
                "Fix: shorten it, or split it into several memories."
            )

    def check_room(self, compartment: Compartment | str, count: int, adding: int = 1) -> None:
        """Raise :class:`MemoryLimitError` when ``count + adding`` memories exceed the compartment's limit."""
        limit = self.limits_for(compartment).max_items
        if limit is not None and count + adding > limit:
            raise self.room_error(compartment, count, adding)

    def room_error(self, compartment: Compartment | str, count: int, adding: int = 1) -> MemoryLimitError:
        """The error of a full compartment that holds ``count`` memories (``adding`` more were asked)."""
        comp = parse_compartment(compartment)
        limit = self.limits_for(comp).max_items
        return MemoryLimitError(
            f"{comp.value} memory is full: it holds {count} memories and the limit is {limit}. "
            "Fix: delete memories that are no longer needed or fold several into one (delete_memory, "
            "update_memory), "
            "or raise the limit in MemoryLayout(limits=...)."
        )


def add_run_note(notes: Sequence[str] | None, note: str, *, layout: MemoryLayout | None = None) -> list[str]:
    """Run memory with ``note`` appended (a new list for the state update), within the run limits.

    >>> add_run_note(["checked the calendar"], "user is free on Friday")
    ['checked the calendar', 'user is free on Friday']

    Raises:
        MemoryLimitError: the note is too long, or run memory holds its maximum number of notes.
    """
    layout = layout or MemoryLayout()
    current = list(notes or [])
    if not isinstance(note, str) or not note.strip():
        raise MemoryLimitError("a run note must be non-empty text")
    layout.check_content(Compartment.RUN, note)
    layout.check_room(Compartment.RUN, len(current))
    return [*current, note]


_room_locks: weakref.WeakKeyDictionary[BaseStore, dict[tuple[str, ...], threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_room_locks_guard = threading.Lock()


def room_lock(store: BaseStore, namespace: Sequence[str]) -> threading.Lock:
    """The lock that makes count-then-put in ``namespace`` of ``store`` atomic in this process."""
    with _room_locks_guard:
        locks = _room_locks.setdefault(store, {})
        return locks.setdefault(tuple(namespace), threading.Lock())


@contextmanager
def room_held(store: BaseStore, namespace: Sequence[str]) -> Iterator[None]:
    """Hold :func:`room_lock` around a count of ``namespace`` and the put that adds to it (threads).

    Nothing is held for a store that holds limits where its data lives
    (``item_limits(store) == "shared"``): its bounded writes are atomic without it.
    """
    if item_limits(store) == "shared":
        yield
        return
    with room_lock(store, namespace):
        yield


@asynccontextmanager
async def aroom_held(
    store: BaseStore, namespace: Sequence[str], *, poll: float = 0.002
) -> AsyncIterator[None]:
    """:func:`room_held` for coroutines: waits without blocking the event loop.

    The lock is the same one threads take, so sync and async writers exclude each other.
    Nothing is held for a store that holds limits where its data lives.
    """
    if item_limits(store) == "shared":
        yield
        return
    lock = room_lock(store, namespace)
    # Threads hold this lock too, so no asyncio primitive can wait for it; a thread waiting in
    # acquire() would keep the lock after a cancellation. Polling is safe under cancellation.
    while not lock.acquire(blocking=False):  # noqa: ASYNC110
        await asyncio.sleep(poll)
    try:
        yield
    finally:
        lock.release()
