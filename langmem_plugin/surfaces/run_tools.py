"""The run-note tool: the model keeps a note for the rest of this run.

:func:`create_run_tools` returns ``add_run_note``, which appends a note to the run compartment
(the ``run_memory`` state key): recall shows it in every model call of the run, and it is cleared
when the run ends. It is for what the model learns while working (a value a tool returned, a
decision, a constraint) and needs again a few calls later; what should outlive the run goes to
``save_memory``. The state key needs :func:`~langmem_plugin.services.context.run_notes_reducer`
as its reducer, as in :class:`~langmem_plugin.MemoryState` and the middleware's state.

A blank note, a note over the run compartment's size limit, and a note when run memory is full
are answered with an error the model can act on, and nothing is written; several calls in one
message are all kept, in call order, and each answer counts the notes as the merge has them.

Across agents (:mod:`~langmem_plugin.services.context.run_notes`): the agent that runs comes from
the run (a subgraph, ``create_agent(name=...)``) or from ``agent=`` (``memory.agent(name)``'s
tools). A sub-agent whose run notes are isolated adds notes marked with its name, which only it
sees, and its limits count only its own notes; one to which they are read-only is answered with
an error, and nothing is written.

>>> [t.name for t in create_run_tools()]
['add_run_note']
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from langmem_plugin.errors import LangMemPluginError
from langmem_plugin.services.context import (
    DEFAULT_KEYS,
    RUN_NOTE_TOOL,
    StateKeys,
    notes_before,
    run_note_entry,
    visible_notes,
)
from langmem_plugin.services.layout import MemoryLayout, add_run_note
from langmem_plugin.services.turn import state_value
from langmem_plugin.surfaces._runtime import resolve_agent_scope
from langmem_plugin.surfaces._tooling import sent_arguments, strict_schema, validation_message

__all__ = ["create_run_tools"]

_DESCRIPTION = (
    "Keep a short note for the rest of this run: a fact you found, a decision, a value you will need "
    "again. You will see it in every step until you give your final answer, then it is cleared. "
    "For what should be remembered in later conversations, use save_memory instead."
)


class AddRunNoteInput(BaseModel):
    note: str = Field(description="The note, one short sentence.")


_STRICT_INPUT = strict_schema(AddRunNoteInput)


def _refusal(exc: ValidationError) -> str:
    return validation_message(exc, RUN_NOTE_TOOL, ["note"]).replace(
        "Nothing was done.", "Nothing was done: nothing was added to run memory."
    )


def create_run_tools(
    *, layout: MemoryLayout | None = None, keys: StateKeys = DEFAULT_KEYS, agent: str | None = None
) -> list[BaseTool]:
    """``[add_run_note]`` for ``model.bind_tools(...)`` and a ``ToolNode`` (or ``create_agent``).

    Args:
        layout: the run compartment's limits, and the rules across agents (``layout.agents``).
        keys: the state keys.
        agent: the sub-agent the tool runs as (``memory.agent(name)``'s); ``None``: the run says.
    """
    layout = layout or MemoryLayout()

    def run(runtime: ToolRuntime[Any, Any], note: str) -> Command[Any]:
        call_id = runtime.tool_call_id or ""
        messages = state_value(runtime.state, keys.messages)
        scope = resolve_agent_scope(runtime.config, runtime=runtime, agent=agent)  # from the run
        update: dict[str, Any] = {}
        status: Literal["success", "error"] = "success"
        try:
            _STRICT_INPUT.model_validate(sent_arguments(messages, call_id) or {"note": note})
            entry = run_note_entry(note, scope, layout)  # refused when run notes are read-only to it
            before = notes_before(
                visible_notes(state_value(runtime.state, keys.run_memory), scope, layout),
                messages if isinstance(messages, list) else [],
                call_id,
                layout=layout,
            )
            after = add_run_note(before, note, layout=layout)
        except ValidationError as exc:  # an argument the tool does not take (LangChain drops it)
            text, status = _refusal(exc), "error"
        except LangMemPluginError as exc:
            text, status = f"Error: {exc}. Nothing was added to run memory.", "error"
        else:
            update[keys.run_memory] = {"add": [entry]}
            text = f"Noted for this run ({len(after)} run note{'s' if len(after) != 1 else ''})."
        message = ToolMessage(text, tool_call_id=call_id, name=RUN_NOTE_TOOL, status=status)
        return Command(update={keys.messages: [message], **update})

    async def arun(runtime: ToolRuntime[Any, Any], note: str) -> Command[Any]:
        return run(runtime, note)

    return [
        StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=RUN_NOTE_TOOL,
            description=_DESCRIPTION,
            args_schema=AddRunNoteInput,  # not strict: ToolNode injects `runtime` into the arguments
            infer_schema=False,
            handle_validation_error=_refusal,
        )
    ]
