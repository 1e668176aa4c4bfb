"""``langmem-plugin demo``: a real memory agent through five threads, explained turn by turn.

The agent is a LangGraph ``StateGraph``: recall → model → ``ToolNode`` (the
memory tools) → remember, checkpointed by ``SqliteSaver`` into a file, with a
store holding the memories (by default the embedded ``QdrantStore`` with the
offline MiniLM embedder — the store is one parameter of :func:`run_demo`).

The model is ``ChatOpenAI`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set
(``OPENAI_MODEL`` picks the model, default ``gpt-4o-mini``). Otherwise it is an
offline *scripted* model that emits real tool calls from a fixed script and
answers from what recall put in its prompt — and the output says so. The scenario and
the offline models that play it are :mod:`langmem_plugin.demo_script`.

The scenario: in thread 1 the user states preferences (saved as memories);
thread 2 relies on them, then updates one and deletes another; thread 3 asks
what the agent knows. In thread 4 the agent works on a multi-step task with a
plan (``Memory(plan=True)``): it creates the plan and advances it, and the demo
shows the plan section the model saw in its prompt. In thread 5 the user changes
a preference without the agent calling any tool: background **extraction**
(issue 16) finds it after the turn, consolidation supersedes the old memory
(kept, marked no longer true) and ``memory.history(id)`` shows every change of
that memory — the tool's save and update, then the invalidation. Offline, the
scripted model plays the extractor and the consolidation decider, and the
output says so; with ``OPENAI_API_KEY`` the real model extracts.

Each turn prints the memories recalled (with scores), the tokens injected
against the tokens of the whole history so far, the tool calls, the plan the
model saw (when there is one), and what was stored. It says where the store and the checkpoints live,
and what its two scores mean (:data:`SCORES`): **match** is how well a memory fits the turn
next to the other candidates of the same search (the fused dense and BM25 score, in
standard deviations from the candidates' average), **rank** recall's own order, 0 to 1
(the match scaled to the best one, blended with priority and recency). Text cut to fit a
line ends with "…".

Run with a directory (``--dir D``), the demo keeps its checkpoints and store there, and
**every run starts clean**: it first removes what a previous demo run left in ``D`` (its
``memory/`` store and ``checkpoints.sqlite``, recognised by the ``.langmem-demo`` file it
writes), so running it twice prints the same story instead of piling up memories. It
refuses a directory holding a ``memory/`` or ``checkpoints.sqlite`` it did not write.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore

from langmem_plugin import (
    ExtractionConfig,
    Memory,
    MemoryRecord,
    MemoryState,
    RecallConfig,
    Scope,
    memory_index,
)
from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.core.providers import is_provider_failure, provider_error
from langmem_plugin.core.tokens import count_message_tokens
from langmem_plugin.core.validity import INVALID_AT, is_current
from langmem_plugin.demo_script import (
    EXTRACTED,
    SCENARIO,
    offline_extractor,
    offline_model,
    plan_section,
    system_text,
)
from langmem_plugin.errors import ChatModelError, ConfigurationError, LangMemPluginError
from langmem_plugin.services.history import HISTORY_NAMESPACE
from langmem_plugin.services.remember import EPISODE_CATEGORY
from langmem_plugin.testing import ScriptedChatModel

__all__ = [
    "EXTRACTED",
    "SCENARIO",
    "SCORES",
    "DemoTurn",
    "cut",
    "offline_extractor",
    "offline_model",
    "run_demo",
]

USER_ID = "sam"
TOKEN_MODEL = "gpt-4o-mini"
INSTRUCTIONS = (
    "You are a helpful assistant with long-term memory. Save durable facts and preferences the user "
    "tells you with save_memory; when a fact changes, find it with search_memory and fix it with "
    "update_memory; when the user asks you to forget something, delete it. Use what the memory context "
    "says about the user."
)

#: What the two scores on a "recalled" line mean.
SCORES = (
    "scores    : match = how well a memory fits the turn next to the other candidates of its search "
    "(dense and BM25 scores fused, in standard deviations from the candidates' average: +1.00 is one "
    'above average, below 0 worse than average; "-": none); rank = recall\'s order, 0 to 1: 0.75 × '
    "the match scaled to the best one (below average counts 0) + 0.15 × priority + 0.10 × recency, "
    "so 0.167 is a below-average match at the default priority, saved recently. "
    'Cut text ends with "…".'
)

#: The file that marks a directory as the demo's; what the demo writes beside it.
DEMO_MARKER = ".langmem-demo"
_DEMO_FILES = ("memory", "checkpoints.sqlite", "checkpoints.sqlite-wal", "checkpoints.sqlite-shm")


def cut(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters; a cut one ends with "…".

    >>> cut("Sam is vegetarian", 40), cut("Sam is training for a half marathon in May", 20)
    ('Sam is vegetarian', 'Sam is training for…')
    """
    line = " / ".join(text.splitlines())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def _openai_model() -> BaseChatModel | None:
    if not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        return None
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=os.environ.get("OPENAI_MODEL", TOKEN_MODEL),
        api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",  # type: ignore[arg-type]
        temperature=0,
    )


def _invoke(graph: Any, inputs: Any, config: RunnableConfig, model: BaseChatModel, number: int) -> Any:
    """One turn of the graph; a chat model provider's failure (a key refused, a server down) is a
    :class:`~langmem_plugin.errors.ChatModelError`: one line that says what and the fix."""
    try:
        return graph.invoke(inputs, config)
    except Exception as exc:
        if not is_provider_failure(exc):
            raise
        reason = f"for the demo's turn {number}"
        offline = "unset OPENAI_API_KEY and OPENAI_BASE_URL to run the demo offline"
        raise provider_error(model, reason, exc, error=ChatModelError, fix=offline) from exc


@dataclass
class DemoTurn:
    """What happened in one turn."""

    thread: str
    user: str
    answer: str
    recalled: list[dict[str, Any]]
    injected_tokens: int
    history_tokens: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    stored: dict[str, Any] | None = None
    plan_seen: list[str] = field(default_factory=list)


class _PromptSpy(BaseCallbackHandler):
    """Keeps the system prompt of the agent model's latest call (what the model saw)."""

    def __init__(self) -> None:
        self.system = ""

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        if messages and messages[0]:
            self.system = system_text(messages[0])


@contextmanager
def _default_store(directory: Path) -> Iterator[BaseStore]:
    from langmem_plugin.stores.qdrant import QdrantStore

    index = memory_index(MiniLMEmbeddings())
    with QdrantStore(path=directory / "memory", index=index) as store:
        yield store


def _print_turn(number: int, turn: DemoTurn, out: Callable[[str], None]) -> None:
    out(f"\n── turn {number} · {turn.thread} ─────────────────────────────────────────")
    out(f"user      : {turn.user}")
    if turn.recalled:
        out("recalled  :")
        for item in turn.recalled:
            match = "  -  " if item["relevance"] is None else f"{item['relevance']:+.2f}"
            content = cut(item["content"], 80)
            out(f"  [{item['compartment']:<7} match {match} · rank {item['score']:.3f}] {content}")
    else:
        out("recalled  : nothing")
    out(
        f"tokens    : {turn.injected_tokens} injected by recall vs {turn.history_tokens} for the whole "
        "history of every thread so far"
    )
    for call in turn.tool_calls:
        out(f"tool call : {call['name']}({json.dumps(call['args'], ensure_ascii=False)})")
    for result in turn.tool_results:
        out(f"  → {cut(result, 110)}")
    if turn.plan_seen:
        out("plan seen : (the [plan] section of the model's prompt, rendered fresh before each call)")
        for line in turn.plan_seen:
            out(f"  {cut(line, 100)}")
    out(f"assistant : {turn.answer}")
    if turn.stored:
        out(
            f"stored    : episode {turn.stored['episode']} in {', '.join(turn.stored['compartments'])} memory"
        )


def run_demo(
    *,
    store: BaseStore | None = None,
    directory: str | os.PathLike[str] | None = None,
    model: BaseChatModel | None = None,
    extractor: BaseChatModel | None = None,
    extraction: bool = True,
    out: Callable[[str], None] = print,
) -> list[DemoTurn]:
    """Run the scenario and print each turn; returns the turns.

    Args:
        store: the memory store (default: an embedded ``QdrantStore`` in ``directory``, MiniLM).
        directory: where the checkpoint database (and the default store) live; default a temporary
            directory removed at the end. A run there starts clean: it removes what a previous
            demo run left in it first.
        model: the chat model; default ``ChatOpenAI`` when ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` is
            set, else the offline scripted model.
        extractor: the model background extraction uses; default the agent's model when it is a
            real one, else the offline scripted extractor (:func:`offline_extractor`).
        extraction: ``False`` runs without extraction (the output says it is off, and why).
        out: where lines are printed.

    Raises:
        ConfigurationError: ``directory`` holds a ``memory/`` or ``checkpoints.sqlite`` that no demo
            run left there (nothing is removed or run).
        ChatModelError: the model's provider failed (a key refused, a server down): the message
            names the model, its base URL and the fix.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    with ExitStack() as stack:
        kept = directory is not None
        if directory is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="langmem-demo-"))
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        cleaned = _start_clean(path) if kept else False
        if store is None:
            store = stack.enter_context(_default_store(path))
            where = f"embedded QdrantStore (MiniLM embeddings) at {path / 'memory'}"
        else:
            where = f"{type(store).__name__} (given by the caller)"
        if model is None:
            model = _openai_model()
            if model is None:
                model = offline_model()
                out(
                    "model     : OFFLINE SCRIPTED MODEL — no OPENAI_API_KEY or OPENAI_BASE_URL is set, so "
                    "the model's replies and tool calls come from a fixed script (the memory, recall, "
                    "tools, store and checkpointer are all real). Set OPENAI_API_KEY to run a real model."
                )
            else:
                out(f"model     : {type(model).__name__} ({getattr(model, 'model_name', '?')})")
        out(f"store     : {where}")
        out(f"checkpoint: SqliteSaver at {path / 'checkpoints.sqlite'}")
        if kept:
            again = "; this run removed the previous run's first" if cleaned else ""
            out(f"            kept in {path} (each run there starts clean{again})")
        else:
            out("            in a temporary directory, removed at the end (--dir DIR keeps them)")
        out(SCORES)

        if extraction and extractor is None:
            extractor = offline_extractor() if isinstance(model, ScriptedChatModel) else model
        memory = Memory(
            store,
            tokenizer_model=TOKEN_MODEL,
            recall=RecallConfig(min_relevance=None, max_items=6),
            plan=True,
            extraction=ExtractionConfig(model=extractor) if extraction else None,
        )
        stack.callback(memory.close)  # before the store closes: background work finished, workers stopped
        out(_extraction_line(memory, extractor))
        builder = StateGraph(MemoryState)
        memory.add_to(builder, model, instructions=INSTRUCTIONS)
        saver = stack.enter_context(SqliteSaver.from_conn_string(str(path / "checkpoints.sqlite")))
        graph = builder.compile(checkpointer=saver, store=memory.store)

        turns: list[DemoTurn] = []
        history: dict[str, list[BaseMessage]] = {}
        spy = _PromptSpy()
        for number, (thread, text) in enumerate(SCENARIO, start=1):
            config: RunnableConfig = {
                "configurable": {"thread_id": thread, "user_id": USER_ID},
                "callbacks": [spy],
            }
            spy.system = ""
            before = len(history.get(thread, []))
            inputs: Any = {"messages": [HumanMessage(text)]}
            state = _invoke(graph, inputs, config, model, number)
            messages: list[BaseMessage] = state["messages"]
            history[thread] = messages
            new = messages[before:]
            context = state.get("memory_context") or {}
            all_history = [m for msgs in history.values() for m in msgs]
            turn = DemoTurn(
                thread=thread,
                user=text,
                answer=str(messages[-1].content),
                recalled=[i for i in context.get("items", []) if i["section"] == "memories"],
                injected_tokens=int(context.get("tokens", {}).get("total", 0)),
                history_tokens=count_message_tokens(all_history, model=TOKEN_MODEL),
                tool_calls=[
                    {"name": c["name"], "args": c["args"]}
                    for m in new
                    if isinstance(m, AIMessage)
                    for c in m.tool_calls
                ],
                tool_results=[str(m.content) for m in new if isinstance(m, ToolMessage)],
                stored=context.get("stored"),
                plan_seen=plan_section(spy.system),
            )
            turns.append(turn)
            _print_turn(number, turn, out)
        memory.flush()  # pending background extraction runs now
        _print_extraction(memory, turns, out)
        out("\n── what the store holds about sam (user memory) ────────────────────")
        held = _user_memories(memory)
        episodes = [record for _, record in held if record.category == EPISODE_CATEGORY]
        for key, record in sorted(held, key=lambda pair: pair[1].category):
            if record.category.startswith(EPISODE_CATEGORY):  # episodes and their passages
                continue
            line = f"  {key}  {record.category:<20} accessed {record.access_count}×  {record.content}"
            if not is_current(record):
                line += f"  [no longer true since {str(record.metadata[INVALID_AT])[:10]}]"
            out(line)
        threads = sorted({str(r.metadata.get("thread_id")) for r in episodes})
        out(f"  and {len(episodes)} episodes, one per exchange, recalled in any thread: {', '.join(threads)}")
        return turns


def _start_clean(path: Path) -> bool:
    """Remove what a previous demo run left in ``path`` (each run starts clean); whether it did.

    Raises:
        ConfigurationError: ``path`` holds a ``memory/`` or ``checkpoints.sqlite`` that no demo run
            wrote (no :data:`DEMO_MARKER` file): nothing is removed.
    """
    found = [path / name for name in _DEMO_FILES if (path / name).exists()]
    marker = path / DEMO_MARKER
    if found and not marker.exists():
        names = ", ".join(f.name for f in found)
        raise ConfigurationError(
            f"{str(path)!r} holds {names}, which no demo run left there (no {DEMO_MARKER} file), and the "
            "demo would overwrite them. Fix: pass a new or empty directory, or remove them."
        )
    for item in found:
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()
    marker.write_text("written by `langmem-plugin demo`: the next run here removes what this one kept\n")
    return bool(found)


def _extraction_line(memory: Memory, extractor: BaseChatModel | None) -> str:
    status = memory.extraction_status
    if extractor is None:
        return (
            f"{status} — this run has no extraction model (run_demo(extraction=False)): memories are "
            "written only by the agent's tool calls."
        )
    if isinstance(extractor, ScriptedChatModel):
        return (
            f"{status} — OFFLINE: the scripted model plays the extractor and the consolidation decider "
            "(it reads the real extraction and consolidation prompts); the search for near matches, "
            "the writes and the history are real."
        )
    return f"{status} — the model extracts memories in the background after each turn."


def _updated_id(turns: list[DemoTurn]) -> str | None:
    """The id of the memory the agent's ``update_memory`` call changed."""
    for turn in turns:
        for result in turn.tool_results:
            if result.startswith("Updated memory "):
                return result.removeprefix("Updated memory ").split(":", 1)[0]
    return None


def _print_extraction(memory: Memory, turns: list[DemoTurn], out: Callable[[str], None]) -> None:
    out("\n── background extraction (after the turns; never in the user's turn) ───")
    if memory.reflector is None:
        out(f"  {memory.extraction_status}")
        return
    scope = Scope(user_id=USER_ID)
    recorded = memory.store.search(
        scope.namespace(HISTORY_NAMESPACE), filter={"source": "consolidation"}, limit=100
    )
    for item in sorted(recorded, key=lambda i: str(i.value.get("at"))):
        entry = item.value
        change = cut(str(entry.get("new") or entry.get("old")), 60)
        why = f" ({entry['reason']})" if entry.get("reason") else ""
        out(f"  {entry['action']:<10} {entry['memory_id']}  {change}  · from {entry.get('thread_id')}{why}")
    if not recorded:
        out("  nothing new to remember")
    memory_id = _updated_id(turns)
    if memory_id is None:
        return
    out(f"\n── memory.history({memory_id!r}): every change of the diet memory ─────")
    config: RunnableConfig = {"configurable": {"user_id": USER_ID}}
    for version in memory.history(memory_id, config):
        old = "" if version.old is None else f"{cut(version.old, 40)} → "
        new = "(deleted)" if version.new is None else cut(version.new, 45)
        out(f"  {version.at[:19]}  {version.action:<10} {version.source:<19} {version.thread_id}  {old}{new}")


def _user_memories(memory: Memory) -> list[tuple[str, MemoryRecord]]:
    """The user's long-term memories as the store holds them (read with ``store.search``)."""
    namespace = memory.layout.namespace("user", Scope(user_id=USER_ID))
    found: list[tuple[str, MemoryRecord]] = []
    for item in memory.store.search(namespace, limit=100):
        if tuple(item.namespace) != namespace:
            continue
        try:
            found.append((item.key, MemoryRecord.from_value(item.value)))
        except (LangMemPluginError, ValueError):  # not a memory record: not shown
            continue
    return found
