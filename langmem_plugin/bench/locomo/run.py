"""The run of ``bench locomo``: store every conversation in each row's store, search every question.

:func:`run_locomo_bench` is what ``langmem-plugin bench locomo`` and ``bench realtalk`` call, once
per set; what it measures is described in :mod:`langmem_plugin.bench.locomo`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langmem_plugin.bench.locomo.data import (
    TOKEN_MODEL,
    Turn,
    chosen,
    conversation_text,
    injected_text,
    load_conversations,
    turn_value,
)
from langmem_plugin.bench.locomo.misses import MissTable
from langmem_plugin.bench.locomo.results import KS, LocomoResult, VariantResult
from langmem_plugin.bench.locomo.variants import _LABELS, ALL_VARIANTS, VARIANTS, _EmbedOnce, _searchers
from langmem_plugin.bench.report import percentile, time_calls
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import ConfigurationError

__all__ = ["run_locomo_bench"]


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
    conversations: int | str | None = None,
    variants: Sequence[str] = VARIANTS,
    embeddings: Embeddings | None = None,
    progress: Callable[[str], None] | None = None,
    misses: bool = False,
) -> LocomoResult:
    """Run the benchmark over ``data`` and return its numbers.

    Args:
        data: ``locomo10.json`` (LoCoMo), or the REALTALK folder or one of its chat files
            (:func:`~langmem_plugin.bench.locomo.data.load_conversations` tells them apart).
        conversations: only the first N conversations, or ``"FIRST-LAST"`` (0-based, e.g. the
            held-out ``"5-9"``; :func:`~langmem_plugin.bench.locomo.data.chosen`); default all.
        variants: which rows to run (see :data:`VARIANTS`).
        embeddings: the embedder (default: the offline default,
            :func:`~langmem_plugin.core.embeddings.resolve_embeddings`).
        progress: called with a line of progress now and then.
        misses: also measure where the ``product`` row's misses are and what an oracle ranking of
            its candidate pool would inject (:attr:`LocomoResult.misses`,
            :mod:`~langmem_plugin.bench.locomo.misses`); needs ``"product"`` among ``variants``.
    """
    unknown = [v for v in variants if v not in ALL_VARIANTS]
    if unknown:
        raise ConfigurationError(f"unknown variant(s) {unknown}; use some of {', '.join(ALL_VARIANTS)}")
    if misses and "product" not in variants:
        raise ConfigurationError(
            f"misses=True measures the product row, which variants={list(variants)} leaves out. "
            "Fix: add 'product' (on the command line: --variants product --misses)"
        )
    if {"product-postgres", "product-langgraph-postgres"} & set(
        variants
    ):  # its server first: a run never ends on a missing one
        from langmem_plugin.bench.locomo.product import postgres_url

        postgres_url()
    dataset = load_conversations(data)
    table = MissTable(dataset.name, dict(dataset.categories)) if misses else None
    samples = chosen(dataset.conversations, conversations)
    if embeddings is None:
        from langmem_plugin.core.embeddings import resolve_embeddings

        embeddings = resolve_embeddings()
    load = getattr(embeddings, "load", None)
    if callable(load):
        load()
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
        product = [(name, r) for name, r in zip(variants, results, strict=True) if name.startswith("product")]
        if product:
            from langmem_plugin.bench.locomo.product import run_product

            names, rows = [name for name, _ in product], [r for _, r in product]
            run_product(
                names, samples, rows, embeddings, token_model=TOKEN_MODEL, ks=KS, say=say, misses=table
            )
            for name, result in product:
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
        dataset=dataset.name,
        categories=dict(dataset.categories),
        embedder=_embedder_name(embeddings),
        misses=table,
    )


def _embedder_name(embeddings: Embeddings) -> str:
    from langmem_plugin.core.embeddings import embedder_id

    return embedder_id(embeddings) or type(embeddings).__name__
