"""``python -m langmem_plugin.bench.context``: how light the context stays on a research trace.

A scripted agent makes 20 tool calls in one turn, each returning a large result
(web pages of 5–50 KB and JSON rows, built from the LoCoMo conversations), then
answers; a held-out trace (``--trace heldout``: 24 calls, other conversations,
sizes of 3–60 KB in another order, two JSON results per page, one of them a
nested search answer) checks the defaults on a trace they were not chosen on.
Both run by default. The same trace runs through:

- **none**: a graph with memory but no result management — every result in full, every call;
- **context-editing**: ``create_agent`` with LangChain's ``ContextEditingMiddleware``
  (``ClearToolUsesEdit`` with its defaults);
- **summarization-mw**: ``create_agent`` with LangChain's ``SummarizationMiddleware``
  (triggered at 16k tokens, keeps 8k; a scripted summarizer);
- **ours**: the same graph with ``Memory(results=ResultsConfig(...))`` — each result stored,
  shown once, then a citation decided once. The default shows the first 400 tokens and
  compacts every result seen so far at once when the conversation passes 6k tokens (down to
  5% of that), so between compactions the prompt grows append-only (a provider's prompt cache
  reuses it). The former default (each result in full, up to 4000 tokens, compacted after one
  call) and that full first view compacted only past 16k / 32k tokens are rows too;
- **ours: summary 16k**: ``Memory(window=WindowConfig(max_tokens=16_000, summary=SummaryConfig(...)))``
  with the same scripted summarizer — what the window would drop is summarized once into state,
  down to half the window (:mod:`langmem_plugin.services.context.summary`); with and without
  results as memory.

Per model call it prints the prompt tokens (``gpt-4o-mini``'s tokenizer) and, per
setup, how many calls fit in 16k and 128k tokens, the share of the previous
prompt that is an unchanged prefix of the next (what a provider's prompt cache
can reuse; "uncached" sums what each call adds beyond that prefix), and for
ours whether every stored result reads back in full
through ``retrieve_result``. Numbers are printed, not written down anywhere:
run it to see them on this machine and this version.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ContextConfig, Memory, MemoryState, WindowConfig
from langmem_plugin.bench.datasets import locomo_path
from langmem_plugin.bench.report import format_table
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.context import ResultsConfig, SummaryConfig
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call

__all__ = ["ContextBenchResult", "build_trace", "main", "run_context_bench"]

DEFAULT_DATA = locomo_path()  # data/locomo/locomo10.json in the checkout, or $LANGMEM_PLUGIN_DATA
MODEL = "gpt-4o-mini"
_SIZES_KB = (5, 12, 30, 50, 8, 20, 40, 15, 25, 10)
_HELDOUT_SIZES_KB = (22, 4, 45, 9, 60, 3, 33, 14, 7, 28, 18, 36)
#: The traces and their default number of steps (tool calls).
TRACES = {"standard": 20, "heldout": 24}
_ARGUMENT = {"fetch_page": "url", "query_rows": "sql", "search_notes": "query"}
#: Our setups: the default (a first view of 400 tokens, everything seen compacted at once past 6k
#: tokens), the former default (each result in full once, compacted after one call), and the
#: former full first view compacted only past a token threshold.
FORMER_DEFAULT = ResultsConfig(full_tokens=4000, keep_calls=1, compact_above_tokens=None)
OURS = {
    "ours: default": ResultsConfig(),
    "ours: full once (former default)": FORMER_DEFAULT,
    "ours: full, past 16k": ResultsConfig(
        full_tokens=4000, keep_calls=None, compact_above_tokens=16_000, compact_target=0.25
    ),
    "ours: full, past 32k": ResultsConfig(
        full_tokens=4000, keep_calls=None, compact_above_tokens=32_000, compact_target=0.25
    ),
}
#: The window of the summarization setups (ours and LangChain's): summarize past it, down to half.
WINDOW_TOKENS = 16_000
_CONFIG: RunnableConfig = {"configurable": {"user_id": "bench", "thread_id": "research"}}
_SOURCES = re.compile(
    r"https://(?:notes|archive)\.example/[\d/]+|select \* from turns where (?:[a-z =\d]+ and )?step = \d+"
    r"|what did they plan, conversation \d+, step \d+"
)


def _summarize(messages: list[BaseMessage]) -> str:
    """The scripted summarizer: the sources read so far (from the previous summary and the new messages)."""
    text = "\n".join(str(m.content) for m in messages)
    sources = list(dict.fromkeys(_SOURCES.findall(text)))
    return f"Research so far: {len(sources)} sources read: " + "; ".join(sources)


def _summarizer() -> ScriptedChatModel:
    return ScriptedChatModel([_summarize] * 200)


def _turns(conversation: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    sessions = []
    for key, value in conversation.items():
        if key.startswith("session_") and isinstance(value, list):
            sessions.append((str(conversation.get(f"{key}_date_time", key)), value))
    return sessions


def _page(conversation: dict[str, Any], start: int, size: int) -> str:
    sessions = _turns(conversation)
    title = f"{conversation['speaker_a']} and {conversation['speaker_b']}: conversation notes"
    parts = [f"<html><head><title>{title}</title></head><body>", f"<h1>{title}</h1>"]
    i = start
    while sum(len(p) for p in parts) < size:
        date, turns = sessions[i % len(sessions)]
        parts.append(f"<h2>{date}</h2>")
        parts.extend(f"<p><b>{t['speaker']}</b>: {t['text']}</p>" for t in turns)
        i += 1
    return "\n".join(parts)[:size] + "</body></html>"


def _rows(conversation: dict[str, Any], start: int, size: int) -> str:
    rows: list[dict[str, Any]] = []
    sessions = _turns(conversation)
    i = start
    while len(json.dumps(rows)) < size:
        date, turns = sessions[i % len(sessions)]
        rows.extend(
            {"date": date, "id": t["dia_id"], "speaker": t["speaker"], "text": t["text"]} for t in turns
        )
        i += 1
    while len(json.dumps(rows)) > size and len(rows) > 1:
        rows.pop()
    return json.dumps(rows, ensure_ascii=False)


def _hits(conversation: dict[str, Any], start: int, size: int, query: str) -> str:
    """A search API's answer: a JSON object with the query, a count and nested hits."""
    hits: list[dict[str, Any]] = []
    sessions = _turns(conversation)
    answer: dict[str, Any] = {"query": query, "count": 0, "hits": hits}
    i = start
    while len(json.dumps(answer)) < size:
        date, turns = sessions[i % len(sessions)]
        hits.extend(
            {"score": round(1 / (1 + len(hits)), 4), "source": {"session": date, "turn": t["dia_id"]},
             "speaker": t["speaker"], "snippet": t["text"]}
            for t in turns
        )  # fmt: skip
        answer["count"] = len(hits)
        i += 1
    while len(json.dumps(answer)) > size and len(hits) > 1:
        hits.pop()
        answer["count"] = len(hits)
    return json.dumps(answer, ensure_ascii=False)


def _conversations(data: Path) -> list[dict[str, Any]]:
    if not data.is_file():
        raise ConfigurationError(
            f"LoCoMo data not found at {str(data)!r}. Fix: pass --data PATH to locomo10.json "
            "(see docs/benchmarks.md for where LoCoMo comes from)."
        )
    try:
        return [c["conversation"] for c in json.loads(data.read_text(encoding="utf-8"))]
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, KeyError) as exc:
        raise ConfigurationError(f"{str(data)!r} is not LoCoMo data (locomo10.json): {exc!r}") from exc


def build_trace(data: Path, steps: int | None = None, trace: str = "standard") -> list[tuple[str, str, str]]:
    """``(tool, argument, result)`` for each step, from LoCoMo.

    ``standard`` (20 steps by default; the defaults of :class:`ResultsConfig` were chosen on it):
    pages and JSON rows of 5–50 KB in turn, conversations in order. ``heldout`` (24 steps by
    default; built differently, to check those defaults on a trace they were not chosen on):
    conversations from the last one backwards, other sizes (3–60 KB) in another order, and two
    JSON results (rows, and a search API's nested object) for each page.
    """
    if trace not in TRACES:
        raise ConfigurationError(f"--trace must be one of {', '.join(TRACES)}, got {trace!r}")
    steps = TRACES[trace] if steps is None else steps
    if steps < 1:
        raise ConfigurationError(f"--steps must be at least 1, got {steps}")
    conversations = _conversations(data)
    built = []
    for step in range(steps):
        if trace == "standard":
            conversation = conversations[step % len(conversations)]
            size = _SIZES_KB[step % len(_SIZES_KB)] * 1024
            if step % 2 == 0:
                built.append(("fetch_page", f"https://notes.example/{step}", _page(conversation, step, size)))
            else:
                sql = f"select * from turns where step = {step}"
                built.append(("query_rows", sql, _rows(conversation, step, size)))
            continue
        number = len(conversations) - 1 - (step + 3) % len(conversations)
        conversation = conversations[number]
        size = _HELDOUT_SIZES_KB[step % len(_HELDOUT_SIZES_KB)] * 1024
        start = 3 * step + 1
        if step % 3 == 0:
            url = f"https://archive.example/{number}/{step}"
            built.append(("fetch_page", url, _page(conversation, start, size)))
        elif step % 3 == 1:
            query = f"what did they plan, conversation {number}, step {step}"
            built.append(("search_notes", query, _hits(conversation, start, size, query)))
        else:
            sql = f"select * from turns where conversation = {number} and step = {step}"
            built.append(("query_rows", sql, _rows(conversation, start, size)))
    return built


def _tools(trace: Sequence[tuple[str, str, str]]) -> list[BaseTool]:
    results = {argument: result for _, argument, result in trace}

    @tool
    def fetch_page(url: str) -> str:
        """Fetch a web page."""
        return results[url]

    @tool
    def query_rows(sql: str) -> str:
        """Run a read-only SQL query; rows as JSON."""
        return results[sql]

    @tool
    def search_notes(query: str) -> str:
        """Search the notes; hits as JSON."""
        return results[query]

    return [fetch_page, query_rows, search_notes]


def _script(trace: Sequence[tuple[str, str, str]]) -> list[Any]:
    calls: list[Any] = [tool_call(name, **{_ARGUMENT[name]: arg}) for name, arg, _ in trace]
    return [*calls, "Here is what I found."]


def _serial(message: BaseMessage) -> str:
    calls = message.tool_calls if isinstance(message, AIMessage) else None
    return json.dumps(
        [message.type, message.content, getattr(message, "tool_call_id", None), calls], default=str
    )


def _kept(before: list[BaseMessage], after: list[BaseMessage]) -> int:
    """The tokens of ``before`` that are an unchanged prefix of ``after`` (what a prompt cache reuses)."""
    same = 0
    for a, b in zip(before, after, strict=False):
        if _serial(a) != _serial(b):
            break
        same += 1
    return count_message_tokens(before[:same], model=MODEL) if same else 0


@dataclass
class Setup:
    """What one setup measured."""

    name: str
    tokens: list[int]
    kept: list[int]
    retrievable: float | None = None

    @property
    def stable(self) -> list[float]:
        """Per call after the first: the share of the previous prompt that is a prefix of this one."""
        return [k / t if t else 1.0 for k, t in zip(self.kept, self.tokens, strict=False)]

    @property
    def uncached(self) -> int:
        """Prompt tokens summed over the calls, less what each call shares as a prefix with the one before."""
        return self.tokens[0] + sum(t - k for t, k in zip(self.tokens[1:], self.kept, strict=True))

    def fits(self, limit: int) -> int:
        """How many model calls, from the first, fit in ``limit`` tokens."""
        return next((i for i, t in enumerate(self.tokens) if t > limit), len(self.tokens))


@dataclass
class ContextBenchResult:
    """Every setup's numbers."""

    setups: list[Setup] = field(default_factory=list)
    trace: str = "standard"

    def report(self) -> str:
        """The tables and the summary, as text."""
        steps = len(self.setups[0].tokens)
        rows = [[i + 1, *(s.tokens[i] for s in self.setups)] for i in range(steps)]
        lines = [
            f"Trace {self.trace!r}: prompt tokens per model call (gpt-4o-mini tokenizer)",
            format_table(["call", *(s.name for s in self.setups)], rows),
            "",
        ]
        none = self.setups[0].tokens[-1]
        summary = []
        for s in self.setups:
            saved = f"{100 * (1 - s.tokens[-1] / none):.1f}%" if none else "n/a"
            mean = sum(s.stable) / len(s.stable) if s.stable else 1.0
            retrievable = "n/a" if s.retrievable is None else f"{100 * s.retrievable:.0f}%"
            summary.append(
                [s.name, s.tokens[-1], saved, sum(s.tokens), s.uncached, s.fits(16_000), s.fits(128_000),
                 f"{100 * mean:.1f}%", f"{100 * min(s.stable or [1.0]):.1f}%", retrievable]
            )  # fmt: skip
        headers = ["setup", "last call", "fewer than none", "all calls", "all calls, uncached",
                   "calls in 16k", "calls in 128k", "prefix kept (mean)", "prefix kept (min)",
                   "retrievable"]  # fmt: skip
        lines.append(format_table(headers, summary))
        return "\n".join(lines)


def _measure(name: str, calls: list[list[BaseMessage]]) -> Setup:
    tokens = [count_message_tokens(c, model=MODEL) for c in calls]
    kept = [_kept(a, b) for a, b in itertools.pairwise(calls)]
    return Setup(name, tokens, kept)


def _graph_run(
    name: str,
    trace: Sequence[tuple[str, str, str]],
    results: ResultsConfig | None,
    window: WindowConfig | None = None,
) -> tuple[Setup, Memory]:
    memory = Memory(
        embeddings=FakeEmbeddings(),
        tokenizer_model=MODEL,
        context=ContextConfig(results=results, window=window),
    )
    model = ScriptedChatModel(_script(trace))
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model, tools=_tools(trace), instructions="You research and report.")
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    graph.invoke({"messages": [HumanMessage("Research these conversations.")]}, _CONFIG)
    return _measure(name, model.calls), memory


def _context_editing_run(trace: Sequence[tuple[str, str, str]]) -> Setup | None:
    try:
        from langchain.agents import create_agent
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
    except ImportError:  # pragma: no cover - the agents extra is missing
        return None
    model = ScriptedChatModel(_script(trace))
    agent = create_agent(
        model,
        tools=_tools(trace),
        system_prompt="You research and report.",
        middleware=[ContextEditingMiddleware(edits=[ClearToolUsesEdit()])],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [HumanMessage("Research these conversations.")]}, _CONFIG)
    return _measure("context-editing", model.calls)


def _summarization_run(trace: Sequence[tuple[str, str, str]]) -> Setup | None:
    try:
        from langchain.agents import create_agent
        from langchain.agents.middleware import SummarizationMiddleware
    except ImportError:  # pragma: no cover - the agents extra is missing
        return None
    model = ScriptedChatModel(_script(trace))
    summarizer = SummarizationMiddleware(
        _summarizer(), trigger=("tokens", WINDOW_TOKENS), keep=("tokens", WINDOW_TOKENS // 2)
    )
    agent = create_agent(
        model,
        tools=_tools(trace),
        system_prompt="You research and report.",
        middleware=[summarizer],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [HumanMessage("Research these conversations.")]}, _CONFIG)
    return _measure("summarization-mw", model.calls)


def _retrievable(memory: Memory, trace: Sequence[tuple[str, str, str]]) -> float:
    (retrieve,) = [t for t in memory.tools if t.name == "retrieve_result"]
    (query,) = [t for t in memory.tools if t.name == "query_results"]
    stored = json.loads(query.invoke({"limit": 100}, _CONFIG))
    originals = {result for _, _, result in trace}
    whole = 0
    for entry in stored:
        parts, page, pages = [], 1, 1
        while page <= pages:
            answer = retrieve.invoke({"id": entry["id"], "page": page}, _CONFIG)
            head, body = answer.split(":\n", 1)
            pages = int(head.split(" of ")[1].split(";")[0])
            parts.append(body)
            page += 1
        whole += "".join(parts) in originals
    return whole / len(trace)


def run_context_bench(
    data: Path = DEFAULT_DATA,
    steps: int | None = None,
    trace: str = "standard",
    ours: dict[str, ResultsConfig] | None = None,
) -> ContextBenchResult:
    """Run a trace (:func:`build_trace`) through every setup and return the numbers.

    ``ours``: our result setups by name (default :data:`OURS`).
    """
    built = build_trace(data, steps, trace)
    setups = [_graph_run("none", built, None)[0]]
    editing = _context_editing_run(built)
    if editing is not None:
        setups.append(editing)
    summarized = _summarization_run(built)
    if summarized is not None:
        setups.append(summarized)
    for name, config in (OURS if ours is None else ours).items():
        run, memory = _graph_run(name, built, config)
        run.retrievable = _retrievable(memory, built)
        setups.append(run)
    window = WindowConfig(max_tokens=WINDOW_TOKENS, summary=SummaryConfig(_summarizer()))
    setups.append(_graph_run("ours: summary 16k", built, None, window)[0])
    run, memory = _graph_run("ours: default + summary 16k", built, ResultsConfig(), window)
    run.retrievable = _retrievable(memory, built)
    setups.append(run)
    return ContextBenchResult(setups, trace)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``python -m langmem_plugin.bench.context [--data PATH] [--trace T] [--steps N]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument(
        "--trace",
        choices=[*TRACES, "both"],
        default="both",
        help="standard (the defaults were chosen on it), heldout (built differently), or both (default)",
    )
    parser.add_argument("--steps", type=int, default=None, help="tool calls in the trace (default: 20 / 24)")
    args = parser.parse_args(argv)
    traces = list(TRACES) if args.trace == "both" else [args.trace]
    print("\n\n".join(run_context_bench(args.data, args.steps, trace).report() for trace in traces))


if __name__ == "__main__":
    main()
