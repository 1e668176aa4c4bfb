"""Memory's parameters by feature: the keywords that moved still work and warn once with the new spelling."""

from __future__ import annotations

import warnings

import pytest
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, ResultsConfig, StateKeys, WindowConfig
from langmem_plugin.core import renamed
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.turn import MemoryTurn
from langmem_plugin.testing import FakeEmbeddings


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(renamed, "_warned", set())


def _memory(**kwargs: object) -> Memory:
    return Memory(InMemoryStore(), embeddings=FakeEmbeddings(), **kwargs)  # type: ignore[arg-type]


def test_the_old_keywords_give_the_memory_the_new_ones_give() -> None:
    window, results, keys = WindowConfig(max_turns=3), ResultsConfig(), StateKeys(messages="chat")
    with pytest.warns(DeprecationWarning, match="is now"):
        old = _memory(model="gpt-4o-mini", window=window, results=results, keys=keys)
    new = _memory(
        tokenizer_model="gpt-4o-mini", context=ContextConfig(window=window, results=results, keys=keys)
    )
    for memory in (old, new):
        assert memory.model == "gpt-4o-mini"
        assert memory.turn.model == "gpt-4o-mini"
        assert memory.window is window
        assert memory.turn.window is window
        assert memory.turn.results is results
        assert memory.keys is keys
        assert memory.turn.keys is keys
    assert {t.name for t in old.tools} == {t.name for t in new.tools}  # the result tools with results


@pytest.mark.parametrize(
    ("keyword", "value", "spelling"),
    [
        ("model", "gpt-4o-mini", "Memory(tokenizer_model=...)"),
        ("window", WindowConfig(max_turns=2), "Memory(context=ContextConfig(window=...))"),
        ("results", ResultsConfig(), "Memory(context=ContextConfig(results=...))"),
        ("keys", StateKeys(), "Memory(context=ContextConfig(keys=...))"),
    ],
)
def test_each_old_keyword_warns_once_with_its_new_spelling(
    keyword: str, value: object, spelling: str
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _memory(**{keyword: value})
        _memory(**{keyword: value})
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(messages) == 1, messages
    assert spelling in messages[0]
    assert caught[0].filename == __file__  # it points at the caller's line


def test_a_keyword_given_both_ways_is_an_error_not_a_choice() -> None:
    with (
        pytest.warns(DeprecationWarning, match="model"),
        pytest.raises(ConfigurationError, match="tokenizer"),
    ):
        _memory(model="a", tokenizer_model="b")
    with (
        pytest.warns(DeprecationWarning, match="window"),
        pytest.raises(ConfigurationError, match="context="),
    ):
        _memory(window=WindowConfig(max_turns=2), context=ContextConfig())


def test_an_unknown_keyword_is_the_type_error_python_gives() -> None:
    with pytest.raises(TypeError, match="'windw'"):
        _memory(windw=WindowConfig(max_turns=2))
    with pytest.raises(TypeError, match="'recal'"):
        MemoryTurn(recal=None)


def test_memory_turn_takes_the_same_groups() -> None:
    keys = StateKeys(messages="chat")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = MemoryTurn(keys=keys, model="gpt-4o-mini")
    assert sorted(str(w.message).split(" is now")[0] for w in caught) == [
        "MemoryTurn(keys=...)",
        "MemoryTurn(model=...)",
    ]
    new = MemoryTurn(context=ContextConfig(keys=keys), tokenizer_model="gpt-4o-mini")
    assert (old.keys, old.model) == (new.keys, new.model) == (keys, "gpt-4o-mini")
