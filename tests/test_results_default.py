"""The default ``ResultsConfig()`` in a real graph: a small first view, then every seen result cited at once.

Between compactions each prompt is the previous one plus new messages, byte for byte (what a
provider's prompt cache reuses); when the conversation passes the threshold, every result the
model has seen is compacted in the same step.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ContextConfig, Memory, MemoryState
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.services.context.results import ResultsConfig, result_id
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

CONFIG = {"configurable": {"user_id": "ada", "thread_id": "research"}}


def _page(n: int) -> str:
    lines = [f"Source {n}", ""]
    lines += [
        f"Line {i} of source {n}: the reading was {i * 13 % 97} at station {i % 7}." for i in range(250)
    ]
    return "\n".join(lines)


PAGES = {f"https://s.example/{n}": _page(n) for n in range(16)}


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGES[url]


def _serial(message: BaseMessage) -> str:
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    return json.dumps(
        [message.type, message.content, getattr(message, "tool_call_id", None), calls], sort_keys=True
    )


def _results(messages: list[BaseMessage]) -> list[int]:
    return [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]


def test_the_default_keeps_the_prefix_until_it_compacts_every_seen_result_at_once() -> None:
    config = ResultsConfig()
    assert (config.full_tokens, config.keep_calls, config.compact_above_tokens, config.compact_target) == (
        400,
        None,
        6000,
        0.05,
    )
    memory = Memory(
        embeddings=FakeEmbeddings(), tokenizer_model="gpt-4o-mini", context=ContextConfig(results=config)
    )
    script: list[Any] = [tool_call("fetch_page", url=url) for url in PAGES]
    model = ScriptedChatModel([*script, "Done."])
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model, tools=[fetch_page], instructions="Research.")  # a ToolNode runs the tools
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    out = graph.invoke({"messages": [HumanMessage("Read every source.")]}, CONFIG)
    assert out["messages"][-1].content == "Done."
    calls = model.calls
    assert len(calls) == len(PAGES) + 1

    fired = []
    for n, (before, after) in enumerate(itertools.pairwise(calls), start=2):
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=False)) if _serial(a) != _serial(b)]
        newest = after[_results(after)[-1]]
        assert "continues: its first 400 of" in str(newest.content)  # the new result: a first view
        assert 'transform="excerpt"' in str(newest.content)
        if not changed:
            # no compaction: the previous prompt is a byte-identical prefix of this one
            assert [_serial(m) for m in after[: len(before)]] == [_serial(m) for m in before]
            continue
        fired.append(n)
        # compaction: every result the previous call saw in its first view is compacted now, at once
        first_views = [i for i in _results(before) if "continues: its first" in str(before[i].content)]
        assert first_views
        assert changed == first_views
        for i in first_views:
            assert str(after[i].content).startswith(f"[result {result_id(before[i].tool_call_id)} compacted")
        assert all("compacted" in str(after[i].content) for i in _results(after)[:-1])
    assert fired, "the trace passes 6000 tokens: compaction fires"
    assert len(fired) <= len(calls) // 4  # seldom: most calls only append
    assert max(count_message_tokens(c, model="gpt-4o-mini") for c in calls) < 7000
    # the decisions are in state; the history keeps every result in full
    assert set(out["compacted"]) < set(out["tool_results"])
    assert all(m.content in PAGES.values() for m in out["messages"] if isinstance(m, ToolMessage))
    # what the first view left out reads back from where it stopped
    (retrieve,) = [t for t in memory.tools if t.name == "retrieve_result"]
    first = calls[1][_results(calls[1])[0]]
    shown = str(first.content).split("\n[result ")[0]
    answer = retrieve.invoke(
        {"id": result_id(first.tool_call_id), "transform": "excerpt", "start": len(shown)}, CONFIG
    )
    page = PAGES["https://s.example/0"]
    assert answer.split(":\n", 1)[1] == page[len(shown) : len(shown) + 2000]
