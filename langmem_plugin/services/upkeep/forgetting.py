"""Forgetting: one memory, one user entirely, or the least valuable past a cap.

- :func:`forget_steps` deletes one memory by id (user or session memory of the
  scope) with the exchanges it came from (:mod:`.provenance`), redacts its history and
  records who forgot it and when.
- :func:`forget_user_steps` removes everything of one user: their long-term
  memory (with the episodes of what they said, in any thread), their history,
  and for every thread of theirs the session memory (archived plans, summaries,
  session-only episodes) and the stored tool results (the layout's ``results``
  compartment), the same in every sub-agent's own compartments (``("memories", "agent",
  <agent>, "user", <user_id>)``, ...) and the copies the user promoted into team memory
  (:mod:`langmem_plugin.services.team`). It returns counts, and touches no one else. :func:`drop_queued`
  drops first what the user has not written yet: reflection jobs and failed writes. A store
  that keeps history (``CheckpointerStore``) then drops the old versions of all of it
  (:func:`~langmem_plugin.services.store_steps.purge_history_steps`).
- :func:`delete_threads_steps` removes what belongs to threads (session memory,
  stored tool results, their thread index entries), and their old versions from a store
  that keeps history — ``delete_idle_threads`` runs it for the threads it deletes from a
  checkpointer. What a user said in a thread stays in that user's memory: long-term memory
  outlives the thread.
- :func:`evict_steps` keeps a namespace under a cap by evicting the least
  valuable memories first: superseded ones, then lowest priority, then least
  accessed, then oldest. Every eviction is logged and returned.

**Which threads are a user's.** A thread id says nothing about its user, so the
turn service records each ``(user_id, thread_id)`` pair it sees in a small
*thread index* (``("memory_meta", "threads", "{user_id}")``, one item per thread,
written once per pair with the first episode, not embedded). ``forget_user``
reads it, plus any ``threads`` you pass. A thread that another user's index
also lists is shared: its session memory is kept and reported; the user's own
stored tool results in it (``(..., "results", thread_id, "user", user_id)``) go.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from langgraph.store.base import Item, PutOp, SearchOp

from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import NamespaceTemplate, Scope, exact_id, exact_ids, template_keys
from langmem_plugin.core.validity import is_current
from langmem_plugin.errors import ScopeError
from langmem_plugin.services.history import HISTORY_NAMESPACE
from langmem_plugin.services.intents import (
    PURGE,
    Intent,
    erasures_left_steps,
    intents_steps,
    pending_steps,
    purge_steps,
)
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.operations import StoredMemory, get_steps, list_steps, read_record, to_stored
from langmem_plugin.services.store_steps import HOLD, StoreSteps
from langmem_plugin.services.team import private_namespaces_steps, promoted_by_steps
from langmem_plugin.services.upkeep.erasure import intended_writes, purge_targets, within
from langmem_plugin.services.upkeep.provenance import Forgotten, forget_memories_steps

__all__ = [
    "THREAD_INDEX",
    "ForgetReport",
    "delete_threads_steps",
    "drop_queued",
    "evict_steps",
    "forget_steps",
    "forget_user_steps",
    "index_thread_ops",
    "resume_forgetting_steps",
    "value_order",
]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: One item per thread of a user: how ``forget_user`` finds a user's threads.
THREAD_INDEX: NamespaceTemplate = ("memory_meta", "threads", "{user_id}")
_PAGE = 500
#: The label before the owner's id in a per-user namespace below a thread's (stored tool results).
_OWNER_LABEL = "user"


def index_thread_ops(scope: Scope, *, template: NamespaceTemplate = THREAD_INDEX) -> list[PutOp]:
    """The write that records ``scope``'s thread as one of its user's (none without both ids)."""
    if not scope.user_id or not scope.thread_id:
        return []
    value = {"user_id": scope.user_id, "thread_id": scope.thread_id}
    return [PutOp(scope.namespace(template), scope.thread_id, value, index=False)]


def value_order(memory: StoredMemory) -> tuple[int, int, int, str]:
    """The eviction order: superseded first, then lowest priority, least accessed, oldest."""
    record = memory.record
    return (int(is_current(record)), record.priority, record.access_count, record.updated_at.isoformat())


def evict_steps(
    namespace: tuple[str, ...],
    max_items: int,
    *,
    protect: Iterable[str] = (),
    spare: Collection[MemoryKind] = (),
) -> StoreSteps[list[StoredMemory]]:
    """Evict the least valuable memories of ``namespace`` until it holds ``max_items``; returns them.

    ``protect`` ids (just written) are not evicted; memories of a ``spare`` kind are neither
    counted nor evicted (episodes: remember makes room for them itself). Each eviction is
    logged at INFO.
    """
    items = yield from list_steps(namespace)
    if spare:
        items = [
            i for i in items if (m := to_stored(i, Compartment.USER)) is None or m.record.kind not in spare
        ]
    if len(items) <= max_items:
        return []
    kept = set(protect)
    memories = [m for i in items if (m := to_stored(i, Compartment.USER)) and m.id not in kept]
    victims = sorted(memories, key=value_order)[: len(items) - max_items]
    if victims:
        yield [PutOp(m.namespace, m.id, None) for m in victims]
    for memory in victims:
        logger.info(
            "memory cap %d reached in %s: evicted %s (priority %d, accessed %d, %s)",
            max_items,
            namespace,
            memory.id,
            memory.record.priority,
            memory.record.access_count,
            "superseded" if not is_current(memory.record) else "current",
        )
    return victims


def forget_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    compartments: Sequence[Compartment | str] = (Compartment.USER, Compartment.SESSION),
    history: NamespaceTemplate = HISTORY_NAMESPACE,
    recorded_by: str = "forget",
) -> StoreSteps[StoredMemory]:
    """Forget the memory ``memory_id`` of ``scope``: deleted with the exchanges it came from, its
    history redacted, and who forgot it and when recorded (:func:`.provenance.forget_memories_steps`).

    Compartments whose namespace the scope cannot fill (session memory without a thread)
    are not searched. Its copies in team memory go with it (:mod:`langmem_plugin.services.team`).

    Raises:
        MemoryNotFoundError: no such id in those compartments (nothing is removed).
        ScopeError: the scope fills none of them.
    """
    usable = layout.named(compartments, scope)
    memory = yield from get_steps(scope, layout, memory_id, compartments=usable, track_access=False)
    layout.namespace(memory.compartment, scope, write=True)  # an agent that only reads it: refused
    forgotten: Forgotten = yield from forget_memories_steps(
        scope, layout, [memory], recorded_by=recorded_by, history=history
    )
    logger.info("forget %s: %s", memory.id, forgotten.summary())
    return memory


@dataclass
class ForgetReport:
    """What ``forget_user`` removed.

    Attributes:
        user_id: whose data.
        counts: items removed per place: ``user``, ``session``, ``tool_results`` (each with what
            sub-agents kept of the user in their own compartments), ``history``,
            ``thread_index``, ``team`` (the copies the user promoted into team memory).
        kinds: memory records removed per kind (``episode``, ``fact``, ``plan`` ...).
        threads: the threads whose data was removed.
        shared_threads: threads another user also has: their session memory was kept (the user's
            own stored tool results there were removed).
        queued: work of the user dropped before it ran (:func:`drop_queued`):
            ``queued_reflections``, ``failed_reflections``, ``failed_writes``.
        quotes_stripped: other users' exchanges in shared threads that kept a copy of the
            beginning of one of the user's (``metadata.context``, for lexical search): the copy
            was removed, the rest of the exchange kept.
        history_purged: old versions the store kept of what was removed or rewritten, dropped
            (a store with history: ``CheckpointerStore``); 0 for a store that keeps none.
    """

    user_id: str
    counts: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    threads: list[str] = field(default_factory=list)
    shared_threads: list[str] = field(default_factory=list)
    queued: dict[str, int] = field(default_factory=dict)
    quotes_stripped: int = 0
    history_purged: int = 0

    @property
    def total(self) -> int:
        """Every item removed."""
        return sum(self.counts.values())


class _Writer(Protocol):
    def drop_user(self, user_id: str) -> int: ...


class _Reflector(Protocol):
    def drop_user(self, user_id: str) -> dict[str, int]: ...


def drop_queued(user_id: str, writer: _Writer | None, reflector: _Reflector | None) -> dict[str, int]:
    """Drop the work of ``user_id`` not yet written (before ``forget_user`` removes what was).

    The reflector's pending and failed jobs of the user are dropped unrun (one running is waited
    for); the writer finishes its background writes and drops the user's failed ones, so no
    retry writes the user back afterwards. Returns the counts (blocking: an async caller runs it
    in a worker thread).
    """
    dropped = {"queued_reflections": 0, "failed_reflections": 0, "failed_writes": 0}
    if reflector is not None:
        dropped.update(reflector.drop_user(user_id))
    if writer is not None:
        dropped["failed_writes"] = writer.drop_user(user_id)
    return dropped


def _prefix_items(prefix: tuple[str, ...], filter: Mapping[str, Any] | None = None) -> StoreSteps[list[Item]]:
    """Every item under ``prefix`` (the namespace and those below it), those matching ``filter``."""
    items: list[Item] = []
    offset = 0
    while True:
        where = dict(filter) if filter else None
        (page,) = yield [SearchOp(prefix, filter=where, limit=_PAGE, offset=offset, refresh_ttl=False)]
        items.extend(page)
        if len(page) < _PAGE:
            return items
        offset += _PAGE


def _static_prefix(template: NamespaceTemplate) -> tuple[str, ...]:
    """The labels of ``template`` before its first placeholder."""
    labels: list[str] = []
    for label in template:
        if template_keys((label,)):
            break
        labels.append(label)
    return tuple(labels)


def forget_user_steps(
    user_id: str,
    layout: MemoryLayout,
    *,
    threads: Iterable[str] = (),
    thread_namespaces: Sequence[NamespaceTemplate] | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
    index: NamespaceTemplate = THREAD_INDEX,
) -> StoreSteps[ForgetReport]:
    """Remove everything of ``user_id``; returns the counts.

    Args:
        user_id: whose data.
        layout: the compartments' namespaces (user and session memory).
        threads: thread ids of the user beyond those in the thread index.
        thread_namespaces: the per-thread namespace templates to clear, each filled with the
            thread id (default: the layout's session and results compartments).
        history: the history template.
        index: the thread index template.

    Raises:
        ScopeError: at the call, before any step runs: ``user_id`` is not an id (not a ``str``,
            empty, a ``.``, a control character: :func:`~langmem_plugin.core.scope.exact_id`), or
            ``threads`` is not a list of them.
    """
    user_id = exact_id("user_id", user_id)
    if threads is None or isinstance(threads, Mapping) or not isinstance(threads, Iterable):
        raise ScopeError(
            "thread_id",
            f"threads must be a list of thread ids, got {type(threads).__name__}. "
            "Fix: pass threads=['t1', ...], or leave it out.",
        )
    thread_ids = exact_ids("thread_id", threads)
    steps = _forget_user_steps(user_id, layout, thread_ids, thread_namespaces, history, index)
    report, purged = yield from _retried_steps(steps)
    report.history_purged += purged
    return report


def _retried_steps(steps: StoreSteps[_T]) -> StoreSteps[tuple[_T, int]]:
    """``steps``, then what a stopped run of them may have left beyond its intent: the purge of
    the intents' own history that removes its intent (a retry finishes it); with how many old
    versions that purge dropped."""
    done = yield from steps
    return done, (yield from erasures_left_steps())


def _forget_user_steps(
    user_id: str,
    layout: MemoryLayout,
    threads: list[str],
    thread_namespaces: Sequence[NamespaceTemplate] | None,
    history: NamespaceTemplate,
    index: NamespaceTemplate,
) -> StoreSteps[ForgetReport]:
    scope = Scope(user_id=user_id)
    report = ForgetReport(user_id)
    sharers: dict[str, list[str]] = {}  # a shared thread: its other users
    index_ns = scope.namespace(index)
    index_items = yield from list_steps(index_ns)
    known = [str(i.value.get("thread_id") or i.key) for i in index_items]
    # a run that stopped part-way recorded every thread it knew: its index entries may be gone
    prior = yield from intents_steps(_FORGET_USER, user_id)
    recorded = [str(t) for t in prior.args.get("threads", ())] if prior is not None else []
    candidates = list(dict.fromkeys([*known, *threads, *recorded]))
    index_prefix = _static_prefix(index)
    for thread in candidates:
        (claims,) = yield [SearchOp(index_prefix, filter={"thread_id": thread}, limit=50, refresh_ttl=False)]
        others = {c.value.get("user_id") for c in claims} - {user_id}
        if others:
            report.shared_threads.append(thread)
            sharers[thread] = sorted(str(o) for o in others if o)
            logger.warning("forget_user(%r): thread %r is shared with other users; kept", user_id, thread)
        else:
            report.threads.append(thread)
    session_template = layout.template(Compartment.SESSION)
    results_template = layout.template(Compartment.RESULTS)
    templates = list(thread_namespaces or (session_template, results_template))
    places: list[tuple[str, tuple[str, ...], bool]] = [
        ("user", layout.namespace(Compartment.USER, scope), True),
        ("history", scope.namespace(history), True),
    ]
    shared = set(report.shared_threads)
    for thread in [*report.threads, *report.shared_threads]:
        thread_scope = Scope(user_id=user_id, thread_id=thread, agent=layout.default_agent)
        for template in templates:
            if template == session_template:
                name = "session"
            elif template == results_template:
                name = "tool_results"
            else:
                name = "/".join(_static_prefix(template)) or "thread"
            # a shared thread's own memory is the other users' too: kept, reported; but for its
            # summary, which quotes every user of the thread, and the user's own tool results
            places.append((name, thread_scope.namespace(template), thread not in shared))
    threads = [*report.threads, *report.shared_threads]
    for compartment, in_thread, namespace in (yield from private_namespaces_steps(layout, user_id, threads)):
        name = {Compartment.USER: "user", Compartment.SESSION: "session"}.get(compartment, "tool_results")
        places.append((name, namespace, in_thread not in shared))  # the user's memory in an agent's own
    places.append(("thread_index", index_ns, True))
    doomed: list[PutOp] = []
    seen: set[tuple[tuple[str, ...], str]] = set()
    for name, namespace, whole in places:
        items = yield from _prefix_items(namespace)
        for item in items:
            identity = (tuple(item.namespace), item.key)
            if identity in seen or not _theirs(item, namespace, user_id, whole=whole):
                continue
            seen.add(identity)
            report.counts[name] = report.counts.get(name, 0) + 1
            record = read_record(item) if name in ("user", "session") else None
            if record is not None:
                kind = record.kind.value if isinstance(record.kind, MemoryKind) else str(record.kind)
                report.kinds[kind] = report.kinds.get(kind, 0) + 1
            doomed.append(PutOp(tuple(item.namespace), item.key, None))
    for item in (yield from promoted_by_steps(layout, user_id)):  # what the team read of theirs
        if (tuple(item.namespace), item.key) not in seen:
            seen.add((tuple(item.namespace), item.key))
            report.counts["team"] = report.counts.get("team", 0) + 1
            doomed.append(PutOp(tuple(item.namespace), item.key, None))
    removed = {key for namespace, key in seen}
    stripped = yield from _strip_quotes_steps(layout, sharers, removed)
    report.quotes_stripped = len(stripped)
    # a store that keeps history (CheckpointerStore) drops the old versions too: of every place
    # wholly the user's, of the user's own namespaces in shared threads, of each item deleted or
    # rewritten elsewhere (a team copy, another user's exchange stripped of its quote, a shared
    # thread's summary): what other users see, which goes in the first batch
    owned = [ns for _, ns, whole in places if whole]
    owned += [(*ns, _OWNER_LABEL, user_id) for _, ns, whole in places if not whole]
    elsewhere = [op for op in doomed if not within(op.namespace, owned)]
    own = [op for op in doomed if within(op.namespace, owned)]
    targets = purge_targets(prior, owned, [*stripped, *elsewhere])
    intent = Intent(_FORGET_USER, user_id, {"threads": candidates, **targets})
    first = [*stripped, *elsewhere]
    report.history_purged = yield from intended_writes(intent, first, own, prior, page=_PAGE)
    logger.info("forget_user(%r): removed %d items %s", user_id, len(doomed), report.counts)
    return report


_FORGET_USER = "forget_user"
_DELETE_THREADS = "delete_threads"


def resume_forgetting_steps(
    layout: MemoryLayout,
    *,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
    index: NamespaceTemplate = THREAD_INDEX,
) -> StoreSteps[int]:
    """Finish every ``forget_user`` and thread deletion a run left part-done, and every forget's
    purge a run stopped before (its intent is still in the store:
    :mod:`~langmem_plugin.services.intents`); returns how many were finished."""
    finished = 0
    for intent in (yield from pending_steps((_FORGET_USER, _DELETE_THREADS, PURGE))):
        if intent.kind == PURGE:
            yield from purge_steps(intent)
        elif intent.kind == _FORGET_USER:
            yield from _forget_user_steps(intent.target, layout, [], None, history, index)
        else:
            threads = intent.args.get("threads")
            if isinstance(threads, dict):
                yield from _delete_threads_steps(layout, [str(t) for t in threads], index)
        logger.info("finished the %s of %r a stopped run left part-done", intent.kind, intent.target)
        finished += 1
    return finished


def _strip_quotes_steps(
    layout: MemoryLayout, sharers: Mapping[str, Sequence[str]], removed: Collection[str]
) -> StoreSteps[list[PutOp]]:
    """The writes that strip, from the other users' exchanges in shared threads, the copy of a
    removed exchange's beginning they keep for lexical search (``metadata.context`` of the
    exchange whose ``previous`` was removed)."""
    ops: list[PutOp] = []
    if sharers:
        yield HOLD  # read, then written back stripped: no other writer in between
    for thread, users in sharers.items():
        namespaces = [layout.namespace(Compartment.USER, Scope(user_id=other)) for other in users]
        with contextlib.suppress(ScopeError):  # a session template the thread id cannot fill
            namespaces.append(layout.namespace(Compartment.SESSION, Scope(thread_id=thread)))
        for namespace in namespaces:
            items = yield from _prefix_items(namespace, {"kind": MemoryKind.EPISODE.value})
            for item in items:
                metadata = item.value.get("metadata") or {}
                if metadata.get("thread_id") != thread or "context" not in metadata:
                    continue
                if metadata.get("previous") in removed:
                    value = {**item.value, "metadata": {k: v for k, v in metadata.items() if k != "context"}}
                    ops.append(PutOp(tuple(item.namespace), item.key, value, index=["content"]))
    return ops


def _theirs(item: Item, place: tuple[str, ...], user_id: str, *, whole: bool) -> bool:
    """Whether ``item`` (found under ``place``) is the user's to remove.

    Below a thread's namespace, a namespace ``(..., "user", <id>)`` is owned by that user (how
    stored tool results are kept: ``services.stored_results.result_store``): the user's own go, another
    user's stay. Anything else goes when the whole place is the user's (``whole``: not a thread
    another user has too); in a shared thread, only its conversation summary, which quotes every
    user of the thread.
    """
    below = tuple(item.namespace)[len(place) :]
    if len(below) >= 2 and below[0] == _OWNER_LABEL:
        return below[1] == user_id
    return whole or (not below and item.value.get("kind") == MemoryKind.SUMMARY.value)


def _claims_steps(index: NamespaceTemplate, thread_id: str) -> StoreSteps[list[Item]]:
    """The thread index entries of ``thread_id``, whichever user's."""
    prefix = _static_prefix(index)
    claims: list[Item] = []
    offset = 0
    while True:
        (page,) = yield [
            SearchOp(prefix, filter={"thread_id": thread_id}, limit=_PAGE, offset=offset, refresh_ttl=False)
        ]
        claims.extend(page)
        if len(page) < _PAGE:
            return claims
        offset += _PAGE


def delete_threads_steps(
    layout: MemoryLayout, thread_ids: Iterable[str], *, index: NamespaceTemplate = THREAD_INDEX
) -> StoreSteps[dict[str, int]]:
    """Delete what the store keeps for ``thread_ids``; returns counts per place.

    For each thread: its session memory, its stored tool results (the layout's ``results``
    compartment — on a store without TTL nothing else ever removes them), the same in every
    sub-agent's own compartments, and its entries in the thread index. A template that needs a
    user id is filled from the thread index; one that needs an id the index does not give is
    skipped and logged. Then a store that keeps history (``CheckpointerStore``) drops the old
    versions of all of it: each namespace of the thread's own (its template names the thread)
    entirely, the items deleted elsewhere (the index entries) one by one.

    The deletes go in pages after an intent (:func:`.erasure.intended_writes`) that names the
    threads with their users and what the purge must reach; it stays until the purge is done, so
    a run killed at any step is finished by a retry of the same call or by the next resume
    (:func:`resume_forgetting_steps`).
    """
    threads = list(dict.fromkeys(thread_ids))
    counts, _ = yield from _retried_steps(_delete_threads_steps(layout, threads, index))
    return counts


def _delete_threads_steps(
    layout: MemoryLayout, threads: list[str], index: NamespaceTemplate
) -> StoreSteps[dict[str, int]]:
    counts = {"session": 0, "tool_results": 0, "thread_index": 0}
    doomed: list[PutOp] = []
    entries: list[PutOp] = []  # the thread index entries: deleted last
    seen: set[tuple[tuple[str, ...], str]] = set()

    def doom(name: str, items: Iterable[Item]) -> None:
        for item in items:
            identity = (tuple(item.namespace), item.key)
            if identity not in seen:
                seen.add(identity)
                counts[name] += 1
                (entries if name == "thread_index" else doomed).append(PutOp(identity[0], item.key, None))

    places = (("session", Compartment.SESSION), ("tool_results", Compartment.RESULTS))
    owned: list[tuple[str, ...]] = []  # the threads' own namespaces: their history goes whole
    target = hashlib.blake2b(json.dumps(sorted(threads)).encode(), digest_size=12).hexdigest()
    prior = yield from intents_steps(_DELETE_THREADS, target)  # a run that stopped part-way
    known: dict[str, list[str]] = {}
    if prior is not None and isinstance(prior.args.get("threads"), dict):
        known = {str(t): [str(u) for u in us] for t, us in prior.args["threads"].items()}
    for thread in threads:
        claims = yield from _claims_steps(index, thread)
        users: list[str | None] = list(
            dict.fromkeys(
                [*known.get(thread, ()), *(str(c.value["user_id"]) for c in claims if c.value.get("user_id"))]
            )
        )
        known[thread] = [u for u in users if u is not None]
        for user in users or [None]:
            for name, compartment in places:
                try:  # a thread id that cannot be a label (ScopeError) has no namespace of ours
                    scope = Scope(user_id=user, thread_id=thread, agent=layout.default_agent)
                    namespace = layout.namespace(compartment, scope)
                except ScopeError as exc:
                    logger.warning("thread %r: %s memory not deleted (%s)", thread, compartment.value, exc)
                    continue
                items = yield from _prefix_items(namespace)
                doom(name, items)
                if any("{thread_id}" in label for label in layout.template(compartment)):
                    owned.append(namespace)
        doom("thread_index", claims)
    for compartment, _, namespace in (yield from private_namespaces_steps(layout, None, threads)):
        doom(
            "session" if compartment is Compartment.SESSION else "tool_results",
            (yield from _prefix_items(namespace)),
        )
        owned.append(namespace)  # a sub-agent's own memory of the thread
    doomed += entries
    elsewhere = [op for op in doomed if not within(op.namespace, owned)]
    targets = purge_targets(prior, owned, elsewhere)
    intent = Intent(_DELETE_THREADS, target, {"threads": known, **targets})
    purged = yield from intended_writes(intent, [], doomed, prior, page=_PAGE)
    logger.debug("deleted threads %s: %d old versions purged", threads, purged)
    return counts
