"""Tool results as memory: a large result is shown in a first view that says how to read on.

Runs offline with a scripted model. ``Memory(context=ContextConfig(results=ResultsConfig()))``
stores every large tool result in the thread's results compartment, and ``memory.add_to`` puts a
results node between the tools and the model. The model sees the first 400 tokens of
a result, its id and how to read the rest (``retrieve_result``); once the conversation
passes 6000 tokens every result seen so far becomes a citation, at once. The
checkpointed history keeps every result in full; only what the model sees changes.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ContextConfig, Memory, MemoryState
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.services.context.results import ResultsConfig, result_id
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

PAGE = "Tea in Japan\n\n" + "\n".join(
    f"Paragraph {i}: green tea was served at ceremony {i} in the Uji region." for i in range(220)
)


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGE


memory = Memory(
    embeddings=FakeEmbeddings(), tokenizer_model="gpt-4o-mini", context=ContextConfig(results=ResultsConfig())
)
first = tool_call("fetch_page", url="https://tea.example/japan")
rid = result_id(first.tool_calls[0]["id"])
model = ScriptedChatModel(
    [
        first,
        tool_call("fetch_page", url="https://tea.example/japan?page=2"),
        tool_call("retrieve_result", id=rid, transform="filtered", pattern="ceremony 42 "),
        "Ceremony 42 was in Uji.",
    ]
)
builder = StateGraph(MemoryState)
memory.add_to(builder, model, tools=[fetch_page])
graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
out = graph.invoke(
    {"messages": [HumanMessage("Where was ceremony 42?")]},
    {"configurable": {"user_id": "ada", "thread_id": "tea"}},
)

for number, call in enumerate(model.calls, 1):
    seen = [m for m in call if isinstance(m, ToolMessage)]
    shown = ", ".join(f"{m.name}: {len(str(m.content))} chars" for m in seen) or "no tool results"
    print(f"call {number}: {count_message_tokens(call, model='gpt-4o-mini')} prompt tokens ({shown})")
first_seen = next(m for m in model.calls[2] if isinstance(m, ToolMessage))
print("\nwhat call 3 saw of the first page:\n" + str(first_seen.content))
print("\nretrieve_result answered:\n" + str(out["messages"][-2].content))
print("\nanswer:", out["messages"][-1].content)
assert out["messages"][2].content == PAGE  # the history is not rewritten
