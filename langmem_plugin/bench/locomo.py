"""``langmem-plugin bench locomo``: evidence recall on LoCoMo, tokens injected, query latency.

LoCoMo (Maharana et al., 2024) has 10 long conversations (≈ 600 turns each,
over up to 35 dated sessions) and ≈ 2,000 questions, each with the dialogue
turns (``"D3:7"``) that hold its answer. This benchmark:

1. stores each conversation's turns as memories (:class:`~langmem_plugin.core.record.MemoryRecord`,
   kind ``episode``, created at the session's date) in its own namespace of each store;
2. searches every question and measures **evidence recall@k** the way LoCoMo
   defines it — the fraction of a question's evidence turns found in the top k,
   averaged over questions — per category (1 multi-hop, 2 temporal, 3
   open-domain, 4 single-hop, 5 adversarial) and overall. Malformed evidence
   strings (``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"``) are split and
   normalised; a question with no parseable evidence is skipped and counted;
3. counts the tokens (cl100k) that injecting the top k would cost, against the
   whole conversation as plain text;
4. times each query end to end, the query's embedding included.

What each memory holds — only what a memory system has when the turn is
written: ``content`` is ``"Speaker: text"`` (plus ``[shares <caption>]`` for a
shared photo — the caption LoCoMo provides, not the search query its authors
used to find the photo), ``created_at`` the session's date, ``metadata`` the
session date, the speaker, the turn id, ``context`` (the turn before it in the
same session), ``neighbours`` (the ids of the turns around it) and ``part_1``,
``part_2``, ... (its sentences and caption, :func:`sentences`). Nothing comes
from LoCoMo's annotations (summaries, observations, evidence) or its questions.

The dense index embeds ``content`` and each part (a turn scores its best
vector, :data:`EMBEDDED_FIELDS`); the hybrid retriever's BM25 indexes date,
context and content, and the fused score is lifted for a turn next to a strong
match, in a session with other strong matches, spoken by the person the
question names, dated in the period the question names, or that tells rather
than reacts or asks back (its salience, :mod:`langmem_plugin.bench.locomo_salience`,
scored from the turn's text alone) (:data:`LOCOMO_RETRIEVAL`; the last three are
:mod:`langmem_plugin.bench.locomo_lifts`, over the retriever's ``lifts`` hook). Its weights
were tuned on conversations 0-4; report 5-9 apart (:meth:`LocomoResult.only`)
to see what tuning bought.

The ``product`` rows (``product``: embedded QdrantStore, ``product-inmemory``: InMemoryStore)
take the path a user takes instead: each conversation imported with ``Memory.import_history``
and each question recalled with ``Memory.recall`` and its defaults; they report the evidence
recall and the tokens of what recall *injects* (one number, no k) and the import's turns per
second (:mod:`langmem_plugin.bench.locomo_product`).

Every variant shares one embedder instance, and a document text is embedded once
per run (the stores ask for the same texts); queries are embedded on every search.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp

from langmem_plugin.bench.locomo_lifts import MentionLift, PeriodLift, SalienceLift
from langmem_plugin.bench.locomo_salience import memory_salience
from langmem_plugin.bench.report import format_table, percentile, time_calls
from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.retrieval import HybridRetriever, RetrievalConfig

__all__ = [
    "CATEGORIES",
    "LOCOMO_LEXICAL_FIELDS",
    "LOCOMO_RETRIEVAL",
    "LOCOMO_RETRIEVAL_FAST",
    "Conversation",
    "LocomoResult",
    "Question",
    "Turn",
    "VariantResult",
    "conversation_text",
    "load_locomo",
    "parse_evidence",
    "run_locomo_bench",
    "turn_value",
]

CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
KS: tuple[int, ...] = (5, 10, 25)
#: The conversations the recipe's weights were tuned on; the others are held out.
TUNING = range(5)
#: The token encoding of LoCoMo's comparisons (gpt-4 / gpt-3.5).
TOKEN_MODEL = "gpt-4"

#: At most this many of a turn's sentences are embedded alone (the rest go into the last one).
MAX_PARTS = 8
#: What the dense index embeds: the turn, and each of its sentences and its photo's caption alone
#: (``metadata.part_1`` ... ; a turn scores its best vector).
EMBEDDED_FIELDS: tuple[str, ...] = ("content", *(f"metadata.part_{n}" for n in range(1, MAX_PARTS + 1)))

#: The retrieval recipe measured here: BM25 over date + previous turn + turn, dense over the turn and
#: its sentences, lifted by a strong neighbour, a strong session, the speaker the question names, the
#: date it names and how much the turn tells (:func:`~langmem_plugin.bench.locomo_salience.memory_salience`);
#: weights tuned on conversations 0-4 (see the module docs).
#: What the recipe's store indexes for BM25 (``QdrantIndexConfig.lexical_fields``): the session's
#: date, the turn before, the turn.
LOCOMO_LEXICAL_FIELDS: tuple[str, ...] = ("metadata.session_date", "metadata.context", "content")

LOCOMO_RETRIEVAL = RetrievalConfig(
    neighbours_field="metadata.neighbours",
    neighbour_weight=0.45,
    candidates=50,
    group_fields=("metadata.session_date",),
    group_weight=0.5,
    lifts=(
        MentionLift("metadata.speaker", weight=1.2),
        PeriodLift(weight=1.4, after_days=30.0),
        SalienceLift(memory_salience, weight=1.2),
    ),
)

#: The recipe with 30 candidates of each signal instead of 50: ≈ 1 point lower recall@10 (84.0 vs
#: 85.0) and ≈ 0.5 ms faster (p50 5.3 vs 5.8 ms, with QdrantStore's payload cache).
LOCOMO_RETRIEVAL_FAST = dataclasses.replace(LOCOMO_RETRIEVAL, candidates=30)

#: Ablations of the recipe: without the lifts fitted on LoCoMo (speaker, date, salience); and
#: also without the background-word drop; and z-score fusion alone (no lifts at all).
_ABLATIONS: dict[str, RetrievalConfig] = {
    "qdrant-general": dataclasses.replace(LOCOMO_RETRIEVAL, lifts=()),
    "qdrant-general-nobg": dataclasses.replace(LOCOMO_RETRIEVAL, lifts=(), background_df=None),
    "qdrant-zfusion": dataclasses.replace(LOCOMO_RETRIEVAL, lifts=(), neighbour_weight=0.0, group_weight=0.0),
}

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SESSION = re.compile(r"session_(\d+)")


def parse_evidence(raw: Iterable[Any]) -> tuple[str, ...]:
    """Evidence turn ids, normalised: ``["D8:6; D9:17", "D30:05"]`` → ``("D8:6", "D9:17", "D30:5")``.

    >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:3 D1:4", "D1:3"])
    ('D8:6', 'D9:17', 'D11:26', 'D30:5', 'D1:3', 'D1:4')
    """
    out: list[str] = []
    for entry in raw:
        for session, turn in _EVIDENCE.findall(str(entry)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id not in out:
                out.append(dia_id)
    return tuple(out)


@dataclass(frozen=True)
class Turn:
    """One dialogue turn."""

    dia_id: str
    session: int
    date: str
    speaker: str
    text: str
    caption: str | None = None

    @property
    def line(self) -> str:
        """``"Speaker: text [shares caption]"``."""
        shared = f" [shares {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{shared}"


@dataclass(frozen=True)
class Question:
    """One question, its category and its evidence turn ids."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: its turns in order and its questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped: int = 0  # questions without parseable evidence


def _parse_date(text: str) -> datetime | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read ``locomo10.json`` (or any file of its shape).

    Raises:
        ConfigurationError: the file is missing or is not LoCoMo-shaped (the message says which).
    """
    source = Path(path)
    if not source.is_file():
        raise ConfigurationError(
            f"LoCoMo data not found at {str(source)!r}. Fix: pass --data PATH to locomo10.json "
            "(e.g. ../shared/data/locomo/locomo10.json from the repository root)."
        )
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{str(source)!r} is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise ConfigurationError(f"{str(source)!r}: expected a list of samples, got {type(raw).__name__}")
    conversations: list[Conversation] = []
    for n, sample in enumerate(raw):
        try:
            conv = sample["conversation"]
            sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
            turns = tuple(
                Turn(
                    dia_id=str(t["dia_id"]),
                    session=s,
                    date=str(conv.get(f"session_{s}_date_time", "")),
                    speaker=str(t["speaker"]),
                    text=str(t["text"]),
                    caption=t.get("blip_caption") or None,
                )
                for s in sessions
                for t in conv[f"session_{s}"]
            )
            questions: list[Question] = []
            skipped = 0
            for q in sample["qa"]:
                evidence = parse_evidence(q.get("evidence") or [])
                if evidence:
                    questions.append(Question(str(q["question"]), int(q["category"]), evidence))
                else:
                    skipped += 1
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{str(source)!r}: sample {n} is not LoCoMo-shaped ({type(exc).__name__}: {exc})"
            ) from exc
        sample_id = str(sample.get("sample_id", f"sample-{n}"))
        conversations.append(Conversation(sample_id, turns, tuple(questions), skipped))
    return conversations


def sentences(turn: Turn) -> list[str]:
    """The turn's sentences of three words or more, then its photo's caption: each embedded alone.

    >>> sentences(Turn("D1:1", 1, "", "Ann", "Hi! I adopted a cat. Her name is Luna.", "a photo of a cat"))
    ['I adopted a cat.', 'Her name is Luna.', 'a photo of a cat']
    """
    parts = [p for p in _SENTENCE_END.split(turn.text.strip()) if len(p.split()) >= 3]
    return [*parts, turn.caption] if turn.caption else parts


def turn_value(turn: Turn, previous: Turn | None, following: Turn | None = None) -> dict[str, Any]:
    """The stored value of a turn: a memory record.

    ``previous`` and ``following`` are the turns around it; within the same session, the
    previous one's line becomes ``metadata.context`` and both their ids ``metadata.neighbours``.
    ``metadata.part_1``, ``part_2``, ... hold :func:`sentences` (at most :data:`MAX_PARTS`), which
    the dense index embeds beside the content (:data:`EMBEDDED_FIELDS`).
    """
    metadata = {"dia_id": turn.dia_id, "session_date": turn.date, "speaker": turn.speaker}
    parts = sentences(turn)
    if len(parts) > MAX_PARTS:
        parts = [*parts[: MAX_PARTS - 1], " ".join(parts[MAX_PARTS - 1 :])]
    metadata.update({f"part_{n}": part for n, part in enumerate(parts, start=1)})
    if previous is not None and previous.session == turn.session:
        metadata["context"] = previous.line[:2000]
    around = [t.dia_id for t in (previous, following) if t is not None and t.session == turn.session]
    if around:
        metadata["neighbours"] = " ".join(around)
    created = _parse_date(turn.date)
    record = MemoryRecord(
        content=turn.line,
        category="locomo",
        kind=MemoryKind.EPISODE,
        source="bench:locomo",
        metadata=metadata,
        **({"created_at": created, "updated_at": created} if created else {}),
    )
    return record.to_value()


def conversation_text(conversation: Conversation) -> str:
    """The whole conversation as plain text: a date line per session, then one line per turn."""
    lines: list[str] = []
    session = None
    for turn in conversation.turns:
        if turn.session != session:
            session = turn.session
            lines.append(f"Session {session} ({turn.date})")
        lines.append(turn.line)
    return "\n".join(lines)


def injected_text(values: Sequence[dict[str, Any]]) -> str:
    """What recall would inject for these memories: one ``[date] content`` line each."""
    return "\n".join(f"[{v.get('metadata', {}).get('session_date', '')}] {v['content']}" for v in values)


# ---------------------------------------------------------------------------- the run

Searcher = Callable[[tuple[str, ...], str, int], list[dict[str, Any]]]


def _store_searcher(store: BaseStore) -> Searcher:
    def search(namespace: tuple[str, ...], query: str, limit: int) -> list[dict[str, Any]]:
        return [item.value for item in store.search(namespace, query=query, limit=limit)]

    return search


def _retriever_searcher(retriever: HybridRetriever) -> Searcher:
    def search(namespace: tuple[str, ...], query: str, limit: int) -> list[dict[str, Any]]:
        return [hit.value for hit in retriever.search(namespace, query, limit=limit)]

    return search


class _EmbedOnce(Embeddings):
    """Embeds each distinct document text once per run (in memory), queries every time."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.dims = getattr(inner, "dims", None)
        self._docs: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._docs))
        if missing:
            self._docs.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return [self._docs[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@dataclass
class VariantResult:
    """One variant's numbers."""

    name: str
    recall: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    categories: list[int] = field(default_factory=list)
    tokens: dict[int, list[int]] = field(default_factory=lambda: {k: [] for k in KS})
    seconds: list[float] = field(default_factory=list)
    conversations: list[int] = field(default_factory=list)  # the conversation of each question
    #: a product row: recall and tokens are of what recall injected (the same at every k)
    injected: bool = False
    items: list[int] = field(default_factory=list)  # product rows: the items injected per question
    imports: dict[int, Any] = field(default_factory=dict)  # product rows: ProductImport per conversation

    def only(self, conversations: Iterable[int]) -> VariantResult:
        """These numbers restricted to the questions of some conversations (0-based, in file order)."""
        keep = set(conversations)
        rows = [i for i, c in enumerate(self.conversations) if c in keep]
        return VariantResult(
            self.name,
            recall={k: [v[i] for i in rows] for k, v in self.recall.items()},
            categories=[self.categories[i] for i in rows],
            tokens={k: [v[i] for i in rows] for k, v in self.tokens.items()},
            seconds=[self.seconds[i] for i in rows],
            conversations=[self.conversations[i] for i in rows],
            injected=self.injected,
            items=[self.items[i] for i in rows] if self.items else [],
            imports={c: v for c, v in self.imports.items() if c in keep},
        )

    def mean_recall(self, k: int, category: int | None = None) -> float:
        """Mean recall@k in percent (over one category, or all questions)."""
        values = [r for r, c in zip(self.recall[k], self.categories, strict=True) if category in (None, c)]
        return 100.0 * sum(values) / len(values) if values else float("nan")

    def mean_tokens(self, k: int) -> float:
        values = self.tokens[k]
        return sum(values) / len(values) if values else 0.0

    def import_rate(self) -> float:
        """Product rows: turns imported per second, over every conversation (nan elsewhere)."""
        seconds = sum(i.seconds for i in self.imports.values())
        return sum(i.turns for i in self.imports.values()) / seconds if seconds else float("nan")

    def recall_cell(self, category: int | None = None) -> str:
        """``@5 / @10 / @25``, or one number for a product row (what recall injected)."""
        if self.injected:
            return f"{self.mean_recall(KS[0], category):.1f} (inj)"
        return " / ".join(f"{self.mean_recall(k, category):.1f}" for k in KS)

    def tokens_cell(self) -> str:
        """Mean tokens at each k, or injected (and the mean items injected) for a product row."""
        if self.injected:
            items = sum(self.items) / len(self.items) if self.items else 0.0
            return f"{self.mean_tokens(KS[0]):.0f} inj ({items:.1f} items)"
        return " / ".join(f"{self.mean_tokens(k):.0f}" for k in KS)


@dataclass
class LocomoResult:
    """Everything one run measured."""

    variants: list[VariantResult]
    conversations: int
    questions: int
    skipped: int
    turns: int
    full_tokens: float
    load_seconds: float
    embed_p50_ms: float = float("nan")

    def only(self, conversations: Iterable[int]) -> LocomoResult:
        """The run restricted to some conversations (e.g. a tuning split and a held-out one)."""
        keep = sorted(set(conversations))
        variants = [v.only(keep) for v in self.variants]
        return dataclasses.replace(
            self,
            variants=variants,
            conversations=len(keep),
            questions=len(variants[0].categories) if variants else 0,
        )

    def splits(self, tuned_on: Iterable[int] = TUNING) -> str:
        """The tables of the tuning conversations (0-4) and of the held-out ones, when both were run."""
        ran = range(self.conversations)
        tuning = [c for c in ran if c in set(tuned_on)]
        held_out = [c for c in ran if c not in set(tuned_on)]
        if not tuning or not held_out:
            return ""
        return "\n".join(
            [
                f"Conversations {tuning[0]}-{tuning[-1]} (the recipe's weights were tuned on these):",
                self.only(tuning).table(),
                f"Conversations {held_out[0]}-{held_out[-1]} (held out):",
                self.only(held_out).table(),
            ]
        )

    def table(self) -> str:
        """Recall per category and overall (@5 / @10 / @25), tokens at k, latency."""
        headers = [
            "variant",
            *(f"{c} {n}" for c, n in CATEGORIES.items()),
            "overall",
            "tokens @5/@10/@25",
            "p50 ms",
            "p95 ms",
        ]
        rows = []
        for v in self.variants:
            cells = [v.recall_cell(c) for c in [*CATEGORIES, None]]
            tokens = v.tokens_cell()
            p50 = percentile(v.seconds, 50) * 1000 if v.seconds else float("nan")
            p95 = percentile(v.seconds, 95) * 1000 if v.seconds else float("nan")
            rows.append([v.name, *cells, tokens, f"{p50:.1f}", f"{p95:.1f}"])
        rows.append(["anchor: DRAGON (LoCoMo paper)", "", "", "", "", "", "56.7 / 66.2 / 76.7", "", "", ""])
        rows.append(["anchor: plain BM25 over turns", "", "", "", "", "", "52.3 / 59.2 / 67.3", "", "", ""])
        table = format_table(headers, rows)
        imported = [v for v in self.variants if v.injected]
        if imported:
            notes = [
                f"{v.name}: import {v.import_rate():.1f} turns/s "
                f"({sum(i.turns for i in v.imports.values())} turns, "
                f"{sum(i.evicted for i in v.imports.values())} evicted, "
                f"{sum(i.failed for i in v.imports.values())} failed); (inj) = evidence recall of what "
                "Memory.recall injected with the default RecallConfig and budgets"
                for v in imported
            ]
            table = "\n".join([table, *notes])
        return table

    def summary(self) -> str:
        """One paragraph: what was run, and the whole-conversation token cost."""
        return (
            f"{self.conversations} conversations, {self.turns} turns, {self.questions} questions "
            f"({self.skipped} without parseable evidence skipped); recall@k in % (@5 / @10 / @25); "
            f"whole conversation as plain text: {self.full_tokens:,.0f} cl100k tokens on average; "
            f"storing every turn in every store took {self.load_seconds:.1f} s; "
            f"embedding one query alone: p50 {self.embed_p50_ms:.1f} ms (the floor of every dense row)."
        )


#: The rows over a store whose BM25 reads the turn only (the others: date + context + turn).
_PLAIN = ("qdrant-rrf", "qdrant-dbsf-plain", "bm25-turns", "dense")

VARIANTS: tuple[str, ...] = (
    "qdrant",
    "qdrant-fast",
    "qdrant-general",
    "qdrant-general-nobg",
    "qdrant-zfusion",
    "qdrant-rrf",
    "qdrant-dbsf-plain",
    "qdrant-lex-rrf",
    "qdrant-dbsf",
    "bm25",
    "bm25-turns",
    "dense",
    "dense-clean",
    "inmemory",
    "product",
    "product-inmemory",
)
_LABELS = {
    "qdrant": "QdrantStore + HybridRetriever (recipe)",
    "qdrant-fast": "QdrantStore + HybridRetriever (recipe, 30 candidates)",
    "qdrant-general": "recipe without its LoCoMo-fitted lifts",
    "qdrant-general-nobg": "recipe without LoCoMo lifts, no background drop",
    "qdrant-zfusion": "z-score fusion only (no lifts)",
    "qdrant-rrf": "QdrantStore hybrid, RRF (old default)",
    "qdrant-dbsf-plain": "QdrantStore hybrid, DBSF (default)",
    "qdrant-lex-rrf": "QdrantStore hybrid, lexical_fields, RRF",
    "qdrant-dbsf": "QdrantStore hybrid, lexical_fields, DBSF",
    "bm25": "BM25 only (date + context + turn)",
    "bm25-turns": "BM25 only (turn text)",
    "dense": "dense only (MiniLM, query as is)",
    "dense-clean": "dense only (background words dropped)",
    "inmemory": "InMemoryStore + HybridRetriever (recipe; no BM25 there)",
    "product": "product: import_history + Memory.recall, QdrantStore",
    "product-inmemory": "product: import_history + Memory.recall, InMemoryStore",
}


def _searchers(
    names: Sequence[str], embeddings: Embeddings, stack: ExitStack, *, qdrant_path: Path
) -> Iterator[tuple[str, BaseStore, Searcher]]:
    index: Any = {
        "dims": getattr(embeddings, "dims", None) or 384,
        "embed": embeddings,
        "fields": list(EMBEDDED_FIELDS),
    }
    qdrant: Any = None
    inmemory: Any = None
    if any(n in _PLAIN for n in names):
        from langmem_plugin.stores.qdrant import QdrantStore

        qdrant = stack.enter_context(QdrantStore(path=qdrant_path, index=index))
    lexical: Any = None
    if any(n.startswith(("qdrant", "bm25", "dense")) and n not in _PLAIN for n in names):
        from langmem_plugin.stores.qdrant import QdrantStore

        # the recipe's two signals in the engine: BM25 over date + context + content, dense over content
        lexical_index: Any = {**index, "lexical_fields": list(LOCOMO_LEXICAL_FIELDS)}
        lexical = stack.enter_context(
            QdrantStore(path=qdrant_path.with_name(qdrant_path.name + "-lexical"), index=lexical_index)
        )
    if "inmemory" in names:
        from langgraph.store.memory import InMemoryStore

        inmemory = InMemoryStore(index=index)
    for name in names:
        if name.startswith("product"):
            continue  # run by :func:`~langmem_plugin.bench.locomo_product.run_product`
        if name == "qdrant":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, LOCOMO_RETRIEVAL))
        elif name == "qdrant-fast":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, LOCOMO_RETRIEVAL_FAST))
        elif name in _ABLATIONS:
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, _ABLATIONS[name]))
        elif name == "qdrant-rrf":
            yield name, qdrant, _store_searcher(qdrant.with_search(fusion="rrf"))
        elif name == "qdrant-dbsf-plain":
            yield name, qdrant, _store_searcher(qdrant.with_search(fusion="dbsf"))
        elif name == "qdrant-lex-rrf":
            yield name, lexical, _store_searcher(lexical.with_search(fusion="rrf"))
        elif name == "qdrant-dbsf":
            yield name, lexical, _store_searcher(lexical.with_search(fusion="dbsf"))
        elif name == "bm25":
            yield (
                name,
                lexical,
                _retriever_searcher(HybridRetriever(lexical, RetrievalConfig(mode="lexical"))),
            )
        elif name == "bm25-turns":
            yield name, qdrant, _retriever_searcher(HybridRetriever(qdrant, RetrievalConfig(mode="lexical")))
        elif name == "dense":
            yield name, qdrant, _store_searcher(qdrant.with_search(mode="dense"))
        elif name == "dense-clean":
            yield name, lexical, _retriever_searcher(HybridRetriever(lexical, RetrievalConfig(mode="dense")))
        elif name == "inmemory":
            yield name, inmemory, _retriever_searcher(HybridRetriever(inmemory, LOCOMO_RETRIEVAL))
        else:
            raise ConfigurationError(f"unknown variant {name!r}; use some of {', '.join(VARIANTS)}")


def _around(turns: Sequence[Turn], i: int) -> tuple[Turn | None, Turn | None]:
    return (turns[i - 1] if i else None), (turns[i + 1] if i + 1 < len(turns) else None)


def _distinct_text_batches(ops: Sequence[PutOp]) -> Iterator[list[PutOp]]:
    """``ops`` cut into batches whose contents are distinct.

    LangGraph's InMemoryStore (langgraph 1.0) fails a batch in which two items have the
    same text ("Number of embeddings ... does not match number of indices"); LoCoMo repeats
    short turns ("Bye!") and sentences within a conversation.
    """
    batch: list[PutOp] = []
    seen: set[str] = set()
    for op in ops:
        value = op.value or {}
        metadata = value.get("metadata", {})
        texts = {str(value.get("content")), *(v for k, v in metadata.items() if k.startswith("part_"))}
        if not seen.isdisjoint(texts):
            yield batch
            batch, seen = [], set()
        batch.append(op)
        seen.update(texts)
    if batch:
        yield batch


def run_locomo_bench(
    data: str | Path,
    *,
    conversations: int | None = None,
    variants: Sequence[str] = VARIANTS,
    embeddings: Embeddings | None = None,
    progress: Callable[[str], None] | None = None,
) -> LocomoResult:
    """Run the benchmark over ``data`` (``locomo10.json``) and return its numbers.

    Args:
        data: the LoCoMo JSON file.
        conversations: only the first N conversations (default: all).
        variants: which rows to run (see :data:`VARIANTS`).
        embeddings: the embedder (default: the offline MiniLM).
        progress: called with a line of progress now and then.
    """
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ConfigurationError(f"unknown variant(s) {unknown}; use some of {', '.join(VARIANTS)}")
    samples = load_locomo(data)[:conversations]
    if embeddings is None:
        from langmem_plugin.core.embeddings import MiniLMEmbeddings

        embeddings = MiniLMEmbeddings().load()
    shared = _EmbedOnce(embeddings)
    say = progress or (lambda _line: None)
    results = [VariantResult(_LABELS[name]) for name in variants]
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="locomo-")))
        searchers = list(_searchers(variants, shared, stack, qdrant_path=tmp / "qdrant"))
        ranked = [r for name, r in zip(variants, results, strict=True) if not name.startswith("product")]
        stores = list({id(store): store for _, store, _ in searchers}.values())
        start = time.perf_counter()
        for conv in samples:
            namespace = ("locomo", conv.sample_id)
            ops = [
                PutOp(namespace, t.dia_id, turn_value(t, *_around(conv.turns, i)))
                for i, t in enumerate(conv.turns)
            ]
            for store in stores:
                for batch in _distinct_text_batches(ops):
                    store.batch(batch)
            say(f"stored {conv.sample_id}: {len(ops)} turns")
        load_seconds = time.perf_counter() - start
        embeddings.embed_query("warm-up")
        probe = [q.text for c in samples for q in c.questions][:200]
        embed_seconds = time_calls(embeddings.embed_query, probe)
        for (name, _, search), result in zip(searchers, ranked, strict=True):
            for n, conv in enumerate(samples):
                namespace = ("locomo", conv.sample_id)
                search(namespace, "warm-up query", max(KS))  # builds per-namespace indexes
                for question in conv.questions:
                    t0 = time.perf_counter()
                    values = search(namespace, question.text, max(KS))
                    result.seconds.append(time.perf_counter() - t0)
                    ids = [v.get("metadata", {}).get("dia_id") for v in values]
                    result.categories.append(question.category)
                    result.conversations.append(n)
                    for k in KS:
                        top = set(ids[:k])
                        found = sum(1 for e in question.evidence if e in top)
                        result.recall[k].append(found / len(question.evidence))
                        result.tokens[k].append(count_tokens(injected_text(values[:k]), model=TOKEN_MODEL))
            say(f"{name}: recall@10 {result.mean_recall(10):.1f}")
        for name, result in zip(variants, results, strict=True):
            if name.startswith("product"):
                from langmem_plugin.bench.locomo_product import run_product

                run_product(name, samples, result, embeddings, token_model=TOKEN_MODEL, ks=KS, say=say)
                say(f"{name}: evidence recall of what was injected {result.mean_recall(KS[0]):.1f}")
    full = [count_tokens(conversation_text(c), model=TOKEN_MODEL) for c in samples]
    return LocomoResult(
        variants=results,
        conversations=len(samples),
        questions=sum(len(c.questions) for c in samples),
        skipped=sum(c.skipped for c in samples),
        turns=sum(len(c.turns) for c in samples),
        full_tokens=sum(full) / len(full) if full else 0.0,
        load_seconds=load_seconds,
        embed_p50_ms=percentile(embed_seconds, 50) * 1000 if embed_seconds else float("nan"),
    )
