"""``langmem-plugin bench forgetting``: forget facts of a LoCoMo conversation, then ask its questions.

One conversation is imported message by message (one exchange per message, as
``Memory.import_history(per="message")`` writes it). For ``facts`` random messages a memory
is saved with the message's exchange as its source (provenance), as the memory tools do. Every
question is recalled once before; then the facts are forgotten (``Memory.forget``) and every
question is recalled again. It reports:

- **injected**: recalls after the forget whose prompt holds a forgotten statement (a forgotten
  memory, or the message that stated it) — the goal is 0;
- **evidence recall** of the questions none of whose evidence was forgotten, before and after
  (the share of their evidence messages recall shows) — the goal is within 1 point;
- **bytes left after forget_user**: then the user is forgotten, and every file of the store's
  directory is read for the conversation's statements — the goal is 0.

:func:`run_scrub_bench` times the embedded store's scrub (what each forget asks of it, see
:mod:`langmem_plugin.stores.qdrant._scrub`) at a few store sizes.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from langmem_plugin.bench.locomo.data import load_locomo
from langmem_plugin.core.embeddings import EmbeddingsSpec
from langmem_plugin.core.record import MemoryRecord, exchange_link

__all__ = ["ForgettingResult", "ScrubResult", "bytes_on_disk", "run_forgetting_bench", "run_scrub_bench"]

_NORM = re.compile(r"[^a-z0-9]+")


def _norm(text: str) -> str:
    return _NORM.sub(" ", text.lower()).strip()


@dataclass
class ForgettingResult:
    """What the bench measured."""

    facts: int
    questions: int
    kept_questions: int
    injected_after: int
    injected_before: int
    evidence_before: float
    evidence_after: float
    seconds: float
    #: Bytes of the conversation's statements found in the store's files before ``forget_user``
    #: and after (None: the store has no directory).
    bytes_before: int | None = None
    bytes_left: int | None = None

    def table(self) -> str:
        """The result as a few lines."""
        lines = [
            f"forgot {self.facts} facts; {self.questions} questions recalled before and after",
            f"recalls injecting a forgotten statement: before {self.injected_before}, "
            f"after {self.injected_after} (goal 0)",
            f"evidence recall of the {self.kept_questions} questions whose evidence was kept: "
            f"{100 * self.evidence_before:.1f}% before, {100 * self.evidence_after:.1f}% after "
            f"(goal: within 1 point)",
        ]
        if self.bytes_left is not None:
            lines.append(
                f"bytes left after forget_user: {self.bytes_left} (goal 0; {self.bytes_before} before; "
                "every file of the store's directory read)"
            )
        return "\n".join([*lines, f"{self.seconds:.1f} s"])


@dataclass
class ScrubResult:
    """The embedded store's scrub timed at a few sizes: ``(items, seconds, bytes zeroed)`` each."""

    dims: int
    rows: list[tuple[int, float, int]] = field(default_factory=list)

    def table(self) -> str:
        """One line per size."""
        return "\n".join(
            f"scrub of an embedded store of {items:,} items ({self.dims}-dim vectors): {seconds:.1f} s, "
            f"{wiped / 1e6:.0f} MB of old files zeroed"
            for items, seconds, wiped in self.rows
        )


def bytes_on_disk(directory: Path, texts: Iterable[str]) -> int:
    """How many bytes of ``texts`` (UTF-8, each found whole) the files under ``directory`` hold."""
    needles = [t.encode("utf-8") for t in dict.fromkeys(texts) if t]
    found = 0
    for root, _, files in os.walk(directory):
        for name in files:
            data = Path(root, name).read_bytes()
            found += sum(data.count(n) * len(n) for n in needles)
    return found


def run_scrub_bench(sizes: Sequence[int] = (1_000, 10_000), *, dims: int = 384) -> ScrubResult:
    """Time :meth:`~langmem_plugin.stores.qdrant.QdrantStore.scrub` on embedded stores of ``sizes``
    items (deterministic vectors of ``dims``, MiniLM's by default: the cost does not depend on the
    embedder), each after a few items were deleted."""
    from langgraph.store.base import PutOp

    from langmem_plugin.stores.qdrant import QdrantStore
    from langmem_plugin.testing import FakeEmbeddings

    result = ScrubResult(dims)
    for size in sizes:
        index: Any = {"embed": FakeEmbeddings(dims), "dims": dims, "fields": ["content"]}
        store = QdrantStore.temporary(index=index)
        try:
            for start in range(0, size, 500):
                numbers = range(start, min(size, start + 500))
                store.batch(
                    [PutOp(("bench", str(n % 10)), f"k{n}", {"content": f"item {n}"}) for n in numbers]
                )
            for n in range(min(10, size)):
                store.delete(("bench", str(n % 10)), f"k{n}")
            scrubbed = store.scrub()
            assert scrubbed is not None
            result.rows.append((size, scrubbed.seconds, scrubbed.wiped_bytes))
        finally:
            store.close()
    return result


def run_forgetting_bench(
    path: str | Path,
    *,
    conversation: int = 0,
    facts: int = 100,
    seed: int = 0,
    embeddings: EmbeddingsSpec | None = None,
) -> ForgettingResult:
    """Run the bench on conversation ``conversation`` of the LoCoMo file at ``path``.

    ``embeddings``: what the store embeds with (default: the offline MiniLM, as ``Memory()``).
    """
    from langmem_plugin import Memory, RecallConfig
    from langmem_plugin.core.embeddings import MiniLMEmbeddings
    from langmem_plugin.core.scope import Scope

    started = time.perf_counter()
    chat = load_locomo(path)[conversation]
    memory = Memory(embeddings=embeddings or MiniLMEmbeddings(), recall=RecallConfig())
    try:
        scope = Scope(user_id="u", thread_id="locomo")
        config: Any = {"configurable": {"user_id": "u", "thread_id": "q"}}
        messages = [HumanMessage(t.line, name=t.speaker, id=t.dia_id) for t in chat.turns]
        thread = {"configurable": {"user_id": "u", "thread_id": "locomo"}}
        memory.import_history(messages, thread, per="message")  # type: ignore[arg-type]
        namespace = memory.layout.namespace("user", scope)
        keys: dict[str, str] = {}  # message id -> its exchange's key
        offset = 0
        while True:
            page = memory.store.search(
                namespace, filter={"metadata.role": "message"}, limit=500, offset=offset
            )
            for item in page:
                meta = item.value.get("metadata") or {}
                if "episode" not in meta and meta.get("message_ids"):
                    keys[str(meta["message_ids"])] = item.key
            if len(page) < 500:
                break
            offset += 500
        chosen = random.Random(seed).sample(list(chat.turns), min(facts, len(chat.turns)))
        ids = []
        for n, turn in enumerate(chosen):
            record = MemoryRecord(content=turn.text, sources=[exchange_link("locomo", keys[turn.dia_id])])
            memory.store.put(namespace, f"fact{n}", record.to_value(), index=["content"])
            ids.append(f"fact{n}")
        forgotten = {t.dia_id for t in chosen}
        statements = [_norm(t.text)[:60] for t in chosen if len(_norm(t.text)) >= 20]
        kept = [q for q in chat.questions if not set(q.evidence) & forgotten]

        def measure() -> tuple[int, float]:
            injected, shown, wanted = 0, 0, 0
            for question in chat.questions:
                recall = memory.recall([HumanMessage(question.text)], config)
                text = _norm(recall.prompt)
                injected += any(s in text for s in statements)
                if question in kept:
                    recalled = {i.id.split("-p")[0] for i in recall.items}
                    wanted += len(question.evidence)
                    shown += sum(keys.get(e) in recalled for e in question.evidence)
            return injected, shown / max(wanted, 1)

        injected_before, evidence_before = measure()
        for memory_id in ids:
            memory.forget(memory_id, config)
        injected_after, evidence_after = measure()
        directory = getattr(memory.store, "path", None)
        said = [t.text for t in chat.turns if len(t.text) >= 20]
        bytes_before = bytes_on_disk(directory, said) if isinstance(directory, Path) else None
        memory.forget_user("u")
        bytes_left = bytes_on_disk(directory, said) if isinstance(directory, Path) else None
    finally:
        memory.close()
    return ForgettingResult(
        facts=len(ids),
        questions=len(chat.questions),
        kept_questions=len(kept),
        injected_after=injected_after,
        injected_before=injected_before,
        evidence_before=evidence_before,
        evidence_after=evidence_after,
        seconds=time.perf_counter() - started,
        bytes_before=bytes_before,
        bytes_left=bytes_left,
    )
