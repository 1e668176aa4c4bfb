from __future__ import annotations

import threading

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages
from langchain_openai import ChatOpenAI

from langmem_plugin.core import tokens
from langmem_plugin.errors import ConfigurationError, OfflineResourceError


@pytest.mark.parametrize(
    ("name", "ids"),
    [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])],
)
def test_hello_world_ids(name: str, ids: list[int]) -> None:
    assert tokens.get_encoding(name).encode("hello world") == ids
    # tiktoken's own entry point works offline too, through the registered constructors
    assert tiktoken.get_encoding(name).encode("hello world") == ids


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("openai:gpt-4.1-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o1", "o200k_base"),
        ("ft:gpt-4o-mini:org::id", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("claude-sonnet-4", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_encoding_chosen_from_model_name(model: str | None, encoding: str) -> None:
    assert tokens.encoding_name_for_model(model) == encoding
    assert tokens.encoding_for_model(model).name == encoding


def test_count_tokens_differs_between_encodings() -> None:
    text = "Caroline went to the LGBTQ support group on 7 May 2023 — it was powerful. 日本語も。"
    assert tokens.count_tokens(text, model="gpt-4o") == len(tiktoken.get_encoding("o200k_base").encode(text))
    assert tokens.count_tokens(text, model="gpt-4") == len(tiktoken.get_encoding("cl100k_base").encode(text))
    assert tokens.count_tokens(text, model="gpt-4o") != tokens.count_tokens(text, model="gpt-4")


def test_special_token_text_is_counted_as_text() -> None:
    assert tokens.count_tokens("<|endoftext|>") > 1


def _conversation() -> list:
    return [
        SystemMessage("You are a helpful assistant."),
        HumanMessage("What's the weather in Paris, café-style?", name="bob"),
        AIMessage(
            "", tool_calls=[{"name": "weather", "args": {"city": "Paris é", "days": [1, 2]}, "id": "c1"}]
        ),
        ToolMessage("Sunny, 20°C", tool_call_id="c1"),
        AIMessage([{"type": "text", "text": "It is sunny."}]),
        HumanMessage("thanks"),
    ]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4", "gpt-3.5-turbo", "gpt-5"])
def test_message_counts_equal_langchain_openai(model: str) -> None:
    chat = ChatOpenAI(model=model, api_key="sk-test")  # type: ignore[arg-type]
    messages = _conversation()
    assert tokens.count_message_tokens(messages, model=model) == chat.get_num_tokens_from_messages(messages)
    for message in messages:
        assert tokens.count_message_tokens([message], model=model) == chat.get_num_tokens_from_messages(
            [message]
        )


def test_empty_message_list_costs_nothing() -> None:
    assert tokens.count_message_tokens([], model="gpt-4o") == 0


def test_token_counter_works_with_trim_messages() -> None:
    counter = tokens.TokenCounter("gpt-4o")
    messages = [HumanMessage(f"message number {i} " * 5) for i in range(20)]
    trimmed = trim_messages(messages, max_tokens=100, token_counter=counter, strategy="last")
    assert 0 < len(trimmed) < len(messages)
    assert counter(trimmed) <= 100
    assert trimmed[-1] is messages[-1]
    assert "o200k_base" in repr(counter)


def test_unknown_encoding_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="r50k_base"):
        tokens.ensure_offline_encodings(["r50k_base"])


def test_corrupt_bundled_file_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OfflineResourceError, match="sha256"):
        tokens._bundled_ranks("cl100k_base", expected_hash="0" * 64)


def test_missing_bundled_file_names_the_fix() -> None:
    with pytest.raises(OfflineResourceError, match="pip install"):
        tokens._bundled_ranks("p50k_base", expected_hash=None)


def test_concurrent_first_use_is_safe() -> None:
    results: list[int] = []

    def count() -> None:
        results.append(tokens.count_tokens("hello world", model="gpt-4"))

    threads = [threading.Thread(target=count) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [2] * 8


def test_install_is_idempotent_and_keeps_the_registry_offline() -> None:
    tokens.install_offline_encodings()
    tokens.install_offline_encodings()
    assert tiktoken.registry.ENCODING_CONSTRUCTORS is not None
    for name in tokens.SUPPORTED_ENCODINGS:
        constructor = tiktoken.registry.ENCODING_CONSTRUCTORS[name]
        assert name in tiktoken.registry.ENCODINGS or constructor.__name__.endswith("_offline")


_PIECE = st.sampled_from([*"ab Z9/.\r\t'-_é日\u00a0\u2028", "<|endoftext|>", "'s", " the", "...", "12345"])
_LINE = st.lists(_PIECE, max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=6), st.sampled_from(["gpt-4o", "gpt-4"]))
def test_a_text_counted_line_by_line_counts_as_the_whole(lines: list[str], model: str) -> None:
    """``count_lines_tokens`` sums its lines only where no piece of the encoding spans a break:
    whatever the lines (empty, starting with whitespace or '/', special-token text), the count is
    the whole text's."""
    text = "\n".join(lines)
    assert tokens.count_lines_tokens(text, model=model) == len(
        tiktoken.get_encoding(tokens.encoding_name_for_model(model)).encode(text, disallowed_special=())
    )
