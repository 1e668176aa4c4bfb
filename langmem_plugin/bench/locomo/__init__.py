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
   normalised (:func:`normalise_evidence`); a question whose evidence does not all
   name turns of its conversation is skipped and counted;
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

The ``product`` rows (``product``: ``Memory()``; ``product-qdrant``, ``-inmemory``,
``-sqlite``, ``-postgres``: one per store) take the path a user takes instead: each
conversation imported with ``Memory.import_history`` and each question recalled with
``Memory.recall`` and its defaults; they report the evidence recall and the tokens of what
recall *injects* (one number, no k) and the import's turns per second
(:mod:`langmem_plugin.bench.locomo.product`).

Every variant shares one embedder instance, and a document text is embedded once
per run (the stores ask for the same texts); queries are embedded on every search.

The same run takes REALTALK (real two-person chats by LoCoMo's authors, in LoCoMo's schema):
:func:`~langmem_plugin.bench.locomo.data.load_conversations` tells the sets apart by their shape,
and both are read by one loader and one evidence reading (:func:`normalise_evidence`); a result
prints its own set's categories. ``bench locomo --data A --data B`` runs several sets in one run
and ``bench realtalk`` defaults ``--data`` to the REALTALK folder beside the checkout
(:mod:`~langmem_plugin.bench.locomo.cli`); ``--embedder`` compares offline embedders side by side.

The benchmark is split by what each part does: the run (:func:`run_locomo_bench`) in
:mod:`~langmem_plugin.bench.locomo.run`; the data and what a turn is stored as in
:mod:`~langmem_plugin.bench.locomo.data`; the rows (the recipe, its ablations, a searcher per
row) in :mod:`~langmem_plugin.bench.locomo.variants`; the recipe's LoCoMo-fitted lifts and
salience model in :mod:`~langmem_plugin.bench.locomo.lifts` and
:mod:`~langmem_plugin.bench.locomo.salience`; the ``product`` rows in
:mod:`~langmem_plugin.bench.locomo.product`; the result tables in
:mod:`~langmem_plugin.bench.locomo.results`; the command lines in
:mod:`~langmem_plugin.bench.locomo.cli`. This package re-exports their public names.
"""

from __future__ import annotations

from langmem_plugin.bench.locomo.data import (
    CATEGORIES,
    MAX_PARTS,
    REALTALK_CATEGORIES,
    TOKEN_MODEL,
    Conversation,
    Dataset,
    Evidence,
    Question,
    Turn,
    conversation_text,
    injected_text,
    load_conversations,
    load_locomo,
    load_realtalk,
    normalise_evidence,
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
    "REALTALK_CATEGORIES",
    "TOKEN_MODEL",
    "TUNING",
    "VARIANTS",
    "Conversation",
    "Dataset",
    "Evidence",
    "LocomoResult",
    "Question",
    "Searcher",
    "Turn",
    "VariantResult",
    "conversation_text",
    "injected_text",
    "load_conversations",
    "load_locomo",
    "load_realtalk",
    "normalise_evidence",
    "run_locomo_bench",
    "sentences",
    "turn_value",
]
