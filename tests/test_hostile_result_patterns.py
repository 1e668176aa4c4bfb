"""Issue 22, what a model passes to ``retrieve_result`` runs bounded: patterns and JSON paths.

A pattern runs on RE2, in time linear in the text: ``(a+)+$`` over ``"a" * 50_000 + "!"``
answers; one RE2 cannot take (a backreference, a lookaround, too large) is an error the model can
act on; a search scans and returns a bounded amount and says where it stopped. JSON nested past
the bound, malformed JSON and any path never raise ``RecursionError``: deep JSON is text. The
same inputs through a real graph, on every store: ``tests/test_hostile_results.py``.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_plugin.errors import InvalidFilterError
from langmem_plugin.services.stored_results.compactors import (
    compact,
    extractive_summary,
    filtered,
    first_n,
    last_n,
    shape_of,
)
from langmem_plugin.services.stored_results.json_text import MAX_JSON_DEPTH, json_path, parse_json
from langmem_plugin.services.stored_results.patterns import (
    MAX_MATCHES,
    MAX_SCAN_CHARS,
    MAX_SCAN_WORK,
    model_pattern,
    scan_budget,
)

PURE = settings(max_examples=150, deadline=None)
HAYSTACK = "a" * 50_000 + "!"
CATASTROPHIC = ["(a+)+$", "(a|aa)+$", "(a*)*b", "^(a|a?)+$", "^(a+)+b", "(.*a){12}$", "(a?){30}a{30}$"]


def nested(depth: int, opener: str = "[") -> str:
    """A JSON text nesting lists (``"["``) or objects (``"{"``) ``depth`` deep around ``"x"``."""
    if opener == "{":
        return '{"a":' * depth + '"x"' + "}" * depth
    return "[" * depth + '"x"' + "]" * depth


# --------------------------------------------------------------------------- patterns


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_answers_on_the_service(pattern: str) -> None:
    assert filtered(HAYSTACK, pattern) == "No line matches."
    assert filtered(HAYSTACK + "\n" + HAYSTACK[:-1], pattern).startswith(("2: aaa", "No line"))


UNSUPPORTED = [r"(a)\1", r"(?=a)b", r"(?!a)b", r"(?<=a)b", r"(?<!a)b", r"(?>a+)", "a++", "a{1001}", "(?P=n)"]


@pytest.mark.parametrize("pattern", UNSUPPORTED)
def test_a_pattern_re2_cannot_take_is_an_error_the_model_can_act_on(pattern: str) -> None:
    with pytest.raises(InvalidFilterError) as raised:
        filtered("abc\nabd", pattern)
    message = str(raised.value)
    assert "RE2 syntax" in message
    assert "backreferences" in message
    assert "lookaround" in message


REGEX_PIECES = [*"()[]{}*+?|^$\\.,:=!<>-aAbB019 ", "\\1", "(?=", "(?i)", "\\d", "\\w", "\\p{L}", "{2,}"]
REGEX_ALPHABET = st.sampled_from([*REGEX_PIECES, "\ud800", "\x00"])


def _filtered_or_error(text: str, pattern: str | None, path: str | None = None) -> str:
    """What retrieve_result answers: the filtered text, or the error message the model reads."""
    try:
        return filtered(text, pattern, path)
    except InvalidFilterError as exc:
        message = str(exc)
        assert "pattern" in message or "path" in message  # names what to fix
        return message


@PURE
@given(pattern=st.lists(REGEX_ALPHABET, min_size=1, max_size=40).map("".join))
def test_any_pattern_answers_or_is_refused_with_a_fixable_error(pattern: str) -> None:
    for text in (HAYSTACK, "abc\n" * 2000, json.dumps([{"a": i} for i in range(300)])):
        assert isinstance(_filtered_or_error(text, pattern), str)


@PURE
@given(literal=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=6))
def test_an_escaped_literal_finds_exactly_the_lines_that_hold_it(literal: str) -> None:
    lines = [f"row {i} {'xX'[i % 2]}{literal if i % 3 == 0 else ''}" for i in range(60)]
    want = [f"{i + 1}: {line}" for i, line in enumerate(lines) if literal.lower() in line.lower()]
    got = filtered("\n".join(lines), re.escape(literal))
    assert got == ("\n".join(want) if want else "No line matches.")


@pytest.mark.parametrize("pattern", [r"(?:\w+\s*){1000}!", "(.*){1000}z", ".{999}z.{999}q", "(?:ab|cd){999}"])
def test_a_pattern_too_large_for_the_bounds_is_refused(pattern: str) -> None:
    with pytest.raises(InvalidFilterError, match="too large") as raised:
        filtered("some words here\n" * 10, pattern)
    assert "repeat counts" in str(raised.value)


def test_a_large_pattern_scans_less_and_says_where_it_stopped() -> None:
    pattern = r"(?:\w+\s*){140}!"  # near the size bound: RE2's worst case is its size times the text
    regex = model_pattern(pattern)
    budget = scan_budget(regex)
    assert budget < MAX_SCAN_CHARS
    assert budget * regex.programsize <= MAX_SCAN_WORK
    words = "lorem ipsum " * (MAX_SCAN_CHARS // 6)  # one line past every budget
    answer = filtered(words + "!", pattern)
    assert answer.startswith("No line matches.")
    assert f"[stopped after scanning {budget:,} characters" in answer
    assert filtered(words[:1000] + "!", pattern) == "1: " + words[:1000] + "!"  # within it: found


def test_a_search_returns_at_most_max_matches_and_says_so() -> None:
    text = "\n".join(f"hit {i}" for i in range(MAX_MATCHES * 3))
    answer = filtered(text, "hit")
    assert answer.count("\n") == MAX_MATCHES
    assert answer.endswith(f"[stopped at the first {MAX_MATCHES} matches: narrow the pattern]")
    assert model_pattern("HIT").search("a hit") is not None  # case-insensitive, as documented


# --------------------------------------------------------------------------- 3. bounded JSON


# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 1000, 100_000])
@pytest.mark.parametrize("opener", ["[", "{"])
def test_deep_json_is_json_to_the_bound_and_text_past_it(depth: int, opener: str) -> None:
    text = nested(depth, opener)
    value = parse_json(text)
    assert (value is not None) == (depth <= MAX_JSON_DEPTH)
    assert shape_of(text) == ("json" if depth <= MAX_JSON_DEPTH else "text")
    assert compact(text, 200).startswith("JSON" if depth <= MAX_JSON_DEPTH else opener)
    assert first_n(text, 5) == (json.dumps(value[:5]) if isinstance(value, list) else text)
    assert last_n(text, 5) == (json.dumps(value[-5:]) if isinstance(value, list) else text)
    assert isinstance(extractive_summary(text), str)
    assert isinstance(filtered(text, '"x"'), str)
    path = "$" + ("[0]" if opener == "[" else ".a") * depth
    if depth > MAX_JSON_DEPTH:
        with pytest.raises(InvalidFilterError, match=r"JSON path needs a JSON result|at most|more than"):
            filtered(text, path=path)
    else:
        assert filtered(text, path=path) == '["x"]'


JSON_NOISE = ["[", "]", "{", "}", '"a":', '"', "\\", ",", "1", "1e999", "9" * 5000, "null", "\ud800", " "]
json_noise = st.lists(st.sampled_from(JSON_NOISE), max_size=300)


@PURE
@given(parts=json_noise, depth=st.integers(0, 3000))
def test_malformed_or_deep_json_never_raises(parts: list[str], depth: int) -> None:
    text = "[" * depth + "".join(parts) + "]" * (depth // 2)
    assert parse_json(text) is None or isinstance(parse_json(text), dict | list)
    assert isinstance(compact(text, 200), str)
    assert isinstance(first_n(text, 3), str)
    assert isinstance(last_n(text, 3), str)
    assert isinstance(extractive_summary(text), str)
    for pattern, path in (("a", None), (None, "$[0]"), ("1", "$[*]")):
        assert isinstance(_filtered_or_error(text, pattern, path), str)


PATH_PIECES = ["$", ".", "..", "a", "[0]", "[*]", ".*", "[", "]", "[-1]", "[" + "9" * 5000 + "]", "'", " "]
path_pieces = st.sampled_from([*PATH_PIECES, "\ud800", "\x00"])


@PURE
@given(pieces=st.lists(path_pieces, max_size=60), repeat=st.integers(1, 300))
def test_any_path_answers_or_is_refused_with_a_fixable_error(pieces: list[str], repeat: int) -> None:
    path = "".join(pieces) * repeat
    value = json.loads(nested(90))
    answer = _filtered_or_error(json.dumps(value), None, path)
    assert isinstance(answer, str)
    if answer.startswith("["):
        assert json.loads(answer) == json_path(value, path)
