"""Clearing that reaches the source: ``clear_memory`` removes the exchanges of what it clears.

:func:`~langmem_plugin.services.operations.clear_steps` picks the memories of a compartment by
category, tags or kinds and deletes them in one batch. :func:`clear_reaching_steps` runs it
unchanged and puts, at the head of that batch, the removal of the exchanges those memories came
from (:func:`.provenance.exchange_removal_steps`) — first, so a crash part-way never leaves a
memory deleted while an exchange that stated it is still recalled, as a forget does. After that
batch, a store that keeps history (``CheckpointerStore``) drops the old versions of every item it
deleted or rewrote (:func:`~langmem_plugin.services.store_steps.purge_history_steps`), as a forget's,
recorded in that batch as an intent (:mod:`langmem_plugin.services.intents`) that a resume finishes.
The copies of what it clears in team memory (:mod:`langmem_plugin.services.team`) go in that
batch too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import Item, PutOp

from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import NamespaceTemplate, Scope
from langmem_plugin.services.history import HISTORY_NAMESPACE, Change
from langmem_plugin.services.intents import Intent, begin_op, end_op, purge_intent, purge_steps
from langmem_plugin.services.layout import Compartment, MemoryLayout, parse_compartment
from langmem_plugin.services.operations import StoredMemory, changes_ops, clear_steps, to_stored
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.team import team_copies_steps
from langmem_plugin.services.upkeep.provenance import Forgotten, exchange_removal_steps, redact_history_steps

__all__ = ["Cleared", "clear_reaching_steps"]


@dataclass
class Cleared:
    """What a clear removed.

    Attributes:
        memories: the memories cleared.
        forgotten: the exchanges (and passages) they came from, removed with them; its
            ``history_purged`` counts the old versions dropped of all that was removed.
    """

    memories: list[StoredMemory] = field(default_factory=list)
    forgotten: Forgotten = field(default_factory=Forgotten)

    @property
    def ids(self) -> list[str]:
        """The ids of the memories cleared."""
        return [m.id for m in self.memories]


def clear_reaching_steps(
    scope: Scope,
    layout: MemoryLayout,
    compartment: Compartment | str,
    *,
    category: str | None = None,
    tags: Sequence[str] | str | None = None,
    kinds: Sequence[MemoryKind] | None = None,
    everything: bool = False,
    recorded_by: str | None = None,
    history: NamespaceTemplate = HISTORY_NAMESPACE,
) -> StoreSteps[Cleared]:
    """:func:`~langmem_plugin.services.operations.clear_steps`, with the exchanges of what it
    clears removed at the head of its delete batch, then the old versions a store keeps of every
    item that batch deleted or rewrote dropped; what was removed.

    Raises:
        InvalidFilterError: as ``clear_steps`` (nothing is removed).
    """
    comp = parse_compartment(compartment, allowed=None)
    inner = clear_steps(
        scope,
        layout,
        comp,
        category=category,
        tags=tags,
        kinds=kinds,
        everything=everything,
        recorded_by=recorded_by,
        history=history,
    )
    cleared = Cleared()
    read: dict[tuple[tuple[str, ...], str], Item] = {}
    written: list[PutOp] = []  # what the delete batch deleted or rewrote
    purge: Intent | None = None  # the purge of it, recorded in that batch
    answer: Any = None
    while True:
        try:
            ops = inner.send(answer)
        except StopIteration as stop:
            cleared.memories = list(stop.value)
            break
        if isinstance(ops, Sequence):  # a batch of ops (not a pause or a bounded write)
            deletes = {(tuple(o.namespace), o.key) for o in ops if isinstance(o, PutOp) and o.value is None}
            doomed = [m for key in deletes if (i := read.get(key)) and (m := to_stored(i, comp))]
            if doomed:  # clear's delete batch: the exchanges of what it deletes go first, in it
                removal = yield from exchange_removal_steps(scope, layout, doomed, cleared.forgotten)
                removal = [op for op in removal if (tuple(op.namespace), op.key) not in deletes]
                # their copies in team memory go with them (services.team), in the same batch
                copies = yield from team_copies_steps(layout, doomed)
                removal += [PutOp(c.namespace, c.id, None) for c in copies]
                changes = [Change(c.id, "DELETE", None, None, "its original was cleared") for c in copies]
                # their history keeps who cleared what and when, never the text (as forget's)
                ids = {m.id for m in [*doomed, *copies]}
                redactions = yield from redact_history_steps(scope, sorted(ids), history)
                cleared.forgotten.history = len(redactions)
                cleared.forgotten.memories += [(c.id, c.compartment.value) for c in copies]
                ops = [*removal, *redactions, *(_without_text(o, ids) for o in ops)]
                ops += changes_ops(scope, changes, recorded_by, history=history)
                written += [
                    *removal,
                    *redactions,
                    *(o for o in ops if isinstance(o, PutOp) and o.value is None),
                ]
                if purge is not None:  # an earlier batch's intent: this one names all of it
                    ops.append(end_op(purge))
                purge = purge_intent(written)  # the purge below, done even if the run stops here
                ops.append(begin_op(purge))
        answer = yield ops
        for result in answer if isinstance(answer, list) else []:
            for item in result if isinstance(result, list) else []:
                if isinstance(item, Item):
                    read[(tuple(item.namespace), item.key)] = item
    if purge is not None:
        cleared.forgotten.history_purged = yield from purge_steps(purge)
    return cleared


def _without_text(op: Any, ids: set[str]) -> Any:
    """A history entry the clear writes for one of ``ids``, without the text it would keep."""
    value = op.value if isinstance(op, PutOp) else None
    if not isinstance(value, dict) or value.get("memory_id") not in ids or "action" not in value:
        return op
    return PutOp(op.namespace, op.key, {**value, "old": None, "new": None, "redacted": True}, index=op.index)
