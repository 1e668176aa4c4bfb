"""``langmem-plugin bench inspect``: the inspector's web page over one user's ``items`` memories.

The store is the one ``Memory()`` makes (embedded Qdrant with ``memory_index()``, in a temporary
directory), filled as an agent would have filled it, only faster:

- three memories in four are exchanges imported with :meth:`~langmem_plugin.Memory.import_history`
  (the episodes remember writes: same keys, metadata, neighbours), in threads of
  :data:`PER_THREAD` memories and sessions of 50 exchanges;
- one in four is a fact or preference as ``save_memory`` writes it (its record, its ``ADD`` in
  the user's history, a link to an exchange of its thread), put in batches of 500.

The layout has no item limit on user memory (the default keeps 10,000 per user). The embedder is
the offline MiniLM, run once per distinct text: the texts are :func:`~.core.sample_sentences`,
which differ from one another by their number ``(#N)`` when they share their words, so the number
is taken out before embedding and such texts share a vector (searches embed their query in full).
The build is timed (embedding, writing, the final ``optimize()``).

Then every page is requested through Starlette's ``TestClient`` (in process: no network), once
timed apart (``first``: the store's caches cold), then ``repeat`` times (p50 and p95): the
catalog, the first page of the user's memories, a page half-way down, a page filtered by kind, a
page sorted by priority, a text filter by a word in few memories and by one in none (the sort and
the filters read the inspector's bound of items), recall explained for a question, the page of a
thread (the exchanges and facts of the user's memory from it), the export of the user's facts as
JSON, and one memory's page (its history and the exchange it came from). Beside each, the same
call on the :class:`~langmem_plugin.surfaces.inspector.Inspector` alone (no HTTP, no template),
so what the page adds is visible.

Needs the ``inspect`` extra (``pip install 'langmem-plugin[inspect]'``); checked before the build.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.bench.core import sample_sentences
from langmem_plugin.bench.report import Timer, format_table, percentile
from langmem_plugin.core.embeddings import DEFAULT_EMBEDDINGS, MINILM_DIMS, MiniLMEmbeddings
from langmem_plugin.core.record import MemoryKind, MemoryRecord, exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import MissingDependencyError
from langmem_plugin.services.history import Change, history_ops
from langmem_plugin.services.layout import CompartmentLimits, MemoryLayout
from langmem_plugin.services.operations import INDEX_FIELDS

if TYPE_CHECKING:
    from langmem_plugin.surfaces.inspector import Inspector

__all__ = [
    "PER_THREAD",
    "BuildTiming",
    "InspectBenchResult",
    "OncePerText",
    "PageTiming",
    "build_store",
    "check_inspect_bench",
    "measure_pages",
    "run_cli",
    "run_inspect_bench",
]

#: The user whose memory is browsed.
USER = "bench"
#: Memories per thread (the last thread takes the rest).
PER_THREAD = 1000
#: A word in one saved fact of every :data:`_RARE_EVERY`, and one in none.
RARE, ABSENT = "zeppelin", "xylophone"
_RARE_EVERY = 2500
_SESSION = 50
_BATCH = 500
_CATEGORIES = ("personal", "preferences/drinks", "project/rockbot", "family", "health")
_QUESTION = "What did Caroline say about the pottery class?"
_NUMBER = re.compile(r"\s*\(#\d+\)")
_START = datetime(2024, 1, 1, 9, tzinfo=UTC)


class OncePerText(Embeddings):
    """The MiniLM vectors of documents, computed once per text with its ``(#N)`` taken out."""

    embedder_id = DEFAULT_EMBEDDINGS  # the same model's vectors: a store opened later accepts them
    dims = MINILM_DIMS

    def __init__(self, model: MiniLMEmbeddings) -> None:
        self.model = model
        self.vectors: dict[str, list[float]] = {}
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        keys = [_NUMBER.sub("", text) for text in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self.vectors))
        if missing:
            with Timer() as took:
                found: np.ndarray = self.model.embed_array(missing)
            self.seconds += took.seconds
            self.vectors.update(zip(missing, found.tolist(), strict=True))
        return [self.vectors[k] for k in keys]

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


@dataclass(frozen=True)
class BuildTiming:
    """What the store holds and the seconds it took to fill."""

    items: int
    episodes: int
    facts: int
    threads: int
    distinct_texts: int
    embed_s: float
    import_s: float
    facts_s: float
    optimize_s: float

    @property
    def total_s(self) -> float:
        return self.import_s + self.facts_s + self.optimize_s

    def line(self) -> str:
        return (
            f"store built in {self.total_s:.1f} s: {self.items:,} memories of user {USER!r} "
            f"({self.episodes:,} imported exchanges in {self.threads:,} thread(s): {self.import_s:.1f} s; "
            f"{self.facts:,} saved facts with their history: {self.facts_s:.1f} s; "
            f"{self.items / (self.import_s + self.facts_s):,.0f} memories/s), of which embedding "
            f"{self.distinct_texts:,} distinct texts {self.embed_s:.1f} s; "
            f"then optimize() {self.optimize_s:.1f} s"
        )


@dataclass(frozen=True)
class PageTiming:
    """One page: its request, its times (seconds) and what it showed."""

    name: str
    url: str
    first: float
    p50: float
    p95: float
    inspector_p50: float
    shown: str


@dataclass
class InspectBenchResult:
    """The build and every page."""

    repeat: int
    build: BuildTiming
    pages: list[PageTiming] = field(default_factory=list)

    def table(self) -> str:
        """The build's line, then a row per page (milliseconds)."""
        rows = [
            [
                p.name,
                p.url if len(p.url) <= 60 else p.url[:59] + "…",
                f"{p.first * 1000:.1f}",
                f"{p.p50 * 1000:.1f}",
                f"{p.p95 * 1000:.1f}",
                f"{p.inspector_p50 * 1000:.1f}",
                p.shown,
            ]
            for p in self.pages
        ]
        headers = [
            "page",
            "request",
            "first ms",
            f"p50 ms ({self.repeat}x)",
            "p95 ms",
            "inspector alone p50 ms",
            "shown",
        ]
        return "\n".join([self.build.line(), "", format_table(headers, rows)])


def check_inspect_bench() -> None:
    """Fail before any work when the web page's packages are missing.

    Raises:
        MissingDependencyError: starlette, jinja2 or httpx (``TestClient``) is not installed.
    """
    try:
        import httpx  # noqa: F401 - what starlette's TestClient drives
        import jinja2  # noqa: F401
        import starlette.testclient  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"the inspector benchmark needs {exc.name}. Fix: pip install 'langmem-plugin[inspect]' httpx"
        ) from exc


def _shares(items: int) -> list[int]:
    """Memories per thread: :data:`PER_THREAD` each, the rest in the last."""
    counts = [PER_THREAD] * max(1, items // PER_THREAD)
    counts[-1] += items - sum(counts)
    return counts


def _fact(number: int, text: str, link: str) -> MemoryRecord:
    """What ``save_memory`` stores for ``text`` (with the exchange it came from, as remember links it)."""
    return MemoryRecord(
        content=f"{text} {RARE}" if number % _RARE_EVERY == 0 else text,
        category=_CATEGORIES[number % len(_CATEGORIES)],
        tags=["bench", _CATEGORIES[number % len(_CATEGORIES)].split("/")[0]],
        kind=MemoryKind.PREFERENCE if number % 3 == 0 else MemoryKind.FACT,
        source="tool:save_memory",
        sources=[link],
    )


def build_store(
    store: BaseStore,
    items: int,
    embedder: OncePerText,
    progress: Callable[[str], None] | None = None,
) -> tuple[BuildTiming, str]:
    """Fill ``store`` with ``items`` memories of :data:`USER` (see the module docstring).

    Returns the timing and the id of a saved fact half-way through.
    """
    from langmem_plugin.surfaces import Memory

    layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=None)})
    namespace = layout.namespace("user", Scope(user_id=USER))
    texts = sample_sentences(items, seed=17)
    counts = _shares(items)
    n_facts = sum(count // 4 for count in counts)
    middle = ""
    import_s = facts_s = 0.0
    start = 0
    fact_number = 0
    with Memory(store, layout=layout) as memory:
        for t, count in enumerate(counts):
            thread = f"thread-{t:04d}"
            episodes = count - count // 4
            exchanges = texts[start : start + episodes]
            sessions = [
                {
                    "date": _START + timedelta(days=7 * t + s // _SESSION),
                    "messages": [
                        m
                        for text in exchanges[s : s + _SESSION]
                        for m in (("user", text), ("assistant", "Noted."))
                    ],
                }
                for s in range(0, episodes, _SESSION)
            ]
            config: Any = {"configurable": {"user_id": USER, "thread_id": thread}}
            with Timer() as took:
                memory.import_history(sessions, config, batch_size=256, progress=False)
            import_s += took.seconds
            with Timer() as took:
                # the thread's newest exchanges: what the facts saved in it came from
                recent = store.search(namespace, filter={"kind": "episode"}, limit=min(episodes, 200))
                links = [exchange_link(thread, item.key) for item in recent]
                scope = Scope(user_id=USER, thread_id=thread)
                ops: list[PutOp] = []
                for j, text in enumerate(texts[start + episodes : start + count]):
                    key = f"{start + episodes + j:012x}"  # 12 hex digits, as new_memory_id()
                    record = _fact(fact_number, text, links[j % len(links)])
                    ops.append(PutOp(namespace, key, record.to_value(), index=INDEX_FIELDS))
                    ops += history_ops(
                        scope, [Change(key, "ADD", None, record.content)], source="tool:save_memory"
                    )
                    if fact_number == n_facts // 2:
                        middle = key
                    fact_number += 1
                for i in range(0, len(ops), _BATCH):
                    store.batch(ops[i : i + _BATCH])
            facts_s += took.seconds
            start += count
            if progress is not None and (t + 1) % max(1, len(counts) // 10) == 0:
                progress(f"  {start:,} memories written ({import_s + facts_s:.0f} s)")
    optimize = getattr(store, "optimize", None)
    with Timer() as optimized:
        if callable(optimize):
            optimize()
    timing = BuildTiming(
        items=items,
        episodes=items - n_facts,
        facts=n_facts,
        threads=len(counts),
        distinct_texts=len(embedder.vectors),
        embed_s=embedder.seconds,
        import_s=import_s,
        facts_s=facts_s,
        optimize_s=optimized.seconds,
    )
    return timing, middle


@dataclass(frozen=True)
class _Case:
    name: str
    url: str
    direct: Callable[[], object]
    shown: Callable[[object], str]


def _cases(inspector: Inspector, items: int, memory_id: str) -> list[_Case]:
    def rows(page: Any) -> str:
        return f"{len(page.rows)} rows" + (", more" if page.more else "")

    def page(**filters: Any) -> Callable[[], object]:
        return lambda: inspector.page("user", user_id=USER, **filters)

    base = f"/users/{USER}"
    deep = items // 2
    thread = f"thread-{len(_shares(items)) // 2:04d}"
    return [
        _Case(
            "catalog",
            "/",
            inspector.catalog,
            lambda c: f"{len(c.users)} user, {len(c.threads)} threads",  # type: ignore[attr-defined]
        ),
        _Case("memories, first page", base, page(), rows),
        _Case(f"memories, offset {deep:,}", f"{base}?offset={deep}", page(offset=deep), rows),
        _Case("kind=fact", f"{base}?kind=fact", page(kind="fact"), rows),
        _Case("sorted by priority", f"{base}?sort=-priority", page(sort="-priority"), rows),
        _Case(f"contains={RARE} (few)", f"{base}?contains={RARE}", page(contains=RARE), rows),
        _Case(f"contains={ABSENT} (none)", f"{base}?contains={ABSENT}", page(contains=ABSENT), rows),
        _Case(
            "search (recall explained)",
            f"{base}/search?q={_QUESTION.replace(' ', '+').replace('?', '%3F')}",
            lambda: inspector.explain(_QUESTION, user_id=USER),
            lambda r: f"{len(r.considered)} candidates",  # type: ignore[attr-defined]
        ),
        _Case(
            "a thread, everything of it",
            f"/threads/{thread}",
            lambda: inspector.page("thread", thread_id=thread),
            rows,
        ),
        _Case(
            "export kind=fact (JSON)",
            f"{base}?kind=fact&format=json",
            lambda: inspector.export(user_id=USER, kind="fact"),
            lambda d: f"{d['count']:,} items" + ("" if d["complete"] else " (the newest)"),  # type: ignore[index]
        ),
        _Case(
            "one memory",
            f"{base}/memories/{memory_id}",
            lambda: inspector.show(memory_id, user_id=USER),
            lambda d: f"{len(d.history)} changes, {len(d.exchanges)} exchange",  # type: ignore[attr-defined]
        ),
    ]


def _samples(call: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def measure_pages(
    inspector: Inspector,
    items: int,
    memory_id: str,
    repeat: int,
    progress: Callable[[str], None] | None = None,
) -> list[PageTiming]:
    """Each page through the web app (first, then ``repeat`` times) and the inspector alone."""
    from starlette.testclient import TestClient

    from langmem_plugin.inspector.web import inspector_app

    client = TestClient(inspector_app(inspector), follow_redirects=False)
    timings = []
    for case in _cases(inspector, items, memory_id):

        def get(url: str = case.url) -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"GET {url} answered {response.status_code}: {response.text[:300]}")

        start = time.perf_counter()
        get()
        first = time.perf_counter() - start
        web = _samples(get, repeat)
        result = case.direct()
        direct = _samples(case.direct, repeat)
        timings.append(
            PageTiming(
                case.name,
                case.url,
                first,
                percentile(web, 50),
                percentile(web, 95),
                percentile(direct, 50),
                case.shown(result),
            )
        )
        if progress is not None:
            progress(f"  {case.name}: p50 {timings[-1].p50 * 1000:.1f} ms")
    return timings


def run_inspect_bench(
    *, items: int = 100_000, repeat: int = 5, progress: Callable[[str], None] | None = None
) -> InspectBenchResult:
    """Build the store, then time every page (see the module docstring).

    Raises:
        MissingDependencyError: the ``inspect`` extra is missing (before anything is built).
    """
    if items < 4 or repeat < 1:
        raise ValueError(f"items must be at least 4 and repeat at least 1, got {items} and {repeat}")
    check_inspect_bench()
    from langmem_plugin.surfaces import Memory, default_store

    embedder = OncePerText(MiniLMEmbeddings().load())
    with default_store(embedder) as store:
        build, memory_id = build_store(store, items, embedder, progress)
        if progress is not None:
            progress(f"  built in {build.total_s:.0f} s; timing the pages...")
        layout = MemoryLayout(limits={"user": CompartmentLimits(max_items=None)})
        with Memory(store, layout=layout) as memory:
            pages = measure_pages(memory.inspector(), items, memory_id, repeat, progress)
    return InspectBenchResult(repeat, build, pages)


def run_cli(args: argparse.Namespace, version: str, say: Callable[[str], None] = print) -> int:
    """``langmem-plugin bench inspect``: print the header, run, print the table."""
    check_inspect_bench()
    say(
        f"langmem-plugin {version} — inspector benchmark ({args.items:,} memories of one user, "
        f"the web page through TestClient, {args.repeat} repetitions)"
    )
    say(run_inspect_bench(items=args.items, repeat=args.repeat, progress=say).table())
    return 0
