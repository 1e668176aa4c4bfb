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

This module runs the benchmark (:func:`run_locomo_bench`) and re-exports the names of the
modules it is split into: the data and what a turn is stored as in
:mod:`~langmem_plugin.bench.locomo_data`, the rows (the recipe, its ablations, a searcher per
row) in :mod:`~langmem_plugin.bench.locomo_variants`, the result tables in
:mod:`~langmem_plugin.bench.locomo_results`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langmem_plugin.bench.locomo_data import (
    CATEGORIES,
    MAX_PARTS,
    TOKEN_MODEL,
    Conversation,
    Question,
    Turn,
    conversation_text,
    injected_text,
    load_locomo,
    parse_evidence,
    sentences,
    turn_value,
)
from langmem_plugin.bench.locomo_results import KS, TUNING, LocomoResult, VariantResult
from langmem_plugin.bench.locomo_variants import (
    _LABELS,
    EMBEDDED_FIELDS,
    LOCOMO_LEXICAL_FIELDS,
    LOCOMO_RETRIEVAL,
    LOCOMO_RETRIEVAL_FAST,
    VARIANTS,
    Searcher,
    _EmbedOnce,
    _searchers,
)
from langmem_plugin.bench.report import percentile, time_calls
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError

__all__ = [
    "CATEGORIES",
    "EMBEDDED_FIELDS",
    "KS",
    "LOCOMO_LEXICAL_FIELDS",
    "LOCOMO_RETRIEVAL",
    "LOCOMO_RETRIEVAL_FAST",
    "MAX_PARTS",
    "TOKEN_MODEL",
    "TUNING",
    "VARIANTS",
    "Conversation",
    "LocomoResult",
    "Question",
    "Searcher",
    "Turn",
    "VariantResult",
    "conversation_text",
    "injected_text",
    "load_locomo",
    "parse_evidence",
    "run_locomo_bench",
    "sentences",
    "turn_value",
]

# ---------------------------------------------------------------------------- the run


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
