"""QdrantStore's hybrid knobs: BM25 over other fields than the embedded ones, and DBSF fusion."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.errors import ConfigurationError
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.testing import FakeEmbeddings

NS = ("conv", "c1")
LEXICAL = ["metadata.context", "content"]

# Turn values as LoCoMo stores them: the embedded text is `content`; `metadata.context` holds the
# previous turn, whose words only BM25 over lexical_fields can see.
TURNS: dict[str, dict[str, Any]] = {
    "t1": {"content": "Yes, we loved it there", "metadata": {"context": "How was your Zanzibar trip?"}},
    "t2": {"content": "The tax deadline is in April", "metadata": {"context": "Anything due soon?"}},
    "t3": {"content": "I drink green tea every morning", "metadata": {"context": "What do you drink?"}},
    "t4": {"content": "The green house needs paint", "metadata": {"context": "Any chores left?"}},
}


def index(lexical_fields: list[str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"dims": 256, "embed": FakeEmbeddings(256), "fields": ["content"]}
    if lexical_fields is not None:
        config["lexical_fields"] = lexical_fields
    return config


def open_store(tmp_path: Path, engine: str, **kwargs: Any) -> QdrantStore:
    if engine == "embedded":
        return QdrantStore(tmp_path / "store", **kwargs)
    return QdrantStore(":memory:", **kwargs)


def fill(store: QdrantStore) -> None:
    for key, value in TURNS.items():
        store.put(NS, key, value)


def keys(store: QdrantStore, query: str, limit: int = 10) -> list[str]:
    return [item.key for item in store.search(NS, query=query, limit=limit)]


@pytest.fixture(params=["embedded", "memory"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def lexical_store(tmp_path: Path, engine: str) -> Iterator[QdrantStore]:
    with open_store(tmp_path, engine, index=index(LEXICAL)) as store:
        fill(store)
        yield store


# ---------------------------------------------------------------------- lexical_fields


def test_lexical_fields_make_a_word_outside_the_embedded_text_findable(
    lexical_store: QdrantStore, tmp_path: Path, engine: str
) -> None:
    # BM25 over context + content: the word is only in the context.
    assert keys(lexical_store.with_search(mode="lexical"), "zanzibar") == ["t1"]
    assert keys(lexical_store, "zanzibar")[0] == "t1"
    assert keys(lexical_store.with_search(fusion="rrf"), "zanzibar")[0] == "t1"
    # Dense sees `content` only: no match above a modest threshold.
    assert keys(lexical_store.with_search(mode="dense", score_threshold=0.3), "zanzibar") == []
    # Content words still count for BM25.
    assert keys(lexical_store.with_search(mode="lexical"), "tax deadline") == ["t2"]


def test_without_lexical_fields_bm25_reads_the_embedded_fields(tmp_path: Path, engine: str) -> None:
    with open_store(tmp_path, engine, index=index()) as store:
        fill(store)
        assert keys(store.with_search(mode="lexical"), "zanzibar") == []
        assert keys(store.with_search(mode="lexical"), "tax deadline") == ["t2"]


def test_items_with_no_embedded_text_stay_unscored(lexical_store: QdrantStore) -> None:
    # No `content`: no dense vector, hence no BM25 vector either; listed after the scored ones.
    lexical_store.put(NS, "bare", {"metadata": {"context": "zanzibar again"}})
    results = lexical_store.with_search(mode="lexical").search(NS, query="zanzibar", limit=10)
    assert [(r.key, r.score is None) for r in results] == [("t1", False), ("bare", True)]


def test_lexical_fields_survive_reopen_and_apply_on_import(tmp_path: Path) -> None:
    with QdrantStore(tmp_path / "a", index=index(LEXICAL)) as store:
        fill(store)
    with QdrantStore(tmp_path / "a", index=index(LEXICAL)) as store:
        assert keys(store.with_search(mode="lexical"), "zanzibar") == ["t1"]
        exported = list(store.export_items())
    assert len(exported) == len(TURNS)
    # Imported into a store without lexical_fields, BM25 indexes the embedded text only; with them, both.
    with QdrantStore(":memory:", index=index()) as plain:
        assert plain.import_items(exported) == len(TURNS)
        assert keys(plain.with_search(mode="lexical"), "zanzibar") == []
    with QdrantStore(":memory:", index=index(LEXICAL)) as again:
        assert again.import_items(exported) == len(TURNS)
        assert keys(again.with_search(mode="lexical"), "zanzibar") == ["t1"]


# ---------------------------------------------------------------------- fusion


def test_dbsf_fuses_scores_not_ranks(lexical_store: QdrantStore) -> None:
    rrf_view = lexical_store.with_search(fusion="rrf")
    rrf = rrf_view.search(NS, query="green tea", limit=4)
    dbsf = lexical_store.search(NS, query="green tea", limit=4)  # DBSF is the default
    assert rrf_view.search_mode == lexical_store.search_mode == "hybrid"
    assert rrf[0].key == dbsf[0].key == "t3"
    rrf_scores = [r.score for r in rrf if r.score is not None]
    dbsf_scores = [r.score for r in dbsf if r.score is not None]
    # Qdrant's RRF (k=60, ranks from 0) never exceeds 2 / 60; DBSF sums two scores normalised to [0, 1].
    assert max(rrf_scores) <= 2 / 60 + 1e-6
    assert 2 / 60 < max(dbsf_scores) <= 2.0 + 1e-6
    assert dbsf_scores == sorted(dbsf_scores, reverse=True)


def test_dbsf_scores_agree_across_engines(tmp_path: Path) -> None:
    search = {"fusion": "dbsf"}
    with (
        QdrantStore(tmp_path / "e", index=index(LEXICAL), search=search) as edge,  # type: ignore[arg-type]
        QdrantStore(":memory:", index=index(LEXICAL), search=search) as local,  # type: ignore[arg-type]
    ):
        fill(edge)
        fill(local)
        for query in ("green tea", "zanzibar trip", "paint the house"):
            a = [(r.key, round(r.score or 0.0, 4)) for r in edge.search(NS, query=query, limit=4)]
            b = [(r.key, round(r.score or 0.0, 4)) for r in local.search(NS, query=query, limit=4)]
            assert a == b, query


@pytest.mark.parametrize("fusion", ["dbsf", "rrf"])
async def test_both_fusions_async(tmp_path: Path, fusion: Any) -> None:
    async with QdrantStore(":memory:", index=index(LEXICAL), search={"fusion": fusion}) as store:
        for key, value in TURNS.items():
            await store.aput(NS, key, value)
        assert [r.key for r in await store.asearch(NS, query="zanzibar", limit=1)] == ["t1"]


# ---------------------------------------------------------------------- bad input


def test_unknown_fusion_is_a_configuration_error_naming_it_and_the_fix() -> None:
    with pytest.raises(ConfigurationError, match=r"'max'.*rrf, dbsf.*Fix"):
        QdrantStore(":memory:", index=index(), search={"fusion": "max"})  # type: ignore[typeddict-item]
    with pytest.raises(ConfigurationError, match=r"'max'.*Fix"):
        QdrantStore(":memory:", index=index()).with_search(fusion="max")


@pytest.mark.parametrize("bad", ["x", [], [""], [3]], ids=["string", "empty", "blank", "number"])
def test_bad_lexical_fields_are_configuration_errors_naming_the_value(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"lexical_fields.*Fix") as caught:
        QdrantStore(":memory:", index=index(bad))
    assert repr(bad if not isinstance(bad, list) or not bad else bad[:1]) in str(caught.value)
