"""Issue 22, tool results under hostile input: owned, bounded, never fatal.

- **Owned.** A stored tool result belongs to one user and one exact thread id: another user on
  the same thread id, or the same user on a thread id spelled differently, reads nothing of it
  through ``retrieve_result`` or ``query_results`` — with the id guessed or known.
- **Bounded.** A pattern the model passes runs on RE2 (linear time): ``(a+)+$`` over
  ``"a" * 50_000 + "!"`` answers; one RE2 cannot take is an error the model can act on. A JSON
  path or a result nested 100,000 deep never raises ``RecursionError`` (the pure properties:
  ``tests/test_hostile_result_patterns.py``).
- **Never fatal.** Whatever a tool returns (lone surrogates, control characters, 10,000-deep
  JSON, 10 MB, text blocks) the graph run goes on, the stored copy is valid for every store
  (cleaned or cut, with a note), and the model's view is usable text.

On InMemoryStore, embedded Qdrant and a SQLite CheckpointerStore, through a real ``StateGraph``
with its ``ToolNode`` and a scripted model.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_plugin import ContextConfig, Memory, MemoryState, RecallConfig, ResultsConfig, TokenBudgets
from langmem_plugin.core.scope import Scope
from langmem_plugin.services import MemoryLayout, execute
from langmem_plugin.services.context import results_update_steps
from langmem_plugin.services.context.results import result_id
from langmem_plugin.services.stored_results.patterns import MAX_PATTERN_CHARS
from langmem_plugin.services.stored_results.result_store import MAX_CONTENT_BYTES, results_namespace
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.surfaces.result_tools import create_result_tools
from langmem_plugin.testing import FakeEmbeddings, ScriptedChatModel, tool_call
from tests.test_hostile_result_patterns import CATASTROPHIC, HAYSTACK, nested

DIMS = 16
BIG = TokenBudgets(memories=100_000, knowledge=100_000, plan=100_000, run=100_000)
RECALL = RecallConfig(min_relevance=None, max_items=8, candidates=8, budgets=BIG)
RESULTS = ResultsConfig(min_chars=1, full_tokens=400, compact_above_tokens=None)
LAYOUT = MemoryLayout()
STORES = ["inmemory", "qdrant", "sqlite"]
ON_STORE = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SURROGATE = re.compile("[\ud800-\udfff]")

_tokens = itertools.count()


@contextlib.contextmanager
def _opened(kind: str, folder: Path) -> Iterator[BaseStore]:
    index: Any = {"dims": DIMS, "embed": FakeEmbeddings(DIMS), "fields": ["content"]}
    if kind == "inmemory":
        yield InMemoryStore(index=index)
    elif kind == "qdrant":
        pytest.importorskip("qdrant_edge")
        from langmem_plugin.stores.qdrant import QdrantStore

        store = QdrantStore(path=folder / "q", index=index)
        try:
            yield store
        finally:
            store.close()
    else:
        with CheckpointerStore.from_sqlite(folder / "memory.sqlite", index=index) as store:
            yield store


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseStore]:
    """One store per kind; every test writes under fresh thread ids, so none sees another's."""
    with _opened(request.param, tmp_path_factory.mktemp(f"results-{request.param}")) as opened:
        yield opened


# --------------------------------------------------------------------------- a real graph


OUTPUT: dict[str, Any] = {}


@tool
def fetch(key: str) -> Any:
    """Fetch a document by key."""
    return OUTPUT[key]


def _config(user: str | None, thread: str) -> dict[str, Any]:
    configurable = {"thread_id": thread} if user is None else {"user_id": user, "thread_id": thread}
    return {"configurable": configurable}


def _run(
    store: BaseStore,
    script: list[Any],
    config: dict[str, Any],
    *,
    results: ResultsConfig = RESULTS,
    prompt: str = "go",
) -> tuple[dict[str, Any], ScriptedChatModel]:
    """One graph run: recall -> model -> ToolNode(fetch + memory tools) -> results -> model ..."""
    memory = Memory(
        store=store, recall=RECALL, tokenizer_model="gpt-4o-mini", context=ContextConfig(results=results)
    )
    model = ScriptedChatModel(script)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, model, tools=[fetch])
    graph = builder.compile(checkpointer=InMemorySaver(), store=store)
    try:
        out = graph.invoke({"messages": [HumanMessage(prompt)]}, config)
    finally:
        memory.close()
    return out, model


def _call_id(message: AIMessage) -> str:
    return str(message.tool_calls[0]["id"])


def _answer(messages: list[BaseMessage], call: AIMessage) -> ToolMessage:
    return next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == _call_id(call))


def _seen(model: ScriptedChatModel, call_number: int, call: AIMessage) -> str:
    """What the model saw of ``call``'s result on its ``call_number``-th call (from 1)."""
    content = _answer(model.calls[call_number - 1], call).content
    assert isinstance(content, str), "the model's view of a stored result is text"
    return content


def _retrieve(**args: Any) -> AIMessage:
    return tool_call("retrieve_result", **args)


def _fetch_call(call_id: str, key: str) -> AIMessage:
    """A call of ``fetch`` with the call id given (``tool_call`` numbers them itself)."""
    return AIMessage(
        "", tool_calls=[{"name": "fetch", "args": {"key": key}, "id": call_id, "type": "tool_call"}]
    )


# --------------------------------------------------------------------------- 2. owned

# Ids exactly as scope.py takes them: no '.', no control character, no lone surrogate.
id_text = st.text(
    st.characters(exclude_categories=("Cc", "Cs"), exclude_characters="."), min_size=1, max_size=8
)
SPELLINGS = [("t", "t "), ("t", "T"), ("é", "e\u0301"), ("ﬁ", "fi"), ("1", "1\u00a0"), ("a", "\u200ba")]


def _store_result(store: BaseStore, scope: Scope, call_id: str, text: str) -> str:
    """Store ``text`` as the result of ``call_id`` for ``scope``, as the results node does."""
    messages = [
        AIMessage(
            "", tool_calls=[{"name": "fetch", "args": {"key": "k"}, "id": call_id, "type": "tool_call"}]
        ),
        ToolMessage(text, tool_call_id=call_id, name="fetch"),
    ]
    update = execute(store, results_update_steps(messages, {}, {}, scope, LAYOUT, RESULTS))
    return str(update["tool_results"][call_id]["id"])


def _tools(store: BaseStore) -> dict[str, BaseTool]:
    return {t.name: t for t in create_result_tools(store=store, layout=LAYOUT, config=RESULTS)}


def _read(tools: dict[str, BaseTool], scope: Scope, rid: str) -> tuple[str, str]:
    config = _config(scope.user_id, str(scope.thread_id))
    got = str(tools["retrieve_result"].invoke({"id": rid, "transform": "excerpt", "length": 10**6}, config))
    listed = str(tools["query_results"].invoke({"limit": 100}, config))
    return got, listed


@ON_STORE
@given(
    user=id_text,
    other_user=id_text,
    thread=id_text,
    other_thread=id_text,
    who=st.sampled_from(["user", "thread", "both", "no-user", "same"]),
)
def test_a_result_is_read_back_by_its_own_user_and_thread_only(
    store: BaseStore, user: str, other_user: str, thread: str, other_thread: str, who: str
) -> None:
    token = f"k{next(_tokens)}-"
    owner = Scope(user_id=user, thread_id=token + thread)
    if who == "user":
        assume(other_user != user)
        reader = Scope(user_id=other_user, thread_id=token + thread)
    elif who == "thread":
        assume(other_thread != thread)
        reader = Scope(user_id=user, thread_id=token + other_thread)
    elif who == "both":
        assume(other_user != user and other_thread != thread)
        reader = Scope(user_id=other_user, thread_id=token + other_thread)
    elif who == "no-user":
        reader = Scope(thread_id=token + thread)
    else:
        reader = owner
    secret = f"secret {token} " * 5
    rid = _store_result(store, owner, "call_same", secret)
    got, listed = _read(_tools(store), reader, rid)
    if reader == owner:
        assert got.endswith(secret)
        assert rid in listed
    else:
        assert got.startswith("Error: no stored result")
        assert secret not in got
        assert token not in got
        assert listed == "No stored results match."


@pytest.mark.parametrize(("one", "two"), SPELLINGS, ids=[f"{a!a}-{b!a}" for a, b in SPELLINGS])
def test_thread_ids_the_checkpointer_keeps_apart_keep_their_results_apart(
    store: BaseStore, one: str, two: str
) -> None:
    token = f"s{next(_tokens)}"
    first, second = Scope(user_id="ann", thread_id=token + one), Scope(user_id="ann", thread_id=token + two)
    rid_one = _store_result(store, first, "call_1", f"first {token} " * 5)
    rid_two = _store_result(store, second, "call_1", f"second {token} " * 5)
    assert rid_one == rid_two  # the same call id: the same short id, in two namespaces
    tools = _tools(store)
    got_one, listed_one = _read(tools, first, rid_one)
    got_two, listed_two = _read(tools, second, rid_two)
    assert got_one.endswith(f"first {token} " * 5)
    assert "second" not in got_one + listed_one
    assert got_two.endswith(f"second {token} " * 5)
    assert "first" not in got_two + listed_two


def test_two_users_sharing_a_thread_id_in_a_graph_never_read_each_others_results(store: BaseStore) -> None:
    token = f"g{next(_tokens)}"
    thread = f"shared-{token}"
    OUTPUT[f"alice-{token}"] = f"alice's private notes {token}: the code is 4217. " * 20
    OUTPUT[f"bob-{token}"] = f"bob's own page {token}. " * 20
    # both runs' tool calls carry the same call id, so the same short result id
    alice_call, bob_call = _fetch_call("c-1", f"alice-{token}"), _fetch_call("c-1", f"bob-{token}")
    rid = result_id("c-1")
    out, _ = _run(store, [alice_call, "stored"], _config("alice", thread))
    assert out["tool_results"]["c-1"]["id"] == rid
    read = _retrieve(id=rid, transform="full")
    guess = _retrieve(id=result_id("c-2"))
    listing = tool_call("query_results", text="4217")
    out, _ = _run(store, [bob_call, read, guess, listing, "done"], _config("bob", thread))
    assert out["messages"][-1].content == "done"
    text = "\n".join(str(m.content) for m in out["messages"])
    assert "4217" not in text
    assert "alice" not in text
    assert f"bob's own page {token}" in str(_answer(out["messages"], read).content)  # his own, same id
    assert str(_answer(out["messages"], guess).content).startswith("Error: no stored result")
    assert _answer(out["messages"], listing).content == "No stored results match."
    # and the results of a run without a user are a third owner's
    out, _ = _run(store, [_retrieve(id=rid), "done"], _config(None, thread))
    assert "Error: no stored result" in "\n".join(str(m.content) for m in out["messages"])


def test_the_user_from_the_runtime_context_owns_the_result_the_same_way(store: BaseStore) -> None:
    token = f"c{next(_tokens)}"
    OUTPUT[token] = f"context-owned page {token}. " * 20
    memory = Memory(
        store=store, recall=RECALL, tokenizer_model="gpt-4o-mini", context=ContextConfig(results=RESULTS)
    )
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    own, other = _retrieve(id=rid), _retrieve(id=rid)
    answers = []
    try:
        for user, script in (("ann", [fetching, own, "done"]), ("bob", [other, "done"])):
            builder = StateGraph(MemoryState)
            memory.add_to(builder, ScriptedChatModel(script), tools=[fetch])
            graph = builder.compile(checkpointer=InMemorySaver(), store=store)
            out = graph.invoke(
                {"messages": [HumanMessage("go")]},
                {"configurable": {"thread_id": token}},
                context={"user_id": user},
            )
            answers.append(str(_answer(out["messages"], own if user == "ann" else other).content))
    finally:
        memory.close()
    assert f"context-owned page {token}" in answers[0]
    assert answers[1].startswith("Error: no stored result")


def test_an_id_is_taken_exactly_as_given(store: BaseStore) -> None:
    scope = Scope(user_id="ann", thread_id=f"x{next(_tokens)}")
    rid = _store_result(store, scope, "call_x", "exact " * 10)
    tools = _tools(store)
    for spelled in (f" {rid}", f"{rid}\n", rid.upper(), rid + "0", rid[:-1]):
        got, _ = _read(tools, scope, spelled)
        assert got.startswith("Error: no stored result"), spelled
    assert _read(tools, scope, rid)[0].endswith("exact " * 10)
    namespace = results_namespace(LAYOUT, scope)
    assert namespace[-2:] == ("user", "ann")
    assert scope.thread_id in namespace


# --------------------------------------------------------------------------- 3. bounded patterns


def test_catastrophic_patterns_answer_through_the_graph(store: BaseStore) -> None:
    token = f"p{next(_tokens)}"
    OUTPUT[token] = HAYSTACK
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    reads = [_retrieve(id=rid, transform="filtered", pattern=p) for p in CATASTROPHIC]
    matching = _retrieve(id=rid, transform="filtered", pattern="(a+)+!$")
    out, _ = _run(store, [fetching, *reads, matching, "done"], _config("ann", token))
    assert out["messages"][-1].content == "done"
    for read in reads:
        assert str(_answer(out["messages"], read).content).endswith("filtered:\nNo line matches.")
    assert "filtered:\n1: aaaa" in str(_answer(out["messages"], matching).content)


def test_a_bad_pattern_through_the_graph_is_an_error_message_and_the_run_goes_on(store: BaseStore) -> None:
    token = f"b{next(_tokens)}"
    OUTPUT[token] = "line one\nline two\n" * 100
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    back = _retrieve(id=rid, transform="filtered", pattern=r"(\w+) \1")
    long = _retrieve(id=rid, transform="filtered", pattern="a" * (MAX_PATTERN_CHARS + 1))
    broken = _retrieve(id=rid, transform="filtered", pattern="\ud800+")
    out, _ = _run(store, [fetching, back, long, broken, "done"], _config("ann", token))
    assert out["messages"][-1].content == "done"
    assert "RE2 syntax" in str(_answer(out["messages"], back).content)
    assert f"at most {MAX_PATTERN_CHARS}" in str(_answer(out["messages"], long).content)
    assert "lone surrogate" in str(_answer(out["messages"], broken).content)
    for call in (back, long, broken):
        assert _answer(out["messages"], call).status == "error"


def test_a_deep_json_result_through_the_graph_is_read_as_text(store: BaseStore) -> None:
    token = f"j{next(_tokens)}"
    OUTPUT[token] = nested(10_000)
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    path = _retrieve(id=rid, transform="filtered", path="$[0][0]")
    deep_path = _retrieve(id=rid, transform="filtered", path="$" + "[0]" * 5000)
    first = _retrieve(id=rid, transform="first_n", n=2)
    summary = _retrieve(id=rid, transform="summary")
    compacting = ResultsConfig(min_chars=1, full_tokens=50, compact_above_tokens=200)
    out, model = _run(
        store, [fetching, path, deep_path, first, summary, "done"], _config("ann", token), results=compacting
    )
    assert out["messages"][-1].content == "done"
    assert "JSON path needs a JSON result" in str(_answer(out["messages"], path).content)
    assert "at most" in str(_answer(out["messages"], deep_path).content)
    first_answer = _answer(out["messages"], first)
    assert first_answer.status != "error"
    assert "first 2:\n" + "[" * 500 in str(first_answer.content)  # its one line, cut to a page
    assert _answer(out["messages"], summary).status != "error"
    assert f"[result {rid} compacted" in _seen(model, 6, fetching)  # described as text, cited


# --------------------------------------------------------------------------- 4. never fatal

hostile_char = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),
    st.characters(categories=["Cc"]),
    st.sampled_from(['"', "\\", "\u2028", "\ufeff", "<", "[", "{"]),
)
hostile_piece = st.one_of(hostile_char, st.sampled_from(["<title>", "</title>", "\ud83d\ude00", "\r\n"]))
hostile_text = st.lists(hostile_piece, min_size=1, max_size=200).map("".join)


def _check_hostile_run(store: BaseStore, payload: Any, expected_text: str) -> tuple[dict[str, Any], str]:
    """Run a graph whose tool returns ``payload`` (text ``expected_text``): the run ends, the model's
    view is valid text with the result id, and retrieve_result reads back the cleaned text."""
    token = f"h{next(_tokens)}"
    OUTPUT[token] = payload
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    clean = SURROGATE.sub("\ufffd", expected_text)
    read = _retrieve(id=rid, transform="excerpt", start=0, length=400)
    out, model = _run(store, [fetching, read, "done"], _config("ann", token))
    assert out["messages"][-1].content == "done"
    view = _seen(model, 2, fetching)
    assert SURROGATE.search(view) is None
    view.encode("utf-8")  # usable: any provider can send it
    assert f"result {rid}" in view
    entry = out["tool_results"][_call_id(fetching)]
    assert entry.get("cleaned", 0) == len(SURROGATE.findall(expected_text))
    assert str(_answer(out["messages"], read).content).endswith(clean[:400])
    return out, view


@ON_STORE
@given(text=hostile_text)
def test_any_tool_text_is_stored_cleaned_and_the_run_goes_on(store: BaseStore, text: str) -> None:
    payload = f"head {text} tail"
    _check_hostile_run(store, payload, payload)


@ON_STORE
@given(texts=st.lists(hostile_text, min_size=1, max_size=4))
def test_text_blocks_are_read_as_text(store: BaseStore, texts: list[str]) -> None:
    blocks = [{"type": "text", "text": f"block {text} end"} for text in texts]
    _check_hostile_run(store, blocks, "".join(b["text"] for b in blocks))


BIG_OUTPUTS = {
    "10MB": ("Mixed text, é, 😀 and \x00. " * 400_000)[:10_000_000],
    "nul": "\x00" * 300_000,
    "emoji": "😀" * 300_000,
    "quotes": '"\\' * 200_000,
    "deep-json": nested(10_000),
    "deep-object-json": nested(10_000, "{"),
    "surrogates": "\ud800x" * 200_000,
}


@pytest.mark.parametrize("kind", list(BIG_OUTPUTS))
def test_a_huge_or_deep_output_is_stored_within_bounds_and_said_so(store: BaseStore, kind: str) -> None:
    payload = BIG_OUTPUTS[kind]
    out, view = _check_hostile_run(store, payload, payload)
    entry = next(iter(out["tool_results"].values()))
    stored = entry.get("stored_chars", len(payload))
    clean = SURROGATE.sub("\ufffd", payload)[:stored]
    assert len(json.dumps(clean, ensure_ascii=False).encode()) <= MAX_CONTENT_BYTES + 2
    if stored < len(payload):
        assert f"only its first {stored} characters are stored" in view
    assert entry["chars"] == len(payload)


def test_a_result_no_record_can_hold_is_let_through_uncompacted(store: BaseStore) -> None:
    token = f"w{next(_tokens)}"
    OUTPUT[token] = " " * 300_000 + "x"  # the stored part would be blank: a record needs text
    fetching = tool_call("fetch", key=token)
    out, model = _run(store, [fetching, "done"], _config("ann", token))
    assert out["messages"][-1].content == "done"
    assert _call_id(fetching) not in out.get("tool_results", {})
    assert _seen(model, 2, fetching) == OUTPUT[token]


def _deep_object(depth: int, shape: str) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value} if shape == "dict" else [value]
    return value


@pytest.mark.parametrize("shape", ["dict", "list"])
def test_an_object_too_deep_to_write_as_text_is_an_error_message_and_the_run_goes_on(
    store: BaseStore, shape: str
) -> None:
    token = f"o{next(_tokens)}"
    OUTPUT[token] = _deep_object(10_000, shape)  # LangChain cannot turn it into a ToolMessage
    fetching = tool_call("fetch", key=token)
    after = tool_call("fetch", key=f"{token}-ok")
    OUTPUT[f"{token}-ok"] = "a flat answer " * 50
    out, model = _run(store, [fetching, after, "done"], _config("ann", token))
    assert out["messages"][-1].content == "done"
    answer = _answer(out["messages"], fetching)
    assert answer.status == "error"
    assert "nests too deeply to be written as text" in str(answer.content)
    assert "nests too deeply" in _seen(model, 2, fetching)
    assert _call_id(after) in out["tool_results"]  # and the next result is stored as usual


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_middleware_path_cleans_the_same_way(mode: str) -> None:
    from langchain.agents import create_agent

    token = f"m{next(_tokens)}"
    OUTPUT[token] = "start \ud800 end " * 300
    memory = Memory(
        store=InMemoryStore(),
        recall=RECALL,
        tokenizer_model="gpt-4o-mini",
        context=ContextConfig(results=RESULTS),
    )
    fetching = tool_call("fetch", key=token)
    rid = result_id(_call_id(fetching))
    model = ScriptedChatModel([fetching, _retrieve(id=rid, transform="first_n", n=1), "done"])
    agent = create_agent(
        model,
        tools=[fetch, *memory.tools],
        middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
        store=memory.store,
    )
    inputs = {"messages": [HumanMessage("go")]}
    config = _config("ann", token)
    try:
        out = agent.invoke(inputs, config) if mode == "sync" else await agent.ainvoke(inputs, config)
    finally:
        memory.close()
    assert out["messages"][-1].content == "done"
    view = _seen(model, 2, fetching)
    assert "\ud800" not in view
    assert "\ufffd" in view
    assert f"result {rid}" in view
    assert "lone surrogates (not valid text) were replaced with U+FFFD" in view
    assert out["tool_results"][_call_id(fetching)]["cleaned"] == 300


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_middleware_path_survives_an_object_too_deep_to_write(mode: str) -> None:
    from langchain.agents import create_agent

    token = f"n{next(_tokens)}"
    OUTPUT[token] = _deep_object(10_000, "dict")
    context = ContextConfig(results=RESULTS)
    memory = Memory(store=InMemoryStore(), recall=RECALL, tokenizer_model="gpt-4o-mini", context=context)
    fetching = tool_call("fetch", key=token)
    model = ScriptedChatModel([fetching, "done"])
    agent = create_agent(
        model,
        tools=[fetch],
        middleware=[memory.middleware()],
        checkpointer=InMemorySaver(),
        store=memory.store,
    )
    inputs = {"messages": [HumanMessage("go")]}
    config = _config("ann", token)
    try:
        out = agent.invoke(inputs, config) if mode == "sync" else await agent.ainvoke(inputs, config)
    finally:
        memory.close()
    assert out["messages"][-1].content == "done"
    assert "nests too deeply" in _seen(model, 2, fetching)
