"""Helpers for tests — yours and ours. Not for production use.

:class:`FakeEmbeddings` is deterministic and fast: each word (lowercased, with a
crude plural strip) is hashed to a few dimensions with signs, and the sum is
L2-normalised, so texts that share words are similar and the same text always
gets the same vector. It knows nothing of meaning: use the real default
embedder (:class:`~langmem_plugin.MiniLMEmbeddings`) to test semantics.

>>> emb = FakeEmbeddings()
>>> a, b, c = emb.embed_documents(["green tea", "I like green tea", "tax deadline"])
>>> sum(x * y for x, y in zip(a, b)) > sum(x * y for x, y in zip(a, c))
True
"""

from __future__ import annotations

import hashlib
import math
import re

from langchain_core.embeddings import Embeddings

__all__ = ["FakeEmbeddings"]

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbeddings(Embeddings):
    """Hashed bag-of-words vectors: deterministic, no model, for unit tests only."""

    def __init__(self, dims: int = 256, *, hashes_per_word: int = 2) -> None:
        if dims < 2:
            raise ValueError(f"dims must be at least 2, got {dims}")
        self.dims = dims
        self.hashes_per_word = hashes_per_word

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            if len(word) > 3 and word.endswith("s"):
                word = word[:-1]
            digest = hashlib.blake2b(word.encode(), digest_size=4 * self.hashes_per_word).digest()
            for i in range(self.hashes_per_word):
                h = int.from_bytes(digest[4 * i : 4 * i + 4], "little")
                vector[h % self.dims] += 1.0 if (h >> 31) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)
