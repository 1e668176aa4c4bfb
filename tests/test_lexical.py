from __future__ import annotations

import random
import threading

import numpy as np
import qdrant_edge
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plugin.core.lexical import BM25Encoder, BM25Index, SparseVector
from langmem_plugin.stores.checkpointer._state import SlotBM25Index


def test_encoder_stems_and_drops_stopwords() -> None:
    enc = BM25Encoder()
    doc = enc.encode_document("The dogs were running in the park")
    assert set(enc.encode_query("dog run park").indices) <= set(doc.indices)
    assert enc.encode_query("the were in").indices == ()


def test_query_weights_are_one_and_documents_saturate() -> None:
    enc = BM25Encoder()
    assert set(enc.encode_query("tea tea coffee").values) == {1.0}
    once = enc.encode_document("tea").as_dict()
    thrice = enc.encode_document("tea tea tea").as_dict()
    (term,) = once
    assert once[term] < thrice[term] < 3 * once[term]


def test_same_ids_as_the_engine() -> None:
    ours = BM25Encoder().encode_document("Caroline went to a support group")
    engine = qdrant_edge.Bm25(qdrant_edge.Bm25Config(k=1.2, b=0.75, avg_len=32.0, language="english"))
    theirs = engine.embed_document("Caroline went to a support group")
    assert ours == SparseVector(tuple(theirs.indices), tuple(theirs.values))


def test_index_ranks_by_bm25_with_idf() -> None:
    index = BM25Index()
    index.add("a", "Melanie painted a sunset over the lake")
    index.add("b", "Melanie went to the lake")
    index.add("c", "Melanie signed up for a pottery class")
    ranked = [key for key, _ in index.search("sunset painting")]
    assert ranked == ["a"]
    scores = index.scores("Melanie lake")
    assert set(scores) == {"a", "b", "c"}
    # "lake" is rarer than "Melanie", so the two lake documents win; the shorter one first
    assert max(scores, key=scores.__getitem__) == "b"


def test_index_replace_remove_and_restrict() -> None:
    index = BM25Index()
    index.add_many([("a", "green tea"), ("b", "black coffee")])
    index.add("a", "espresso coffee")
    assert [k for k, _ in index.search("tea")] == []
    assert {k for k, _ in index.search("coffee")} == {"a", "b"}
    assert [k for k, _ in index.search("coffee", keys=["b"])] == ["b"]
    index.remove("b")
    index.remove("missing")
    assert "b" not in index
    assert len(index) == 1
    assert index.search("coffee", limit=5)[0][0] == "a"


def test_index_is_thread_safe() -> None:
    index = BM25Index()

    def writer(start: int) -> None:
        for i in range(start, start + 200):
            index.add(i, f"memory number {i} about tea")

    threads = [threading.Thread(target=writer, args=(n * 200,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(index) == 800
    assert len(index.search("tea", limit=1000)) == 800


def test_doc_freq_counts_the_documents_holding_a_term() -> None:
    index = BM25Index()
    index.add("a", "Caroline went hiking")
    index.add("b", "Caroline paints")
    index.add("c", "Melanie paints and hikes")
    caroline, paint = (index.encoder.encode_query(w).indices[0] for w in ("Caroline", "painting"))
    assert (index.doc_freq(caroline), index.doc_freq(paint)) == (2, 2)
    index.remove("b")
    assert (index.doc_freq(caroline), index.doc_freq(paint)) == (1, 1)
    assert index.doc_freq(12345) == 0


def _best(scores: dict[object, float], limit: int) -> list[float]:
    return sorted(scores.values(), reverse=True)[:limit]


def test_top_is_the_best_of_scores_through_adds_replaces_and_removes() -> None:
    rng = random.Random(7)
    words = [f"w{n}" for n in range(40)]
    index = BM25Index()
    queries = [" ".join(rng.sample(words, 3)) for _ in range(25)]

    def check() -> None:
        keys = sorted(k for k in range(300) if k in index)[::3]
        for query in queries:
            for limit in (1, 5, 50, 1000):
                scores, top = index.scores(query), index.top(query, limit)
                assert len(top) == min(limit, len(scores))
                assert all(top[k] == scores[k] for k in top)  # the same floats, not just close
                assert sorted(top.values(), reverse=True) == _best(scores, limit)
            restricted = index.scores(query, keys=keys)
            assert index.top(query, 10, keys=keys).keys() <= restricted.keys()
            assert sorted(index.top(query, 10, keys=keys).values(), reverse=True) == _best(restricted, 10)

    for key in range(300):
        index.add(key, " ".join(rng.choices(words, k=rng.randint(1, 12))))
    check()
    for key in rng.sample(range(300), 250):  # leaves holes in the score array, then renumbers them
        index.remove(key)
    check()
    for key in range(0, 300, 2):  # re-adds removed keys and replaces kept ones
        index.add(key, " ".join(rng.choices(words, k=rng.randint(1, 12))))
    check()
    assert index.top("nothing matches this", 10) == {}
    assert index.top(queries[0], 0) == {}


def test_top_breaks_ties_at_the_cut_by_indexing_order() -> None:
    index = BM25Index()
    index.add_many([(n, "green tea") for n in range(10)])
    assert sorted(index.top("tea", 3)) == [0, 1, 2]


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(
        st.lists(st.sampled_from([f"w{n}" for n in range(12)]), max_size=8), min_size=1, max_size=40
    ),
    chosen=st.sets(st.integers(0, 45)),
    query=st.lists(st.sampled_from([f"w{n}" for n in range(14)]), min_size=1, max_size=5),
)
def test_scores_of_some_keys_are_the_whole_index_scores_of_those_keys(
    docs: list[list[str]], chosen: set[int], query: list[str]
) -> None:
    # One user's documents among everyone's: scoring only theirs walks their keys or a term's
    # posting, whichever is shorter, and gives the very floats the whole index gives them.
    index = SlotBM25Index()
    for key, words in enumerate(docs):
        index.add(key, " ".join(words))
    text = " ".join(query)
    everyone = index.scores(text)
    assert index.scores(text, chosen) == {k: v for k, v in everyone.items() if k in chosen}
    slots = np.array(sorted(chosen), dtype=np.int64)
    mask = np.zeros(64, dtype=bool)
    mask[slots] = True
    terms = index.encoder.encode_query(text).indices
    total, freqs = index.doc_freqs(terms, slots)
    assert total == sum(1 for key in range(len(docs)) if mask[key] and key in index)
    for term in terms:
        holding = [key for key in range(len(docs)) if mask[key] and term in index._docs.get(key, ())]
        assert freqs.get(term, 0) == len(holding)
