"""Every ```python block of README.md and docs/*.md runs, as written, offline.

A file's blocks run in order in one namespace (a later block may use an earlier one's
names), in a fresh temporary directory. A block that needs a network, an API key or a
server opts out with ``<!-- not-run: reason -->`` on the line before its fence; keep
those rare. Blocks may use only the public API (``langmem_plugin.__all__``) and the
documented submodules.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import langmem_plugin
from tests.test_package import DOCUMENTED_SUBMODULES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the reason given, or None: the block runs


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rpartition("\n")[2]
        reason = _NOT_RUN.search(before)
        blocks.append(Block(path, line, match.group(1), reason.group(1) if reason else None))
    return blocks


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_there_are_docs_with_code() -> None:
    assert (ROOT / "docs").is_dir()
    assert python_blocks(ROOT / "README.md")
    assert sum(len(python_blocks(p)) for p in DOCS) >= 10


def test_the_readme_is_short_and_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in DOCS[1:]:
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"


def test_the_readme_keeps_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    main_job = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/langmem-plugin demo"
    tests = 'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]" && .venv/bin/python -m pytest'
    assert main_job in readme.splitlines()
    assert tests in readme.splitlines()  # CI parses this line


def test_opting_out_is_rare_and_says_why() -> None:
    skipped = [b for p in DOCS for b in python_blocks(p) if b.not_run is not None]
    assert len(skipped) <= 3, [f"{_rel(b.path)}:{b.line}" for b in skipped]
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
    problems = [
        f"{_rel(b.path)}:{b.line}: {p}" for b in python_blocks(path) for p in _private_or_undocumented(b.code)
    ]
    assert not problems, problems


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=_rel)
def test_python_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("OPENAI_")]:
        monkeypatch.delenv(name)
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    for block in python_blocks(path):
        if block.not_run is not None:
            continue
        code = compile(block.code, f"{_rel(path)}:{block.line}", "exec")
        try:
            exec(code, namespace)
        except BaseException as exc:
            raise AssertionError(f"the block at {_rel(path)}:{block.line} failed: {exc!r}") from exc
    for value in namespace.values():  # close what the page left open (stores hold locks and threads)
        for thing in (value, getattr(value, "store", None)):
            close = getattr(thing, "close", None)
            if callable(close) and type(thing).__module__.startswith("langmem_plugin"):
                close()
