"""The callback handler on a graph you do not change: every answer is stored as an episode.

A callback cannot change what a model sees, so it does not recall; for recall add
``memory.recall_node`` or use the middleware (see the other examples).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from langmem_plugin import Memory
from langmem_plugin.testing import ScriptedChatModel

model = ScriptedChatModel(["Hello Grace! Paris in June sounds lovely.", "Enjoy the trip."])
print("model: offline scripted model (this example never calls a real model)")


def chatbot(state: MessagesState) -> dict[str, Any]:
    return {"messages": [model.invoke(state["messages"])]}


# an existing graph: no memory nodes, no store
builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_edge(START, "chatbot")
builder.add_edge("chatbot", END)
graph = builder.compile()

memory = Memory(tokenizer_model="gpt-4o-mini")
handler = memory.callback_handler()
config: Any = {"configurable": {"user_id": "grace", "thread_id": "trip"}, "callbacks": [handler]}
graph.invoke({"messages": [HumanMessage("Hi, I'm Grace, planning Paris in June.")]}, config)
graph.invoke({"messages": [HumanMessage("Thanks!")]}, config)

print("events recorded by the handler:")
for record in handler.records:
    print(" ", record)
print("episodes in Grace's memory (each notes its thread):")
for item in memory.store.search(("memories", "user", "grace"), filter={"kind": "episode"}):
    print(" ", item.value["content"].replace("\n", " | "))
# The stored episodes can be recalled later by the node or the middleware:
recall = memory.recall(
    [HumanMessage("Where is Grace travelling?")], {"configurable": {"user_id": "grace", "thread_id": "trip"}}
)
print("recall would inject", recall.tokens["total"], "tokens:", [i.content[:40] for i in recall.items])
