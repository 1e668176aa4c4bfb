"""``langmem-plugin bench memory``: the cost of memory in a turn, per store.

For each store (LangGraph's InMemoryStore and the embedded QdrantStore, both with
the offline MiniLM embedder) it saves ``memories`` user memories with the
``save_memory`` tool, then times, over ``queries`` queries, what a :class:`~langmem_plugin.Memory`
does in a turn (its public API only):

- **recall** (``Memory.recall``): search user + session memory and knowledge, rank, fit
  budgets, render the fenced prompt (what the recall node does before each model call) —
  without and with access counts (updating a record re-puts it, and the store re-embeds it);
- **search tool**: ``search_memory`` with a query (5 results), access counts updated;
- **remember** (the remember node): one exchange written to the user's memory as an episode;

and reports the mean tokens recall injected against the tokens of every stored
memory as plain text (what "put everything in the prompt" would cost).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.base import BaseStore

from langmem_plugin import CompartmentLimits, Memory, MemoryLayout, RecallConfig
from langmem_plugin.bench.core import sample_sentences
from langmem_plugin.bench.report import Timer, format_table, percentile, time_calls
from langmem_plugin.core.embeddings import MINILM_DIMS, MiniLMEmbeddings
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.services.operations import INDEX_FIELDS

__all__ = ["MemoryBenchResult", "run_memory_bench"]

STORES = ("inmemory", "qdrant")
_MODEL = "gpt-4o-mini"


@dataclass
class StoreRow:
    """What one store measured."""

    store: str
    save_ms: float
    recall_p50_ms: float
    recall_p95_ms: float
    tracked_p50_ms: float
    search_p50_ms: float
    remember_p50_ms: float
    injected_tokens: float
    all_tokens: int


@dataclass
class MemoryBenchResult:
    """Every row of the memory benchmark."""

    memories: int
    queries: int
    rows: list[StoreRow] = field(default_factory=list)

    def table(self) -> str:
        """The result as a table."""
        headers = [
            "store",
            "save (mean)",
            "recall p50",
            "recall p95",
            "recall p50 + access counts",
            "search tool p50",
            "remember p50",
            "tokens injected (mean)",
            "all memories as text",
        ]
        rows = [
            [
                r.store,
                f"{r.save_ms:.1f} ms",
                f"{r.recall_p50_ms:.1f} ms",
                f"{r.recall_p95_ms:.1f} ms",
                f"{r.tracked_p50_ms:.1f} ms",
                f"{r.search_p50_ms:.1f} ms",
                f"{r.remember_p50_ms:.1f} ms",
                f"{r.injected_tokens:.0f}",
                f"{r.all_tokens}",
            ]
            for r in self.rows
        ]
        return format_table(headers, rows)


@contextmanager
def _store(name: str, embedder: MiniLMEmbeddings) -> Iterator[BaseStore]:
    index = {"dims": MINILM_DIMS, "embed": embedder, "fields": list(INDEX_FIELDS)}
    if name == "inmemory":
        from langgraph.store.memory import InMemoryStore

        yield InMemoryStore(index=index)  # type: ignore[arg-type]
        return
    from langmem_plugin.stores.qdrant import QdrantStore

    with (
        tempfile.TemporaryDirectory(prefix="langmem-bench-") as directory,
        QdrantStore(path=Path(directory) / "memory", index=index) as store,  # type: ignore[arg-type]
    ):
        yield store


def run_memory_bench(
    *,
    memories: int = 1000,
    queries: int = 100,
    stores: Sequence[str] = STORES,
    progress: Callable[[str], None] | None = None,
) -> MemoryBenchResult:
    """Measure save, recall, search and remember on each store (see the module docstring)."""
    embedder = MiniLMEmbeddings().load()
    texts = sample_sentences(memories, seed=11)
    questions = [f"What about {t.split(' ', 2)[-1]}?" for t in sample_sentences(queries, seed=23)]
    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=None)})
    config: RunnableConfig = {"configurable": {"user_id": "bench", "thread_id": "bench-thread"}}
    recall_config = RecallConfig(model=_MODEL, min_relevance=None, track_access=False)
    tracked_config = RecallConfig(model=_MODEL, min_relevance=None, track_access=True)
    all_tokens = count_tokens("\n".join(texts), model=_MODEL)
    result = MemoryBenchResult(memories=memories, queries=queries)
    for name in stores:
        if progress:
            progress(f"  {name}: saving {memories} memories...")
        with _store(name, embedder) as store:
            memory = Memory(store, layout=layout, recall=recall_config, tokenizer_model=_MODEL)
            tracked = Memory(store, layout=layout, recall=tracked_config, tokenizer_model=_MODEL)
            tools = {tool.name: tool for tool in memory.tools}
            with Timer() as saving:
                for text in texts:
                    tools["save_memory"].invoke({"content": text, "category": "bench"}, config)
            recalls: list[int] = []

            def recall(question: str, memory: Memory = memory, out: list[int] = recalls) -> None:
                done = memory.recall([HumanMessage(question)], config)
                out.append(done.tokens["total"])

            recall_times = time_calls(recall, questions)
            tracked_times = time_calls(
                lambda q, tracked=tracked: recall(q, tracked, []),  # type: ignore[misc]
                questions,
            )
            search = tools["search_memory"]
            search_times = time_calls(
                lambda q, search=search: search.invoke({"query": q, "limit": 5}, config),  # type: ignore[misc]
                questions,
            )

            def remember(i: int, memory: Memory = memory) -> None:
                exchange = [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]
                memory.remember_node.invoke({"messages": exchange}, config)

            remember_times = time_calls(remember, list(range(queries)))
            result.rows.append(
                StoreRow(
                    store=type(store).__name__ + (" (embedded)" if name == "qdrant" else ""),
                    save_ms=saving.seconds * 1000 / memories,
                    recall_p50_ms=percentile(recall_times, 50) * 1000,
                    recall_p95_ms=percentile(recall_times, 95) * 1000,
                    tracked_p50_ms=percentile(tracked_times, 50) * 1000,
                    search_p50_ms=percentile(search_times, 50) * 1000,
                    remember_p50_ms=percentile(remember_times, 50) * 1000,
                    injected_tokens=sum(recalls) / len(recalls),
                    all_tokens=all_tokens,
                )
            )
    return result
