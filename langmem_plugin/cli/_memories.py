"""``langmem-plugin memories list|search|show|history`` and ``langmem-plugin inspect``: reading a store.

No benchmark is imported; the store, the inspector and the web page load inside the commands.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from langmem_plugin import __version__
from langmem_plugin.cli._arguments import _count, _Parser, _port
from langmem_plugin.errors import LangMemPluginError, one_line
from langmem_plugin.inspector.hosts import is_loopback

if TYPE_CHECKING:
    from langmem_plugin.surfaces.inspector import Inspector


_STORE = (
    "the store: a memory directory (Memory(path=...)), an SQLite file of a CheckpointerStore, "
    "an http(s):// Qdrant server, a postgresql:// URL, or langgraph+http(s):// for the store of a "
    "LangGraph server (langgraph dev)"
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
    common.add_argument(
        "--thread", default=None, metavar="THREAD_ID", help="the thread (list: everything of it)"
    )
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
        help=(
            "which memory (default: user with --user; with --thread alone, everything of the thread: "
            "its session memory and what its users' memory holds from it; knowledge with --agent)"
        ),
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


def _one_line(error: object) -> str:
    """An error's message (or a value typed on the command line) on one line, with no character
    a terminal would act on."""
    return one_line(str(error))


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
            args.compartment or ("user" if user else "thread" if thread else "knowledge"),
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


def _check_inspect(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """The options of ``inspect`` that do not go together; refused before the store is opened."""
    if not is_loopback(args.host) and not args.allow_remote:
        parser.error(
            f"--host {args.host!r} is not this machine: everyone who reaches it would read every memory. "
            "Pass --allow-remote behind your own access control, or keep 127.0.0.1 (an SSH tunnel reaches it)"
        )
    if args.snapshot and args.allow_writes:
        parser.error(
            "--allow-writes with --snapshot would change a copy that is removed at the end: pass one"
        )
