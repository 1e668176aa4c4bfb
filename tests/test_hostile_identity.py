"""Issue 22, identity is exact: an id names one tenant and one thread, never two.

An id (``user_id``, ``thread_id``, ``agent``, ``run_id``, or a template's own placeholder) is a
``str`` used exactly as given: whitespace, case and Unicode form are part of it, and nothing
is turned into a string for the caller. An id that cannot be a namespace label on every store
(empty, ``.``, a control character, a lone surrogate) or that is not a ``str`` is refused with
``ScopeError`` before anything is read or written. Checked on the scope itself, then through the
public API (the memory tools, ``Memory.recall`` / ``forget_user`` / ``import_history`` /
``history``) and a real ``StateGraph`` run, on InMemoryStore, embedded Qdrant and a SQLite
CheckpointerStore.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import Memory, MemoryState, RecallConfig, TokenBudgets
from langmem_plugin.core.scope import (
    Scope,
    exact_id,
    exact_ids,
    fill_namespace,
    resolve_scope,
    template_keys,
    templates_may_meet,
)
from langmem_plugin.errors import ConfigurationError, ScopeError
from langmem_plugin.services import Compartment, MemoryLayout, execute
from langmem_plugin.services.upkeep import forget_user_steps
from langmem_plugin.testing import ScriptedChatModel, tool_call
from tests.counting_stores import STORE_KINDS, counting, opened_store

DIMS = 16
BIG = TokenBudgets(memories=100_000, knowledge=100_000, plan=100_000, run=100_000)
RECALL = RecallConfig(min_relevance=None, max_items=64, candidates=64, budgets=BIG)
ID_KEYS = ("user_id", "thread_id", "agent", "run_id")
ALIASES = ("session_id", "assistant_id", "agent_name")
FAST = settings(max_examples=60, deadline=None)
ON_STORE = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# --------------------------------------------------------------------------- strategies

# Characters whose case, compatibility or canonical forms differ: the ids normalisation would merge.
TRICKY = [
    "é",
    "e\u0301",
    "Å",
    "A\u030a",
    "\u212b",
    "ﬁ",
    "ß",
    "ẞ",
    "İ",
    "ı",
    "K",
    "\u212a",
    "ǅ",
    "Ω",
    "\u2126",
]
SPACES = [" ", "\u00a0", "\u2003", "\u3000", "\u200b", "\ufeff", "\u2028"]
CONTROL = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]]

valid_pieces = st.one_of(
    st.characters(exclude_categories=("Cc", "Cs"), exclude_characters="."),
    st.sampled_from(TRICKY + SPACES),
)


def valid_text(*, min_size: int = 0, max_size: int = 10) -> st.SearchStrategy[str]:
    """Text an id may be: anything but '.', control characters and lone surrogates."""
    return st.lists(valid_pieces, min_size=min_size, max_size=max_size).map("".join)


valid_ids = valid_text(min_size=1)
bad_chars = st.one_of(
    st.sampled_from([".", *CONTROL]),
    st.integers(0xD800, 0xDFFF).map(chr),  # lone surrogates
)
bad_texts = st.one_of(
    st.just(""),
    st.builds(
        lambda a, c, b: a + c + b,
        valid_text(max_size=4),
        bad_chars,
        valid_text(max_size=4),
    ),
)
not_strings = st.one_of(
    st.integers(),
    st.floats(),
    st.booleans(),
    st.uuids(),
    st.binary(max_size=4),
    st.lists(st.text(max_size=2), max_size=2),
    st.tuples(st.text(max_size=2)),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=1),
    st.just(object()),
)
hostile_ids = st.one_of(bad_texts, not_strings)


def _variants(base: str) -> list[str]:
    """Spellings of ``base`` that a normalising system would take for the same id."""
    forms = [unicodedata.normalize(f, base) for f in ("NFC", "NFD", "NFKC", "NFKD")]
    cases = [base.upper(), base.lower(), base.casefold(), base.swapcase(), base.title()]
    spaced = [f"{s}{base}" for s in SPACES] + [f"{base}{s}" for s in SPACES] + [base.strip() or base]
    return [v for v in dict.fromkeys([*forms, *cases, *spaced]) if v != base]


def _is_valid(text: str) -> bool:
    try:
        exact_id("user_id", text)
    except ScopeError:
        return False
    return True


pairs = st.builds(
    lambda base, i: (base, _variants(base)[i % len(_variants(base))]), valid_ids, st.integers(0, 99)
)


# --------------------------------------------------------------------------- the rule itself


@FAST
@given(text=valid_ids)
def test_a_valid_id_is_kept_exactly_in_every_place_an_id_enters(text: str) -> None:
    assert exact_id("user_id", text) == text
    for key in ID_KEYS:
        by_config = Scope.from_config({"configurable": {key: text}})
        by_context = Scope.from_config({}, context={key: text})
        by_metadata = resolve_scope({}, metadata={key: text})
        by_runtime = Scope.from_runtime(Runtime(context={key: text}), {})
        for scope in (by_config, by_context, by_metadata, by_runtime, Scope(**{key: text})):
            value = getattr(scope, key)
            assert value == text
            assert type(value) is str
    layout = MemoryLayout()
    assert layout.namespace(Compartment.USER, Scope(user_id=text)) == ("memories", "user", text)
    assert layout.namespace(Compartment.SESSION, Scope(thread_id=text)) == ("memories", "session", text)


@FAST
@given(pair=pairs)
def test_distinct_spellings_of_one_id_never_share_a_namespace(pair: tuple[str, str]) -> None:
    base, variant = pair
    assume(base != variant and _is_valid(variant))
    layout = MemoryLayout()
    for comp, key in ((Compartment.USER, "user_id"), (Compartment.SESSION, "thread_id")):
        one = layout.namespace(comp, Scope.from_config({"configurable": {key: base}}))
        two = layout.namespace(comp, Scope.from_config({"configurable": {key: variant}}))
        assert one != two
    template = ("memories", "t-{tenant}", "{user_id}")
    assert fill_namespace(template, Scope(user_id="u", extra={"tenant": base})) != fill_namespace(
        template, Scope(user_id="u", extra={"tenant": variant})
    )


@FAST
@given(value=hostile_ids, key=st.sampled_from(("user_id", "thread_id", "agent", *ALIASES)))
def test_a_hostile_id_is_refused_wherever_it_enters(value: Any, key: str) -> None:
    canonical = {"session_id": "thread_id", "assistant_id": "agent", "agent_name": "agent"}.get(key, key)
    entries: list[Callable[[], object]] = [
        lambda: Scope.from_config({"configurable": {key: value}}),
        lambda: Scope.from_config({"configurable": {}}, context={key: value}),
        lambda: resolve_scope({}, metadata={key: value}),
        lambda: Scope.from_runtime(Runtime(context={key: value}), {}),
    ]
    if key == canonical:
        entries.append(lambda: Scope(**{key: value}))
        entries.append(lambda: dataclasses.replace(Scope(), **{key: value}))
    for enter in entries:
        with pytest.raises(ScopeError) as info:
            enter()
        assert info.value.key == canonical
        assert isinstance(info.value, KeyError)


@FAST
@given(value=not_strings)
def test_a_non_string_id_names_its_type_and_the_fix(value: Any) -> None:
    with pytest.raises(ScopeError) as info:
        Scope.from_config({"configurable": {"user_id": value}})
    message = str(info.value)
    assert type(value).__name__ in message
    assert "str(" in message
    assert "Fix" in message


@FAST
@given(prefix=valid_text(max_size=4), bad=bad_chars, suffix=valid_text(max_size=4))
def test_a_bad_character_is_named_with_its_index(prefix: str, bad: str, suffix: str) -> None:
    with pytest.raises(ScopeError) as info:
        exact_id("thread_id", prefix + bad + suffix)
    message = str(info.value)
    assert f"index {len(prefix)}" in message
    assert ("'.'" in message) if bad == "." else (f"U+{ord(bad):04X}" in message)


def test_int_and_str_of_the_same_digits_are_not_one_user() -> None:
    assert Scope.from_config({"configurable": {"user_id": "1"}}).user_id == "1"
    for value in (1, 1.0, True, uuid.UUID(int=1), b"1"):
        with pytest.raises(ScopeError, match="must be a str"):
            Scope.from_config({"configurable": {"user_id": value}})


def test_missing_is_not_given_but_empty_is_an_error() -> None:
    assert Scope.from_config({"configurable": {"user_id": None, "thread_id": "t"}}).user_id is None
    assert Scope.from_config({"configurable": {"thread_id": "t"}}, context={"user_id": None}).user_id is None
    with pytest.raises(ScopeError, match="empty"):
        Scope.from_config({"configurable": {"user_id": ""}})
    with pytest.raises(ScopeError, match="needs 'user_id'"):  # not given, and needed: still refused
        MemoryLayout().namespace(Compartment.USER, Scope(thread_id="t"))


def test_the_canonical_key_wins_only_when_given() -> None:
    assert Scope.from_config({"configurable": {"thread_id": None, "session_id": "s"}}).thread_id == "s"
    assert Scope.from_config({"configurable": {"thread_id": "t", "session_id": 5}}).thread_id == "t"


def test_a_str_subclass_is_its_plain_text() -> None:
    class Sneaky(str):
        def __str__(self) -> str:
            return "victim"

        def __format__(self, spec: str) -> str:
            return "victim"

    scope = Scope.from_config({"configurable": {"user_id": Sneaky("sam"), "tenant": Sneaky("acme")}})
    assert type(scope.user_id) is str
    assert scope.user_id == "sam"
    assert scope.namespace(("m", "{tenant}", "{user_id}")) == ("m", "acme", "sam")
    assert Scope(user_id=Sneaky("sam")).namespace(("m", "{user_id}")) == ("m", "sam")


def test_the_run_id_langchain_assigns_is_a_uuid() -> None:
    run = uuid.uuid4()
    assert Scope.from_config({"run_id": run}).run_id == str(run)
    assert Scope(run_id=run).run_id == str(run)  # type: ignore[arg-type]
    with pytest.raises(ScopeError):
        Scope.from_config({"run_id": 7})


def test_an_extra_value_is_checked_when_a_template_uses_it() -> None:
    scope = Scope.from_config({"configurable": {"model": "gpt-4.1", "org": 7, "user_id": "u"}})
    assert scope.get("model") == "gpt-4.1"  # kept: no template uses it
    with pytest.raises(ScopeError, match=r"'\.'"):
        scope.namespace(("m", "{model}"))
    with pytest.raises(ScopeError, match="needs 'org'"):  # never turned into "7"
        scope.namespace(("m", "{org}"))


def test_two_placeholders_in_one_label_are_refused() -> None:
    for template in (("m", "{user_id}-{thread_id}"), ("m", "{user_id}{thread_id}")):
        with pytest.raises(ConfigurationError, match="placeholders"):
            template_keys(template)
        with pytest.raises(ConfigurationError, match="placeholders"):
            MemoryLayout(namespaces={"session": template})


LABELS = [
    "m",
    "u",
    "s",
    "u-x",
    "x-s",
    "{user_id}",
    "u-{user_id}",
    "{user_id}-s",
    "{thread_id}",
    "u-{thread_id}",
]
small_ids = st.text(st.sampled_from("us-x"), min_size=1, max_size=4)


@FAST
@given(
    one=st.lists(st.sampled_from(LABELS), min_size=1, max_size=3),
    two=st.lists(st.sampled_from(LABELS), min_size=1, max_size=3),
    first=st.tuples(small_ids, small_ids),
    second=st.tuples(small_ids, small_ids),
)
def test_templates_said_apart_never_fill_alike(
    one: list[str], two: list[str], first: tuple[str, str], second: tuple[str, str]
) -> None:
    a = fill_namespace(tuple(one), Scope(user_id=first[0], thread_id=first[1]))
    b = fill_namespace(tuple(two), Scope(user_id=second[0], thread_id=second[1]))
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # alike, or one inside the other: a prefix search of one reaches the other
        assert templates_may_meet(tuple(one), tuple(two))


def test_compartments_whose_templates_could_meet_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="could share one namespace"):
        MemoryLayout(namespaces={"user": ("m", "u-{user_id}"), "session": ("m", "{thread_id}")})
    with pytest.raises(ConfigurationError, match="could share one namespace"):
        MemoryLayout(namespaces={"user": ("m", "{user_id}"), "session": ("m", "{user_id}", "{thread_id}")})
    layout = MemoryLayout(namespaces={"user": ("m", "u-{user_id}"), "session": ("m", "s-{thread_id}")})
    assert layout.namespace("user", Scope(user_id="1")) != layout.namespace("session", Scope(thread_id="1"))


def test_a_list_of_ids_is_not_a_string() -> None:
    assert exact_ids("thread_id", ["a", " a"]) == ["a", " a"]
    with pytest.raises(ScopeError, match="single str"):
        exact_ids("thread_id", "abc")
    with pytest.raises(ScopeError):
        exact_ids("thread_id", ["a", 1])


# --------------------------------------------------------------------------- every store


_tokens = itertools.count()


STORES = STORE_KINDS


@pytest.fixture(scope="module", params=STORES)
def shared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseStore]:
    """One store per kind for the tests that write as valid users (they never clash: fresh tokens)."""
    with opened_store(request.param, tmp_path_factory.mktemp(f"identity-{request.param}"), DIMS) as store:
        yield store


@pytest.fixture(scope="module", params=STORES)
def untouched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BaseStore]:
    """One store per kind that only hostile ids ever reach: it must stay empty, and unread."""
    with opened_store(request.param, tmp_path_factory.mktemp(f"hostile-{request.param}"), DIMS) as store:
        yield store
        assert store.ops_seen == 0  # type: ignore[attr-defined]


def _memory(store: BaseStore) -> tuple[Memory, dict[str, BaseTool]]:
    memory = Memory(store=store, recall=RECALL, tokenizer_model="gpt-4o-mini", tools="full")
    return memory, {t.name: t for t in memory.tools}


def _saved_id(answer: str) -> str:
    match = re.fullmatch(r"Saved memory (\S+) in .*", answer)
    assert match is not None, answer
    return match.group(1)


def _assert_empty(store: BaseStore) -> None:
    assert store.list_namespaces() == []
    assert store.search(()) == []
    assert store.ops_seen == 2  # type: ignore[attr-defined]  # the two reads just above
    store.ops_seen = 0  # type: ignore[attr-defined]


def test_one_spelling_never_reads_or_clears_another_through_the_public_api(shared: BaseStore) -> None:
    memory, tools = _memory(shared)
    checked: list[tuple[str, str]] = []

    @ON_STORE
    @given(pair=pairs)
    def check(pair: tuple[str, str]) -> None:
        owner, other = pair
        assume(owner != other and _is_valid(other))
        token = f"secret{next(_tokens)}"
        mine = {"configurable": {"user_id": owner, "thread_id": owner}}
        theirs = {"configurable": {"user_id": other, "thread_id": other}}
        ids = {
            comp: _saved_id(
                tools["save_memory"].invoke({"content": f"the {token} {comp}", "compartment": comp}, mine)
            )
            for comp in ("user", "session")
        }
        ask = [HumanMessage(f"the {token} user session")]
        for memory_id in ids.values():
            assert tools["get_memory"].invoke({"id": memory_id}, theirs).startswith("Error")
        assert token not in tools["search_memory"].invoke({"query": f"the {token}", "limit": 100}, theirs)
        assert token not in memory.recall(ask, theirs).prompt
        for comp in ("user", "session"):
            cleared = tools["clear_memory"].invoke({"compartment": comp, "all": True}, theirs)
            assert token not in cleared
        memory.forget_user(other, threads=[other])
        for memory_id in ids.values():  # all still there for their owner
            assert token in tools["get_memory"].invoke({"id": memory_id}, mine)
        prompt = memory.recall(ask, mine).prompt
        assert f"the {token} user" in prompt
        assert f"the {token} session" in prompt
        for comp, memory_id in ids.items():  # the owner's own clear finds exactly them
            cleared = tools["clear_memory"].invoke({"compartment": comp, "all": True}, mine)
            assert memory_id in cleared
        checked.append(pair)

    try:
        check()
    finally:
        memory.close()
    assert len(checked) >= 20  # the property ran on many pairs, not on a handful left by assume()


@pytest.mark.parametrize("key", ["user_id", "thread_id", "session_id"])
def test_a_hostile_id_reads_and_writes_nothing_on_any_store(untouched: BaseStore, key: str) -> None:
    memory, tools = _memory(untouched)
    canonical = "thread_id" if key == "session_id" else key
    calls: list[tuple[str, dict[str, Any]]] = [
        ("save_memory", {"content": "x"}),
        ("search_memory", {"query": "x"}),
        ("get_memory", {"id": "k"}),
        ("update_memory", {"id": "k", "content": "y"}),
        ("delete_memory", {"id": "k"}),
        ("list_categories", {}),
        ("clear_memory", {"compartment": "user", "all": True}),
        ("clear_memory", {"compartment": "session", "all": True}),
    ]

    @ON_STORE
    @given(value=hostile_ids)
    def check(value: Any) -> None:
        configurable = {"user_id": "u", "thread_id": "t"}
        del configurable[canonical]
        config = {"configurable": {**configurable, key: value}}
        attempts: list[Callable[[], object]] = [
            *[lambda name=name, args=args: tools[name].invoke(args, config) for name, args in calls],
            lambda: memory.recall([HumanMessage("x")], config),
            lambda: memory.import_history([{"role": "user", "content": "hi"}], config),
            lambda: memory.history("k", config),
            lambda: memory.forget("k", config),
            lambda: memory.forget_user("u", threads=[value]),
        ]
        if key == "user_id":
            attempts.append(lambda: memory.forget_user(value))
        for attempt in attempts:
            with pytest.raises(ScopeError):
                attempt()
        _assert_empty(untouched)

    try:
        check()
    finally:
        memory.close()


# --------------------------------------------------------------------------- a real graph run


def _system(messages: list[Any]) -> str:
    return str(messages[0].content) if messages and isinstance(messages[0], SystemMessage) else ""


SPELLINGS = [("sam", " sam"), ("sam", "Sam"), ("sam", "SAM"), ("é", "e\u0301"), ("ﬁ", "fi"), ("1", "1\u00a0")]


@pytest.mark.parametrize(("owner", "other"), SPELLINGS, ids=[f"{a!a}-{b!a}" for a, b in SPELLINGS])
def test_a_graph_run_keeps_two_spellings_apart(shared: BaseStore, owner: str, other: str) -> None:
    token = f"secret{next(_tokens)}"
    memory = Memory(store=shared, recall=RECALL, tokenizer_model="gpt-4o-mini", tools="full")
    model = ScriptedChatModel(
        [
            tool_call("save_memory", content=f"the {token} code"),
            "Noted.",
            tool_call("clear_memory", compartment="user", all=True),
            lambda messages: "leaked" if token in _system(messages) else "clean",
            lambda messages: "kept" if f"the {token} code" in _system(messages) else "lost",
        ]
    )
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(checkpointer=InMemorySaver(), store=shared)
    try:
        graph.invoke(
            {"messages": [HumanMessage(f"remember {token}")]},
            {"configurable": {"user_id": owner, "thread_id": f"{token}a"}},
        )
        out = graph.invoke(
            {"messages": [HumanMessage(f"the {token} code?")]},
            {"configurable": {"user_id": other, "thread_id": f"{token}b"}},
        )
        assert out["messages"][-1].content == "clean"
        assert not [i for i in out["memory_context"]["items"] if token in str(i)]
        out = graph.invoke(
            {"messages": [HumanMessage(f"the {token} code?")]},
            {"configurable": {"user_id": owner, "thread_id": f"{token}c"}},
        )
        assert out["messages"][-1].content == "kept"
    finally:
        memory.close()


HOSTILE = ["", "sam\x00", "a.b", "sam\n", "\ud800", "\x85", 1, 1.0, True, uuid.UUID(int=7), b"sam", ["sam"]]


@pytest.mark.parametrize("value", HOSTILE, ids=[f"{v!a}" for v in HOSTILE])
@pytest.mark.parametrize("where", ["config", "context"])
def test_a_graph_run_with_a_hostile_id_stops_before_the_model_and_the_store(
    untouched: BaseStore, value: Any, where: str
) -> None:
    memory = Memory(store=untouched, recall=RECALL, tokenizer_model="gpt-4o-mini", tools="full")
    model = ScriptedChatModel([tool_call("save_memory", content="x"), "done"])
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model)
    graph = builder.compile(store=untouched)
    inputs = {"messages": [HumanMessage("remember x")]}
    config: Any = {"configurable": {"thread_id": "t"}}
    context = None
    if where == "config":
        config["configurable"]["user_id"] = value
    else:
        context = {"user_id": value}
    try:
        with pytest.raises(ScopeError):
            graph.invoke(inputs, config, context=context)
    finally:
        memory.close()
    assert model.calls == []
    _assert_empty(untouched)


def test_forget_steps_check_every_id_before_the_first_read() -> None:
    store = counting(InMemoryStore)()
    for user, threads in (("", []), ("u", ["ok", "a.b"]), ("u", "abc"), (1, [])):
        with pytest.raises(ScopeError):
            execute(store, forget_user_steps(user, MemoryLayout(), threads=threads))  # type: ignore[arg-type]
    assert store.ops_seen == 0  # type: ignore[attr-defined]
