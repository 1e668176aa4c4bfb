"""HybridRetriever over real stores: the store's candidate lists, fused in one place.

Embedded QdrantStore (dense + BM25 candidates), and LangGraph's InMemoryStore (no
candidate lists: its own search is the dense list, with no lexical one).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin.bench.locomo.lifts import SalienceLift
from langmem_plugin.core.candidates import CandidateStore
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.recall.retrieval import HybridRetriever, RetrievalConfig
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings
from tests.memory_fixtures import RecordingEmbeddings

NS = ("users", "u1")
LEXICAL_FIELDS = ["metadata.context", "content"]


def memory_store(embeddings: Embeddings | None = None) -> InMemoryStore:
    return InMemoryStore(index={"dims": 64, "embed": embeddings or FakeEmbeddings(64), "fields": ["content"]})


@contextmanager
def qdrant(
    embeddings: Embeddings | None = None, *, lexical_fields: list[str] | None = None
) -> Iterator[QdrantStore]:
    index: Any = {
        "dims": 64,
        "embed": embeddings or FakeEmbeddings(64),
        "fields": ["content"],
        "lexical_fields": lexical_fields or LEXICAL_FIELDS,
    }
    with QdrantStore(":memory:", index=index) as store:
        yield store


@pytest.fixture
def store() -> Iterator[QdrantStore]:
    with qdrant() as opened:
        yield opened


DOCS = {
    "tea": {"content": "Prefers green tea in the morning", "metadata": {"context": "What do you drink?"}},
    "tax": {"content": "The tax deadline is in April", "metadata": {"context": "Any paperwork due?"}},
    "dog": {"content": "Adopted a puppy named Biscuit", "metadata": {"context": "Any news about pets?"}},
    "run": {"content": "Training for the Boston marathon", "metadata": {"context": "Sports this year?"}},
}


def fill(store: Any, docs: dict[str, dict[str, Any]], namespace: tuple[str, ...] = NS) -> Any:
    for key, value in docs.items():
        store.put(namespace, key, value)
    return store


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_each_mode_finds_the_matching_memory(store: QdrantStore, mode: str) -> None:
    retriever = HybridRetriever(fill(store, DOCS), RetrievalConfig(mode=mode))  # type: ignore[arg-type]
    hits = retriever.search(NS, "when is the tax deadline", limit=2)
    assert hits[0].key == "tax"
    assert hits[0].value == DOCS["tax"]
    assert hits[0].namespace == NS
    if mode == "lexical":
        assert hits[0].dense_score is None
        assert hits[0].lexical_score is not None
    if mode == "dense":
        assert hits[0].lexical_score is None
        assert hits[0].dense_score is not None
    if mode == "hybrid":
        assert hits[0].dense_score is not None
        assert hits[0].lexical_score is not None
        assert hits[0].score > hits[1].score


def test_the_stores_lexical_fields_make_context_searchable_without_embedding_it() -> None:
    lexical = RetrievalConfig(mode="lexical")
    with qdrant() as store:
        assert [h.key for h in HybridRetriever(fill(store, DOCS), lexical).search(NS, "paperwork")] == ["tax"]
    with qdrant(lexical_fields=["content"]) as store:
        assert HybridRetriever(fill(store, DOCS), lexical).search(NS, "paperwork") == []


def test_hybrid_ranks_a_lexical_only_match_into_the_results(store: QdrantStore) -> None:
    """A word only BM25 sees (in the context field) still lifts its memory to the top in hybrid mode."""
    hits = HybridRetriever(fill(store, DOCS)).search(NS, "pets", limit=4)
    assert hits[0].key == "dog"
    assert hits[0].lexical_score is not None
    assert hits[0].lexical_score > 0
    assert {h.key for h in hits} == set(DOCS)  # the dense list brings every candidate


def test_background_words_are_dropped_from_the_embedded_query() -> None:
    embeddings = RecordingEmbeddings()
    with qdrant(embeddings) as store:
        for i in range(20):
            store.put(NS, f"k{i}", {"content": f"Caroline: note number {i} about topic{i}"})
        store.put(NS, "pottery", {"content": "Melanie: I signed up for a pottery class"})
        retriever = HybridRetriever(store, RetrievalConfig(background_min_docs=10))
        hits = retriever.search(NS, "When did Caroline sign up for pottery?", limit=3)
        assert hits[0].key == "pottery"
        assert embeddings.queries[-1] == "When did sign up for pottery?"
        keep = HybridRetriever(store, RetrievalConfig(background_df=None))
        keep.search(NS, "When did Caroline sign up for pottery?")
        assert embeddings.queries[-1] == "When did Caroline sign up for pottery?"


def test_small_namespaces_keep_the_whole_query() -> None:
    embeddings = RecordingEmbeddings()
    with qdrant(embeddings) as store:
        HybridRetriever(fill(store, DOCS)).search(NS, "green tea please")
        assert embeddings.queries[-1] == "green tea please"


def test_neighbours_lift_the_turn_next_to_a_strong_match() -> None:
    """An answer ("Yes, it is sunny here") shares no word with the question; the turn before it does."""
    turns = {
        "t1": ("Where did you move last spring?", "t2"),
        "t2": ("Yes, it is sunny here", "t1 t3"),
        "t3": ("I love the weather there", "t2"),
        **{f"x{i}": (f"where did you put cooking pot {i}", "") for i in range(6)},
    }
    docs = {
        key: {"content": text, "metadata": {"neighbours": around}} for key, (text, around) in turns.items()
    }
    plain = lifted_ranking(RetrievalConfig(neighbour_weight=0.0), docs, "where did you move")
    lifted = lifted_ranking(RetrievalConfig(neighbour_weight=1.0), docs, "where did you move")
    assert plain[0] == lifted[0] == "t1"
    assert lifted.index("t2") < plain.index("t2")
    assert lifted.index("t2") == 1


def test_the_thread_is_the_group_when_there_is_no_session(store: QdrantStore) -> None:
    docs = {
        "lone": {"content": "we went hiking in the alps", "metadata": {"thread_id": "a"}},
        "mid": {"content": "we went hiking in the alps", "metadata": {"thread_id": "b"}},
        "near": {"content": "hiking the alps in june", "metadata": {"thread_id": "b"}},
        **{
            f"x{i}": {"content": f"grocery list item {i}", "metadata": {"thread_id": f"t{i}"}}
            for i in range(8)
        },
    }
    ranked = [h.key for h in HybridRetriever(fill(store, docs)).search(NS, "hiking in the alps", limit=11)]
    assert ranked.index("mid") < ranked.index("lone")


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_write_is_seen_by_the_next_search_there_is_no_copy(store: QdrantStore, mode: str) -> None:
    retriever = HybridRetriever(fill(store, DOCS), RetrievalConfig(mode="lexical"))

    async def search(query: str) -> list[str]:
        hits = retriever.search(NS, query) if mode == "sync" else await retriever.asearch(NS, query)
        return [h.key for h in hits]

    assert await search("Luna") == []
    store.put(NS, "cat", {"content": "Has a cat called Luna"})
    assert await search("Luna") == ["cat"]
    store.put(NS, "cat", {"content": "Switched to a dog"})
    assert await search("Luna") == []
    store.delete(NS, "run")
    assert await search("marathon") == []


def test_prefix_search_spans_namespaces_and_respects_filters(store: QdrantStore) -> None:
    store.put(("users", "u1"), "a", {"content": "likes jazz music", "kind": "fact"})
    store.put(("users", "u2"), "b", {"content": "likes jazz concerts", "kind": "episode"})
    store.put(("other",), "c", {"content": "jazz jazz jazz", "kind": "fact"})
    retriever = HybridRetriever(store)
    hits = retriever.search(("users",), "jazz", limit=5)
    assert {(h.namespace, h.key) for h in hits} == {(("users", "u1"), "a"), (("users", "u2"), "b")}
    filtered = retriever.search(("users",), "jazz", limit=5, filter={"kind": "episode"})
    assert [h.key for h in filtered] == ["b"]


async def test_async_search_matches_sync(store: QdrantStore) -> None:
    retriever = HybridRetriever(fill(store, DOCS))
    sync = retriever.search(NS, "puppy Biscuit", limit=3)
    asynchronous = await retriever.asearch(NS, "puppy Biscuit", limit=3)
    assert [h.key for h in sync] == [h.key for h in asynchronous]
    assert [h.score for h in sync] == pytest.approx([h.score for h in asynchronous])


def test_embedded_qdrant_answers_candidate_lists(tmp_path: Path) -> None:
    index: Any = {"dims": 64, "embed": FakeEmbeddings(64), "fields": ["content"]}
    with QdrantStore(tmp_path / "q", index=index) as store:
        assert isinstance(store, CandidateStore)
        hits = HybridRetriever(fill(store, DOCS)).search(NS, "Biscuit the puppy", limit=2)
        assert hits[0].key == "dog"
        assert hits[0].dense_score is not None
        assert hits[0].lexical_score is not None


def test_a_store_without_candidate_lists_falls_back_to_its_own_search_as_the_dense_list() -> None:
    plain: BaseStore = fill(memory_store(), DOCS)
    assert not isinstance(plain, CandidateStore)
    hits = HybridRetriever(plain).search(NS, "Biscuit the puppy", limit=4)
    assert hits[0].key == "dog"
    assert all(h.lexical_score is None and h.dense_score is not None for h in hits)
    assert HybridRetriever(plain, RetrievalConfig(mode="lexical")).search(NS, "Biscuit") == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"mode": "fuzzy"}, "mode"),
        ({"dense_weight": 1.5}, "dense_weight"),
        ({"candidates": 0}, "candidates"),
        ({"background_df": 0.0}, "background_df"),
        ({"neighbour_weight": 0.5, "neighbours_field": None}, "neighbours_field"),
        ({"neighbour_weight": -1.0, "neighbours_field": "n"}, "neighbour_weight"),
        ({"group_weight": 0.5, "group_fields": ()}, "group_fields"),
        ({"group_fields": "metadata.session"}, "group_fields"),
        ({"group_weight": -0.5}, "group_weight"),
        ({"group_top": 0}, "group_top"),
        ({"lifts": SalienceLift()}, "lifts must be a tuple"),
        ({"lifts": (lambda query, features, scores: scores,)}, "feature"),
        ({"lifts": (0.5,)}, "lifts must be a tuple of Lift"),
    ],
)
def test_bad_config_is_a_typed_error(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        RetrievalConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [memory_store, None])
def test_bad_calls_are_typed_errors(make: Any) -> None:
    with qdrant() as opened:
        retriever = HybridRetriever(make() if make else opened)
        with pytest.raises(ConfigurationError, match="query"):
            retriever.search(NS, "   ")
        with pytest.raises(ConfigurationError, match="limit"):
            retriever.search(NS, "tea", limit=0)
        with pytest.raises(ConfigurationError, match="namespace_prefix"):
            retriever.search("users", "tea")


def test_a_pool_without_spread_still_lifts_its_members() -> None:
    from langmem_plugin.services.recall.fusion import zscores

    # one lexical match (a rare name): it must stand above the candidates BM25 did not find
    a, b, c = zscores({"a": 3.2}, ["a", "b", "c"])
    assert a > b == c
    a, b, c = zscores({"a": 1.0, "b": 1.0}, ["a", "b", "c"])
    assert a == b > c
    a, b, c = zscores({"a": 2.0, "b": 1.0}, ["a", "b", "c"])
    assert a > b == c
    assert zscores({}, ["a"]) == [0.0]


def lifted_ranking(config: RetrievalConfig, docs: dict[str, dict[str, Any]], query: str) -> list[str]:
    with qdrant() as store:
        retriever = HybridRetriever(fill(store, docs), config)
        return [h.key for h in retriever.search(NS, query, limit=len(docs))]


def test_a_memory_from_the_person_the_query_names_is_lifted() -> None:
    docs = {
        "ann": {
            "content": "I adopted a puppy from the shelter last week",
            "metadata": {"speaker": "Ann Lee"},
        },
        "bob": {"content": "I adopted a puppy", "metadata": {"speaker": "Bob"}},
        "tax": {"content": "The tax deadline is in April", "metadata": {"speaker": "Bob"}},
    }
    query = "When did Ann adopt a puppy?"
    plain = lifted_ranking(RetrievalConfig(speaker_weight=0.0), docs, query)
    lifted = lifted_ranking(RetrievalConfig(speaker_weight=2.0), docs, query)
    assert plain[0] == "bob"  # the same words in a shorter text: BM25 prefers it
    assert lifted[0] == "ann"
    named_bob = lifted_ranking(RetrievalConfig(speaker_weight=2.0), docs, "When did bob adopt a puppy?")
    assert named_bob[0] == "bob"  # case and possessives do not matter: BM25's tokens are compared


def test_a_memory_that_tells_outranks_one_that_asks_back_with_salience() -> None:
    docs = {
        "asks": {"content": "Jo: Wow, a pottery class? What did you make at the pottery class?"},
        "tells": {"content": "Mel: I made a black and white bowl in my pottery class, my first one."},
        "tax": {"content": "Mel: The tax deadline is in April"},
    }
    query = "What did Mel make at the pottery class?"
    plain = lifted_ranking(RetrievalConfig(), docs, query)
    lifted = lifted_ranking(RetrievalConfig(lifts=(SalienceLift(weight=1.0),)), docs, query)
    assert plain[0] == "asks"  # every word of the question, twice
    assert lifted[0] == "tells"
    assert lifted[-1] == "tax"  # salience reorders matches; it does not pull in a non-match


def test_a_salience_function_that_returns_nan_is_a_typed_error() -> None:
    config = RetrievalConfig(lifts=(SalienceLift(lambda value: float("nan"), weight=1.0),))
    with pytest.raises(ConfigurationError, match="finite number"):
        lifted_ranking(config, DOCS, "green tea")


class Recorded:
    """A lift that records what it was given and adds a fixed amount to one key."""

    def __init__(self, key: str, amount: float) -> None:
        self.key, self.amount = key, amount
        self.read: list[str] = []
        self.calls: list[tuple[str, list[str], list[float]]] = []

    def feature(self, item: Any) -> str:
        self.read.append(item.key)
        return str(item.key)

    def __call__(self, query: str, features: Any, scores: Any) -> list[float]:
        self.calls.append((query, list(features), list(scores)))
        return [self.amount if key == self.key else 0.0 for key in features]


def test_a_lift_reads_each_candidate_and_adds_to_the_fused_scores_in_order(store: QdrantStore) -> None:
    first, second = Recorded("run", 5.0), Recorded("dog", 20.0)
    fill(store, DOCS)
    retriever = HybridRetriever(store, RetrievalConfig(lifts=(first, second)))
    plain = {h.key: h.score for h in HybridRetriever(store).search(NS, "tax deadline")}
    hits = retriever.search(NS, "tax deadline")
    assert [h.key for h in hits][:2] == ["dog", "run"]
    scores = {h.key: h.score for h in hits}
    assert scores["dog"] == pytest.approx(plain["dog"] + 20.0)
    assert scores["run"] == pytest.approx(plain["run"] + 5.0)
    assert scores["tax"] == pytest.approx(plain["tax"])
    assert sorted(first.read) == sorted(DOCS)  # each candidate of the search, once
    query, features, before = second.calls[0]
    assert query == "tax deadline"
    assert len(features) == len(before) == len(DOCS)
    # the second lift sees the scores the first one left
    assert before[features.index("run")] == pytest.approx(plain["run"] + 5.0)


def test_lifts_apply_in_hybrid_mode_only(store: QdrantStore) -> None:
    lift = Recorded("dog", 20.0)
    retriever = HybridRetriever(fill(store, DOCS), RetrievalConfig(mode="lexical", lifts=(lift,)))
    assert retriever.search(NS, "tax deadline")[0].key == "tax"
    assert lift.calls == []


def test_a_lift_that_returns_the_wrong_length_is_a_typed_error() -> None:
    class Short:
        def feature(self, item: Any) -> None:
            return None

        def __call__(self, query: str, features: Any, scores: Any) -> list[float]:
            return [1.0]

    with pytest.raises(ConfigurationError, match="one finite number per candidate"):
        lifted_ranking(RetrievalConfig(lifts=(Short(),)), DOCS, "green tea")


def test_a_match_among_other_matches_of_its_group_is_lifted() -> None:
    docs = {
        "lone": {"content": "we went hiking in the alps", "metadata": {"session": "s1"}},
        "mid": {"content": "we went hiking in the alps", "metadata": {"session": "s2"}},
        "near": {"content": "hiking the alps in june", "metadata": {"session": "s2"}},
        **{
            f"x{i}": {"content": f"grocery list item {i}", "metadata": {"session": f"s{i + 3}"}}
            for i in range(8)
        },
    }
    query = "hiking in the alps"
    plain = lifted_ranking(RetrievalConfig(group_weight=0.0), docs, query)
    lifted = lifted_ranking(
        RetrievalConfig(group_fields=("metadata.session",), group_weight=1.0), docs, query
    )
    assert plain.index("lone") < plain.index("mid")  # the same text: a tie, broken by key
    assert lifted.index("mid") < lifted.index("lone")  # "near" backs "mid" up


def test_a_memory_from_the_period_the_query_names_is_lifted() -> None:
    def note(text: str, when: str) -> dict[str, Any]:
        return {"content": text, "created_at": when}

    docs = {
        "march": note("Visited the museum with my sister", "2023-03-02T10:00:00+00:00"),
        "may": note("Visited the museum with my sister again", "2023-05-20T10:00:00+00:00"),
        "june": note("Visited the museum with my sister once more", "2023-06-02T10:00:00+00:00"),
    }
    query = "Which museum did she visit in May 2023?"
    without = lifted_ranking(RetrievalConfig(time_weight=0.0), docs, query)
    lifted = lifted_ranking(RetrievalConfig(time_weight=2.0, time_after_days=0), docs, query)
    late = lifted_ranking(RetrievalConfig(time_weight=2.0, time_after_days=30), docs, query)
    assert without[0] == "march"  # fewest words: BM25's best
    assert lifted[0] == "may"
    assert lifted[1] == "march"  # June is after May's end
    assert set(late[:2]) == {"may", "june"}  # told within 30 days of the month's end
    unnamed = lifted_ranking(RetrievalConfig(time_weight=2.0), docs, "Which museum did she visit?")
    assert unnamed == without
