"""Plan mode: the agent keeps its plan in graph state, and sees it before every model call.

``Memory(plan=True)`` adds the plan tools (create_plan, update_plan_step, ...) to
``memory.tools``; the plan lives in ``state["plan"]``, persisted by the checkpointer
under the thread id; the turn service renders it into the system prompt at every
model call; a completed plan is archived into session memory, where
``search_memory`` finds it later.

Runs offline: with OPENAI_API_KEY set it uses ChatOpenAI, otherwise a scripted
model that emits real tool calls (say so in the output).
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import Memory, MemoryState
from langmem_plugin.testing import ScriptedChatModel, tool_call

memory = Memory(tokenizer_model="gpt-4o-mini", plan=True)
config = {"configurable": {"user_id": "ada", "thread_id": "release-2-0"}}


def both(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    """One message with parallel tool calls (the plan's reducer merges their updates)."""
    return AIMessage(
        "",
        tool_calls=[
            {"name": n, "args": a, "id": f"c{i}_{n}", "type": "tool_call"} for i, (n, a) in enumerate(calls)
        ],
    )


if os.environ.get("OPENAI_API_KEY"):
    from langchain_openai import ChatOpenAI

    model: Any = ChatOpenAI(model="gpt-4o-mini")
    print("model: ChatOpenAI")
else:
    model = ScriptedChatModel(
        [
            tool_call(
                "create_plan", goal="Release 2.0", steps=["Write the changelog", "Run the tests", "Tag it"]
            ),
            tool_call("update_plan_step", step_id="s1", status="in_progress"),
            "I made a plan and started on the changelog.",
            both(
                ("update_plan_step", {"step_id": "s1", "status": "completed", "notes": "12 entries"}),
                ("update_plan_step", {"step_id": "s2", "status": "in_progress"}),
            ),
            "Changelog done; the tests are running.",
            both(
                ("update_plan_step", {"step_id": "s2", "status": "completed"}),
                ("update_plan_step", {"step_id": "s3", "status": "completed", "notes": "tag v2.0.0"}),
            ),
            tool_call("complete_plan", summary="2.0 is tagged"),
            "Released.",
            tool_call("search_memory", query="release changelog"),
            "The 2.0 changelog had 12 entries.",
        ]
    )
    print("model: offline scripted model (no OPENAI_API_KEY): tool calls come from a script")

builder = StateGraph(MemoryState)
memory.add_to(builder, model, instructions="Plan multi-step work with the plan tools.")
graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)

for text in ("Please release 2.0.", "The changelog is written.", "Tests pass, tag it."):
    out = graph.invoke({"messages": [HumanMessage(text)]}, config)
    print(f"\nuser: {text}\nassistant: {out['messages'][-1].content}")
    if out.get("plan"):
        print("plan:", [(s["id"], s["status"]) for s in out["plan"]["steps"]])

if isinstance(model, ScriptedChatModel):
    seen = model.calls[4][0]
    assert isinstance(seen, SystemMessage)
    print("\nwhat the model saw of the plan after the two parallel updates of turn 2:")
    print(str(seen.content)[str(seen.content).index("[plan]") :])

print("\narchived:", out["memory_context"].get("archived_plans"))
later = graph.invoke({"messages": [HumanMessage("How many changelog entries did 2.0 have?")]}, config)
print("assistant:", later["messages"][-1].content)
