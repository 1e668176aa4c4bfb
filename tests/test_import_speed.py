"""What an import costs the embedder (issue 39 item 1): a long exchange's head is not embedded
beside the passage that already covers it, and what recall finds of it does not change."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from langmem_plugin import Memory
from langmem_plugin.core import embeddings as module
from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.core.scope import Scope
from langmem_plugin.services.remember.episodes import LEAD_FIELD, passage_key

ANSWER = " ".join(
    f"Step {n}: water the {plant} {n % 3 + 1} times a week and keep it out of direct sun."
    for n, plant in enumerate(["fern", "basil", "orchid", "cactus", "ivy", "mint"] * 12)
)


@pytest.fixture
def rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The texts the ONNX model runs, counted (the real model runs them)."""
    counted: list[int] = []
    real = module.run_model

    def counting(model: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        counted.append(len(ids))
        return real(model, ids, mask)

    monkeypatch.setattr(module, "run_model", counting)
    return counted


def test_a_long_exchange_costs_one_embedding_per_passage(rows: list[int], minilm: MiniLMEmbeddings) -> None:
    history = [("user", "How do I look after my plants?"), ("assistant", ANSWER)]
    config: Any = {"configurable": {"user_id": "u1", "thread_id": "t1"}}
    with Memory(embeddings=MiniLMEmbeddings()) as memory:
        rows.clear()
        report = memory.import_history(history, config)
        assert report.passages > 3
        assert sum(rows) == report.passages  # the head rode on its first passage's vector
        namespace = memory.layout.namespace("user", Scope(user_id="u1"))
        items = memory.store.search(namespace, limit=100)
        (head,) = [
            i for i in items if "passages" in i.value["metadata"] and "episode" not in i.value["metadata"]
        ]
        first = memory.store.get(namespace, passage_key(head.key, 0))
        assert first is not None
        lead = head.value["metadata"][LEAD_FIELD.removeprefix("metadata.")]
        assert lead != first.value["content"]
        assert lead == " ".join(first.value["content"].split())
        np.testing.assert_allclose(
            minilm.embed_query(lead), minilm.embed_query(first.value["content"]), atol=1e-6
        )
        # recall still finds the exchange by what only its head's passage says, and by a later step
        for question in ("How do I look after my plants?", "how often to water the orchid, step 62?"):
            recall = memory.recall(question, {"configurable": {"user_id": "u1", "thread_id": "other"}})
            found = [i.id for i in recall.items if i.section == "memories"]
            assert any(k == head.key or k.startswith(f"{head.key}-p") for k in found), (question, found)
