"""``langmem-plugin memories`` and ``langmem-plugin inspect`` over real stores, through ``main()``.

One memory directory for the module, written by ``Memory(path=...)`` through a real ``StateGraph``
whose scripted model calls the memory tools: user ``sam`` saves a tea preference in thread ``t1``
and updates it in ``t2`` (a history of ADD then UPDATE), saves a hostile memory (an escape
sequence, a line break, a carriage return); user ``alex`` saves one of their own in ``t3``; a
thread ``t9`` has session memory only; a user id holds a bidi override. Then closed, as an agent
leaves it, and read by the command as a person would. One SQLite file a ``CheckpointerStore``
wrote is read too. Errors are one line on stderr and exit status 2, with nothing on stdout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import CheckpointerStore, Memory, MemoryState, memory_index
from langmem_plugin.cli import main
from langmem_plugin.core.embeddings import MiniLMEmbeddings
from langmem_plugin.testing import ScriptedChatModel, tool_call

HOSTILE = "evil \x1b[2J\nforged row\rback"
BIDI_USER = "mal\u202eory"


@dataclass(frozen=True)
class Written:
    """The memory directory and the ids of what was saved in it."""

    path: Path
    tea: str  # sam's, saved in t1 then updated in t2
    hostile: str  # sam's
    peanuts: str  # alex's

    @property
    def store(self) -> str:
        return str(self.path)


def _saved_id(out: dict[str, Any]) -> str:
    (answer,) = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    found = re.search(r"(?:Saved|Updated) memory (\S+?):? ", str(answer))
    assert found, answer
    return found.group(1)


def _turn(memory: Memory, script: list[Any], said: str, user: str, thread: str) -> dict[str, Any]:
    """One turn of a real agent graph (recall → model → memory tools → remember)."""
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(script))
    graph = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    config: Any = {"configurable": {"user_id": user, "thread_id": thread}}
    out: dict[str, Any] = graph.invoke({"messages": [("user", said)]}, config)
    return out


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbeddings) -> Written:
    path = tmp_path_factory.mktemp("cli") / "memory"
    memory = Memory(path=path, embeddings=minilm)
    try:
        save_tea = tool_call("save_memory", content="Prefers green tea", category="preferences/drinks")
        tea = _saved_id(_turn(memory, [save_tea, "Noted."], "I like green tea", "sam", "t1"))
        update = tool_call("update_memory", id=tea, content="Prefers oolong tea")
        assert _saved_id(_turn(memory, [update, "Updated."], "Actually, oolong", "sam", "t2")) == tea
        save_hostile = tool_call("save_memory", content=HOSTILE, category="notes")
        hostile = _saved_id(_turn(memory, [save_hostile, "ok"], "remember this", "sam", "t1"))
        save_peanuts = tool_call("save_memory", content="Alex is allergic to peanuts", category="health")
        peanuts = _saved_id(_turn(memory, [save_peanuts, "ok"], "I'm allergic to peanuts", "alex", "t3"))
        memory.import_history(
            [("user", "Book a table for two"), ("assistant", "Done.")], {"configurable": {"thread_id": "t9"}}
        )
        memory.import_history(
            [("user", "I collect stamps"), ("assistant", "Nice.")],
            {"configurable": {"thread_id": "t5", "user_id": BIDI_USER}},
        )
        memory.flush()
    finally:
        memory.close()
    return Written(path, tea, hostile, peanuts)


@pytest.fixture(scope="module")
def sqlite_file(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbeddings) -> Path:
    path = tmp_path_factory.mktemp("cli-sqlite") / "agent.sqlite"
    with CheckpointerStore.from_sqlite(path, index=memory_index(minilm)) as store:
        memory = Memory(store)
        memory.import_history(
            [("user", "My dog is called Rex"), ("assistant", "Noted, Rex it is.")],
            {"configurable": {"thread_id": "k1", "user_id": "kim"}},
        )
        memory.close()
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What ``langmem-plugin ARGV`` prints, having succeeded with nothing on stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, ""), captured.err
    return captured.out


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    out = _run(capsys, *argv, "--json")
    assert "\x1b" not in out
    assert out.isascii()
    return json.loads(out)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line ``langmem-plugin ARGV`` wrote on stderr, having exited 2 and printed nothing."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # refused by the argument parser
        code = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == 2, (code, captured)
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("langmem-plugin")
    assert lines[0].isprintable()
    return lines[0]


def _ids(page: dict[str, Any]) -> list[str]:
    return [row["id"] for row in page["rows"]]


def _row_lines(out: str) -> list[str]:
    """The lines of the first table in ``out``: those after its rule, up to the blank line."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    rows = []
    for line in lines[rule + 1 :]:
        if not line:
            break
        rows.append(line)
    return rows


# --------------------------------------------------------------------------- list


def test_list_without_a_user_is_the_catalog(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, "memories", "list", "--store", written.store)
    assert f"{written.store}: 3 user(s)" in out
    users = next(line for line in out.splitlines() if line.startswith("users "))
    assert users.split(None, 1)[1].split(", ") == ["alex", "mal\\u202eory", "sam"]
    threads = next(line for line in out.splitlines() if line.startswith("threads "))
    assert {"t1", "t2", "t3", "t5", "t9"} <= set(threads.split(None, 1)[1].split(", "))
    assert re.search(r"^sam +t1, t2$", out, re.MULTILINE)
    assert re.search(r"^alex +t3$", out, re.MULTILINE)
    assert "\u202e" not in out  # the override is shown, never applied

    catalog = _json(capsys, "memories", "list", "--store", written.store)
    assert catalog["users"] == ["alex", BIDI_USER, "sam"]
    assert catalog["user_threads"]["sam"] == ["t1", "t2"]
    assert catalog["user_threads"]["alex"] == ["t3"]
    assert "t9" in catalog["compartments"]["session"]


def test_a_users_page_holds_their_memories_and_no_one_elses(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "memories", "list", "--store", written.store, "--user", "sam")
    assert out.startswith("user memory in memories/user/sam: rows 1-")
    (tea,) = [line for line in _row_lines(out) if line.startswith(written.tea)]
    assert re.search(r" fact +preferences/drinks .* yes .*Prefers oolong tea$", tea)
    assert written.peanuts not in out
    assert "peanuts" not in out
    assert out.rstrip().endswith("no more")

    sam = _json(capsys, "memories", "list", "--store", written.store, "--user", "sam")
    assert sam["namespace"] == ["memories", "user", "sam"]
    assert {row["namespace"][-1] for row in sam["rows"]} == {"sam"}
    assert {written.tea, written.hostile} <= set(_ids(sam))
    assert written.peanuts not in _ids(sam)
    (tea_row,) = [row for row in sam["rows"] if row["id"] == written.tea]
    assert tea_row["content"] == "Prefers oolong tea"
    assert tea_row["category"] == "preferences/drinks"
    assert tea_row["current"] is True
    assert tea_row["source"] == "tool:save_memory"

    alex = _json(capsys, "memories", "list", "--store", written.store, "--user", "alex")
    assert written.peanuts in _ids(alex)
    assert not {written.tea, written.hostile} & set(_ids(alex))
    assert all("tea" not in row["content"] for row in alex["rows"])


def test_a_page_filters_by_kind_category_and_text(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("memories", "list", "--store", written.store, "--user", "sam")
    facts = _json(capsys, *base, "--kind", "fact")
    assert sorted(_ids(facts)) == sorted([written.tea, written.hostile])
    assert facts["filters"] == {"kind": "fact"}
    episodes = _json(capsys, *base, "--kind", "episode")
    assert episodes["rows"]
    assert {row["kind"] for row in episodes["rows"]} == {"episode"}
    drinks = _json(capsys, *base, "--category", "preferences/drinks")
    assert _ids(drinks) == [written.tea]
    oolong = _json(capsys, *base, "--contains", "PREFERS OOLONG")  # case-insensitive
    assert _ids(oolong) == [written.tea]
    assert _json(capsys, *base, "--contains", "peanuts")["rows"] == []  # alex's, not sam's

    out = _run(capsys, *base, "--contains", "PREFERS OOLONG")
    assert "(filtered: contains=PREFERS OOLONG)" in out.splitlines()[0]
    assert [line.split()[0] for line in _row_lines(out)] == [written.tea]
    empty = _run(capsys, *base, "--category", "no-such-category")
    assert "(no memories)" in empty
    assert "rows none" in empty


def test_offset_and_limit_page_through_the_same_listing(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("memories", "list", "--store", written.store, "--user", "sam")
    everything = _ids(_json(capsys, *base))
    assert len(everything) >= 5  # 3 episodes, 2 facts
    pages = [_json(capsys, *base, "--offset", str(at), "--limit", "2") for at in range(0, len(everything), 2)]
    assert [row for page in pages for row in _ids(page)] == everything
    assert [page["more"] for page in pages] == [True] * (len(pages) - 1) + [False]
    assert [page["offset"] for page in pages] == list(range(0, len(everything), 2))

    first = _run(capsys, *base, "--limit", "2")
    assert len(_row_lines(first)) == 2
    assert "rows 1-2" in first.splitlines()[0]
    assert first.rstrip().endswith("more: --offset 2")
    last = _run(capsys, *base, "--offset", str(len(everything) - 1), "--limit", "2")
    assert len(_row_lines(last)) == 1
    assert last.rstrip().endswith("no more")


def test_a_thread_lists_everything_of_it(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    page = _json(capsys, "memories", "list", "--store", written.store, "--thread", "t9")
    assert page["compartment"] == "thread"  # its session memory and its users' exchanges from it
    assert "User: Book a table for two\nAssistant: Done." in [row["content"] for row in page["rows"]]
    argv = ("memories", "list", "--store", written.store, "--thread", "t9", "--compartment", "session")
    session = _json(capsys, *argv)
    assert session["compartment"] == "session"
    assert [row["content"] for row in session["rows"]] == ["User: Book a table for two\nAssistant: Done."]


# --------------------------------------------------------------------------- search, show, history


def test_search_shows_every_candidate_with_its_outcome(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("memories", "search", "what tea do I like?", "--store", written.store, "--user", "sam")
    recall = _json(capsys, *argv)
    considered = recall["considered"]
    assert len(considered) >= 2
    assert considered[0]["id"] == written.tea
    assert considered[0]["outcome"] == "injected"
    assert written.peanuts not in [c["id"] for c in considered]
    assert all(c["outcome"] for c in considered)
    assert "Prefers oolong tea" in recall["prompt"]
    assert recall["tokens"]["total"] > 0

    out = _run(capsys, *argv)
    assert out.startswith(
        f"recall of what tea do I like?: {len(considered)} candidate(s), "
        f"{sum(c['outcome'] == 'injected' for c in considered)} injected"
    )
    rows = _row_lines(out)
    assert len(rows) == len(considered)  # every candidate, one line each
    for row, candidate in zip(rows, considered, strict=True):
        assert f" {candidate['outcome']} " in row
    assert re.match(r" *1 +injected +user .*Prefers oolong tea$", rows[0])
    assert "the prompt block the model would get:" in out
    assert "<memory_context>" in out
    assert "tokens: memories " in out


def test_show_gives_the_fields_the_exchanges_and_the_count_of_changes(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("memories", "show", written.tea, "--store", written.store, "--user", "sam")
    detail = _json(capsys, *argv)
    assert detail["memory"]["id"] == written.tea
    assert detail["memory"]["content"] == "Prefers oolong tea"
    assert detail["memory"]["namespace"] == ["memories", "user", "sam"]
    assert [entry["action"] for entry in detail["history"]] == ["ADD", "UPDATE"]
    exchanges = {x["thread_id"]: x["text"] for x in detail["exchanges"]}
    assert set(exchanges) == {"t1", "t2"}
    assert "I like green tea" in exchanges["t1"]
    assert "Actually, oolong" in exchanges["t2"]

    out = _run(capsys, *argv)
    lines = out.splitlines()
    assert re.fullmatch(rf"id +{written.tea}", lines[0])
    assert "category     preferences/drinks" in lines
    assert lines[lines.index("content") + 1] == "  Prefers oolong tea"
    assert "came from these exchanges:" in lines
    assert any(line.startswith("t1/") and "I like green tea" in line for line in lines)
    assert "history: 2 recorded change(s) (memories history ... to see them)" in lines


def test_history_is_add_then_update(written: Written, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("memories", "history", written.tea, "--store", written.store, "--user", "sam")
    history = _json(capsys, *argv)
    assert history["memory_id"] == written.tea
    add, update = history["history"]
    assert (add["action"], add["new"], add["thread_id"], add["source"]) == (
        "ADD",
        "Prefers green tea",
        "t1",
        "tool:save_memory",
    )
    assert (update["action"], update["old"], update["new"], update["thread_id"], update["source"]) == (
        "UPDATE",
        "Prefers green tea",
        "Prefers oolong tea",
        "t2",
        "tool:update_memory",
    )

    out = _run(capsys, *argv)
    assert out.startswith(f"history of {written.tea}: 2 recorded change(s)")
    first, second = _row_lines(out)
    assert re.search(r" ADD +tool:save_memory +t1 +→ Prefers green tea +-$", first)
    assert re.search(r" UPDATE +tool:update_memory +t2 +Prefers green tea → Prefers oolong tea +-$", second)


def test_a_checkpointer_stores_sqlite_file_is_read_the_same_way(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(sqlite_file)
    assert _json(capsys, "memories", "list", "--store", store)["users"] == ["kim"]
    page = _json(capsys, "memories", "list", "--store", store, "--user", "kim")
    (row,) = page["rows"]
    assert row["content"] == "User: My dog is called Rex\nAssistant: Noted, Rex it is."
    recall = _json(capsys, "memories", "search", "what is my dog called?", "--store", store, "--user", "kim")
    assert [(c["id"], c["outcome"]) for c in recall["considered"]] == [(row["id"], "injected")]
    out = _run(capsys, "memories", "show", row["id"], "--store", store, "--user", "kim")
    assert "  User: My dog is called Rex" in out.splitlines()


# --------------------------------------------------------------------------- hostile content


def test_hostile_content_never_reaches_the_terminal_raw(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("--store", written.store, "--user", "sam")
    listing = _run(capsys, "memories", "list", *base)
    search = _run(capsys, "memories", "search", "forged row", *base)
    shown = _run(capsys, "memories", "show", written.hostile, *base)
    history = _run(capsys, "memories", "history", written.hostile, *base)
    for out in (listing, search, shown, history):
        assert "\x1b" not in out
        assert "\r" not in out
        assert "evil \\x1b[2J" in out  # shown as its escape
        # the line break inside the memory forged no line: "forged row" only inside a row or a block
        for line in out.splitlines():
            assert not line.startswith("forged row")
    (row,) = [line for line in _row_lines(listing) if "forged row" in line]
    assert row.startswith(written.hostile)
    assert row.endswith("evil \\x1b[2J\\nforged row\\rback")
    (candidate,) = [line for line in _row_lines(search) if "forged row" in line]
    assert candidate.endswith("evil \\x1b[2J\\nforged row\\rback")
    (change,) = _row_lines(history)
    assert "→ evil \\x1b[2J\\nforged row\\rback" in change
    lines = shown.splitlines()
    at = lines.index("content")
    assert lines[at + 1 : at + 3] == ["  evil \\x1b[2J", "  forged row\\rback"]  # indented, escaped

    stored = _json(capsys, "memories", "show", written.hostile, *base)
    assert stored["memory"]["content"] == HOSTILE  # the JSON keeps it exactly, escaped


def test_a_table_keeps_each_row_on_one_line_and_aligns_only_numbers_right() -> None:
    from langmem_plugin.inspector.terminal import table

    out = table(["id", "used", "reason", "content"], [["m1", 3, None, HOSTILE], ["m22", 12, None, "ok"]])
    header, _, first, second = out.splitlines()
    assert header == "id   used  reason  content"
    assert first == "m1      3  -       evil \\x1b[2J\\nforged row\\rback"
    assert second == "m22    12  -       ok"  # a column of "-" only is text: left, as its header


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--user", "a.b"], "user_id 'a.b' holds a '.'"),
        (["--user", "a\x00b"], "user_id 'a\\x00b' holds the character U+0000 (a control character)"),
        (["--user", ""], "user_id is the empty string"),
        (["--thread", "t.1"], "thread_id 't.1' holds a '.'"),
    ],
    ids=["dot", "nul", "empty", "thread-dot"],
)
def test_an_id_that_cannot_be_one_is_refused(
    written: Written, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    line = _refused(capsys, "memories", "list", "--store", written.store, *argv)
    assert line.startswith("langmem-plugin memories list: ")
    assert said in line


def test_a_missing_store_is_refused_and_not_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-memory-here"
    for argv in (
        ["memories", "list", "--store", str(missing)],
        ["memories", "search", "tea", "--store", str(missing), "--user", "sam"],
        ["inspect", str(missing)],
    ):
        line = _refused(capsys, *argv)
        assert f"no store at {str(missing)!r}" in line
        assert "postgresql://" in line  # what is accepted
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_memory_and_another_users_memory_are_not_found(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ("--store", written.store, "--user", "sam")
    line = _refused(capsys, "memories", "show", "no-such-id", *base)
    assert line.startswith("langmem-plugin memories show: no memory 'no-such-id' in memories/user/sam")
    line = _refused(capsys, "memories", "history", written.peanuts, *base)  # alex's
    assert f"no memory {written.peanuts!r}" in line
    assert "Alex" not in line


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["search", "tea"], "pass --user USER_ID"),
        (["history", "some-id"], "history is kept per user: pass --user USER_ID"),
        (["list", "--kind", "fact"], "--kind applies to a page of memories"),
        (["list", "--offset", "2", "--limit", "5"], "--offset, --limit apply to a page of memories"),
        (["list", "--compartment", "user"], "--compartment user is read for someone: pass --user USER_ID"),
        (["list", "--user", "sam", "--compartment", "session"], "pass --thread THREAD_ID"),
        (["list", "--user", "sam", "--limit", "0"], "--limit: must be a whole number of at least 1"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_options_that_name_no_one_are_refused_not_ignored(
    written: Written, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    action, *rest = argv
    line = _refused(capsys, "memories", action, *rest, "--store", written.store)
    assert said in line
    assert "config" not in line  # said in the command's words, not a graph's


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--host", "0.0.0.0"], "--host '0.0.0.0' is not this machine"),
        (["--host", "example.com"], "Pass --allow-remote"),
        (["--snapshot", "--allow-writes"], "--allow-writes with --snapshot"),
        (["--port", "0"], "--port: must be a port number from 1 to 65535, got '0'"),
        (["--port", "70000"], "--port: must be a port number from 1 to 65535"),
        (["--port", "http"], "--port: must be a port number from 1 to 65535, got 'http'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_inspect_refuses_options_that_do_not_go_together(
    written: Written, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    line = _refused(capsys, "inspect", written.store, *argv)
    assert said in line
    assert line.endswith("--help)")


# --------------------------------------------------------------------------- a held directory, inspect


@pytest.fixture
def held(written: Written, minilm: MiniLMEmbeddings) -> Iterator[Memory]:
    """The memory directory, held open by an agent's Memory for the test."""
    memory = Memory(path=written.path, embeddings=minilm)
    yield memory
    memory.close()


def test_a_held_directory_is_refused_with_the_way_out_or_read_as_a_snapshot(
    written: Written, held: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused(capsys, "memories", "list", "--store", written.store, "--user", "sam")
    assert "pass --snapshot" in line
    page = _json(capsys, "memories", "list", "--store", written.store, "--user", "sam", "--snapshot")
    assert written.tea in _ids(page)
    assert held.inspector().page(user_id="sam", contains="oolong").rows  # the holder goes on


class _Served:
    """Stands in for the web server (which would run until interrupted): records what it got."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, inspector: Any, **options: Any) -> None:
        users = inspector.catalog().users  # the store is open while it serves
        self.calls.append({"writable": inspector.writable, "users": users, **options})


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> _Served:
    from langmem_plugin.inspector import web

    fake = _Served()
    monkeypatch.setattr(web, "serve", fake)
    return fake


def test_inspect_is_read_only_on_loopback_unless_asked(
    written: Written, served: _Served, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "inspect", written.store)
    assert out.splitlines()[0].endswith(f"memory inspector of {written.store}")
    assert "token" not in out
    (call,) = served.calls
    assert call["writable"] is False
    assert call["token"] is None
    assert (call["host"], call["port"], call["allow_remote"]) == ("127.0.0.1", 8765, False)
    assert "sam" in call["users"]


def test_inspect_with_writes_prints_the_token_the_page_needs(
    written: Written, served: _Served, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(capsys, "inspect", written.store, "--allow-writes", "--port", "9123", "--host", "::1")
    token = re.search(r"^changes need this token \(the page's forms carry it\): (\S+)$", out, re.MULTILINE)
    assert token, out
    (call,) = served.calls
    assert call["writable"] is True
    assert call["token"] == token.group(1)
    assert len(token.group(1)) >= 16
    assert (call["host"], call["port"]) == ("::1", 9123)
    _run(capsys, "inspect", written.store, "--allow-writes")
    assert served.calls[1]["token"] != call["token"]  # a fresh one each start


def test_inspect_reads_a_held_directory_as_a_snapshot(
    written: Written, held: Memory, served: _Served, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--snapshot" in _refused(capsys, "inspect", written.store)
    assert served.calls == []  # refused before serving
    _run(capsys, "inspect", written.store, "--snapshot")
    (call,) = served.calls
    assert call["writable"] is False
    assert "sam" in call["users"]


def test_remote_inspect_is_allowed_when_asked(
    written: Written, served: _Served, capsys: pytest.CaptureFixture[str]
) -> None:
    _run(capsys, "inspect", written.store, "--host", "0.0.0.0", "--allow-remote")
    (call,) = served.calls
    assert (call["host"], call["allow_remote"]) == ("0.0.0.0", True)
