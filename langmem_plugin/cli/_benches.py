"""``langmem-plugin bench NAME``: each benchmark's options, checked before anything runs, and its run.

A benchmark that cannot run here (a missing extra, missing data) says why and how to fix it in
one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from langmem_plugin import __version__
from langmem_plugin.cli._arguments import _count, _names, _seconds, _sizes
from langmem_plugin.errors import ConfigurationError, MissingDependencyError


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

        if args.scale:  # the CheckpointerStore as it grows: bench scale measures it, beside the others
            from langmem_plugin.bench.datasets import locomo_path

            args.sizes, args.stores, args.queries = args.scale, ["checkpointer"], min(args.samples, 200)
            args.data, args.cache, args.postgres_url, args.seed = locomo_path(), None, None, 0
            args.interleave = args.keep = False
            return _run_scale(args)
        print(f"langmem-plugin {__version__} — checkpointer store benchmark")
        print(run_checkpointer_bench(items=args.items, samples=args.samples).table())
        return 0
    if args.bench == "scale":
        return _run_scale(args)
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
        from langmem_plugin.bench.bad_day import run_bad_day_bench
        from langmem_plugin.bench.forgetting import run_forgetting_bench, run_scrub_bench

        print(f"langmem-plugin {__version__} — forgetting {args.facts} facts of a LoCoMo conversation")
        print(run_forgetting_bench(args.data, facts=args.facts, seed=args.seed).table())
        print(run_scrub_bench(args.scrub_sizes).table())
        print(run_bad_day_bench(args.data).table())
        return 0
    if args.bench == "updates":
        from langmem_plugin.bench.updates import example_failures, run_updates_bench

        print(
            f"langmem-plugin {__version__} — knowledge updates: {args.histories} generated histories "
            f"(seed {args.seed}), each fact stated then updated; Memory() defaults, MiniLM"
        )
        updates = run_updates_bench(histories=args.histories, seed=args.seed, progress=print)
        rate = updates.exchanges / updates.import_seconds if updates.import_seconds else float("nan")
        print(f"{updates.exchanges} exchanges imported at {rate:.0f}/s\n")
        print(updates.table())
        print()
        print(updates.kinds_table())
        for line in example_failures(updates):
            print(f"only older: {line}")
        return 0
    if args.bench == "longchat":
        from langmem_plugin.bench.longchat import run_longchat_bench

        if not args.sessions <= min(args.exchanges, 365):
            print(
                f"langmem-plugin bench longchat: --sessions must be at most --exchanges and 365 (an "
                f"exchange and a day each), got {args.sessions} for {args.exchanges} exchanges",
                file=sys.stderr,
            )
            return 2
        print(
            f"langmem-plugin {__version__} — one long user–assistant chat: {args.sessions} sessions, "
            f"{args.exchanges} exchanges (seed {args.seed}), Memory() defaults, MiniLM "
            f"{' / '.join(args.embedder)}, import_history batch_size {args.batch_sizes}"
        )
        chat = run_longchat_bench(
            seed=args.seed,
            sessions=args.sessions,
            exchanges=args.exchanges,
            embedders=args.embedder,
            batch_sizes=args.batch_sizes,
            progress=print,
        )
        print(
            f"{chat.exchanges} exchanges ({chat.messages} messages, answers {chat.answer_chars:,} "
            f"characters), {chat.facts} facts asked\n"
        )
        print(chat.table())
        print(chat.throughput_line())
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
    if args.bench == "tools":
        from langmem_plugin.bench.tools import run_tools_bench

        print(
            f"langmem-plugin {__version__} — tool schema tokens ({args.model}'s tokenizer), and a thread of "
            f"{args.turns} turns with memory (window {args.window} turns, and the default) and without"
        )
        costs = run_tools_bench(turns=args.turns, window=args.window, model=args.model, progress=print)
        print(costs.report())
        return 0
    raise AssertionError(args.bench)  # argparse rejects other names


def _run_scale(args: argparse.Namespace) -> int:
    from langmem_plugin.bench.scale import run_scale_bench

    print(
        f"langmem-plugin {__version__} — memory at scale: {', '.join(f'{s:,}' for s in args.sizes)} "
        f"memories (LoCoMo's turns, renamed per user) on {', '.join(args.stores)}; {args.queries} "
        "recalls each" + (", then again with the sizes in turn" if args.interleave else "")
    )
    result = run_scale_bench(
        args.sizes,
        data=args.data,
        stores=args.stores,
        queries=args.queries,
        seed=args.seed,
        cache=args.cache,
        postgres_url=args.postgres_url,
        interleave=args.interleave,
        keep=args.keep,
        progress=print,
    )
    print(result.table())
    return 0


def _add_benchmarks(benches: Any) -> None:
    """The subcommands of ``bench``, each option checked before anything runs."""
    from langmem_plugin.bench.context import DEFAULT_DATA as DEFAULT_CONTEXT_DATA
    from langmem_plugin.bench.locomo.cli import add_parsers as add_locomo_parsers
    from langmem_plugin.bench.longchat import SETTINGS as LONGCHAT_EMBEDDERS
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
    _add_scale(benches)
    mem = benches.add_parser("memory", help="save, recall, search and remember per turn, and tokens injected")
    mem.add_argument("--memories", type=_count(1), default=1000, help="user memories to store (default 1000)")
    mem.add_argument("--queries", type=_count(1), default=100, help="timed queries (default 100)")
    ckpt.add_argument(
        "--scale",
        type=_sizes,
        help="sizes, e.g. 10000,100000: bench scale --stores checkpointer --sizes (needs LoCoMo's data)",
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
    forgetting.add_argument(
        "--scrub-sizes", type=_sizes, default=[1_000, 10_000], help="store sizes to time the scrub at"
    )
    updates = benches.add_parser(
        "updates",
        help="facts stated then updated in generated chats: is the newer statement injected, not only "
        "the older",
    )
    updates.add_argument(
        "--histories", type=_count(1), default=10, help="generated histories, ~10 facts each (default 10)"
    )
    updates.add_argument("--seed", type=int, default=0, help="which histories (default 0)")
    longchat = benches.add_parser(
        "longchat",
        help="one long generated user–assistant chat (answers of thousands of characters): import "
        "time, recall latency and facts injected, per embedder setting",
    )
    longchat.add_argument("--sessions", type=_count(1), default=50, help="dated sessions (default 50)")
    longchat.add_argument(
        "--exchanges", type=_count(1), default=250, help="user–assistant exchanges (default 250)"
    )
    longchat.add_argument("--seed", type=int, default=0, help="which chat (default 0)")
    longchat.add_argument(
        "--embedder",
        type=_names(LONGCHAT_EMBEDDERS, "embedder"),
        default=LONGCHAT_EMBEDDERS,
        metavar="NAME,...",
        help=f"MiniLM settings, comma-separated, from: {', '.join(LONGCHAT_EMBEDDERS)} (default: all; "
        "each imports once and is queried by each; int8 needs pip install 'langmem-plugin[int8]')",
    )
    longchat.add_argument(
        "--batch-sizes",
        type=_sizes,
        default=[64, 256],
        help="import_history batch_size values, comma-separated: the first for every embedder, the "
        "others for the first embedder (default 64,256)",
    )
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
    tools = benches.add_parser(
        "tools",
        help="schema tokens of the memory tools per tool and set, beside langmem's two tools, and the "
        "turn of a thread from which memory sends fewer tokens (needs langmem-plugin[bench])",
    )
    tools.add_argument("--turns", type=_count(1), default=30, help="turns of the thread (default 30)")
    tools.add_argument(
        "--window", type=_count(1), default=4, help="turns the window keeps with memory (default 4)"
    )
    tools.add_argument(
        "--model", default="gpt-4o-mini", help="the model whose tokenizer counts (default gpt-4o-mini)"
    )
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


def _add_scale(benches: Any) -> None:
    from langmem_plugin.bench.datasets import locomo_path
    from langmem_plugin.bench.scale import STORES

    scale = benches.add_parser(
        "scale",
        help="recall p50/p95, import rate, RSS and disk per memory at 10k, 100k, 1M memories on each store "
        "(LoCoMo's turns renamed per user; needs LoCoMo, not shipped)",
    )
    scale.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000, 100_000],
        help="memories, comma-separated (default 10000,100000; 1000000 takes hours on 2 cores)",
    )
    scale.add_argument(
        "--stores",
        type=_names(STORES, "store"),
        default=list(STORES),
        metavar="NAME,...",
        help=f"comma-separated stores to measure, from: {', '.join(STORES)} (default: all)",
    )
    scale.add_argument("--queries", type=_count(1), default=200, help="timed recalls per cell (default 200)")
    scale.add_argument("--seed", type=int, default=0, help="which users and questions are asked (default 0)")
    scale.add_argument(
        "--data", type=Path, default=locomo_path(), help="path to locomo10.json (LoCoMo, not shipped)"
    )
    scale.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="an .npz file keeping LoCoMo's MiniLM vectors between runs (made when missing)",
    )
    scale.add_argument(
        "--postgres-url",
        default=os.environ.get("POSTGRES_URL"),
        help="a server with pgvector (default $POSTGRES_URL, else a temporary one from the dev extra)",
    )
    scale.add_argument(
        "--interleave",
        action="store_true",
        help="then time each store's recall again in one process, the sizes in turn question by question, "
        "for a p50 ratio between sizes that the machine's load cannot move",
    )
    scale.add_argument(
        "--keep",
        action="store_true",
        help="keep the stores' files (their directory is printed) instead of removing them",
    )
