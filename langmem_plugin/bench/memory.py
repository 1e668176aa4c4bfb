"""``langmem-plugin bench memory``: the cost of memory in a turn, per store.

For each store (LangGraph's InMemoryStore, the embedded QdrantStore indexing ``content``, and
``Memory()``'s default store — embedded Qdrant with ``memory_index()`` in a temporary directory —
all with the offline MiniLM embedder) it saves ``memories`` user memories with the
``save_memory`` tool, then times, over ``queries`` queries, what a :class:`~langmem_plugin.Memory`
does in a turn (its public API only):

- **recall** (``Memory.recall``): search user + session memory and knowledge, rank, fit
  budgets, render the fenced prompt (what the recall node does before each model call) —
  without and with access counts (a put that changes no indexed text: no store embeds it again);
- **search tool**: ``search_memory`` with a query (5 results), access counts updated
  (these three take turns on each question, so that they meet the same machine load);
- **remember** (the remember node): one exchange written to the user's memory as an episode;

and reports the mean tokens recall injected against the tokens of every stored
memory as plain text (what "put everything in the prompt" would cost).

With the default store in the run it also starts a fresh Python process and times what a
notebook's first cell costs there: importing the package, ``Memory()``, one remembered
exchange (the embedder loads) and the first recall (:class:`ColdStart`).
"""

from __future__ import annotations

import json
import subprocess
import sys
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
from langmem_plugin.surfaces import default_store

__all__ = ["ColdStart", "MemoryBenchResult", "run_memory_bench"]

STORES = ("inmemory", "qdrant", "default")
_LABELS = {"qdrant": "QdrantStore (embedded)", "default": "Memory() default (QdrantStore, memory_index)"}
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


@dataclass(frozen=True)
class ColdStart:
    """Seconds a fresh process spends before its first recall with ``Memory()``."""

    import_s: float
    memory_s: float
    remember_s: float
    recall_s: float

    @property
    def import_and_first_recall_s(self) -> float:
        """Import, ``Memory()`` and the first recall (the issue's notebook target: under 3 s)."""
        return self.import_s + self.memory_s + self.recall_s

    def line(self) -> str:
        return (
            f"Memory() in a fresh process: import {self.import_s:.2f} s + Memory() {self.memory_s:.2f} s "
            f"+ first recall {self.recall_s:.2f} s = {self.import_and_first_recall_s:.2f} s "
            f"(one remembered exchange before it, which loads the embedder: {self.remember_s:.2f} s)"
        )


#: What the fresh process runs: every step timed inside it (the interpreter's own start excluded).
_COLD_START = """
import json, time
t0 = time.perf_counter()
from langchain_core.messages import HumanMessage
from langmem_plugin import Memory
t1 = time.perf_counter()
memory = Memory()
t2 = time.perf_counter()
config = {"configurable": {"user_id": "bench", "thread_id": "cold"}}
memory.import_history(
    [{"role": "user", "content": "I drink green tea every morning"}, {"role": "assistant", "content": "Ok"}],
    config,
)
t3 = time.perf_counter()
recalled = memory.recall([HumanMessage("What do I drink in the morning?")], config)
t4 = time.perf_counter()
assert "green tea" in recalled.prompt, recalled.prompt
memory.close()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, t4 - t3]))
"""


def cold_start() -> ColdStart:
    """Time :data:`_COLD_START` in a fresh interpreter (see :class:`ColdStart`)."""
    done = subprocess.run(
        [sys.executable, "-c", _COLD_START], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the cold-start process failed:\n{done.stderr[-2000:]}")
    import_s, memory_s, remember_s, recall_s = json.loads(done.stdout.strip().splitlines()[-1])
    return ColdStart(import_s, memory_s, remember_s, recall_s)


@dataclass
class MemoryBenchResult:
    """Every row of the memory benchmark."""

    memories: int
    queries: int
    rows: list[StoreRow] = field(default_factory=list)
    cold_start: ColdStart | None = None

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
        table = format_table(headers, rows)
        return table if self.cold_start is None else f"{table}\n{self.cold_start.line()}"


@contextmanager
def _store(name: str, embedder: MiniLMEmbeddings) -> Iterator[BaseStore]:
    index = {"dims": MINILM_DIMS, "embed": embedder, "fields": list(INDEX_FIELDS)}
    if name == "default":
        with default_store(embedder) as default:  # what Memory() makes: removed when closed
            yield default
        return
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


def _interleaved(calls: Sequence[Callable[[str], object]], questions: Sequence[str]) -> list[list[float]]:
    """The seconds of each call on each question, the calls taking turns question by question.

    So all of them run under the same load of the machine (a busy one drifts by tens of
    milliseconds over a run), and the order rotates, so that none is always the first to meet
    a question (the first recall of a question probes its words; the others reuse the verdicts).
    """
    samples: list[list[float]] = [[] for _ in calls]
    for i, question in enumerate(questions):
        for j in range(len(calls)):
            k = (i + j) % len(calls)
            samples[k].extend(time_calls(calls[k], [question]))
    return samples


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

            search = tools["search_memory"]
            recall_times, tracked_times, search_times = _interleaved(
                [
                    recall,
                    lambda q, tracked=tracked: recall(q, tracked, []),  # type: ignore[misc]
                    lambda q, search=search: search.invoke({"query": q, "limit": 5}, config),  # type: ignore[misc]
                ],
                questions,
            )

            def remember(i: int, memory: Memory = memory) -> None:
                exchange = [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]
                memory.remember_node.invoke({"messages": exchange}, config)

            remember_times = time_calls(remember, list(range(queries)))
            result.rows.append(
                StoreRow(
                    store=_LABELS.get(name, type(store).__name__),
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
    if "default" in stores:
        if progress:
            progress("  Memory() in a fresh process: import, construction, first recall...")
        result.cold_start = cold_start()
    return result
