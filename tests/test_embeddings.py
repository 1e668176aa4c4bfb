from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_openai import OpenAIEmbeddings

from langmem_plugin.core.embeddings import (
    MINILM_DIMS,
    MiniLMEmbeddings,
    embedding_dims,
    resolve_embeddings,
)
from langmem_plugin.errors import ConfigurationError, OfflineResourceError, UnknownEmbeddingsError
from langmem_plugin.testing import FakeEmbeddings

# (sentence, paraphrase): written for these tests; the pairs share few words on purpose.
PAIRS = [
    ("I really enjoy drinking green tea in the morning.", "My favourite morning drink is green tea."),
    ("My sister lives in Toronto.", "Her sibling resides in a Canadian city, Toronto."),
    ("The meeting was moved to Thursday afternoon.", "We rescheduled the meeting for Thursday after lunch."),
    ("I adopted a puppy last weekend.", "Last weekend I got a new young dog from the shelter."),
    ("He is allergic to peanuts.", "Peanuts give him an allergic reaction."),
    ("She started learning to play the violin.", "She has begun violin lessons."),
    ("Our flight to Tokyo was cancelled.", "The plane we were taking to Tokyo got cancelled."),
    ("I prefer working from home on Fridays.", "On Fridays I like to work remotely from my house."),
    ("The car needs new tyres before winter.", "Before winter we have to replace the car's tires."),
    ("My grandmother turned ninety yesterday.", "Yesterday was my grandma's 90th birthday."),
    ("I'm training for a marathon in the spring.", "I am preparing to run a marathon this spring."),
    ("The restaurant only serves vegetarian food.", "That restaurant has a meat-free menu."),
    ("We painted the kitchen walls yellow.", "The kitchen walls got a coat of yellow paint."),
    ("He lost his wallet on the train.", "His wallet went missing during the train ride."),
    ("The project deadline is the end of March.", "The project is due at the end of March."),
    ("I can't stand loud music while I study.", "Loud music bothers me when I'm studying."),
    ("She volunteers at the animal shelter on Sundays.", "On Sundays she helps out at the pet rescue."),
    ("The laptop battery drains very quickly.", "My notebook computer's battery runs out fast."),
    ("They are getting married in June.", "Their wedding is planned for June."),
    ("I usually cycle to the office.", "Most days I ride my bike to work."),
    ("The doctor told me to drink more water.", "My physician advised me to stay better hydrated."),
    ("We went camping by the lake with the kids.", "The children and I camped near the lake."),
    ("My phone screen cracked when I dropped it.", "I dropped my phone and the display broke."),
    ("The museum is closed on Mondays.", "On Mondays the museum does not open."),
]


@pytest.fixture(scope="module")
def matrix(minilm: MiniLMEmbeddings) -> np.ndarray:
    sentences = [s for pair in PAIRS for s in pair]
    return np.array(minilm.embed_documents(sentences))


def test_vectors_are_384_dims_and_unit_length(matrix: np.ndarray) -> None:
    assert matrix.shape == (2 * len(PAIRS), MINILM_DIMS)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("index", range(len(PAIRS)), ids=[p[0][:30] for p in PAIRS])
def test_paraphrase_ranks_first_among_all_other_sentences(matrix: np.ndarray, index: int) -> None:
    query = matrix[2 * index]
    sims = matrix @ query
    sims[2 * index] = -np.inf  # not itself
    assert int(np.argmax(sims)) == 2 * index + 1, PAIRS[index]


def test_query_and_document_paths_agree(minilm: MiniLMEmbeddings) -> None:
    text = PAIRS[0][0]
    np.testing.assert_allclose(minilm.embed_query(text), minilm.embed_documents([text])[0], atol=1e-5)


def test_batch_order_is_kept_whatever_the_lengths(minilm: MiniLMEmbeddings) -> None:
    texts = ["short", "a much longer sentence " * 20, "", "mid length sentence here", "x" * 5000]
    batched = MiniLMEmbeddings(batch_size=2).embed_documents(texts)
    singles = [minilm.embed_query(t) for t in texts]
    np.testing.assert_allclose(batched, singles, atol=1e-4)


def _reference(texts: list[str]) -> np.ndarray:
    """sentence-transformers' recipe, plainly: the shipped model with onnxruntime's default
    options, one padded batch, mean over the attention mask, L2-normalised."""
    import onnxruntime
    from tokenizers import Tokenizer

    from langmem_plugin.core.onnx_session import default_model_path, default_tokenizer_path

    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.enable_truncation(max_length=256)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    session = onnxruntime.InferenceSession(str(default_model_path()), providers=["CPUExecutionProvider"])
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = session.run(None, feeds)[0]
    pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


QUESTIONS = [s for pair in PAIRS[:8] for s in pair] + ["What did Caroline research?", "Hi", "x" * 400]


def test_float_model_matches_the_plain_reference() -> None:
    reference = _reference(QUESTIONS)
    floats = MiniLMEmbeddings(quantized=False)
    queries = np.array([floats.embed_query(t) for t in QUESTIONS])
    documents = np.array(floats.embed_documents(QUESTIONS))
    assert (queries * reference).sum(axis=1).min() >= 0.9999
    assert (documents * reference).sum(axis=1).min() >= 0.9999


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbeddings:
    with pytest.MonkeyPatch.context() as patch:  # the derived model goes to a temporary cache
        patch.setenv("LANGMEM_PLUGIN_CACHE", str(tmp_path_factory.mktemp("cache")))
        return MiniLMEmbeddings(quantized=True).load()


def test_the_default_runs_the_float_products(minilm: MiniLMEmbeddings) -> None:
    assert not minilm.quantized
    assert not MiniLMEmbeddings().quantized


def test_quantized_model_stays_close_to_the_float_one(int8: MiniLMEmbeddings) -> None:
    reference = _reference(QUESTIONS)
    cosines = (np.array([int8.embed_query(t) for t in QUESTIONS]) * reference).sum(axis=1)
    assert cosines.min() >= 0.97
    assert cosines.mean() >= 0.99
    assert cosines.max() < 0.99999  # it really is another model: int8 products


def test_quantized_vectors_do_not_depend_on_the_batch(int8: MiniLMEmbeddings) -> None:
    # Activations are quantized per call: a text padded beside a long one would drift.
    text = "I adopted a puppy last weekend."
    alone = int8.embed_query(text)
    beside = int8.embed_documents([text, "a much longer sentence about many other things " * 12])[0]
    np.testing.assert_allclose(beside, alone, atol=1e-6)


def test_quantized_model_is_built_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langmem_plugin.core.onnx_session import default_model_path, quantized_model

    monkeypatch.setenv("LANGMEM_PLUGIN_CACHE", str(tmp_path / "cache"))
    built = Path(quantized_model(str(default_model_path())))
    assert built.parent == tmp_path / "cache"
    assert built.is_file()
    stamp = built.stat().st_mtime_ns
    assert Path(quantized_model(str(default_model_path()))) == built
    assert built.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [built.name]  # no build leftovers


def test_an_unwritable_cache_keeps_the_built_model_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from langmem_plugin.core.onnx_session import default_model_path, quantized_model

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("LANGMEM_PLUGIN_CACHE", str(blocker / "cache"))  # cannot be created
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    built = quantized_model(str(default_model_path()))
    assert isinstance(built, bytes)
    assert len(built) > 1_000_000
    assert list(scratch.iterdir()) == []  # no copy left behind in the temporary directory
    from onnxruntime import InferenceSession

    assert {i.name for i in InferenceSession(built, providers=["CPUExecutionProvider"]).get_inputs()} >= {
        "input_ids",
        "attention_mask",
    }


def test_the_cache_has_a_home_when_the_process_has_none(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from langmem_plugin.core.onnx_session import cache_dir

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("LANGMEM_PLUGIN_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert cache_dir() == Path(tempfile.gettempdir()) / "langmem-plugin"


def test_empty_batch(minilm: MiniLMEmbeddings) -> None:
    assert minilm.embed_documents([]) == []


def test_thread_safe_and_loaded_once() -> None:
    results: dict[int, list[float]] = {}

    def work(i: int) -> None:
        results[i] = MiniLMEmbeddings().embed_query("the same sentence")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = results[0]
    for vector in results.values():
        np.testing.assert_allclose(vector, first, atol=1e-6)
    from langmem_plugin.core import onnx_session as module

    assert len([key for key in module._loaded if not key[3]]) == 1  # one float default session


async def test_async_embedding(minilm: MiniLMEmbeddings) -> None:
    vectors = await asyncio.gather(minilm.aembed_query("tea"), minilm.aembed_documents(["tea", "coffee"]))
    np.testing.assert_allclose(vectors[0], vectors[1][0], atol=1e-5)


def test_bad_model_path_is_a_clear_error(tmp_path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(OfflineResourceError, match=r"model\.onnx"):
        MiniLMEmbeddings(model_path=bad).embed_query("x")


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbeddings(batch_size=0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_parallel_calls_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(
        ConfigurationError, match=r"parallel_calls=\.\.\.\) must be an int of at least 1"
    ) as refused:
        MiniLMEmbeddings(parallel_calls=bad)  # type: ignore[arg-type]
    assert repr(bad) in str(refused.value)


def test_batches_run_side_by_side_give_the_vectors_of_one_at_a_time() -> None:
    # texts of many lengths: several batches, short ones sharing calls, long ones alone, repeats
    texts = [f"memory {i}: " + "words of a long answer " * (i % 9) * 6 for i in range(40)] + [
        "memory 3: "
    ] * 2
    one_at_a_time = MiniLMEmbeddings(parallel_calls=1, threads=2).embed_array(texts)
    side_by_side = MiniLMEmbeddings(parallel_calls=4, threads=2, batch_size=4).embed_array(texts)
    assert one_at_a_time.shape == (len(texts), 384)
    np.testing.assert_allclose(side_by_side, one_at_a_time, atol=1e-6)
    assert MiniLMEmbeddings(threads=3).parallel_calls == 3  # the default: the session's threads


def test_resolve_embeddings_accepts_every_form() -> None:
    assert isinstance(resolve_embeddings(None), MiniLMEmbeddings)
    assert isinstance(resolve_embeddings("local"), MiniLMEmbeddings)
    assert isinstance(resolve_embeddings("local:all-MiniLM-L6-v2"), MiniLMEmbeddings)
    fake = FakeEmbeddings(dims=8)
    assert resolve_embeddings(fake) is fake
    fn = resolve_embeddings(lambda texts: [[1.0, float(len(t))] for t in texts])
    assert isinstance(fn, Embeddings)
    assert fn.embed_query("abc") == [1.0, 3.0]
    assert asyncio.run(fn.aembed_documents(["a", "bb"])) == [[1.0, 1.0], [1.0, 2.0]]


def test_resolve_openai_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    emb = resolve_embeddings("openai:text-embedding-3-small")
    assert isinstance(emb, OpenAIEmbeddings)
    assert embedding_dims(emb) == 1536  # known without a network call


@pytest.mark.parametrize("spec", ["nonsense", "nope:model-x", 42])
def test_unknown_specs_are_typed_errors(spec: object) -> None:
    with pytest.raises(UnknownEmbeddingsError):
        resolve_embeddings(spec)  # type: ignore[arg-type]


def test_embedding_dims() -> None:
    assert embedding_dims(MiniLMEmbeddings()) == 384
    assert embedding_dims(FakeEmbeddings(dims=12)) == 12
    assert embedding_dims(resolve_embeddings(lambda texts: [[0.0] * 5 for _ in texts])) == 5


def test_fake_embeddings_are_deterministic_and_lexical() -> None:
    emb = FakeEmbeddings()
    assert emb.embed_query("green tea") == FakeEmbeddings().embed_query("green tea")
    a, b, c = np.array(emb.embed_documents(["green teas", "green tea please", "quarterly taxes"]))
    assert a @ b > a @ c
    with pytest.raises(ValueError, match="dims"):
        FakeEmbeddings(dims=1)


def test_bad_sizes_and_threads_are_configuration_errors() -> None:
    from langmem_plugin.errors import ConfigurationError

    for kwargs in ({"batch_tokens": 0}, {"threads": 0}, {"threads": True}, {"batch_size": 2.5}):
        with pytest.raises(ConfigurationError, match=f"{next(iter(kwargs))}=.*got"):
            MiniLMEmbeddings(**kwargs)  # type: ignore[arg-type]


def test_threads_follow_the_machine_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from langmem_plugin.core.onnx_session import THREADS_ENV, machine_threads
    from langmem_plugin.errors import ConfigurationError

    monkeypatch.delenv(THREADS_ENV, raising=False)
    usable = len(os.sched_getaffinity(0))
    assert machine_threads(cgroup_root=tmp_path / "none") == max(1, min(4, usable))
    assert MiniLMEmbeddings().threads == machine_threads()
    # a cgroup v2 quota of 1.5 CPUs rounds up to 2; v1's quota -1 means none
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert machine_threads(cgroup_root=v2) == min(2, usable, 4)
    (v2 / "cpu.max").write_text("50000 100000\n")
    assert machine_threads(cgroup_root=v2) == 1
    v1 = tmp_path / "v1" / "cpu"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert machine_threads(cgroup_root=v1.parent) == max(1, min(4, usable))
    (v1 / "cpu.cfs_quota_us").write_text("100000\n")
    assert machine_threads(cgroup_root=v1.parent) == 1
    monkeypatch.setenv(THREADS_ENV, "3")
    assert machine_threads() == 3
    assert MiniLMEmbeddings().threads == 3
    assert MiniLMEmbeddings(threads=1).threads == 1
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ConfigurationError, match=f"{THREADS_ENV}.*'many'"):
        MiniLMEmbeddings()


def test_token_batches_sort_by_length_cap_tokens_and_say_where_rows_go() -> None:
    from langmem_plugin.core.onnx_session import token_batches

    ids = [[1] * 5, [2] * 1, [3] * 3, [4] * 9, [5] * 2, [6] * 3]
    batches = list(token_batches(ids, max_texts=3, max_tokens=9))
    assert [rows for rows, _, _ in batches] == [[1, 4, 2], [5], [0], [3]]
    for rows, batch, mask in batches:
        assert batch.shape[0] * batch.shape[1] <= 9 or len(rows) == 1
        for row, i in enumerate(rows):
            assert list(batch[row][mask[row] == 1]) == ids[i]
            assert int(mask[row].sum()) == len(ids[i])
    assert sorted(i for rows, _, _ in batches for i in rows) == list(range(len(ids)))
    assert [rows for rows, _, _ in token_batches(ids, max_texts=1, max_tokens=0)] == [
        [1],
        [4],
        [2],
        [5],
        [0],
        [3],
    ]


def test_each_distinct_text_is_embedded_once_and_rows_come_back_in_order(
    minilm: MiniLMEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langmem_plugin.core import embeddings as module

    rows_run: list[int] = []
    real_run = module.run_model

    def counting(model, ids, mask):  # type: ignore[no-untyped-def]
        rows_run.append(len(ids))
        return real_run(model, ids, mask)

    monkeypatch.setattr(module, "run_model", counting)
    texts = ["tea", "a long sentence about green tea " * 30, "tea", "coffee", "coffee", "tea"]
    vectors = np.array(MiniLMEmbeddings(batch_size=2).embed_documents(texts))
    assert sum(rows_run) == 3  # tea, coffee and the long one
    singles = np.array([minilm.embed_query(t) for t in texts])
    np.testing.assert_allclose(vectors, singles, atol=1e-4)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=0)
