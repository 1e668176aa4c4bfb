"""Recall: what memory the model sees before it answers.

- :mod:`.rank`: the recall steps: fill each compartment's namespace, search, lift, fit the
  token budgets and fence what is injected (:class:`RecallConfig`).
- :mod:`.answer`: what a recall gives back (:class:`Recall`, every candidate
  :class:`Considered`, :class:`TokenBudgets`).
- :mod:`.retrieval`: the hybrid candidate search (dense and lexical lists, the neighbour and
  session lifts) a store answers in one batch.
- :mod:`.fusion`: score fusion of the candidate lists.
- :mod:`.signals` and :mod:`.when`: the lifts from a time or a speaker the question names.
- :mod:`.passages`: long exchanges cut into passages and joined back.
- :mod:`.fit` and :mod:`.shape`: each section filled within its token budget
  (:class:`FitConfig`), a question that aggregates or hops given more and shorter items.
- :mod:`.pool`: the candidate search of a recall; :mod:`.features` and :mod:`.learned`: the
  learned ranker (``RecallConfig(ranker="learned")``) and what it reads of each candidate;
  :mod:`.rerank`: a reranker of the user's after it (``RecallConfig(reranker=...)``).

Other rooms import from here only (``tests/test_package.py`` pins it).
"""

from __future__ import annotations

from langmem_plugin.services.recall.answer import Considered, Recall, RecalledItem, TokenBudgets
from langmem_plugin.services.recall.features import FEATURES
from langmem_plugin.services.recall.fit import FIT_BEFORE, FIT_SHAPED, FitConfig
from langmem_plugin.services.recall.fusion import field_text
from langmem_plugin.services.recall.learned import LearnedRanker, tree_outputs
from langmem_plugin.services.recall.passages import Passage, join_passages, split_passages
from langmem_plugin.services.recall.pool import pool_steps
from langmem_plugin.services.recall.rank import (
    FENCE_CLOSE,
    FENCE_OPEN,
    RECALL_PRESETS,
    RecallConfig,
    query_from_state,
    recall_steps,
    run_section,
    search_candidates,
)
from langmem_plugin.services.recall.rerank import ChatModelReranker
from langmem_plugin.services.recall.retrieval import HybridRetriever, RetrievalConfig
from langmem_plugin.services.recall.shape import QuestionShape, question_shape

__all__ = [
    "FEATURES",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "FIT_BEFORE",
    "FIT_SHAPED",
    "RECALL_PRESETS",
    "ChatModelReranker",
    "Considered",
    "FitConfig",
    "HybridRetriever",
    "LearnedRanker",
    "Passage",
    "QuestionShape",
    "Recall",
    "RecallConfig",
    "RecalledItem",
    "RetrievalConfig",
    "TokenBudgets",
    "field_text",
    "join_passages",
    "pool_steps",
    "query_from_state",
    "question_shape",
    "recall_steps",
    "run_section",
    "search_candidates",
    "split_passages",
    "tree_outputs",
]
