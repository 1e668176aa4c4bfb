"""Memory nodes in your own StateGraph: recall before the model, remember after it.

Runs offline: with OPENAI_API_KEY set it uses ChatOpenAI, otherwise a scripted
model that emits real tool calls (say so in the output).
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langmem_plugin import Memory, MemoryState
from langmem_plugin.testing import ScriptedChatModel, tool_call

memory = Memory(tokenizer_model="gpt-4o-mini")  # embedded Qdrant in a temporary directory, offline MiniLM

if os.environ.get("OPENAI_API_KEY"):
    from langchain_openai import ChatOpenAI

    model: Any = ChatOpenAI(model="gpt-4o-mini").bind_tools(memory.tools)
    print("model: ChatOpenAI")
else:
    model = ScriptedChatModel(
        [
            tool_call(
                "save_memory", content="Ada's favourite language is OCaml", category="preferences/code"
            ),
            "Noted: OCaml.",
            lambda messages: "You like OCaml." if "OCaml" in str(messages[0].content) else "I don't know.",
        ]
    )
    print("model: offline scripted model (no OPENAI_API_KEY): tool calls come from a script")


def agent(state: MemoryState) -> dict[str, Any]:
    """Your model node: the system message carries the memories recall found."""
    messages = memory.messages_for_model(state, instructions="You are a helpful assistant.")
    return {"messages": [model.invoke(messages)]}


builder = StateGraph(MemoryState)
builder.add_node("recall", memory.recall_node)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(memory.tools))
builder.add_node("remember", memory.remember_node)
builder.add_edge(START, "recall")
builder.add_edge("recall", "agent")
builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "remember"})
builder.add_edge("tools", "agent")
builder.add_edge("remember", END)
graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)

first = graph.invoke(
    {"messages": [HumanMessage("My favourite language is OCaml.")]},
    {"configurable": {"user_id": "ada", "thread_id": "monday"}},
)
print("thread monday:", first["messages"][-1].content)

second = graph.invoke(
    {"messages": [HumanMessage("Which programming language do I like?")]},
    {"configurable": {"user_id": "ada", "thread_id": "tuesday"}},
)
print("thread tuesday:", second["messages"][-1].content)
record = second["memory_context"]
for item in record["items"]:
    print(f"  recalled [{item['compartment']}] {item['content'][:60]!r} score={item['score']}")
print("  tokens injected:", record["tokens"]["total"])
