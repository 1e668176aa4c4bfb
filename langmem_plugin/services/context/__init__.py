"""Context: what the model's window holds during a run.

- :mod:`.context_turn`: the context's half of a turn (:class:`ContextTurn`), which the turn service
  composes: after the tools (results stored, compaction decided, what the window drops
  summarized) and what the model sees of the window.
- :mod:`.results`: tool results stored once and shown compacted, then cited (the feature and
  its :class:`ResultsConfig`); the stored results themselves — whose they are, how they are cut
  down and read, every read bounded — are the ``stored_results`` room's
  (:mod:`langmem_plugin.services.stored_results`), re-exported here where the turn uses them.
- :mod:`.model_compactor`: a chat model's description of a result, focused on the goal, written
  in the background.
- :mod:`.window`: the window trimmed to its budget, idle threads deleted.
- :mod:`.summary`: what the window drops, summarized so nothing is lost.
- :mod:`.run_notes`: run memory the model writes (``add_run_note``), merged in call order, each
  agent's own.

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.context.config import (
    DEFAULT_KEYS,
    ContextConfig,
    StateKeys,
    WindowConfig,
    latest,
)
from langmem_plugin.services.context.context_turn import ContextTurn, state_value
from langmem_plugin.services.context.model_compactor import ModelCompactor, ResultDescriber
from langmem_plugin.services.context.results import (
    RESULT_TOOL_NAMES,
    ResultsConfig,
    keep_first,
    result_describer,
    results_update_steps,
    results_view,
)
from langmem_plugin.services.context.run_notes import (
    RUN_NOTE_TOOL,
    RunNote,
    RunNoteEntry,
    RunNotesAdd,
    RunNotesClear,
    notes_before,
    run_note_entry,
    run_notes_cleared,
    run_notes_reducer,
    visible_notes,
)
from langmem_plugin.services.context.summary import (
    ConversationSummary,
    SummaryConfig,
    SummarySteps,
    summary_reducer,
    summary_section,
    summary_steps,
    summary_view,
)
from langmem_plugin.services.context.window import (
    adelete_idle_threads,
    delete_idle_threads,
    message_blocks,
    read_messages,
    trim_window,
    window_removals,
)
from langmem_plugin.services.stored_results import (
    StoredResult,
    Transform,
    get_result_steps,
    head_tokens,
    list_results_steps,
    transform_result,
)

__all__ = [
    "DEFAULT_KEYS",
    "RESULT_TOOL_NAMES",
    "RUN_NOTE_TOOL",
    "ContextConfig",
    "ContextTurn",
    "ConversationSummary",
    "ModelCompactor",
    "ResultDescriber",
    "ResultsConfig",
    "RunNote",
    "RunNoteEntry",
    "RunNotesAdd",
    "RunNotesClear",
    "StateKeys",
    "StoredResult",
    "SummaryConfig",
    "SummarySteps",
    "Transform",
    "WindowConfig",
    "adelete_idle_threads",
    "delete_idle_threads",
    "get_result_steps",
    "head_tokens",
    "keep_first",
    "latest",
    "list_results_steps",
    "message_blocks",
    "notes_before",
    "read_messages",
    "result_describer",
    "results_update_steps",
    "results_view",
    "run_note_entry",
    "run_notes_cleared",
    "run_notes_reducer",
    "state_value",
    "summary_reducer",
    "summary_section",
    "summary_steps",
    "summary_view",
    "transform_result",
    "trim_window",
    "visible_notes",
    "window_removals",
]
