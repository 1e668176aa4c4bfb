"""Memory that maintains itself: extraction, consolidation with time, history, forgetting.

After each answered turn, a background worker asks a chat model for the memories worth
keeping (structured output through tool calling), merges them into the user's memory
(duplicates skipped without a model call; a changed preference supersedes the old one,
which stays as history), and never adds latency to the turn.

Runs offline: with OPENAI_API_KEY set it uses ChatOpenAI for extraction, otherwise a
scripted model that returns real structured-output tool calls (say so in the output).
"""

from __future__ import annotations

import os
import re
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import Memory, MemoryState
from langmem_plugin.services.upkeep.extraction import ExtractionConfig
from langmem_plugin.testing import ScriptedChatModel, tool_call

print(Memory().extraction_status)  # no model: extraction is off, and says so


def _supersede(messages: list[BaseMessage]) -> Any:
    """The scripted decision: the new preference replaces the existing one it is shown."""
    target = re.search(r"EXISTING id=(\w+)", str(messages[-1].content))
    action = {"candidate": 1, "action": "INVALIDATE", "reason": "the user switched"}
    return tool_call(
        "ConsolidationDecisions", decisions=[{**action, "target_id": target and target.group(1)}]
    )


if os.environ.get("OPENAI_API_KEY"):
    from langchain_openai import ChatOpenAI

    extractor: Any = ChatOpenAI(model="gpt-4o-mini")
    print("extraction model: ChatOpenAI")
else:
    memories = "ExtractedMemories"
    extractor = ScriptedChatModel(
        [
            tool_call(memories, memories=[{"content": "The user drinks coffee", "kind": "preference"}]),
            tool_call(memories, memories=[{"content": "The user drinks coffee.", "kind": "preference"}]),
            tool_call(memories, memories=[{"content": "The user drinks tea", "kind": "preference"}]),
            _supersede,
        ]
    )
    print("extraction model: offline scripted model (no OPENAI_API_KEY)")

memory = Memory(extraction=ExtractionConfig(model=extractor, debounce=0.5))
print(memory.extraction_status)
builder = StateGraph(MemoryState)
memory.add_to(builder, ScriptedChatModel(["Coffee, noted.", "Still coffee.", "Tea it is."]))
graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)

ada = {"configurable": {"user_id": "ada", "thread_id": "monday"}}
for text in ("I drink coffee every morning.", "Coffee, as I said.", "I've switched to tea."):
    graph.invoke({"messages": [HumanMessage(text)]}, ada)
    memory.flush()  # a real app just keeps going; flush() here to print each step
    print(f"after {text!r}: {memory.reflector.stats() if memory.reflector else {}}")

for item in memory.store.search(("memories", "user", "ada")):
    state = "superseded" if "invalid_at" in item.value["metadata"] else "current"
    print(f"{item.key}: {item.value['content']!r} ({state})")
    for entry in memory.history(item.key, ada):
        print(f"    {entry.at[:19]} {entry.action}: {entry.old!r} -> {entry.new!r}")

recalled = memory.recall([HumanMessage("What do I drink?")], ada)
print("recalled:", [i.content for i in recalled.items if i.compartment == "user"])

report = memory.forget_user("ada")
print(f"forget_user('ada'): {report.total} items removed {report.counts}")
memory.close()
