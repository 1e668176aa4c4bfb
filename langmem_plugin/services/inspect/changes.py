"""What the inspector may do: explain a recall without changing anything, and edit or forget a
memory through the same steps as the memory tools (validated, recorded in history)."""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.messages import HumanMessage

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.operations import StoredMemory
from langmem_plugin.services.recall import Recall, RecallConfig, recall_steps
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import forget_steps, revise_steps

__all__ = ["EDITABLE", "RECORDED_BY", "edit_steps", "explain_steps", "remove_steps"]

#: Who the history says made a change from the inspector.
RECORDED_BY = "inspector"
#: The fields an edit may change.
EDITABLE = ("content", "category", "tags", "priority")
_MAX_QUERY = 2000


def explain_steps(layout: MemoryLayout, scope: Scope, query: str, config: RecallConfig) -> StoreSteps[Recall]:
    """Recall for ``query`` as the model would get it (``config`` is the agent's), with every
    candidate in :attr:`Recall.considered`; no access is counted, nothing is written."""
    if not isinstance(query, str) or not query.strip():
        raise ConfigurationError(f"a search needs a query: a non-empty string, got {query!r}")
    if len(query) > _MAX_QUERY:
        raise ConfigurationError(f"the query is {len(query)} characters; at most {_MAX_QUERY}: shorten it")
    quiet = dataclasses.replace(config, track_access=False)
    recall: Recall = yield from recall_steps(scope, layout, [HumanMessage(query)], config=quiet, query=query)
    return recall


def edit_steps(
    layout: MemoryLayout,
    scope: Scope,
    memory_id: str,
    changes: dict[str, Any],
    *,
    compartments: tuple[Compartment, ...] = (Compartment.USER, Compartment.SESSION),
) -> StoreSteps[StoredMemory]:
    """Change fields of ``memory_id`` (those of :data:`EDITABLE`), as the ``update_memory`` tool
    does: validated, the exchanges of old content superseded, recorded in history."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown or not changes:
        raise ConfigurationError(
            f"an edit changes some of {', '.join(EDITABLE)}; got {sorted(changes) or 'nothing'}"
            + (f" ({', '.join(map(repr, unknown))} cannot be edited)" if unknown else "")
        )
    usable = layout.named(compartments, scope)
    memory: StoredMemory = yield from revise_steps(
        scope, layout, memory_id, compartments=usable, recorded_by=RECORDED_BY, **changes
    )
    return memory


def remove_steps(layout: MemoryLayout, scope: Scope, memory_id: str) -> StoreSteps[StoredMemory]:
    """Forget ``memory_id`` as the ``delete_memory`` tool does: with the exchanges it came from,
    its history redacted, the forgetting recorded."""
    memory: StoredMemory = yield from forget_steps(scope, layout, memory_id, recorded_by=RECORDED_BY)
    return memory
