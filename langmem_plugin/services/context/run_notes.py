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
remember clears them at the end of the root's run).

Agents (:mod:`langmem_plugin.services.agents`, the rule ``run``): a compiled subgraph that is a
node of its parent shares the parent's ``run_memory`` key when its state has it, so the notes of
several agents can meet in one list. A note of a sub-agent whose run notes are ``isolated`` (the
default) is a :class:`RunNote` marked with its agent; every other note is the root's (a string,
or a mapping without ``agent``). Each agent reads and writes only its own
(:func:`visible_notes`, :func:`run_note_entry`): the root and a ``shared`` sub-agent the
unmarked notes, an ``isolated`` one those marked with its name, a ``read_only`` one reads the
root's and adds none. When a sub-agent's run ends only its own notes are cleared
(:class:`RunNotesClear`, :func:`run_notes_cleared`); the root's run clears them all.

>>> run_notes_reducer(["a"], {"add": ["b"]})
['a', 'b']
>>> run_notes_reducer(["a", "b"], [])
[]
>>> run_notes_reducer(["a", {"content": "b", "agent": "researcher"}], {"clear": "researcher"})
['a']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias, TypedDict

from langchain_core.messages import AIMessage, ToolMessage

from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import AgentAccessError, LangMemPluginError
from langmem_plugin.services.agents import Sharing
from langmem_plugin.services.layout import Compartment, MemoryLayout, add_run_note

__all__ = [
    "RUN_NOTE_TOOL",
    "RunNote",
    "RunNoteEntry",
    "RunNotesAdd",
    "RunNotesClear",
    "RunNotesUpdate",
    "note_agent",
    "note_text",
    "notes_before",
    "run_note_entry",
    "run_notes_cleared",
    "run_notes_owner",
    "run_notes_reducer",
    "visible_notes",
]

#: The tool's name.
RUN_NOTE_TOOL = "add_run_note"


class RunNote(TypedDict):
    """A note of a sub-agent's own run memory (its run notes are ``isolated``)."""

    content: str
    agent: str
    """The sub-agent that wrote it, the only one that reads it."""


#: An entry of the ``run_memory`` list: a note of the root's run (a string, or a mapping with
#: ``content`` and no ``agent``), or a :class:`RunNote` of one sub-agent.
RunNoteEntry: TypeAlias = str | Mapping[str, Any]


class RunNotesAdd(TypedDict):
    """Notes to append to run memory (what the run-note tool writes)."""

    add: list[RunNoteEntry]


class RunNotesClear(TypedDict):
    """Remove the notes of one sub-agent (what its run's end writes), keeping everyone else's."""

    clear: str


RunNotesUpdate: TypeAlias = Sequence[RunNoteEntry] | RunNotesAdd | RunNotesClear


def _entry(note: Any) -> RunNoteEntry:
    return dict(note) if isinstance(note, Mapping) else str(note)


def note_agent(entry: Any) -> str | None:
    """The sub-agent whose own note ``entry`` is; ``None``: a note of the root's run."""
    agent = entry.get("agent") if isinstance(entry, Mapping) else None
    return agent if isinstance(agent, str) else None


def run_notes_reducer(
    current: list[RunNoteEntry] | None, update: RunNotesUpdate | None
) -> list[RunNoteEntry]:
    """The run notes after ``update``: a :class:`RunNotesAdd` appends, a :class:`RunNotesClear`
    removes one sub-agent's notes, a list replaces, ``None`` keeps."""
    if update is None:
        return list(current or [])
    if isinstance(update, Mapping):
        changes: Mapping[str, Any] = update
        if "clear" in changes:
            return [n for n in current or [] if note_agent(n) != changes["clear"]]
        return [*(current or []), *(_entry(n) for n in changes.get("add", []))]
    return [_entry(n) for n in update]


def _rule(scope: Scope, layout: MemoryLayout) -> Sharing:
    return layout.rule(Compartment.RUN, scope)


def run_notes_owner(scope: Scope, layout: MemoryLayout) -> str | None:
    """The mark of the notes the agent ``scope`` runs as reads: its name when its run notes are
    ``isolated``; ``None`` (the root's notes) for the root and a ``shared`` or ``read_only`` sub-agent."""
    return scope.agent if _rule(scope, layout) is Sharing.ISOLATED else None


def visible_notes(
    notes: Sequence[Any] | None, scope: Scope, layout: MemoryLayout | None = None
) -> list[RunNoteEntry]:
    """The entries of ``notes`` the agent ``scope`` runs as reads (see the module docstring)."""
    owner = run_notes_owner(scope, layout or MemoryLayout())
    return [n for n in notes or [] if note_agent(n) == owner]


def run_note_entry(note: str, scope: Scope, layout: MemoryLayout | None = None) -> RunNoteEntry:
    """What the agent ``scope`` runs as appends for ``note``: the note itself in the root's notes,
    a :class:`RunNote` marked with its name in its own.

    Raises:
        AgentAccessError: run notes are ``read_only`` to the agent.
    """
    layout = layout or MemoryLayout()
    rule = _rule(scope, layout)
    if rule is Sharing.READ_ONLY:
        raise AgentAccessError(
            f"run memory is read-only to the agent {scope.agent!r}: it sees the run notes of the agent "
            "that called it and adds none. Fix: keep what you need in your messages and your answer; "
            "to give this agent notes of its own: "
            f"AgentRules(agents={{{scope.agent!r}: {{'run': 'isolated'}}}})",
            agent=scope.agent or "",
            compartment=Compartment.RUN.value,
        )
    if rule is Sharing.ISOLATED and scope.agent is not None:
        return RunNote(content=note, agent=scope.agent)
    return note


def run_notes_cleared(scope: Scope, layout: MemoryLayout | None = None) -> RunNotesUpdate | None:
    """The update that clears run memory when the run of the agent ``scope`` runs as ends: every
    note at the root's end (``[]``); an ``isolated`` sub-agent's own (:class:`RunNotesClear`);
    ``None`` for a sub-agent that shares or reads the root's notes (the root's run clears them)."""
    if not scope.subagent:
        return []
    owner = run_notes_owner(scope, layout or MemoryLayout())
    return RunNotesClear(clear=owner) if owner is not None else None


def note_text(entry: Any) -> str:
    """The text of a run-memory entry."""
    return str(entry.get("content") or "") if isinstance(entry, Mapping) else str(entry)


def notes_before(
    notes: Sequence[Any] | None, messages: Sequence[Any], call_id: str, *, layout: MemoryLayout | None = None
) -> list[str]:
    """The run notes as the merge has them just before call ``call_id``: the texts of ``notes`` plus
    the valid notes of the earlier ``add_run_note`` calls of the same model message that no tool
    answered yet. ``notes``: those of the calling agent (:func:`visible_notes`).

    An earlier call whose note would be refused (too long, blank, run memory full) adds nothing, as
    its own tool answers.
    """
    current = [note_text(n) for n in notes or []]
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
