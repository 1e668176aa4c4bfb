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
So is every storage fault, whatever the command: a store directory whose ``store.json`` or
``shard/`` is damaged or another program's, a full disk, a store another process holds, a file
that cannot be read (:func:`main` is the one place that catches what a command did not).

Bad arguments (a negative count, an unwritable ``--dir``, an unknown name) are refused before
any work starts: one line on stderr that names the value and the fix, exit status 2. A
benchmark that cannot run here (a missing extra, missing data) says the same way why and how
to fix it, without a traceback.

The command starts fast: the package's names load on first use, and each command imports
what it runs inside its function; the benchmarks' option lists are read only for ``bench``.

The commands live beside this module: ``_memories`` (memories, inspect), ``_benches`` (bench) and
``_arguments`` (argument types); this module builds the parser and runs ``demo`` and ``doctor``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from langmem_plugin import __version__
from langmem_plugin.cli._arguments import _directory, _Parser
from langmem_plugin.cli._benches import _add_benchmarks, _bench
from langmem_plugin.cli._memories import _add_memories, _check_inspect, _check_memories
from langmem_plugin.errors import LangMemPluginError, one_line

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


def _demo(args: argparse.Namespace) -> int:
    from langmem_plugin.demo import run_demo

    print(f"langmem-plugin {__version__} — demo: a memory agent across five threads")
    try:
        run_demo(directory=args.dir)
    except LangMemPluginError as exc:  # e.g. a --dir this demo did not write: the message says what to do
        print(f"langmem-plugin demo: {exc}", file=sys.stderr)
        return 2
    return 0


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
    try:
        code: int = args.func(args)
    except BrokenPipeError:  # the reader of our output went away (| head): not a fault of ours
        raise
    except (LangMemPluginError, OSError) as exc:  # a storage fault a command did not report itself
        print(f"{parser.prog} {args.command}: {one_line(str(exc))}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
