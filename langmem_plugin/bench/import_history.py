"""How fast a conversation history is imported: batched vs one turn at a time.

Imports LoCoMo conversations (one episode per message, as
:meth:`~langmem_plugin.Memory.import_history` with ``per="message"`` writes them) into a fresh
embedded :class:`~langmem_plugin.stores.QdrantStore` with the offline MiniLM embedder, once with
``batch_size`` episodes per store round and once with one (what remembering each turn live
costs), and reports turns per second of each::

    python -m langmem_plugin.bench.import_history --data data/locomo/locomo10.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from langmem_plugin.bench.datasets import locomo_path
from langmem_plugin.core.scope import Scope
from langmem_plugin.services.remember import ImportReport, import_history

__all__ = ["ImportRun", "locomo_history", "main", "measure_import"]


@dataclass(frozen=True)
class ImportRun:
    """One measured import."""

    label: str
    batch_size: int
    report: ImportReport

    def line(self) -> str:
        """One line of the report table."""
        r = self.report
        return (
            f"{self.label:<22} batch {self.batch_size:>4}  {r.turns:>5} turns  {r.passages:>4} passages  "
            f"{r.seconds:7.2f} s  {r.turns_per_second:8.1f} turns/s"
        )


def locomo_history(
    path: str | Path, conversation: int = 0, *, max_turns: int | None = None
) -> list[dict[str, Any]]:
    """LoCoMo conversation ``conversation`` as a history of dated sessions (one message per turn)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    conv = raw[conversation]["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    sessions: list[dict[str, Any]] = []
    left = max_turns
    for n in numbers:
        messages = []
        for turn in conv[f"session_{n}"]:
            if left is not None and left <= 0:
                break
            caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
            messages.append(
                {
                    "role": "user",
                    "name": turn["speaker"],
                    "content": turn["text"] + caption,
                    "id": turn["dia_id"],
                }
            )
            left = None if left is None else left - 1
        if messages:
            sessions.append({"date": conv.get(f"session_{n}_date_time", ""), "messages": messages})
    return sessions


def measure_import(
    history: Sequence[dict[str, Any]],
    embeddings: Embeddings,
    *,
    batch_sizes: Sequence[int] = (64, 1),
    workdir: str | Path | None = None,
) -> list[ImportRun]:
    """Import ``history`` into a fresh embedded QdrantStore once per batch size."""
    from langmem_plugin.stores import QdrantStore

    index: Any = {
        "dims": getattr(embeddings, "dims", None) or 384,
        "embed": embeddings,
        "fields": ["content"],
    }
    runs: list[ImportRun] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for size in batch_sizes:
            with QdrantStore(path=Path(tmp) / f"batch-{size}", index=index) as store:
                report = import_history(
                    store,
                    history,
                    Scope(user_id="bench", thread_id="locomo-0"),
                    per="message",
                    batch_size=size,
                    progress=False,
                )
            label = "one turn at a time" if size == 1 else "batched"
            runs.append(ImportRun(label, size, report))
    return runs


def main(argv: Sequence[str] | None = None) -> list[ImportRun]:
    """Print the import throughput of a LoCoMo conversation, batched and not."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=str(locomo_path()))
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--turns", type=int, default=None, help="at most this many turns")
    parser.add_argument("--batch-sizes", default="64,1")
    args = parser.parse_args(argv)
    from langmem_plugin.core.embeddings import MiniLMEmbeddings

    embeddings = MiniLMEmbeddings().load()
    embeddings.embed_documents(["warm up"])
    history = locomo_history(args.data, args.conversation, max_turns=args.turns)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    runs = measure_import(history, embeddings, batch_sizes=sizes)
    for run in runs:
        print(run.line())
    return runs


if __name__ == "__main__":  # pragma: no cover
    main()
