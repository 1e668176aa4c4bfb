"""``langmem-plugin bench forgetting``: forget facts of a LoCoMo conversation, then ask its questions.

One conversation is imported message by message (one exchange per message, as
``Memory.import_history(per="message")`` writes it). For ``facts`` random messages a memory
is saved with the message's exchange as its source (provenance), as the memory tools do. Every
question is recalled once before; then the facts are forgotten (``Memory.forget``) and every
question is recalled again. It reports:

- **injected**: recalls after the forget whose prompt holds a forgotten statement (a forgotten
  memory, or the message that stated it) — the goal is 0;
- **evidence recall** of the questions none of whose evidence was forgotten, before and after
  (the share of their evidence messages recall shows) — the goal is within 1 point.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from langmem_plugin.bench.locomo.data import load_locomo
from langmem_plugin.core.embeddings import EmbeddingsSpec
from langmem_plugin.core.record import MemoryRecord, exchange_link

__all__ = ["ForgettingResult", "run_forgetting_bench"]

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

    def table(self) -> str:
        """The result as a few lines."""
        return "\n".join(
            [
                f"forgot {self.facts} facts; {self.questions} questions recalled before and after",
                f"recalls injecting a forgotten statement: before {self.injected_before}, "
                f"after {self.injected_after} (goal 0)",
                f"evidence recall of the {self.kept_questions} questions whose evidence was kept: "
                f"{100 * self.evidence_before:.1f}% before, {100 * self.evidence_after:.1f}% after "
                f"(goal: within 1 point)",
                f"{self.seconds:.1f} s",
            ]
        )


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
    )
