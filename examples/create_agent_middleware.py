"""Memory for ``langchain.agents.create_agent`` through its middleware.

``create_agent`` (LangChain 1.x) comes with ``pip install langmem-plugin``: nothing else to install.
"""

from __future__ import annotations

import os
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langmem_plugin import Memory
from langmem_plugin.testing import ScriptedChatModel, tool_call

memory = Memory(tokenizer_model="gpt-4o-mini")

if os.environ.get("OPENAI_API_KEY"):
    from langchain_openai import ChatOpenAI

    model: Any = ChatOpenAI(model="gpt-4o-mini")
    print("model: ChatOpenAI")
else:
    model = ScriptedChatModel(
        [
            tool_call("save_memory", content="Linus is allergic to peanuts", category="health"),
            "Understood, no peanuts.",
            lambda messages: (
                "Skip the satay: it has peanuts."
                if "peanuts" in str(messages[0].content)
                else "Anything goes."
            ),
        ]
    )
    print("model: offline scripted model (no OPENAI_API_KEY): tool calls come from a script")

agent = create_agent(
    model,
    tools=memory.tools,
    system_prompt="You are a helpful cook.",
    middleware=[memory.middleware()],
    checkpointer=InMemorySaver(),
    store=memory.store,
)
agent.invoke(
    {"messages": [HumanMessage("I'm allergic to peanuts.")]},
    {"configurable": {"user_id": "linus", "thread_id": "a"}},
)
out = agent.invoke(
    {"messages": [HumanMessage("Can I have the chicken satay with peanut sauce?")]},
    {"configurable": {"user_id": "linus", "thread_id": "b"}},
)
print("answer:", out["messages"][-1].content)
print("recalled:", [i["content"] for i in out["memory_context"]["items"] if i["section"] == "memories"])
print("tokens injected:", out["memory_context"]["tokens"]["total"])
