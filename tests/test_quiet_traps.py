"""Issue 37, item 6: the quiet traps a user met after the first run, each done as the user did it.

Real parts: ``Memory()``'s default store (embedded Qdrant, MiniLM), a real ``StateGraph`` and
checkpointer; only the models are scripted (the extractor answers with real structured-output
tool calls).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph

from langmem_plugin import ExtractionConfig, Memory, MemoryState, RecallConfig
from langmem_plugin.testing import ScriptedChatModel, tool_call

SAM: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
LATER: Any = {"configurable": {"user_id": "sam", "thread_id": "t2"}}
USER_NS = ("memories", "user", "sam")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """``Memory(path=...)``: the default store and embedder, as a user opens it."""
    with Memory(path=tmp_path / "memory") as memory:
        yield memory


# -- 1. a history of the user's own turns is imported ----------------------------------------


def test_a_history_of_user_turns_only_is_imported_and_recalled(memory: Memory) -> None:
    said = [
        {"role": "user", "content": "My sister Quorra lives in Lisbon."},
        {"role": "user", "content": "I am allergic to peanuts."},
    ]
    report = memory.import_history(said, SAM)
    assert (report.turns, report.written, report.skipped) == (2, 2, 0)
    stored = sorted(i.value["content"] for i in memory.store.search(USER_NS, limit=10))
    assert stored == ["User: I am allergic to peanuts.", "User: My sister Quorra lives in Lisbon."]

    recalled = memory.recall([HumanMessage("Where does Quorra live?")], LATER)
    assert "Quorra lives in Lisbon" in recalled.prompt
    assert memory.import_history(said, SAM).skipped == 2  # a replay writes nothing


def test_an_unanswered_turn_between_answered_ones_is_kept(memory: Memory) -> None:
    history = [
        ("user", "I moved to Porto."),
        ("user", "For a job at the aquarium."),
        ("assistant", "Congratulations on the new job!"),
    ]
    report = memory.import_history(history, SAM)
    assert report.turns == 2
    stored = sorted(i.value["content"] for i in memory.store.search(USER_NS, limit=10))
    assert stored == [
        "User: For a job at the aquarium.\nAssistant: Congratulations on the new job!",
        "User: I moved to Porto.",
    ]


def test_a_history_with_no_turn_warns_with_the_fix_and_writes_nothing(memory: Memory) -> None:
    spoken = [{"role": "assistant", "content": "Hello!"}, {"role": "assistant", "content": "Anyone?"}]
    with pytest.warns(UserWarning, match=r"none of its 2 messages is the user's.*per='message'") as caught:
        report = memory.import_history(spoken, SAM)
    assert caught[0].filename == __file__  # it points at the user's line
    assert (report.turns, report.written) == (0, 0)
    assert memory.store.search(USER_NS) == []
    assert memory.import_history(spoken, SAM, per="message").written == 2  # the fix it names


# -- 2. a fact the user stated does not lose to its own source -------------------------------

DIET = "By the way, I've gone fully vegetarian again: no more fish for me."
FACT = "Sam is vegetarian again: no fish, no meat"
DINNER = "what should I cook for dinner"


def _extractor(messages: list[BaseMessage]) -> AIMessage:
    """Extraction finds the diet in the exchange; consolidation (if asked) adds it."""
    prompt = "\n".join(str(m.content) for m in messages)
    if "NEW 1:" in prompt:
        return tool_call("ConsolidationDecisions", decisions=[{"candidate": 1, "action": "ADD"}])
    found = [{"content": FACT, "kind": "preference", "category": "preferences/food"}]
    return tool_call("ExtractedMemories", memories=found if "vegetarian again" in prompt else [])


def _told(tmp_path: Path, **memory_args: Any) -> Memory:
    """A memory that heard Sam's diet in a real graph, extraction on, the extraction done."""
    extraction = ExtractionConfig(model=ScriptedChatModel([_extractor] * 4), debounce=0)
    memory = Memory(path=tmp_path / "memory", extraction=extraction, **memory_args)
    builder = StateGraph(MemoryState)
    memory.add_to(builder, ScriptedChatModel(["Thanks for telling me!"]))
    graph: Any = builder.compile(checkpointer=InMemorySaver(), store=memory.store)
    graph.invoke({"messages": [HumanMessage(DIET)]}, SAM)
    memory.flush(timeout=30)
    assert memory.reflector is not None
    assert not memory.reflector.failed
    return memory


def test_an_extracted_fact_is_recalled_with_the_exchange_it_came_from(tmp_path: Path) -> None:
    with _told(tmp_path) as memory:
        (stored,) = memory.store.search(USER_NS, filter={"kind": "preference"})
        assert stored.value["content"] == FACT
        assert stored.value["sources"]  # the exchange it was extracted from
        recalled = memory.recall([HumanMessage(DINNER)], LATER)

    outcome = {c.content: c for c in recalled.considered}
    source, fact = outcome[f"User: {DIET}\nAssistant: Thanks for telling me!"], outcome[FACT]
    assert source.outcome == "injected"
    assert source.lexical is None  # found by meaning alone, as the fact is ...
    assert fact.dense is not None
    assert source.dense is not None
    assert fact.dense < source.dense  # ... less close: alone, under the threshold
    assert fact.outcome == "injected", fact
    assert FACT in recalled.prompt
    assert fact.relevance == source.relevance  # its source's score, said where it came from
    assert dict(fact.lifts)["source"] > 0
    assert fact.rank is not None
    assert source.rank is not None
    assert fact.rank < source.rank  # then its higher priority puts it first


def test_the_store_score_path_keeps_a_fact_by_its_source_too(tmp_path: Path) -> None:
    """``retrieval=None``: the threshold applies to the store's own scores, in ``rank``."""
    with _told(tmp_path, recall=RecallConfig(retrieval=None, min_relevance=0.5)) as memory:
        recalled = memory.recall([HumanMessage(DINNER)], LATER)
    outcome = {c.content: c for c in recalled.considered}
    source = outcome[f"User: {DIET}\nAssistant: Thanks for telling me!"]
    assert source.outcome == "injected"
    assert source.relevance is not None
    assert source.relevance >= 0.5
    assert outcome[FACT].outcome == "injected", outcome[FACT]
    assert outcome[FACT].relevance == source.relevance


# -- 3. create_agent comes with the main install ---------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_create_agent_needs_nothing_beyond_the_main_install() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(re.match(r"langchain>=1\.0", d) for d in project["dependencies"])
    # where a user first meets it, no extra is asked for
    for place in ("README.md", "docs/surfaces.md", "examples/create_agent_middleware.py"):
        text = (ROOT / place).read_text()
        assert "create_agent" in text
        assert "[agents]" not in text, place


# -- 4. the examples use the current API, and their README names every one -------------------


def test_the_examples_readme_names_every_example() -> None:
    readme = (ROOT / "examples" / "README.md").read_text()
    examples = [p for p in (ROOT / "examples").iterdir() if p.name != "README.md" and p.name[0] not in "._"]
    named = [p.name + ("/" if p.is_dir() else "") for p in examples]
    assert "langgraph_app/" in named
    assert [n for n in named if f"`{n}`" not in readme] == []


def test_no_example_shows_a_deprecated_keyword() -> None:
    """The old keywords (``Memory(results=...)``...) warn when run (tests/test_examples.py makes
    that an error); here, none is shown in the text around the examples either."""
    from langmem_plugin.services.turn import RENAMED_KEYWORDS

    old = "|".join(RENAMED_KEYWORDS)
    places = [*(ROOT / "examples").rglob("*.py"), ROOT / "examples" / "README.md"]
    places += [*(ROOT / "notebooks").glob("*.ipynb")]
    # Memory(..., results=...) with no call in between, or `results=...` alone in a text
    shown = re.compile(rf"\bMemory\((?:[^()]*[,\s])?\b({old})=|`({old})=")
    assert shown.search("Memory(store, results=ResultsConfig())")  # what it finds ...
    assert not shown.search("Memory(context=ContextConfig(results=ResultsConfig()))")  # ... and not
    found = [(p.name, m.group()) for p in places for m in shown.finditer(p.read_text())]
    assert found == []


# -- 5. the store contract the tests cite is in the repository -------------------------------


def test_the_store_contract_is_a_page_of_the_docs_and_what_cites_it_points_there() -> None:
    contract = ROOT / "docs" / "store-contract.md"
    assert "## Namespaces" in contract.read_text()
    sources = [*(ROOT / "tests").glob("*.py"), *(ROOT / "langmem_plugin").rglob("*.py")]
    sources += [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    outside = "STORE-" + "CONTRACT"  # the shared notes' name, outside the repository
    assert [p.name for p in sources if outside in p.read_text()] == []
    skips = [
        line for line in (ROOT / "tests" / "store_contract.py").read_text().splitlines() if "skip(" in line
    ]
    assert skips
    assert all("docs/store-contract.md" in line for line in skips)
    assert "docs/store-contract.md" in (ROOT / "README.md").read_text()


# -- 6. the notebook ships executed ----------------------------------------------------------

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTE = ".venv/bin/jupyter execute --inplace notebooks/NAME.ipynb (offline: no OPENAI_API_KEY)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_ships_valid_with_ids_and_the_outputs_of_one_run(path: Path) -> None:
    import nbformat

    fix = f"execute it again: {EXECUTE.replace('NAME', path.stem)}"
    notebook = json.loads(path.read_text())
    ids = [cell.get("id") for cell in notebook["cells"]]
    assert all(ids), f"a cell without an id: {ids}"
    assert len(set(ids)) == len(ids)
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert all(cell["outputs"] for cell in code), f"a code cell has no output; {fix}"
    assert [cell["execution_count"] for cell in code] == list(range(1, len(code) + 1)), fix  # one run
    errors = [out for cell in code for out in cell["outputs"] if out["output_type"] == "error"]
    assert errors == [], fix
    assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5)
    nbformat.validate(nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT))
