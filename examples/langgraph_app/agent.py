"""A memory agent for ``langgraph dev`` (and LangGraph Platform): ``graph``, compiled bare.

    cd examples/langgraph_app && langgraph dev    # needs: pip install "langgraph-cli[inmem]"

(``langgraph dev`` finds ``./agent.py`` from the directory it runs in, not from the config's.)
The server brings its own checkpointer and store, and refuses a graph compiled with a
checkpointer, so ``graph`` is compiled with neither. ``Memory()`` keeps its memories in the store
the server gives each run: the Store API (``POST /store/items/search``) and Studio's store view
show them, and our recall searches them with BM25 beside the store's vector index, which
langgraph.json configures with :data:`embeddings` (the offline MiniLM, 384 dimensions, over each
memory's ``content``).

Runs offline: with OPENAI_API_KEY set the model is ChatOpenAI, otherwise a rule-based stand-in
(``OfflineChatModel``) that saves "remember ..." messages with ``save_memory`` and answers
anything else with what recall put in its system message. Each run's config names whose memory it
is: ``{"configurable": {"user_id": "ada"}}`` (the server supplies ``thread_id``); without a user
the memories stay in the thread's session memory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langgraph.graph import StateGraph

from langmem_plugin import Memory, MemoryState, MiniLMEmbeddings
from langmem_plugin.testing import tool_call

INSTRUCTIONS = "You are a helpful assistant with a long-term memory."

#: The embedder of the server's store (langgraph.json: ``store.index.embed``).
embeddings = MiniLMEmbeddings()
memory = Memory(tokenizer_model="gpt-4o-mini")  # no store: the run's (the server's), else its own


def offline_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The stand-in model's answer: a ``save_memory`` call, a confirmation, or what recall found."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(str(last.content))
    text = str(last.content).strip()
    if text.lower().startswith("remember "):
        return tool_call("save_memory", content=text[len("remember ") :], category="notes")
    system = str(messages[0].content) if isinstance(messages[0], SystemMessage) else ""
    recalled = [line for line in system.splitlines() if line.startswith("- ")]  # recall's entries
    if not recalled:
        return AIMessage("(offline model) Nothing in my memory matches that yet.")
    return AIMessage("(offline model) From my memory:\n" + "\n".join(recalled))


class OfflineChatModel(BaseChatModel):
    """A chat model without a network: :func:`offline_reply`, for as many calls as the server makes."""

    @property
    def _llm_type(self) -> str:
        return "langmem-offline"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=offline_reply(messages))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Accepts any tools: :func:`offline_reply` decides the calls."""
        return self


if os.environ.get("OPENAI_API_KEY"):
    from langchain_openai import ChatOpenAI

    model: BaseChatModel = ChatOpenAI(model="gpt-4o-mini")
else:
    model = OfflineChatModel()

builder = StateGraph(MemoryState)
memory.add_to(builder, model, instructions=INSTRUCTIONS)  # recall → agent ⇄ tools → remember
graph = builder.compile()  # no checkpointer, no store: the server supplies both
