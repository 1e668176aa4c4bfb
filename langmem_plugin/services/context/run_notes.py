"""Run memory the model writes: notes that live for one run, in graph state, and are in every call.

The run compartment is a list of short notes under the state key ``run_memory``
(:class:`~langmem_plugin.services.context.StateKeys`). Recall shows them in every model call of
the run; remember clears them when the run ends (the model answered). The model adds one with the
``add_run_note`` tool; code may set the list directly (``graph.invoke({"run_memory": [...]})``).

Parallel calls: a model may call ``add_run_note`` several times in one message. The tools run
side by side, each seeing the state before the message, so each tool returns an *addition*
(:class:`RunNotesAdd`) that :func:`run_notes_reducer` appends in call order, and answers from its
place among the message's run-note calls (:func:`notes_before`): the note count it names and a
"run memory is full" refusal are what the merge gives. A plain list replaces the notes (how
remember clears them).

>>> run_notes_reducer(["a"], {"add": ["b"]})
['a', 'b']
>>> run_notes_reducer(["a", "b"], [])
[]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, ToolMessage

from langmem_plugin.errors import LangMemPluginError
from langmem_plugin.services.layout import MemoryLayout, add_run_note

__all__ = ["RUN_NOTE_TOOL", "RunNotesAdd", "notes_before", "run_notes_reducer"]

#: The tool's name.
RUN_NOTE_TOOL = "add_run_note"


class RunNotesAdd(TypedDict):
    """Notes to append to run memory (what the run-note tool writes)."""

    add: list[str]


def run_notes_reducer(current: list[str] | None, update: Sequence[str] | RunNotesAdd | None) -> list[str]:
    """The run notes after ``update``: a :class:`RunNotesAdd` appends, a list replaces, ``None`` keeps."""
    if update is None:
        return list(current or [])
    if isinstance(update, dict):
        return [*(current or []), *(str(n) for n in update.get("add", []))]
    return [str(n) for n in update]


def notes_before(
    notes: Sequence[str] | None, messages: Sequence[Any], call_id: str, *, layout: MemoryLayout | None = None
) -> list[str]:
    """The run notes as the merge has them just before call ``call_id``: ``notes`` plus the valid
    notes of the earlier ``add_run_note`` calls of the same model message that no tool answered yet.

    An earlier call whose note would be refused (too long, blank, run memory full) adds nothing, as
    its own tool answers.
    """
    current = list(notes or [])
    at = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if isinstance(messages[i], AIMessage)
            and any(c.get("id") == call_id for c in messages[i].tool_calls)
        ),
        None,
    )
    if at is None or not call_id:
        return current
    answered = {m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)}
    for call in messages[at].tool_calls:
        if call.get("id") == call_id:
            break
        if call["name"] != RUN_NOTE_TOOL or call.get("id") in answered:
            continue
        note = (call.get("args") or {}).get("note")
        try:
            current = add_run_note(current, note if isinstance(note, str) else "", layout=layout)
        except LangMemPluginError:  # refused in its own answer: adds nothing here
            continue
    return current
