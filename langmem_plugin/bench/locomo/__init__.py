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
than reacts or asks back (its salience, :mod:`langmem_plugin.bench.locomo.salience`,
scored from the turn's text alone) (:data:`LOCOMO_RETRIEVAL`; the last three are
:mod:`langmem_plugin.bench.locomo.lifts`, over the retriever's ``lifts`` hook). Its weights
were tuned on conversations 0-4; report 5-9 apart (:meth:`LocomoResult.only`)
to see what tuning bought.

The ``product`` rows (``product``: embedded QdrantStore, ``product-inmemory``: InMemoryStore)
take the path a user takes instead: each conversation imported with ``Memory.import_history``
and each question recalled with ``Memory.recall`` and its defaults; they report the evidence
recall and the tokens of what recall *injects* (one number, no k) and the import's turns per
second (:mod:`langmem_plugin.bench.locomo.product`).

Every variant shares one embedder instance, and a document text is embedded once
per run (the stores ask for the same texts); queries are embedded on every search.

The benchmark is split by what each part does: the run (:func:`run_locomo_bench`) in
:mod:`~langmem_plugin.bench.locomo.run`; the data and what a turn is stored as in
:mod:`~langmem_plugin.bench.locomo.data`; the rows (the recipe, its ablations, a searcher per
row) in :mod:`~langmem_plugin.bench.locomo.variants`; the recipe's LoCoMo-fitted lifts and
salience model in :mod:`~langmem_plugin.bench.locomo.lifts` and
:mod:`~langmem_plugin.bench.locomo.salience`; the ``product`` rows in
:mod:`~langmem_plugin.bench.locomo.product`; the result tables in
:mod:`~langmem_plugin.bench.locomo.results`. This package re-exports their public names.
"""

from __future__ import annotations

from langmem_plugin.bench.locomo.data import (
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
from langmem_plugin.bench.locomo.results import KS, TUNING, LocomoResult, VariantResult
from langmem_plugin.bench.locomo.run import run_locomo_bench
from langmem_plugin.bench.locomo.variants import (
    EMBEDDED_FIELDS,
    LOCOMO_LEXICAL_FIELDS,
    LOCOMO_RETRIEVAL,
    LOCOMO_RETRIEVAL_FAST,
    VARIANTS,
    Searcher,
)

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
