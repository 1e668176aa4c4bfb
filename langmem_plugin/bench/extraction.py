"""Extraction benchmark on LoCoMo: memories kept and evidence recall, extraction vs every turn.

Not a test: ``python -m langmem_plugin.bench.extraction [--conversations 0-9] [--embeddings fake]``.

LoCoMo's conversations come with per-session *observations*: short facts about
each speaker, each with the dialogue turns (``"D3:7"``) it came from. They stand
in for what an extraction model would return, so the benchmark measures the
memory side without a model:

- **every turn** — each dialogue turn stored as one memory (``"Speaker: text"``), what a
  memory that never extracts keeps;
- **extraction** — after each session, that session's observations are the
  candidates of :func:`~langmem_plugin.services.upkeep.consolidation.consolidate_steps`
  (match, duplicate skip, decide, apply, history), into one user memory per
  conversation. The decision model is scripted: it adds every candidate it is
  asked about (no merge, no invalidation), so the numbers show consolidation's
  cost and the duplicate skip, not a model's judgement. Each session is then
  consolidated a second time (a replayed reflection): every candidate should be
  skipped as a duplicate, with no decision call.

For each variant: memories kept, tokens of their content, and **evidence
recall@k** — over LoCoMo's questions with parseable evidence, the fraction of a
question's evidence turns covered by the top k memories of a search for the
question (a turn memory covers its own turn; an observation the turns it cites),
averaged. For extraction, the consolidation time per candidate, the model
excluded (its answers are built in-process and their time is subtracted); the
store's embedding of what is written is included.

Every variant uses the same embedder; LangGraph's InMemoryStore holds the memories.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin.bench.datasets import locomo_path
from langmem_plugin.core.embeddings import resolve_embeddings
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.steps import run_steps
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.operations import INDEX_FIELDS, write_rounds
from langmem_plugin.services.store_steps import run_batch
from langmem_plugin.services.upkeep import (
    Candidate,
    ConsolidationConfig,
    ConsolidationDecisions,
    MemoryDecision,
    ModelCall,
    consolidate_steps,
)

__all__ = ["DEFAULT_DATA", "ExtractionBenchResult", "Variant", "main", "run_extraction_bench"]

DEFAULT_DATA = locomo_path()  # data/locomo/locomo10.json in the checkout, or $LANGMEM_PLUGIN_DATA
_TURN = re.compile(r"D(\d+):(\d+)")
_DATE = "%I:%M %p on %d %B, %Y"
_EVIDENCE = "evidence"


def _turn_ids(raw: Any) -> set[str]:
    texts = raw if isinstance(raw, list) else [raw]
    return {f"D{int(a)}:{int(b)}" for text in texts for a, b in _TURN.findall(str(text))}


def _session_date(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(str(text), _DATE).replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass
class Variant:
    """One way of keeping memories, measured."""

    name: str
    memories: int = 0
    tokens: int = 0
    recall: dict[int, list[float]] = field(default_factory=dict)
    candidates: int = 0
    duplicates: int = 0
    decision_calls: int = 0
    consolidation_ms: list[float] = field(default_factory=list)
    replay_duplicates: int = 0
    replay_decision_calls: int = 0
    replay_ms: list[float] = field(default_factory=list)

    def row(self, ks: Sequence[int]) -> dict[str, Any]:
        """The variant's numbers as one table row."""
        out: dict[str, Any] = {"variant": self.name, "memories": self.memories, "tokens": self.tokens}
        for k in ks:
            values = self.recall.get(k, [])
            out[f"recall@{k}"] = round(sum(values) / len(values), 3) if values else None
        if self.candidates:
            per = self.consolidation_ms
            out["candidates"] = self.candidates
            out["duplicates_skipped"] = self.duplicates
            out["decision_calls"] = self.decision_calls
            out["ms_per_candidate_mean"] = round(statistics.fmean(per), 3) if per else None
            out["ms_per_candidate_p50"] = round(statistics.median(per), 3) if per else None
        if self.replay_ms:
            out["replay_duplicates_skipped"] = self.replay_duplicates
            out["replay_decision_calls"] = self.replay_decision_calls
            out["replay_ms_per_candidate_p50"] = round(statistics.median(self.replay_ms), 3)
        return out


@dataclass
class ExtractionBenchResult:
    """The benchmark's outcome: one :class:`Variant` per way of keeping memories."""

    conversations: list[str]
    questions: int
    ks: tuple[int, ...]
    variants: list[Variant]

    def rows(self) -> list[dict[str, Any]]:
        """One row per variant."""
        return [v.row(self.ks) for v in self.variants]

    def table(self) -> str:
        """The rows as a plain text table."""
        rows = self.rows()
        columns = list(dict.fromkeys(c for r in rows for c in r))
        widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
        lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
        lines += ["  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns) for r in rows]
        return "\n".join(lines)


def _store(embeddings: Embeddings) -> InMemoryStore:
    dims = len(embeddings.embed_query("dimension probe"))
    return InMemoryStore(index={"embed": embeddings, "dims": dims, "fields": list(INDEX_FIELDS)})


def _recall(
    store: BaseStore,
    namespace: tuple[str, ...],
    questions: list[tuple[str, set[str]]],
    variant: Variant,
    ks: Sequence[int],
) -> None:
    top = max(ks)
    for question, evidence in questions:
        hits = store.search(namespace, query=question, limit=top, refresh_ttl=False)
        covered: list[set[str]] = [_turn_ids(h.value.get("metadata", {}).get(_EVIDENCE, "")) for h in hits]
        for k in ks:
            found = set().union(*covered[:k]) if covered[:k] else set()
            variant.recall.setdefault(k, []).append(len(evidence & found) / len(evidence))


def _kept(store: BaseStore, namespace: tuple[str, ...], variant: Variant) -> None:
    items = store.search(namespace, limit=100_000)
    variant.memories += len(items)
    variant.tokens += sum(count_tokens(str(i.value.get("content", ""))) for i in items)


def _every_turn(conversation: dict[str, Any], store: BaseStore, namespace: tuple[str, ...]) -> None:
    talk = conversation["conversation"]
    ops: list[PutOp] = []
    for key, turns in talk.items():
        if not key.startswith("session_") or not isinstance(turns, list):
            continue
        date = _session_date(talk.get(f"{key}_date_time"))
        for turn in turns:
            record = MemoryRecord(
                content=f"{turn['speaker']}: {turn['text']}",
                kind=MemoryKind.EPISODE,
                metadata={_EVIDENCE: turn["dia_id"]},
                **({"created_at": date, "updated_at": date} if date else {}),
            )
            ops.append(
                PutOp(namespace, turn["dia_id"].replace(":", "-"), record.to_value(), index=INDEX_FIELDS)
            )
    for start in range(0, len(ops), 500):
        for batch in write_rounds(ops[start : start + 500]):  # no text embedded twice in one batch
            store.batch(batch)


def _add_everything(call: ModelCall) -> ConsolidationDecisions:
    """The scripted decision model: ADD for every new memory it is shown."""
    text = str(call.messages[-1].content)
    numbers = [int(n) for n in re.findall(r"^NEW (\d+):", text, flags=re.MULTILINE)]
    return ConsolidationDecisions(decisions=[MemoryDecision(candidate=n, action="ADD") for n in numbers])


def _drive(store: BaseStore, steps: Generator[Any, Any, Any]) -> tuple[Any, float, int]:
    """Run consolidation steps; returns the result, seconds spent outside the model, model calls."""
    model_seconds = 0.0
    calls = 0

    def do(request: Any) -> Any:
        nonlocal model_seconds, calls
        if isinstance(request, ModelCall):
            started = time.perf_counter()
            answer = _add_everything(request)
            model_seconds += time.perf_counter() - started
            calls += 1
            return answer
        return run_batch(store, request)

    started = time.perf_counter()
    result = run_steps(steps, do)
    return result, time.perf_counter() - started - model_seconds, calls


def _extraction(
    conversation: dict[str, Any],
    store: BaseStore,
    user: str,
    variant: Variant,
    config: ConsolidationConfig,
    *,
    replay: bool,
) -> None:
    talk, layout = conversation["conversation"], MemoryLayout()
    sessions = sorted(
        (int(k.split("_")[1]), v)
        for k, v in conversation.get("observation", {}).items()
        if isinstance(v, dict)
    )
    for number, observations in sessions:
        date = _session_date(talk.get(f"session_{number}_date_time"))
        candidates = [
            Candidate(
                content=str(text),
                kind=MemoryKind.FACT,
                category=re.sub(r"[^A-Za-z0-9_-]", "_", speaker.lower()) or "general",
                valid_at=date,
                metadata={_EVIDENCE: ",".join(sorted(_turn_ids(evidence)))},
            )
            for speaker, facts in observations.items()
            for text, evidence in facts
            if str(text).strip()
        ]
        if not candidates:
            continue
        scope = Scope(user_id=user, thread_id=f"session-{number}", run_id=f"session-{number}")
        result, seconds, calls = _drive(store, consolidate_steps(scope, layout, candidates, config))
        variant.candidates += len(candidates)
        variant.duplicates += result.duplicates
        variant.decision_calls += calls
        variant.consolidation_ms.extend([seconds * 1000 / len(candidates)] * len(candidates))
        if replay:  # the same session extracted again (a retry, a replay): all duplicates, no model call
            again, seconds, calls = _drive(store, consolidate_steps(scope, layout, candidates, config))
            variant.replay_duplicates += again.duplicates
            variant.replay_decision_calls += calls
            variant.replay_ms.extend([seconds * 1000 / len(candidates)] * len(candidates))


def run_extraction_bench(
    data: Path = DEFAULT_DATA,
    *,
    conversations: Sequence[int] | None = None,
    embeddings: Embeddings | None = None,
    ks: Sequence[int] = (5, 10),
    config: ConsolidationConfig | None = None,
    replay: bool = True,
) -> ExtractionBenchResult:
    """Run both variants over the chosen LoCoMo conversations (default: all).

    With ``replay``, each session's candidates are consolidated a second time after the
    first (as a retried or replayed reflection would): the ``replay_*`` columns count
    the duplicates skipped and the decision calls that still happened (none expected).
    """
    dataset = json.loads(Path(data).read_text())
    chosen = list(conversations) if conversations is not None else list(range(len(dataset)))
    embedder = embeddings or resolve_embeddings(None)
    turns, extracted = Variant("every turn"), Variant("extraction")
    config = config or ConsolidationConfig()
    names: list[str] = []
    questions_total = 0
    for index in chosen:
        conversation = dataset[index]
        user = re.sub(r"[^A-Za-z0-9_-]", "-", str(conversation.get("sample_id", f"conv-{index}")))
        names.append(user)
        questions = [
            (str(q["question"]), ev) for q in conversation["qa"] if (ev := _turn_ids(q.get("evidence", [])))
        ]
        questions_total += len(questions)
        namespace = ("memories", "user", user)
        store_turns, store_extracted = _store(embedder), _store(embedder)
        _every_turn(conversation, store_turns, namespace)
        _extraction(conversation, store_extracted, user, extracted, config, replay=replay)
        for store, variant in ((store_turns, turns), (store_extracted, extracted)):
            _kept(store, namespace, variant)
            _recall(store, namespace, questions, variant, ks)
    return ExtractionBenchResult(names, questions_total, tuple(ks), [turns, extracted])


def _indices(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            out.extend(range(int(low), int(high) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print the table (and JSON with ``--json``)."""
    parser = argparse.ArgumentParser(prog="python -m langmem_plugin.bench.extraction", description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default=None, help="indices such as 0-9 or 0,3 (default: all)")
    parser.add_argument(
        "--embeddings", default="local", help="'local' (offline MiniLM) or 'fake' (hashed words)"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args(argv)
    if args.embeddings == "fake":
        from langmem_plugin.testing import FakeEmbeddings

        embedder: Embeddings = FakeEmbeddings()
    else:
        embedder = resolve_embeddings(args.embeddings)
    chosen = _indices(args.conversations) if args.conversations else None
    result = run_extraction_bench(args.data, conversations=chosen, embeddings=embedder)
    print(
        f"LoCoMo conversations {', '.join(result.conversations)}: {result.questions} questions with evidence"
    )
    print(result.table())
    if args.json:
        print(json.dumps(result.rows(), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
