"""The ``langmem-plugin`` command.

``langmem-plugin demo`` runs a memory agent through five threads;
``langmem-plugin doctor`` checks offline readiness; ``langmem-plugin bench core``
measures the offline core, ``langmem-plugin bench stores`` the stores beside their peers,
``langmem-plugin bench context`` how light an agent's context stays on a research trace,
``langmem-plugin bench plan`` plan mode beside LangChain's TodoListMiddleware.
``--version`` and ``--help`` do what they say.

``langmem-plugin bench startup`` times the import and ``--help`` in fresh processes.

``langmem-plugin memories list|search|show|history --store STORE`` reads what a store remembers
(tables, or ``--json``); ``langmem-plugin inspect STORE`` serves the same as a local web page.
A store that cannot be opened, a bad user id or an unknown memory is one line on stderr, exit 2.

Bad arguments (a negative count, an unwritable ``--dir``, an unknown name) are refused before
any work starts: one line on stderr that names the value and the fix, exit status 2. A
benchmark that cannot run here (a missing extra, missing data) says the same way why and how
to fix it, without a traceback.

The command starts fast: the package's names load on first use, and each command imports
what it runs inside its function; the benchmarks' option lists are read only for ``bench``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from langmem_plugin import __version__
from langmem_plugin.errors import ConfigurationError, LangMemPluginError, MissingDependencyError

if TYPE_CHECKING:
    from langmem_plugin.surfaces.inspector import Inspector

__all__ = ["main"]


def _doctor(args: argparse.Namespace) -> int:
    from langmem_plugin.bench.report import format_table
    from langmem_plugin.doctor import run_checks

    checks = run_checks()
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        rows = [[c.name, c.status, f"{c.seconds:.2f}s", c.detail] for c in checks]
        print(format_table(["check", "status", "time", "what was found"], rows))
        failed = [c.name for c in checks if c.failed]
        print()
        print(
            f"{len(failed)} required check(s) failed: {', '.join(failed)}"
            if failed
            else "ready: everything works offline"
        )
    return 1 if any(c.failed for c in checks) else 0


def _bench(args: argparse.Namespace) -> int:
    try:
        return _run_bench(args)
    except (MissingDependencyError, ConfigurationError) as exc:  # the message says how to fix it
        print(f"langmem-plugin bench {args.bench}: {exc}", file=sys.stderr)
        return 2


def _run_bench(args: argparse.Namespace) -> int:
    if args.bench == "core":
        from langmem_plugin.bench.core import run_core_bench

        print(
            f"langmem-plugin {__version__} — core benchmark ({args.queries} queries, {args.docs} documents)"
        )
        result = run_core_bench(queries=args.queries, docs=args.docs)
        print(result.table())
        return 0
    if args.bench == "memory":
        from langmem_plugin.bench.memory import run_memory_bench

        print(
            f"langmem-plugin {__version__} — memory benchmark ({args.memories} memories, {args.queries} "
            "queries, MiniLM, recall budgets 600/800/300/300 tokens)"
        )
        print(run_memory_bench(memories=args.memories, queries=args.queries, progress=print).table())
        return 0
    if args.bench == "stores":
        from langmem_plugin.bench.stores import run_stores_bench

        print(f"langmem-plugin {__version__} — stores benchmark (same precomputed vectors for every store)")
        for size in args.sizes:
            measured = run_stores_bench(
                size=size,
                others=args.others,
                queries=args.queries,
                peers=args.peers,
                budget_s=args.budget,
                progress=print,
            )
            print(measured.table())
            print()
        return 0
    if args.bench == "checkpointer":
        from langmem_plugin.bench.checkpointer import run_checkpointer_bench

        print(f"langmem-plugin {__version__} — checkpointer store benchmark")
        if args.scale:
            from langmem_plugin.bench.checkpointer import run_scale_bench

            print(run_scale_bench(args.scale, samples=min(args.samples, 50)))
            return 0
        print(run_checkpointer_bench(items=args.items, samples=args.samples).table())
        return 0
    if args.bench in ("locomo", "realtalk"):
        from langmem_plugin.bench.locomo.cli import run_cli

        return run_cli(args, __version__)
    if args.bench == "context":
        from langmem_plugin.bench.context import TRACES, run_context_bench

        traces = list(TRACES) if args.trace == "both" else [args.trace]
        calls = " / ".join(str(TRACES[t] if args.steps is None else args.steps) for t in traces)
        print(
            f"langmem-plugin {__version__} — context benchmark ({' and '.join(traces)} trace: {calls} tool "
            f"calls of large results from {args.data}, scripted model)"
        )
        print("\n\n".join(run_context_bench(args.data, args.steps, trace).report() for trace in traces))
        return 0
    if args.bench == "forgetting":
        from langmem_plugin.bench.forgetting import run_forgetting_bench

        print(f"langmem-plugin {__version__} — forgetting {args.facts} facts of a LoCoMo conversation")
        print(run_forgetting_bench(args.data, facts=args.facts, seed=args.seed).table())
        return 0
    if args.bench == "plan":
        from langmem_plugin.bench.plan import run_plan_bench

        print(f"langmem-plugin {__version__} — plan mode beside TodoListMiddleware (scripted task)")
        print(run_plan_bench(window=args.window).table())
        return 0
    if args.bench == "startup":
        from langmem_plugin.bench.startup import run_startup_bench

        print(
            f"langmem-plugin {__version__} — startup: fresh processes, {args.runs} runs each, "
            f"{sys.executable}"
        )
        print(run_startup_bench(runs=args.runs).table())
        return 0
    raise AssertionError(args.bench)  # argparse rejects other names


def _demo(args: argparse.Namespace) -> int:
    from langmem_plugin.demo import run_demo

    print(f"langmem-plugin {__version__} — demo: a memory agent across five threads")
    try:
        run_demo(directory=args.dir)
    except LangMemPluginError as exc:  # e.g. a --dir this demo did not write: the message says what to do
        print(f"langmem-plugin demo: {exc}", file=sys.stderr)
        return 2
    return 0


def _one_line(error: object) -> str:
    """An error's message (or a value typed on the command line) on one line, with no character
    a terminal would act on."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(error))


def _memories(args: argparse.Namespace) -> int:
    from langmem_plugin.inspector.opening import open_store
    from langmem_plugin.surfaces.inspector import Inspector

    try:
        with open_store(args.store, snapshot=args.snapshot, embeddings=args.embeddings) as store:
            print(_memories_output(args, Inspector(store)))
    except LangMemPluginError as exc:  # a store not there or held, a bad id, an unknown memory
        print(f"langmem-plugin memories {args.action}: {_one_line(exc)}", file=sys.stderr)
        return 2
    return 0


def _memories_output(args: argparse.Namespace, inspector: Inspector) -> str:
    """What ``memories ACTION`` prints: a table, or one JSON document with ``--json``."""
    from langmem_plugin.inspector import terminal as out

    user, thread = args.user, args.thread
    if args.action == "list" and _catalog_asked(args):
        catalog = inspector.catalog()
        return out.json_text(catalog.as_dict()) if args.json else out.catalog_text(catalog, store=args.store)
    if args.action == "list":
        page = inspector.page(
            args.compartment or ("user" if user else "session" if thread else "knowledge"),
            user_id=user,
            thread_id=thread,
            agent=args.agent,
            offset=_PAGE_DEFAULTS["offset"] if args.offset is None else args.offset,
            limit=_PAGE_DEFAULTS["limit"] if args.limit is None else args.limit,
            kind=args.kind,
            category=args.category,
            contains=args.contains,
        )
        return out.json_text(page.as_dict()) if args.json else out.page_text(page)
    if args.action == "search":
        recall = inspector.explain(args.query, user_id=user, thread_id=thread)
        return out.json_text(out.recall_document(recall)) if args.json else out.recall_text(recall)
    detail = inspector.show(args.memory_id, user_id=user, thread_id=thread)
    if args.action == "show":
        return out.json_text(detail.as_dict()) if args.json else out.detail_text(detail)
    if args.json:
        return out.json_text({"memory_id": detail.row.id, "history": [e.as_dict() for e in detail.history]})
    return out.history_text(detail)


def _inspect(args: argparse.Namespace) -> int:
    import secrets

    from langmem_plugin.inspector.opening import open_store
    from langmem_plugin.surfaces.inspector import Inspector

    try:
        from langmem_plugin.inspector.web import serve

        with open_store(args.store, snapshot=args.snapshot, embeddings=args.embeddings) as store:
            inspector = Inspector(store, writable=args.allow_writes)
            token = secrets.token_urlsafe(16) if args.allow_writes else None
            print(f"langmem-plugin {__version__} — memory inspector of {_one_line(args.store)}", flush=True)
            if token is not None:
                print(f"changes need this token (the page's forms carry it): {token}", flush=True)
            serve(inspector, host=args.host, port=args.port, token=token, allow_remote=args.allow_remote)
    except LangMemPluginError as exc:  # a store not there or held, the inspect extra missing
        print(f"langmem-plugin inspect: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


_PAGE_DEFAULTS = {"offset": 0, "limit": 50}
_PAGE_OPTIONS = ("compartment", "kind", "category", "contains", "offset", "limit")
# The option that names whose memory a compartment holds.
_NAMED_BY = {"user": ("user", "--user USER_ID"), "session": ("thread", "--thread THREAD_ID")}
_NAMED_BY["results"] = _NAMED_BY["session"]


def _catalog_asked(args: argparse.Namespace) -> bool:
    """``memories list`` with nothing that picks a page: the catalog of who is in the store."""
    return args.user is None and args.thread is None and args.agent is None and args.compartment is None


def _check_memories(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """What ``memories ACTION`` needs to know whose memory to read, asked for by its options;
    refused before the store is opened (a scope left out would otherwise be silently ignored,
    or refused in words meant for a graph's config)."""
    if args.action == "search" and args.user is None and args.thread is None:
        parser.error(
            "memories search recalls for someone: pass --user USER_ID (with --thread THREAD_ID for "
            "that thread's session memory too), or --thread THREAD_ID alone"
        )
    if args.action == "history" and args.user is None:
        parser.error("a memory's history is kept per user: pass --user USER_ID")
    if args.action != "list":
        return
    if _catalog_asked(args):
        given = [f"--{name}" for name in _PAGE_OPTIONS if getattr(args, name) is not None]
        if given:
            parser.error(
                f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to a page of memories: "
                "say whose with --user USER_ID, --thread THREAD_ID or --agent AGENT (without any, list "
                "shows who is in the store)"
            )
        return
    attribute, option = _NAMED_BY.get(args.compartment or "", (None, ""))
    if attribute is not None and getattr(args, attribute) is None:
        parser.error(f"--compartment {args.compartment} is read for someone: pass {option}")


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_inspect(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The options of ``inspect`` that do not go together; refused before the store is opened."""
    if not _loopback(args.host) and not args.allow_remote:
        parser.error(
            f"--host {args.host!r} is not this machine: everyone who reaches it would read every memory. "
            "Pass --allow-remote behind your own access control, or keep 127.0.0.1 (an SSH tunnel reaches it)"
        )
    if args.snapshot and args.allow_writes:
        parser.error(
            "--allow-writes with --snapshot would change a copy that is removed at the end: pass one"
        )


class _Parser(argparse.ArgumentParser):
    """An argument parser whose error is one line on stderr, with the fix, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        # One line whatever was typed: a line break inside an argument is shown escaped.
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        self.exit(2, f"{self.prog}: {line} (see: {self.prog} --help)\n")


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least {minimum}, got {text!r}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def _directory(text: str) -> str:
    """An argparse type: a directory the demo can write in, or make; checked, not made, here.

    The nearest existing folder on the path must be a directory in which a file can be created
    (a temporary one, gone at once): permissions, read-only file systems and a file in the way
    all show up before any work starts.
    """
    try:
        if not text.strip():
            raise FileNotFoundError(0, "an empty path")
        path = Path(text).expanduser().absolute()
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not existing.is_dir():
            raise NotADirectoryError(0, f"{str(existing)!r} is a file")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL in the path; ~nosuchuser
        reason = getattr(exc, "strerror", None) or str(exc)
        raise argparse.ArgumentTypeError(
            f"cannot write in {text!r} ({reason}): pass a directory you can write in, or leave --dir out "
            "for a temporary one"
        ) from None
    return text


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be integers separated by commas, got {text!r}"
        ) from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {text!r}")
    return value


def _names(valid: Sequence[str], what: str) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: comma-separated names, each one of ``valid`` (an error lists them)."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
        unknown = [name for name in names if name not in valid]
        if unknown or not names:
            given = ", ".join(repr(n) for n in unknown) if unknown else "none"
            raise argparse.ArgumentTypeError(f"unknown {what} {given}; choose from: {', '.join(valid)}")
        return names

    return parse


def build_parser(*, benchmarks: bool = True) -> argparse.ArgumentParser:
    """The argument parser (also used by the docs and the tests).

    ``benchmarks=False`` leaves out the options of ``bench``'s subcommands, which read their
    choices from the benchmark modules: ``--help``, ``demo`` and ``doctor`` start without them.
    """
    parser = _Parser(
        prog="langmem-plugin",
        description="Memory for LangGraph and LangChain agents, offline by default.",
    )
    parser.add_argument("--version", action="version", version=f"langmem-plugin {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    doctor = commands.add_parser("doctor", help="check that everything works offline on this machine")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=_doctor)

    demo = commands.add_parser(
        "demo", help="run a real memory agent through five threads and show what memory does each turn"
    )
    demo.add_argument(
        "--dir",
        type=_directory,
        default=None,
        help="keep the checkpoints and the store here (default: a temporary directory)",
    )
    demo.set_defaults(func=_demo)

    _add_memories(commands)

    bench = commands.add_parser("bench", help="run a benchmark (not a test) and print its table")
    bench.set_defaults(func=_bench)
    if benchmarks:
        _add_benchmarks(bench.add_subparsers(dest="bench", metavar="NAME", required=True))
    return parser


_STORE = (
    "the store: a memory directory (Memory(path=...)), an SQLite file of a CheckpointerStore, "
    "an http(s):// Qdrant server or a postgresql:// URL"
)


def _store_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--snapshot",
        action="store_true",
        help="read a copy of a memory directory, so an agent holding it goes on (changes are not kept)",
    )
    parser.add_argument(
        "--embeddings",
        default=None,
        metavar="SPEC",
        help="what the store was embedded with, e.g. openai:text-embedding-3-small (default: the offline "
        "MiniLM); only searches use it",
    )


def _add_memories(commands: Any) -> None:
    """``memories list|search|show|history`` and ``inspect``: reading a store, no benchmark imported."""
    common = _Parser(add_help=False)
    common.add_argument("--store", required=True, metavar="STORE", help=_STORE)
    common.add_argument("--user", default=None, metavar="USER_ID", help="the user whose memory to read")
    common.add_argument("--thread", default=None, metavar="THREAD_ID", help="the thread (session memory)")
    common.add_argument("--json", action="store_true", help="print one JSON document instead of a table")
    _store_options(common)

    memories = commands.add_parser(
        "memories", help="list, search and show what a store remembers, in the terminal"
    )
    memories.set_defaults(func=_memories)
    actions = memories.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        parents=[common],
        help="a page of memories (without --user/--thread/--agent: who is in the store)",
    )
    listing.add_argument(
        "--compartment",
        choices=["user", "session", "knowledge", "results"],
        default=None,
        help="which memory (default: user with --user, session with --thread, knowledge with --agent)",
    )
    listing.add_argument("--agent", default=None, help="the agent whose knowledge to list")
    listing.add_argument("--kind", default=None, help="only memories of this kind (fact, episode, ...)")
    listing.add_argument("--category", default=None, help="only memories of this category")
    listing.add_argument("--contains", default=None, metavar="TEXT", help="only memories whose text holds it")
    # None when not given: with no --user/--thread/--agent, a page option is refused, not ignored
    listing.add_argument("--offset", type=_count(0), default=None, help="rows to skip (default 0)")
    listing.add_argument(
        "--limit", type=_count(1), default=None, help="rows to show, at most 500 (default 50)"
    )
    search = actions.add_parser(
        "search", parents=[common], help="recall QUERY as the agent would: every candidate, why it was kept"
    )
    search.add_argument("query", metavar="QUERY", help="what the user says")
    show = actions.add_parser("show", parents=[common], help="one memory: its fields and where it came from")
    show.add_argument("memory_id", metavar="MEMORY_ID")
    history = actions.add_parser("history", parents=[common], help="one memory's recorded changes")
    history.add_argument("memory_id", metavar="MEMORY_ID")

    inspect = commands.add_parser("inspect", help="browse a store in a local web page (read-only by default)")
    inspect.add_argument("store", metavar="STORE", help=_STORE)
    inspect.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    inspect.add_argument("--port", type=_port, default=8765, help="the port (default 8765)")
    inspect.add_argument("--allow-writes", action="store_true", help="let the page edit and forget memories")
    inspect.add_argument(
        "--allow-remote", action="store_true", help="listen on a --host other than this machine"
    )
    _store_options(inspect)
    inspect.set_defaults(func=_inspect)


def _add_benchmarks(benches: Any) -> None:
    """The subcommands of ``bench``, each option checked before anything runs."""
    from langmem_plugin.bench.context import DEFAULT_DATA as DEFAULT_CONTEXT_DATA
    from langmem_plugin.bench.locomo.cli import add_parsers as add_locomo_parsers
    from langmem_plugin.bench.stores import OPTIMIZED, PEERS

    core = benches.add_parser("core", help="embedder load/latency/throughput and token counting, with peers")
    core.add_argument("--queries", type=_count(1), default=200, help="single queries to time (default 200)")
    core.add_argument(
        "--docs", type=_count(1), default=1000, help="documents to embed in batches (default 1000)"
    )
    stores = benches.add_parser(
        "stores", help="QdrantStore against InMemoryStore, SqliteStore and langgraph-store-qdrant"
    )
    stores.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000],
        help="items in the searched namespace, comma-separated (default 10000; e.g. 10000,100000)",
    )
    stores.add_argument(
        "--others",
        type=_count(0),
        default=990,
        help="items in the 99 other namespaces, together (default 990; 90000 for 100k items in all)",
    )
    stores.add_argument(
        "--queries", type=_count(1), default=100, help="distinct queries per metric (default 100)"
    )
    stores.add_argument(
        "--peers",
        type=_names((*PEERS, OPTIMIZED), "peer"),
        default=PEERS,
        metavar="NAME,...",
        help=(
            f"comma-separated stores to measure, from: {', '.join((*PEERS, OPTIMIZED))} "
            f"(default: all but {OPTIMIZED}; langgraph-store-qdrant and sqlite need "
            "pip install 'langmem-plugin[bench]')"
        ),
    )
    stores.add_argument(
        "--budget", type=_seconds, default=5.0, help="seconds a slow store may spend per metric (default 5)"
    )
    ckpt = benches.add_parser(
        "checkpointer",
        help="CheckpointerStore(SqliteSaver) vs SqliteStore, InMemoryStore (needs langmem-plugin[bench])",
    )
    ckpt.add_argument("--items", type=_count(1), default=10_000, help="items to load (default 10000)")
    ckpt.add_argument("--samples", type=_count(1), default=200, help="timed calls per measure (default 200)")
    mem = benches.add_parser("memory", help="save, recall, search and remember per turn, and tokens injected")
    mem.add_argument("--memories", type=_count(1), default=1000, help="user memories to store (default 1000)")
    mem.add_argument("--queries", type=_count(1), default=100, help="timed queries (default 100)")
    ckpt.add_argument(
        "--scale", type=_sizes, help="sizes, e.g. 10000,50000,100000: CheckpointerStore alone as it grows"
    )
    add_locomo_parsers(benches, _names)  # bench locomo and bench realtalk
    forgetting = benches.add_parser(
        "forgetting",
        help="forget facts of a LoCoMo conversation: forgotten statements injected, evidence kept",
    )
    forgetting.add_argument(
        "--data", type=Path, default=DEFAULT_CONTEXT_DATA, help="path to locomo10.json (LoCoMo, not shipped)"
    )
    forgetting.add_argument("--facts", type=_count(1), default=100, help="facts to forget (default 100)")
    forgetting.add_argument("--seed", type=int, default=0, help="which facts (default 0)")
    context = benches.add_parser(
        "context",
        help="prompt tokens per call, prefix kept, results retrievable: no management, LangChain's "
        "middlewares, ours",
    )
    context.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_CONTEXT_DATA,
        help=f"path to locomo10.json (LoCoMo, not shipped; default {DEFAULT_CONTEXT_DATA})",
    )
    context.add_argument(
        "--trace",
        choices=["standard", "heldout", "both"],
        default="both",
        help="standard (the defaults were chosen on it), heldout (built differently), or both (default)",
    )
    context.add_argument(
        "--steps",
        type=_count(1),
        default=None,
        help="tool calls in the trace (default 20 standard, 24 heldout)",
    )
    plan = benches.add_parser(
        "plan", help="plan mode beside LangChain's TodoListMiddleware on one scripted multi-step task"
    )
    plan.add_argument(
        "--window",
        type=_count(1),
        default=800,
        help="tokens the trimmed runs keep of the messages (default 800)",
    )
    startup = benches.add_parser(
        "startup", help="seconds to import langmem_plugin and to print --help, in fresh processes"
    )
    startup.add_argument("--runs", type=_count(1), default=7, help="fresh processes per row (default 7)")
    inspect = benches.add_parser(
        "inspect",
        help="the inspector's web page over one user's memories: catalog, pages, filters, search, "
        "detail (needs langmem-plugin[inspect])",
    )
    inspect.add_argument(
        "--items", type=_count(100), default=100_000, help="memories of the user (default 100000)"
    )
    inspect.add_argument("--repeat", type=_count(1), default=5, help="timed requests per page (default 5)")

    def run_inspect(args: argparse.Namespace) -> int:
        from langmem_plugin.bench.inspect import run_cli

        try:
            return run_cli(args, __version__)
        except MissingDependencyError as exc:  # the message has the pip line
            print(f"langmem-plugin bench inspect: {exc}", file=sys.stderr)
            return 2

    inspect.set_defaults(func=run_inspect)  # its own runner: the subcommand's default wins over bench's


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(benchmarks="bench" in arguments)
    args = parser.parse_args(arguments)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "inspect":
        _check_inspect(args, parser)
    if args.command == "memories":
        _check_memories(args, parser)
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
