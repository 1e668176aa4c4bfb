"""Team memory on a bad day (issue 38 follow-up): a promotion, a forget of a promoted memory and a
``forget_user`` of a promoter, each killed with SIGKILL after each of its store writes.

On the durable stores (embedded Qdrant at a path, ``CheckpointerStore`` over a SQLite file) a
process runs the operation and is killed after its ``k``-th write, for every ``k`` until it
finishes; the store is reopened and must hold the old state or the new one: a team copy is there
whole with its provenance or not at all, never two copies of one memory, the ``PROMOTE`` history
there exactly when the copy is; a forgotten memory's copies go with it, and once the forget is
finished (retried, or resumed by the next ``Memory``) no team member's recall or search shows
them, and a store that keeps history keeps no old version of them. Retrying the operation then
completes it. ``forget_user`` takes all of the promoter's copies in its first batch or none: a
``Memory`` of a teammate that was already running (and so resumes nothing) recalls none of them
at any cut after it began.

One interpreter is started per store (imports take seconds on a loaded machine); it forks a child
per cut, which opens a copy of the same world and kills itself (a real SIGKILL) at the cut.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.memory import InMemoryStore

from langmem_plugin import AgentRules, Memory, MemoryLayout, MemoryState
from langmem_plugin.core.bounded import BoundedWrite
from langmem_plugin.errors import MemoryNotFoundError
from langmem_plugin.services import store_steps
from langmem_plugin.services.intents import INTENTS
from langmem_plugin.services.team import PROVENANCE, team_copy_key
from langmem_plugin.services.upkeep import forgetting
from langmem_plugin.stores.checkpointer import CheckpointerStore
from langmem_plugin.testing import FakeEmbeddings, tool_call

KINDS = ["qdrant", "checkpointer-sqlite"]
#: The forgets that reach a promoted memory's copies, on each store (Qdrant's scrub after each
#: forget takes seconds: forget_about and clear_memory, one batch as forget's, run on SQLite only).
FORGETS = {"qdrant": ["forget"], "checkpointer-sqlite": ["forget", "forget_about", "clear"]}
LAYOUT = MemoryLayout(team=True, agents=AgentRules(agents={"scout": {"user": "isolated"}}))
INDEX: Any = {"embed": FakeEmbeddings(), "dims": 256, "fields": ["content"]}
PAGE = 6  # forget_user's pages: several batches for a handful of items
ROOT = Path(__file__).resolve().parents[1]


def _config(user: str, team: str = "acme") -> RunnableConfig:
    return {"configurable": {"user_id": user, "thread_id": f"{user}-t", "team_id": team}}


ALICE, ALICE_GLOBEX, BOB = _config("alice"), _config("alice", "globex"), _config("bob")
NEW = "The release train leaves at noon"  # alice's, not promoted yet: promoted
OLD, CHANGED = "The on-call phone is in the blue drawer", "The on-call phone is in the red drawer"
BOTH = "The printer on floor two jams on thick paper"  # promoted in acme and globex: forgotten
DESK = "Alice's desk is on floor three"  # the scout's own memory of alice, promoted
BOBS = "Bob parks in row D"
ALICES = (NEW, OLD, CHANGED, BOTH, DESK)


@contextmanager
def _opened(kind: str, folder: Path) -> Iterator[BaseStore]:
    if kind == "qdrant":
        from langmem_plugin.stores.qdrant import QdrantStore

        with QdrantStore(folder / "q", index=INDEX) as qdrant:
            yield qdrant
    else:
        folder.mkdir(parents=True, exist_ok=True)
        with CheckpointerStore.from_sqlite(folder / "memory.db", index=INDEX) as checkpointed:
            yield checkpointed


def _graph(memory: Memory, store: BaseStore) -> Any:
    """The memory's tools in a real ToolNode, called by the messages given."""
    builder = StateGraph(MemoryState)
    builder.add_node("tools", ToolNode(memory.tools))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(store=store)


def _call(memory: Memory, store: BaseStore, config: RunnableConfig, name: str, **args: Any) -> str:
    out = _graph(memory, store).invoke({"messages": [tool_call(name, **args)]}, config)
    answer = out["messages"][-1]
    assert isinstance(answer, ToolMessage), answer
    return str(answer.content)


def _save(memory: Memory, store: BaseStore, config: RunnableConfig, content: str, **args: Any) -> str:
    """Saved with the real tool; the memory's id."""
    answer = _call(memory, store, config, "save_memory", content=content, **args)
    assert answer.startswith("Saved memory "), answer
    return answer.split()[2]


def _world(kind: str, folder: Path) -> dict[str, str]:
    """Alice's memories (one promoted into two teams, one changed since it was promoted, one the
    scout keeps of her and promoted), and bob's promoted one; their ids."""
    with _opened(kind, folder) as store:
        memory = Memory(store, layout=LAYOUT)
        scout = memory.agent("scout")
        ids = {
            "new": _save(memory, store, ALICE, NEW),
            "changed": _save(memory, store, ALICE, OLD),
            "both": _save(memory, store, ALICE, BOTH, category="office/printers"),
            "desk": _save(scout, store, ALICE, DESK),
            "bob": _save(memory, store, BOB, BOBS),
        }
        memory.promote(ids["changed"], ALICE)
        assert _call(memory, store, ALICE, "update_memory", id=ids["changed"], content=CHANGED).startswith(
            "Updated"
        )
        memory.promote(ids["both"], ALICE)
        memory.promote(ids["both"], ALICE_GLOBEX)
        scout.promote(ids["desk"], ALICE)
        memory.promote(ids["bob"], BOB)
        memory.close()
    return ids


# -- the child: killed after its cut-th write -------------------------------------------------------


def _is_write(store: BaseStore, request: Any) -> bool:
    if isinstance(request, BoundedWrite):
        return True
    if isinstance(request, store_steps.PurgeHistory):  # a store that keeps no history does nothing
        return isinstance(store, store_steps.HistoryPurger)
    return isinstance(request, list) and any(isinstance(op, PutOp) for op in request)


def _run(scenario: str, memory: Memory, ids: dict[str, str]) -> str:
    """Run ``scenario``; the clear_memory tool's answer ("" for the others)."""
    if scenario == "promote":
        memory.promote(ids["new"], ALICE)
    elif scenario == "refresh":
        memory.promote(ids["changed"], ALICE)
    elif scenario == "forget":
        memory.forget(ids["both"], ALICE)
    elif scenario == "forget_about":
        memory.forget_about("printer jams", ALICE)
    elif scenario == "clear":
        full = Memory(memory.store, layout=LAYOUT, tools="full")
        return _call(full, memory.store, ALICE, "clear_memory", compartment="user", category="office")
    else:
        memory.forget_user("alice", threads=["alice-t"])
    return ""


QUESTION = "Where is the printer, the desk, the phone?"


def _child(kind: str, folder: Path, scenario: str, ids: dict[str, str], cut: int) -> None:
    """Run ``scenario`` on the store in ``folder``; SIGKILL before the write after ``cut`` writes.

    For ``forget_user``, a ``Memory`` of bob's that was already running (its first recall done,
    so it resumes nothing) recalls at the cut, and what it showed is left in ``shown.json``."""
    forgetting._PAGE = PAGE
    writes = 0
    original = store_steps.run_batch
    opening = _opened(kind, folder)
    store = opening.__enter__()  # never closed: the process ends as a crash would end it
    bob = Memory(store, layout=LAYOUT) if scenario == "forget_user" else None
    if bob is not None:
        bob.recall(QUESTION, BOB)  # its first recall: nothing to resume
    watching = False

    def killing(store: BaseStore, request: Any) -> Any:
        nonlocal writes, watching
        if _is_write(store, request) and not watching:
            if writes == cut:
                if bob is not None:
                    watching = True
                    (folder / "shown.json").write_text(json.dumps(bob.recall(QUESTION, BOB).prompt))
                os.kill(os.getpid(), signal.SIGKILL)
            writes += 1
        return original(store, request)

    store_steps.run_batch = killing
    _run(scenario, Memory(store, layout=LAYOUT), ids)


def _cut_every_write(kind: str, origin: str, folder: str, ids_json: str) -> None:
    """In a fresh interpreter (nothing opened, no Python thread yet, so forking is safe): for each
    scenario, for cut = 0, 1, ...: a copy of ``origin`` under ``folder``, a forked child that runs
    the scenario on it and is killed after ``cut`` writes; until a child finishes. Prints, as
    JSON, each scenario's copies: ``[cut, exit code]`` (-9: killed)."""
    Memory(InMemoryStore(index=INDEX), layout=LAYOUT).recall(QUESTION, BOB)  # loads what a recall
    assert threading.active_count() == 1  # reads (the token counter), once for every child
    ids = json.loads(ids_json)
    runs: dict[str, list[tuple[int, int]]] = {}
    for scenario in ["promote", "refresh", *FORGETS[kind], "forget_user"]:
        runs[scenario] = []
        for cut in range(100):
            path = Path(folder) / scenario / str(cut)
            path.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-r", origin, str(path)], check=True)  # keeps Qdrant's sparse files sparse
            pid = os.fork()
            if pid == 0:
                try:
                    _child(kind, path, scenario, ids, cut)
                except BaseException:
                    traceback.print_exc()
                    os._exit(1)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            runs[scenario].append((cut, code))
            if code != -signal.SIGKILL:
                break
    print(json.dumps(runs))


@contextmanager
def _scratch(tmp_path_factory: pytest.TempPathFactory, kind: str) -> Iterator[Path]:
    """A folder for the copies: on a tmpfs where there is room (a SIGKILL, unlike a power loss,
    loses nothing the kernel was handed, so the stores' fsyncs, which cost seconds per Qdrant
    scrub on a loaded disk, have nothing to add there), else under pytest's temporary folder."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30):
        yield tmp_path_factory.mktemp(kind)
        return
    folder = Path(tempfile.mkdtemp(prefix=f"team-crash-{kind}-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=KINDS)
def killed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The world on one store, and for each scenario its copies killed after each write."""
    kind = request.param
    if kind == "qdrant":
        pytest.importorskip("qdrant_edge")
    with _scratch(tmp_path_factory, kind) as base:
        ids = _world(kind, base / "origin")
        code = "import sys; from tests.test_team_crash import _cut_every_write as c; c(*sys.argv[1:])"
        done = subprocess.run(
            [sys.executable, "-c", code, kind, str(base / "origin"), str(base / "cuts"), json.dumps(ids)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs = json.loads(done.stdout.splitlines()[-1])
        yield kind, base, ids, {**runs, "stderr": done.stderr}


def _copies(kind: str, base: Path, scenario: str, killed_runs: Any) -> Iterator[tuple[int, Path]]:
    cuts = killed_runs[scenario]
    *cut_short, (last, finished) = cuts
    assert finished == 0, f"{scenario}: the child that was not killed failed: {killed_runs['stderr'][-3000:]}"
    assert all(code == -signal.SIGKILL for _, code in cut_short)
    assert last >= 1  # at least one write, and the first was cut
    for cut, _ in cuts:
        yield cut, base / "cuts" / scenario / str(cut)


# -- what the reopened store holds ------------------------------------------------------------------


def _team(store: BaseStore) -> list[Item]:
    """Every team copy, of every team, each checked whole: its provenance says where it came from
    (its key is the original's), who promoted it and when; one copy per original and team."""
    items: list[Item] = [i for i in store.search(("memories", "team"), limit=1000) if len(i.namespace) == 3]
    seen: set[tuple[str, str]] = set()
    for item in items:
        metadata = item.value["metadata"]
        assert set(PROVENANCE) <= set(metadata), item
        origin, key = json.loads(metadata["promoted_from"]), metadata["promoted_from_key"]
        assert item.key == team_copy_key(origin, key), item
        assert metadata["promoted_by_user"] == origin[-1], item
        assert metadata["promoted_by_agent"] == ("scout" if "agent" in origin else ""), item
        datetime.fromisoformat(metadata["promoted_at"])
        assert item.value["source"] == "promote", item
        assert item.value["content"], item
        assert (item.namespace[2], item.key) not in seen
        seen.add((item.namespace[2], item.key))
    return items


def _contents(store: BaseStore, team: str = "acme") -> list[str]:
    return sorted(i.value["content"] for i in _team(store) if i.namespace[2] == team)


def _actions(memory: Memory, memory_id: str) -> list[str]:
    return [e.action for e in memory.history(memory_id, ALICE)]


def _shown_to_bob(store: BaseStore, question: str) -> str:
    """What a new ``Memory`` recalls for bob (the first recall finishes a forget left part-done),
    and what a search of the team memory finds."""
    memory = Memory(store, layout=LAYOUT)
    try:
        prompt = memory.recall(question, BOB).prompt
    finally:
        memory.close()
    found = store.search(("memories", "team", "acme"), query=question, limit=50)
    return prompt + json.dumps([i.value["content"] for i in found])


def _old_versions(store: BaseStore, where: list[tuple[tuple[str, ...], str]]) -> list[Any]:
    """The texts a store that keeps history (CheckpointerStore) still holds of the items ``where``."""
    if not isinstance(store, CheckpointerStore):
        return []
    return [v.value for ns, key in where for v in store.history(ns, key) if v.value is not None]


def _places(ids: dict[str, str], which: list[tuple[str, str, tuple[str, ...]]]) -> list[Any]:
    """``(id name, team, original's namespace)`` → the original and its team copy, where they are."""
    out = []
    for name, team, namespace in which:
        out += [(namespace, ids[name]), (("memories", "team", team), team_copy_key(namespace, ids[name]))]
    return out


# -- the scenarios ----------------------------------------------------------------------------------


def test_a_promotion_killed_at_any_write_leaves_no_copy_or_one_whole_copy_and_a_retry_makes_it(
    killed: Any,
) -> None:
    kind, base, ids, runs = killed
    copy = team_copy_key(("memories", "user", "alice"), ids["new"])
    for cut, folder in _copies(kind, base, "promote", runs):
        with _opened(kind, folder) as store:
            memory = Memory(store, layout=LAYOUT)
            made = NEW in _contents(store)
            assert _contents(store) == sorted([OLD, BOTH, DESK, BOBS, *([NEW] if made else [])]), cut
            assert _actions(memory, ids["new"]).count("PROMOTE") == int(made), cut  # with its history
            assert _actions(memory, copy) == (["ADD"] if made else []), cut
            retried = memory.promote(ids["new"], ALICE)
            assert retried.outcome == ("already" if made else "promoted"), cut
            assert _contents(store).count(NEW) == 1
            assert _actions(memory, ids["new"]).count("PROMOTE") == 1
            assert NEW in _shown_to_bob(store, "When does the release train leave?")


def test_a_refresh_killed_at_any_write_leaves_the_old_copy_or_the_new_one_and_a_retry_finishes_it(
    killed: Any,
) -> None:
    kind, base, ids, runs = killed
    for cut, folder in _copies(kind, base, "refresh", runs):
        with _opened(kind, folder) as store:
            memory = Memory(store, layout=LAYOUT)
            (content,) = [c for c in _contents(store) if "on-call" in c]
            assert content in (OLD, CHANGED), cut
            refreshed = content == CHANGED
            assert _actions(memory, ids["changed"]).count("PROMOTE") == 1 + refreshed, cut
            retried = memory.promote(ids["changed"], ALICE)
            assert retried.outcome == ("already" if refreshed else "refreshed"), cut
            assert [c for c in _contents(store) if "on-call" in c] == [CHANGED]
            assert _actions(memory, ids["changed"]).count("PROMOTE") == 2


def test_a_forget_killed_at_any_write_keeps_the_original_with_its_copies_or_neither(killed: Any) -> None:
    kind, base, ids, runs = killed
    user = ("memories", "user", "alice")
    places = _places(ids, [("both", "acme", user), ("both", "globex", user)])
    for scenario in FORGETS[kind]:
        cuts = list(_copies(kind, base, scenario, runs))
        for cut, folder in cuts:
            with _opened(kind, folder) as store:
                memory = Memory(store, layout=LAYOUT)
                original = store.get(user, ids["both"])
                copies = [i for i in _team(store) if i.value["content"] == BOTH]
                assert len(copies) == (2 if original is not None else 0), (scenario, cut)  # all, or none
                if original is None:  # done: nobody in the team sees it any more
                    assert "printer" not in _shown_to_bob(store, "Which printer jams?"), (scenario, cut)
                if scenario == "forget" and original is None:  # the retry finds nothing to forget
                    with pytest.raises(MemoryNotFoundError):
                        memory.forget(ids["both"], ALICE)
                else:
                    answer = _run(scenario, memory, ids)
                    removed = "Nothing matched" if original is None else "Removed 1 memor"
                    assert scenario != "clear" or answer.startswith(removed), answer
                assert store.get(user, ids["both"]) is None
                assert BOTH not in _contents(store) + _contents(store, "globex")
                assert "printer" not in _shown_to_bob(store, "Which printer jams?")
                assert [i.value["content"] for i in _team(store)].count(DESK) == 1  # the rest stays
                # a store that keeps history keeps no old version of them: a kill between the
                # forget's batch and its history purge left the purge's intent, which the first
                # recall of a Memory opened afterwards (Bob's, above) carried out
                assert _old_versions(store, places) == [], (scenario, cut)


def test_forget_user_killed_at_any_write_takes_every_copy_of_the_promoter_once_finished(
    killed: Any,
) -> None:
    kind, base, ids, runs = killed
    user, scout = ("memories", "user", "alice"), ("memories", "agent", "scout", "user", "alice")
    named = [
        ("changed", "acme", user),
        ("both", "acme", user),
        ("both", "globex", user),
        ("desk", "acme", scout),
    ]
    places = _places(ids, named)
    cuts = list(_copies(kind, base, "forget_user", runs))
    left_of_hers = []  # how many of her copies each kill left
    for cut, folder in cuts:
        if cut != cuts[-1][0]:  # what bob's Memory, running all along, recalled at the kill: her
            # copies went in the first batch, so none of it once anything was written
            shown = json.loads((folder / "shown.json").read_text())
            assert cut == 0 or not [text for text in ALICES if text in shown], (cut, shown)
        with _opened(kind, folder) as store:
            copies = _team(store)  # every copy left is whole
            assert BOBS in _contents(store), cut
            promoted = [c for c in copies if c.value["metadata"]["promoted_by_user"] == "alice"]
            left_of_hers.append(len(promoted))
            if cut != cuts[-1][0] and (cut % 2 or cut == 0):  # the retry finishes it ...
                Memory(store, layout=LAYOUT).forget_user("alice", threads=["alice-t"])
            # ... or the first recall of a Memory opened afterwards (or the child finished it)
            shown = _shown_to_bob(store, QUESTION)
            assert not [text for text in ALICES if text in shown], (cut, shown)
            assert _contents(store) == [BOBS]
            assert _contents(store, "globex") == []
            left = [
                (namespace, i.key)
                for namespace in store.list_namespaces(limit=1000)
                for i in store.search(namespace, limit=1000)
                if "alice" in json.dumps([namespace, i.key]).lower()
            ]
            assert left == [], cut
            assert store.search(INTENTS) == [], cut  # nothing left to finish
            # a store that keeps history keeps no old version of her memories and her copies,
            # wherever the kill came: forget_user's intent names what its purge must reach (the
            # copies deleted by an earlier page are not found again) and stays until the purge
            # is done; nor of the intent, which names her
            assert _old_versions(store, places) == [], cut
            assert _old_versions(store, [(INTENTS, "forget_user:alice")]) == [], cut
    assert len(cuts) >= 5  # the intent, several pages, the purges
    assert left_of_hers[0] == len(named)  # the first kill came before anything was written ...
    assert set(left_of_hers) == {len(named), 0}, left_of_hers  # ... her copies all, or none
