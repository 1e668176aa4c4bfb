"""The ``langmem-plugin`` command.

``langmem-plugin demo`` runs a memory agent through three sessions;
``langmem-plugin doctor`` checks offline readiness; ``langmem-plugin bench core``
measures the offline core. ``--version`` and ``--help`` do what they say.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from langmem_plugin import __version__

__all__ = ["main"]


def _doctor(args: argparse.Namespace) -> int:
    from langmem_plugin.bench._report import format_table
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
    if args.bench == "core":
        from langmem_plugin.bench.core import run_core_bench

        print(
            f"langmem-plugin {__version__} — core benchmark ({args.queries} queries, {args.docs} documents)"
        )
        result = run_core_bench(queries=args.queries, docs=args.docs)
        print(result.table())
        return 0
    raise AssertionError(args.bench)  # argparse rejects other names


def _demo(args: argparse.Namespace) -> int:
    from langmem_plugin.demo import run_demo

    print(f"langmem-plugin {__version__} — demo: a memory agent across three threads")
    run_demo(directory=args.dir)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs and the tests)."""
    parser = argparse.ArgumentParser(
        prog="langmem-plugin",
        description="Memory for LangGraph and LangChain agents, offline by default.",
    )
    parser.add_argument("--version", action="version", version=f"langmem-plugin {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    doctor = commands.add_parser("doctor", help="check that everything works offline on this machine")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=_doctor)

    demo = commands.add_parser(
        "demo", help="run a real memory agent through three sessions and show what memory does each turn"
    )
    demo.add_argument(
        "--dir",
        default=None,
        help="keep the checkpoints and the store here (default: a temporary directory)",
    )
    demo.set_defaults(func=_demo)

    bench = commands.add_parser("bench", help="run a benchmark (not a test) and print its table")
    benches = bench.add_subparsers(dest="bench", metavar="NAME", required=True)
    core = benches.add_parser("core", help="embedder load/latency/throughput and token counting, with peers")
    core.add_argument("--queries", type=int, default=200, help="single queries to time (default 200)")
    core.add_argument("--docs", type=int, default=1000, help="documents to embed in batches (default 1000)")
    bench.set_defaults(func=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
