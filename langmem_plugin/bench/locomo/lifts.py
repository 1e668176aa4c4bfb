"""The LoCoMo recipe's own lift: how much a turn tells.

Benchmark code, written over the product's one extension point,
:class:`~langmem_plugin.services.recall.retrieval.Lift` (``RetrievalConfig(lifts=(...))``):
:class:`SalienceLift` adds to each candidate's fused score, in the fused score's units
(standard deviations of the signals), how much a memory tells rather than reacts or asks back
(:func:`~langmem_plugin.bench.locomo.salience.memory_salience`, a model fitted on LoCoMo
conversations 0-4, so it stays with the benchmark). The recipe's speaker and time lifts are
recall's own (``RetrievalConfig(speaker_weight=..., time_weight=...)``), at the recipe's weights.

>>> from langgraph.store.memory import InMemoryStore
>>> from langmem_plugin.services.recall.retrieval import HybridRetriever, RetrievalConfig
>>> from langmem_plugin.testing import FakeEmbeddings
>>> store = InMemoryStore(index={"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]})
>>> config = RetrievalConfig(lifts=(SalienceLift(weight=3.0),))
>>> store.put(("c",), "asks", {"content": "Jo: Wow, a puppy? What did you name the puppy?"})
>>> store.put(("c",), "tells", {"content": "Mel: We named our new puppy Max, he is a beagle."})
>>> [hit.key for hit in HybridRetriever(store, config).search(("c",), "What did Mel name the puppy?")]
['tells', 'asks']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import Item

from langmem_plugin.bench.locomo.salience import memory_salience

__all__ = ["SalienceLift"]


@dataclass(frozen=True)
class SalienceLift:
    """``weight`` times ``score(value)``: how much a memory is worth recalling whatever the query."""

    score: Callable[[Mapping[str, Any]], float] = memory_salience
    weight: float = 1.2

    def feature(self, item: Item) -> float:
        return float(self.score(item.value))

    def __call__(self, query: str, features: Sequence[float], scores: Sequence[float]) -> list[float]:
        weight = self.weight
        return [weight * salience for salience in features]
