"""Every ```python block of README.md and docs/*.md runs alone, as a reader copies it, offline.

Each block runs by itself in a fresh Python process (``python -`` with the block on stdin),
from an empty temporary directory, with no ``OPENAI_*`` variable set: it has its own imports
and uses no name from an earlier block, and whatever it writes lands in that directory. A
block that needs a network, an API key or a server opts out with ``<!-- not-run: reason -->``
on the line before its fence; keep those rare. A block that needs an extra beyond the main install
(``pip install -e .``) says which on the line before its fence, as pyproject.toml's
optional-dependencies spell it: ``<!-- needs: postgres -->`` (several: ``<!-- needs: postgres,
documents -->``). It runs here like any other (the dev venv has every extra);
tests/test_docs_main_install.py runs the others with the main install only. Blocks may use only the
public API (``langmem_plugin.__all__``) and the documented submodules.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import langmem_plugin
from tests.test_package import DOCUMENTED_SUBMODULES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK_TIMEOUT_S = 600  # a block on a loaded 2-core machine; most take a few seconds

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")
_NEEDS = re.compile(r"<!--\s*needs:\s*(\S.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the reason given, or None: the block runs
    needs: tuple[str, ...] = ()  # the extras it needs beyond the main install (`<!-- needs: ... -->`)

    @property
    def name(self) -> str:
        return f"{_rel(self.path)}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rpartition("\n")[2]
        reason = _NOT_RUN.search(before)
        needs = _NEEDS.search(before)
        extras = tuple(extra.strip() for extra in needs.group(1).split(",")) if needs else ()
        blocks.append(Block(path, line, match.group(1), reason.group(1) if reason else None, extras))
    return blocks


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


BLOCKS = [block for path in DOCS for block in python_blocks(path)]


def run_block(code: str, cwd: Path, python: str | Path = sys.executable) -> subprocess.CompletedProcess[str]:
    """``code`` run alone: a fresh ``python``, ``cwd`` as its directory, no OpenAI variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [str(python), "-"],
        input=code,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
        check=False,
    )


def test_there_are_docs_with_code() -> None:
    assert (ROOT / "docs").is_dir()
    assert python_blocks(ROOT / "README.md")
    assert len(BLOCKS) >= 10


def test_the_readme_is_short_and_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in DOCS[1:]:
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"


def test_the_readme_agent_is_short_and_runs_alone() -> None:
    first = python_blocks(ROOT / "README.md")[0]
    lines = [line for line in first.code.splitlines() if line.strip()]
    assert len(lines) <= 15, f"the README's first agent is {len(lines)} lines"
    assert "graph.invoke(" in first.code


def test_the_readme_keeps_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    main_job = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/langmem-plugin demo"
    tests = 'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]" && .venv/bin/python -m pytest'
    assert main_job in readme.splitlines()
    assert tests in readme.splitlines()  # CI parses this line


def test_install_hints_are_right_for_a_checkout() -> None:
    # The README is read in a checkout: an extra is installed with `pip install -e ".[extra]"`.
    readme = (ROOT / "README.md").read_text()
    assert not re.search(r'pip install "langmem-plugin\[', readme), "say pip install -e '.[extra]'"


def test_the_quick_subset_the_readme_offers_exists() -> None:
    from tests.conftest import QUICK_FILES

    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/python -m pytest -m quick" in readme
    assert "quick:" in (ROOT / "pyproject.toml").read_text()  # a registered marker (--strict-markers)
    missing = [name for name in QUICK_FILES if not (ROOT / "tests" / name).is_file()]
    assert not missing, missing
    assert len(QUICK_FILES) >= 10


def test_the_models_page_builds_everything_and_calls_only_with_a_key() -> None:
    # What runs here, said plainly: without OPENAI_API_KEY (run_block removes it) the page's agent
    # block constructs ChatOpenAI, OpenAIEmbeddings, Memory and the graph, and sends no request.
    agent = python_blocks(ROOT / "docs" / "models.md")[0]
    assert agent.not_run is None
    for built in ("ChatOpenAI(", "OpenAIEmbeddings(", "Memory(", "builder.compile("):
        assert built in agent.code
    guarded = agent.code.split('if "OPENAI_API_KEY" in os.environ:', 1)
    assert len(guarded) == 2, "the requests are sent only when a key is set"
    assert "invoke(" not in guarded[0]
    assert "graph.invoke(" in guarded[1]


def test_opting_out_is_rare_and_says_why() -> None:
    skipped = [b for b in BLOCKS if b.not_run is not None]
    assert len(skipped) <= 3, [b.name for b in skipped]
    assert not any(b.path.name == "README.md" for b in skipped), "every README block runs"


def _private_or_undocumented(code: str) -> list[str]:
    """The imports of ``code`` that reach past the public API and the documented submodules."""
    allowed_modules = {"langmem_plugin", *DOCUMENTED_SUBMODULES}
    problems = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "langmem_plugin":
                problems += [
                    f"from langmem_plugin import {alias.name}"
                    for alias in node.names
                    if alias.name not in langmem_plugin.__all__
                    and f"langmem_plugin.{alias.name}" not in allowed_modules
                ]
        else:
            continue
        problems += [
            name for name in names if name.split(".")[0] == "langmem_plugin" and name not in allowed_modules
        ]
    return problems


@pytest.mark.parametrize("path", DOCS, ids=_rel)
def test_blocks_use_only_the_public_api(path: Path) -> None:
    problems = [f"{b.name}: {p}" for b in python_blocks(path) for p in _private_or_undocumented(b.code)]
    assert not problems, problems


def test_a_block_that_leans_on_an_earlier_one_fails(tmp_path: Path) -> None:
    # What the runner below relies on: nothing carries over from one block to the next.
    assert run_block("from langmem_plugin import Memory\nmemory = Memory\n", tmp_path).returncode == 0
    leaning = run_block("print(memory)\n", tmp_path)
    assert leaning.returncode != 0
    assert "NameError" in leaning.stderr


def _param(block: Block) -> object:
    """A block as a test parameter; the README's are part of ``pytest -m quick``."""
    marks = [pytest.mark.quick] if block.path.name == "README.md" else []
    return pytest.param(block, id=block.name, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS if b.not_run is None])
def test_block_runs_alone(block: Block, tmp_path: Path) -> None:
    cwd = tmp_path / "reader"
    cwd.mkdir()  # empty: the block finds no file it did not write itself
    result = run_block(block.code, cwd)
    assert result.returncode == 0, f"the block at {block.name} failed alone:\n{result.stderr[-4000:]}"
