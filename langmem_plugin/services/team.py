"""Team memory: what several agents and several users of one team read, entered by promotion.

With ``MemoryLayout(team=True)`` the ``team`` compartment is one namespace per team,
``("memories", "team", "{team_id}")``, filled from the run's ``team_id`` (config or runtime
context, an exact id like the others: :func:`~langmem_plugin.core.scope.exact_id`). Recall reads
it beside user and session memory in every run that names a team; every agent of the run reads
the same one (no rule of :class:`~langmem_plugin.services.agents.AgentRules` applies to it).

Nothing writes it directly (:meth:`~langmem_plugin.services.layout.MemoryLayout.namespace` refuses
``write=True``). A memory enters it by **promotion** (:func:`promote_steps`: the ``promote_memory``
tool, ``Memory.promote``): a copy of a memory the caller owns — its user or session memory as its
agent sees it (a sub-agent with its own user memory promotes from that) — goes into the team of
the run, with its provenance in its metadata (:data:`PROVENANCE`: where it came from, who
promoted it, when). The copy's key is derived from where the original is, so promoting twice
keeps one copy (refreshed when the original changed). Refused, with nothing written: an id that
is not among the caller's own memories (another user's, another agent's private one:
``MemoryNotFoundError``), an id of team memory itself, and a memory the caller's agent may only
read (``AgentAccessError``); a past exchange (an episode) or a conversation summary, which
quote whoever spoke, is not promoted.

The promotion is one batch: the copy and two history entries in the promoter's history
(:mod:`~langmem_plugin.services.history`), one under the original's id and one under the copy's
(``PROMOTE``, with ``details``: ``from``, ``to``, ``copy``, and the agent). A store applies a batch
whole, so a promotion whose embedding fails leaves nothing behind.

**Forgetting reaches every copy.** Forgetting a memory (``forget``, ``forget_about``,
``clear_memory``) forgets its team copies in the same batch (:func:`team_copies_steps`);
``forget_user`` removes every copy the user promoted (:func:`promoted_by_steps`) and the user's
memory in every agent's own compartments (:func:`private_namespaces_steps`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langgraph.store.base import GetOp, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from langmem_plugin.core.record import MemoryKind, MemoryRecord, utc_now
from langmem_plugin.core.scope import NamespaceTemplate, Scope, template_keys, templates_may_meet
from langmem_plugin.core.validity import is_current
from langmem_plugin.errors import AgentAccessError, InvalidRecordError, MemoryNotFoundError, ScopeError
from langmem_plugin.services.history import HISTORY_NAMESPACE, Change
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.limits import bound_of, bounded_steps
from langmem_plugin.services.operations import (
    INDEX_FIELDS,
    StoredMemory,
    changes_ops,
    get_steps,
    read_record,
    to_stored,
)
from langmem_plugin.services.store_steps import HOLD, StoreSteps

__all__ = [
    "PROVENANCE",
    "Promoted",
    "private_namespaces_steps",
    "promote_steps",
    "promoted_by_steps",
    "team_copies_steps",
    "team_copy_key",
]

#: The metadata a team copy carries: where it came from, who promoted it, when.
PROVENANCE = (
    "promoted_from",  # the original's namespace, as a JSON list
    "promoted_from_key",  # the original's id
    "promoted_by_user",
    "promoted_by_agent",  # "" when the run names no agent
    "promoted_at",
)
_PAGE = 500
#: What the original and the copy are called in a memory the caller owns.
_OWNED = (Compartment.USER, Compartment.SESSION)


@dataclass(frozen=True)
class Promoted:
    """What a promotion did.

    Attributes:
        original: the memory promoted (the caller's own).
        copy: its copy in team memory.
        outcome: ``"promoted"`` (a new copy), ``"refreshed"`` (the copy was there with older
            content, now the original's) or ``"already"`` (the copy says the same: nothing written).
    """

    original: StoredMemory
    copy: StoredMemory
    outcome: Literal["promoted", "refreshed", "already"]


def team_copy_key(namespace: Sequence[str], key: str) -> str:
    """The key of the team copy of the memory ``key`` in ``namespace``: one per original, so a
    second promotion finds the first one's copy (12 hex digits, a memory id like the others)."""
    text = json.dumps([list(namespace), key], ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def promote_steps(
    scope: Scope,
    layout: MemoryLayout,
    memory_id: str,
    *,
    recorded_by: str = "promote",
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[Promoted]:
    """Copy the caller's memory ``memory_id`` into the team memory of ``scope``'s team.

    Raises:
        CompartmentError: the layout has no team compartment (``MemoryLayout(team=True)``).
        ScopeError: the run names no ``team_id`` (or no user, for user memory).
        MemoryNotFoundError: no memory of the caller has that id (another user's or agent's
            memory is not the caller's); nothing is written.
        AgentAccessError: the id is team memory already, or the memory is in a compartment the
            caller's agent may only read; nothing is written.
        InvalidRecordError: the memory is a past exchange or a summary, or superseded; nothing is
            written.
        MemoryLimitError: the team memory is full.
    """
    team = layout.namespace(Compartment.TEAM, scope)
    owned = layout.named(_OWNED, scope)
    yield HOLD  # the copy is read, then written: no other promotion in between
    try:
        memory = yield from get_steps(scope, layout, memory_id, compartments=owned, track_access=False)
    except MemoryNotFoundError:
        (in_team,) = yield [GetOp(team, memory_id)]
        if in_team is not None:
            raise AgentAccessError(
                f"memory {memory_id!r} is team memory already: it is shared with the whole team. "
                "Nothing was written. Fix: promote one of your own memories (the ids search_memory "
                "gives from user or session memory).",
                agent=scope.agent or "",
                compartment=Compartment.TEAM.value,
            ) from None
        raise MemoryNotFoundError(
            memory_id,
            f"no memory of yours has the id {memory_id!r}: promotion copies one of your own memories "
            "(user or session memory, by the 'id' search_memory returns); another user's or another "
            "agent's memories are not yours to promote. Nothing was written.",
        ) from None
    _check_promotable(scope, layout, memory)
    key = team_copy_key(memory.namespace, memory.id)
    (found,) = yield [GetOp(team, key)]
    existing = to_stored(found, Compartment.TEAM) if found is not None else None
    if existing is not None and _same(existing.record, memory.record):
        return Promoted(memory, existing, "already")
    copy = _copy(scope, memory, existing)
    layout.check_content(Compartment.TEAM, copy.content)
    details = {
        "from": list(memory.namespace),
        "original": memory.id,
        "to": list(team),
        "copy": key,
        "by_user": scope.user_id or "",
        "by_agent": scope.agent or "",
    }
    by = f" by the agent {scope.agent!r}" if scope.agent else ""
    reason = f"promoted to the team memory {team[-1]!r}{by}"
    changes = [
        Change(memory.id, "PROMOTE", None, memory.record.content, reason, details),
        Change(key, "ADD" if existing is None else "UPDATE", None, copy.content, reason, details),
    ]
    ops = [
        PutOp(team, key, copy.to_value(), index=INDEX_FIELDS),
        *changes_ops(scope, changes, recorded_by, history=history),
    ]
    if existing is None:
        yield from bounded_steps(ops, [bound_of(layout, Compartment.TEAM, team)])
    else:
        yield ops
    outcome: Literal["promoted", "refreshed"] = "promoted" if existing is None else "refreshed"
    return Promoted(memory, StoredMemory(key, Compartment.TEAM, team, copy), outcome)


def _check_promotable(scope: Scope, layout: MemoryLayout, memory: StoredMemory) -> None:
    if not layout.writable(memory.compartment, scope):
        raise AgentAccessError(
            f"memory {memory.id!r} is in the {memory.compartment.value} memory, which the agent "
            f"{scope.agent!r} may only read: it is not this agent's to share. Nothing was written. "
            "Fix: leave the promotion to an agent that owns that memory.",
            agent=scope.agent or "",
            compartment=memory.compartment.value,
        )
    if memory.record.kind in (MemoryKind.EPISODE, MemoryKind.SUMMARY):
        what = "a past exchange" if memory.record.kind is MemoryKind.EPISODE else "a summary"
        raise InvalidRecordError(
            f"memory {memory.id!r} is {what} of the conversation (it quotes whoever spoke in it), "
            "which is not promoted. Nothing was written. Fix: save the fact it states (save_memory), "
            "then promote that memory.",
            field="kind",
        )
    if not is_current(memory.record):
        by = memory.record.metadata.get("superseded_by")
        newer = f" by memory {by!r}; promote that one" if by else "; promote the memory that replaced it"
        raise InvalidRecordError(
            f"memory {memory.id!r} is no longer true (superseded{newer}). Nothing was written.",
            field="content",
        )


def _same(copy: MemoryRecord, original: MemoryRecord) -> bool:
    """Whether the team copy still says what the original says."""
    return (copy.content, copy.category, copy.tags, copy.priority, copy.kind) == (
        original.content,
        original.category,
        original.tags,
        original.priority,
        original.kind,
    )


def _copy(scope: Scope, memory: StoredMemory, existing: StoredMemory | None) -> MemoryRecord:
    """The team copy of ``memory``: its content and labels, its provenance in the metadata (a
    provenance key the original carries is overwritten), no links to the caller's exchanges."""
    record = memory.record
    now = utc_now()
    provenance = dict(
        zip(
            PROVENANCE,
            (
                json.dumps(list(memory.namespace), ensure_ascii=False),
                memory.id,
                scope.user_id or "",
                scope.agent or "",
                now.isoformat(),
            ),
            strict=True,
        )
    )
    return MemoryRecord(
        content=record.content,
        category=record.category,
        tags=record.tags,
        metadata={**record.metadata, **provenance},
        priority=record.priority,
        kind=record.kind,
        source="promote",
        created_at=existing.record.created_at if existing is not None else now,
        updated_at=now,
    )


def _static_prefix(template: NamespaceTemplate) -> tuple[str, ...]:
    """The labels of ``template`` before its first placeholder."""
    labels: list[str] = []
    for label in template:
        if template_keys((label,)):
            break
        labels.append(label)
    return tuple(labels)


def _fits(template: NamespaceTemplate, namespace: Sequence[str]) -> bool:
    """Whether ``namespace`` could be ``template`` filled (its length, its fixed labels)."""
    return len(namespace) == len(template) and all(
        label == part or template_keys((label,)) for label, part in zip(template, namespace, strict=True)
    )


def _team_items_steps(layout: MemoryLayout, where: dict[str, str]) -> StoreSteps[list[Item]]:
    """Every team copy (of any team) whose metadata holds ``where``."""
    template = layout.template(Compartment.TEAM)
    prefix = _static_prefix(template)
    found: list[Item] = []
    offset = 0
    while True:
        (page,) = yield [
            SearchOp(prefix, filter={"metadata": where}, limit=_PAGE, offset=offset, refresh_ttl=False)
        ]
        found += [i for i in page if _fits(template, i.namespace) and i.value.get("source") == "promote"]
        if len(page) < _PAGE:
            return found
        offset += _PAGE


def team_copies_steps(
    layout: MemoryLayout, memories: Sequence[StoredMemory]
) -> StoreSteps[list[StoredMemory]]:
    """The team copies (in any team) of ``memories``; none when the layout has no team compartment."""
    if not layout.team:
        return []
    copies: dict[tuple[tuple[str, ...], str], StoredMemory] = {}
    for memory in memories:
        if memory.compartment is Compartment.TEAM:
            continue
        origin = json.dumps(list(memory.namespace), ensure_ascii=False)
        items = yield from _team_items_steps(layout, {"promoted_from_key": memory.id})
        for item in items:
            copy = to_stored(item, Compartment.TEAM)
            if copy is not None and copy.record.metadata.get("promoted_from") == origin:
                copies[(copy.namespace, copy.id)] = copy
    return list(copies.values())


def promoted_by_steps(layout: MemoryLayout, user_id: str) -> StoreSteps[list[Item]]:
    """Every team copy ``user_id`` promoted, in any team — looked for even when the layout has no
    team compartment now (a user forgotten is forgotten wherever a layout once promoted them),
    unless the team's template would then reach another compartment's namespaces."""
    if not layout.team and _meets_another(layout):
        return []
    items = yield from _team_items_steps(layout, {"promoted_by_user": user_id})
    return [i for i in items if (record := read_record(i)) is not None and _promoter(record) == user_id]


def _meets_another(layout: MemoryLayout) -> bool:
    """Whether the team's template could fill like another compartment's (checked only when the
    layout has a team compartment: :class:`~langmem_plugin.services.layout.MemoryLayout`)."""
    team = layout.template(Compartment.TEAM)
    others = [layout.template(c) for c in Compartment if c not in (Compartment.TEAM, Compartment.RUN)]
    return any(templates_may_meet(team, other) for other in others)


def _promoter(record: MemoryRecord) -> str | None:
    return record.metadata.get("promoted_by_user")


def private_namespaces_steps(
    layout: MemoryLayout, user_id: str | None, threads: Sequence[str]
) -> StoreSteps[list[tuple[Compartment, str | None, tuple[str, ...]]]]:
    """Where agents keep their own memory of ``user_id`` (``isolated`` compartments: user memory,
    and session memory and tool results of ``threads``; no user: only those of the threads), for
    every agent that has any: ``(compartment, thread or None, namespace)``."""
    prefix = layout.private_template(Compartment.USER)[:2]
    agents: set[str] = set()
    offset = 0
    while True:
        (page,) = yield [
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", prefix),), max_depth=3, limit=_PAGE, offset=offset
            )
        ]
        agents |= {ns[2] for ns in page if len(ns) >= 3}
        if len(page) < _PAGE:
            break
        offset += _PAGE
    places: list[tuple[Compartment, str | None, tuple[str, ...]]] = []
    for agent in sorted(agents):
        wanted: list[tuple[Compartment, str | None]] = [(Compartment.USER, None)] if user_id else []
        wanted += [(c, t) for t in threads for c in (Compartment.SESSION, Compartment.RESULTS)]
        for compartment, thread in wanted:
            try:  # a label another writer left that cannot be an agent id: not one of ours
                scope = Scope(user_id=user_id, thread_id=thread, agent=agent)
                places.append((compartment, thread, scope.namespace(layout.private_template(compartment))))
            except ScopeError:
                continue
    return places
