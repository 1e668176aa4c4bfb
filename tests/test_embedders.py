"""The offline embedders the benchmarks compare, and what names the model behind a store's vectors."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langmem_plugin.core.embeddings import (
    DEFAULT_EMBEDDINGS,
    INT8_EMBEDDINGS,
    LOCAL_EMBEDDERS,
    MiniLMEmbeddings,
    embedder_id,
    local_embeddings,
)
from langmem_plugin.errors import UnknownEmbeddingsError
from langmem_plugin.testing import FakeEmbeddings


def test_an_unknown_offline_embedder_is_a_typed_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownEmbeddingsError, match=r"'bge-small-en-v1\.5'") as caught:
        local_embeddings("bge-small-en-v1.5")
    for name in LOCAL_EMBEDDERS:
        assert repr(name) in str(caught.value)


def test_the_float_and_int8_minilm_are_one_model_and_two_embedders() -> None:
    pytest.importorskip("onnx")  # the int8 extra
    texts = ["When did Ann start pottery classes?", "Bo adopted a puppy named Biscuit."]
    float_, int8 = (local_embeddings(name) for name in ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"))
    assert isinstance(float_, MiniLMEmbeddings)
    assert not float_.quantized
    assert isinstance(int8, MiniLMEmbeddings)
    assert int8.quantized
    a, b = np.array(float_.embed_documents(texts)), np.array(int8.embed_documents(texts))
    assert a.shape == b.shape == (2, 384)
    assert np.all((a * b).sum(axis=1) > 0.97)  # unit vectors: the cosine
    # the same model, but not the same vectors: a store written with one refuses the other
    # (tests/test_embedder_identity.py), so each has its own name, a spec string of its own
    assert embedder_id(float_) == DEFAULT_EMBEDDINGS
    assert embedder_id(int8) == INT8_EMBEDDINGS == "local:all-MiniLM-L6-v2-int8"


class _Named(Embeddings):
    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0]


def test_what_names_an_embedders_model() -> None:
    assert embedder_id(None) is None
    assert embedder_id(FakeEmbeddings(8)) == "testing:FakeEmbeddings(hashes_per_word=2)"  # it declares one
    assert embedder_id(_Named(model="text-embedding-3-small")) == "_Named:text-embedding-3-small"
    assert embedder_id(_Named(model_name="BAAI/bge-small-en-v1.5")) == "_Named:BAAI/bge-small-en-v1.5"
    # what an object declares wins
    assert embedder_id(_Named(embedder_id="mine:v2", model="other")) == "mine:v2"
    assert embedder_id(_Named(model="")) is None
