"""The command lines ``langmem-plugin bench locomo`` and ``bench realtalk``: one run over one or more sets.

``bench locomo --data PATH`` takes either set (``locomo10.json``, or the REALTALK folder or a chat
file) and may be given ``--data`` more than once: every set is run in the same process with the
same rows and embedder, and each prints its own per-category table — so a default that changes is
shown on LoCoMo and REALTALK from one run. ``bench realtalk`` is the same run with ``--data``
defaulting to :data:`REALTALK_DATA` (relative to the working directory; the data is never shipped).
``--embedder`` names one or more offline embedders (:data:`~langmem_plugin.core.embeddings.LOCAL_EMBEDDERS`):
each set is run once per embedder, side by side. ``--misses`` adds the ``product`` row's miss table
(:mod:`~langmem_plugin.bench.locomo.misses`). ``--budget-curve`` measures, instead of the rows, the
evidence ``Memory()`` injects against tokens for each preset (:mod:`~langmem_plugin.bench.locomo.budget`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langmem_plugin.bench.datasets import locomo_path, realtalk_path

__all__ = ["LOCOMO_DATA", "REALTALK_DATA", "add_parsers", "run_cli"]

#: Where the sets lie beside this repository's checkout (``--data`` overrides either).
LOCOMO_DATA = locomo_path()  # data/locomo/locomo10.json in the checkout, or $LANGMEM_PLUGIN_DATA
REALTALK_DATA = realtalk_path()


def add_parsers(
    benches: Any, names: Callable[[Sequence[str], str], Callable[[str], tuple[str, ...]]]
) -> None:
    """Add ``locomo`` and ``realtalk`` to the ``bench`` subcommands (``names``: the CLI's list type)."""
    from langmem_plugin.bench.locomo.variants import ALL_VARIANTS, VARIANTS
    from langmem_plugin.core.embeddings import LOCAL_EMBEDDERS

    locomo = benches.add_parser(
        "locomo", help="LoCoMo (or REALTALK) evidence recall@k, tokens injected, query latency"
    )
    locomo.add_argument(
        "--data",
        required=True,
        action="append",
        help="path to locomo10.json (LoCoMo) or to the REALTALK folder or a chat file (not shipped); "
        "repeat to run several sets in one run",
    )
    realtalk = benches.add_parser(
        "realtalk", help="the LoCoMo rows and per-category table on REALTALK (real two-person chats)"
    )
    realtalk.add_argument(
        "--data",
        action="append",
        default=None,
        help=f"the REALTALK folder or a chat file, or locomo10.json too (repeat; default {REALTALK_DATA})",
    )
    for parser in (locomo, realtalk):
        parser.add_argument(
            "--conversations",
            default=None,
            metavar="N|FIRST-LAST",
            help="only the first N, or those numbered FIRST-LAST (0-based, both included: e.g. 5-9, "
            "LoCoMo's held-out half; default all)",
        )
        parser.add_argument(
            "--variants",
            type=names(ALL_VARIANTS, "variant"),
            default=VARIANTS,
            metavar="NAME,...",
            help=f"comma-separated rows to run, from: {', '.join(ALL_VARIANTS)} (default: all but the "
            "product+ signal experiments)",
        )
        parser.add_argument(
            "--embedder",
            type=names(tuple(LOCAL_EMBEDDERS), "embedder"),
            default=None,
            metavar="NAME,...",
            help=f"offline embedder(s) to compare, from: {', '.join(LOCAL_EMBEDDERS)} (default: the default)",
        )
        parser.add_argument(
            "--misses",
            action="store_true",
            help="with the product row: where its missed evidence was lost (first stage at 50/200/1000 "
            "candidates, ranking, budget, duplicate) and what an oracle ranking of its pool would inject",
        )
        parser.add_argument(
            "--budget-curve",
            action="store_true",
            help="instead of the rows: evidence injected against tokens (200 to 2000) for each recall "
            "preset, beside what other memory systems inject",
        )


def run_cli(args: argparse.Namespace, version: str, say: Callable[[str], None] = print) -> int:
    """Run every set of ``args.data`` with every embedder of ``args.embedder``; print each table."""
    from langmem_plugin.bench.locomo.run import run_locomo_bench
    from langmem_plugin.core.embeddings import local_embeddings

    paths = [Path(p) for p in (args.data or [REALTALK_DATA])]
    embedders: Sequence[str | None] = args.embedder or (None,)
    title = "REALTALK" if args.bench == "realtalk" else "LoCoMo"
    say(f"langmem-plugin {version} — {title} retrieval benchmark ({', '.join(map(str, paths))})")
    for name in embedders:
        embeddings = local_embeddings(name) if name else None
        for path in paths:
            if args.budget_curve:
                from langmem_plugin.bench.locomo.budget import run_budget_curve

                curve = run_budget_curve(
                    path, conversations=args.conversations, embeddings=embeddings, progress=say
                )
                say(curve.table())
                continue
            outcome = run_locomo_bench(
                path,
                conversations=args.conversations,
                variants=args.variants,
                embeddings=embeddings,
                progress=say,
                misses=args.misses,
            )
            say(outcome.summary())
            say(outcome.table())
            if outcome.misses is not None:
                say(outcome.misses.table())
            splits = outcome.splits()
            if splits:
                say(splits)
    return 0
