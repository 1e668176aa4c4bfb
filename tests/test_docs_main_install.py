"""The docs' blocks with only the main install: what a reader has after ``pip install -e .``.

tests/test_docs.py runs every block in the dev venv, where every extra is installed, so a block
that silently needs one (langgraph-checkpoint-postgres, pypdf, the inspector's web server, a
provider's LangChain package, ...) passes there and fails for a reader. Here a fresh virtualenv in a
temporary directory gets ``pip install -e <repo>`` and nothing else, from the package index the pip
configuration names (the same that installed the dev venv; no other network), and:

- every block without a ``<!-- needs: extra -->`` marker imports only what that install has (one
  process checks every import of every block);
- the README's blocks, and a representative subset of the others, run alone in it as in
  tests/test_docs.py (a fresh process, an empty directory, no ``OPENAI_*`` variable);
- a block with a marker fails there on an import, so a marker that is no longer needed is removed;
- each marker names an extra of pyproject.toml.

Why a subset: on the shared 2-core machine, making the virtualenv and installing takes minutes,
and running every block alone again would take several times as long as the rest of this module.
A block reaches what the main install lacks through an import (checked above for every block),
through a process it starts (the CLI: its imports are not the block's), or through a lazy import at
run time (a provider's name given to ``init_chat_model``, a ``.pdf`` given to ``add_documents``).
So the blocks that run are the README's (a newcomer's first contact), for each package outside the
standard library and this one the first block that imports it (one real use of each dependency the
docs lean on), and every block that starts a process. A lazy import in a block outside that
subset is caught only by its author's marker. The module is marked ``slow`` and is not part of
``pytest -m quick``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_docs import BLOCKS, ROOT, Block, python_blocks, run_block

pytestmark = pytest.mark.slow

EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]
VENV_TIMEOUT_S = 300
INSTALL_TIMEOUT_S = 1800  # minutes on a loaded 2-core machine; a slow registry adds to it


def _imports(code: str) -> list[str]:
    """The absolute modules ``code`` imports, in order of appearance."""
    modules = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
    return modules


def _third_party(code: str) -> set[str]:
    """The top-level packages ``code`` imports that come from an installed distribution."""
    tops = {module.split(".")[0] for module in _imports(code)}
    return {top for top in tops if top not in sys.stdlib_module_names and top != "langmem_plugin"}


def representative(blocks: list[Block]) -> list[Block]:
    """The README's blocks, the first block importing each third-party package, those starting a process."""
    chosen: list[Block] = []
    seen: set[str] = set()
    for block in blocks:
        new = _third_party(block.code) - seen
        seen |= new
        starts_a_process = "subprocess" in {module.split(".")[0] for module in _imports(block.code)}
        if block.path.name == "README.md" or new or starts_a_process:
            chosen.append(block)
    return chosen


RUNNABLE = [b for b in BLOCKS if b.not_run is None and not b.needs]
MARKED = [b for b in BLOCKS if b.not_run is None and b.needs]
SUBSET = representative(RUNNABLE)


def _pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PIP_NO_INPUT"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def main_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh virtualenv holding ``pip install -e <repo>`` and no extra.

    It stays in pytest's temporary directory, which keeps only its last few runs (removing it
    here was slow on a busy disk).
    """
    venv = tmp_path_factory.mktemp("main-install") / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)],
        capture_output=True,
        text=True,
        timeout=VENV_TIMEOUT_S,
        check=False,
    )
    if made.returncode != 0:  # e.g. Debian's python3 without python3-venv (no ensurepip)
        pytest.skip(f"no virtualenv can be made here ({sys.executable} -m venv): {made.stderr[-1000:]}")
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        env=_pip_env(),
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    assert installed.returncode == 0, f"pip install -e . failed in a fresh venv:\n{installed.stderr[-4000:]}"
    return venv / "bin" / "python"


def _name(requirement: str) -> str:
    return canonicalize_name(Requirement(requirement).name)


#: Run in the venv with a JSON list of distribution names on stdin: where langmem_plugin comes from,
#: which of the names are installed, and whether pytest (the dev extra's) is.
_INSTALLED = """
import importlib.metadata, json, sys
import langmem_plugin

def installed(name):
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True

names = json.load(sys.stdin)
print(json.dumps([langmem_plugin.__file__, [n for n in names if installed(n)], installed("pytest")]))
"""

#: Run in the venv with {block name: [module, ...]} on stdin: the modules that cannot be found.
_FINDABLE = """
import importlib.util, json, sys

missing = {}
for name, modules in json.load(sys.stdin).items():
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            missing.setdefault(name, []).append(module)
print(json.dumps(missing))
"""


def _probe(python: Path, code: str, data: object) -> Any:
    """``code`` run by ``python`` with ``data`` as JSON on stdin; what it prints, from JSON."""
    result = subprocess.run(
        [str(python), "-c", code],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=VENV_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout)


# -- the marker ------------------------------------------------------------------------------------


def test_a_marker_on_the_line_before_a_fence_names_extras(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- needs: postgres -->\n```python\nprint(1)\n```\n\n"
        "<!-- needs: postgres, documents -->\n\n```python\nprint(2)\n```\n\n"
        "<!-- needs: inspect -->\ntext between\n```python\nprint(3)\n```\n\n"
        "<!-- not-run: a server -->\n```python\nprint(4)\n```\n"
    )
    assert [(b.needs, b.not_run) for b in python_blocks(page)] == [
        (("postgres",), None),
        (("postgres", "documents"), None),  # blank lines between marker and fence are allowed
        ((), None),  # a marker with text before the fence belongs to no block
        ((), "a server"),
    ]


def test_every_marker_names_an_extra_of_pyproject() -> None:
    named = [(b.name, extra) for b in BLOCKS for extra in b.needs]
    unknown = [(name, extra) for name, extra in named if extra not in EXTRAS or extra == "dev"]
    assert not unknown, (
        f"<!-- needs: ... --> names no extra a reader installs: {unknown}; pyproject.toml's extras are "
        f"{sorted(set(EXTRAS) - {'dev'})} (dev is tooling: add an extra for readers if none fits)"
    )


def test_the_subset_has_the_readme_and_every_third_party_package() -> None:
    names = {b.name for b in SUBSET}
    assert {b.name for b in RUNNABLE if b.path.name == "README.md"} <= names
    packages = set().union(*(_third_party(b.code) for b in RUNNABLE))
    assert packages <= set().union(*(_third_party(b.code) for b in SUBSET))
    assert {"langchain", "langgraph", "langchain_core"} <= packages  # what the parsing must find
    assert len(SUBSET) < len(RUNNABLE)


# -- the main install ------------------------------------------------------------------------------


def test_the_venv_has_the_main_install_and_no_extra(main_python: Path) -> None:
    main = {
        _name(req) for req in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    only_in_extras = sorted(
        {_name(req) for extra, reqs in EXTRAS.items() if extra != "dev" for req in reqs} - main
    )
    assert only_in_extras, "the extras add nothing to the main install"
    where, present, pytest_there = _probe(main_python, _INSTALLED, only_in_extras)
    assert Path(where).is_relative_to(ROOT), f"langmem_plugin comes from {where}, not the checkout"
    assert not present, f"the main install has packages of an extra: {present}"
    assert not pytest_there, "the venv sees the dev venv's packages"


def test_every_block_without_a_marker_imports_only_the_main_install(main_python: Path) -> None:
    wanted = {b.name: _imports(b.code) for b in RUNNABLE}
    missing = _probe(main_python, _FINDABLE, wanted)
    assert not missing, (
        f"blocks import what `pip install -e .` lacks: {missing}; put <!-- needs: EXTRA --> on the line "
        "before each fence (the extra that installs it), or make the main install provide it"
    )


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in SUBSET])
def test_block_runs_alone_with_the_main_install(block: Block, main_python: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "reader"
    cwd.mkdir()
    result = run_block(block.code, cwd, python=main_python)
    assert result.returncode == 0, (
        f"the block at {block.name} fails with only `pip install -e .`:\n{result.stderr[-4000:]}\n"
        "If it needs an extra, say which on the line before its fence: <!-- needs: EXTRA -->"
    )


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in MARKED])
def test_a_marked_block_fails_without_its_extra(block: Block, main_python: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "reader"
    cwd.mkdir()
    result = run_block(block.code, cwd, python=main_python)
    assert result.returncode != 0, (
        f"the block at {block.name} runs with only `pip install -e .`: remove its <!-- needs: "
        f"{', '.join(block.needs)} --> so that the main install's test runs it"
    )
    assert any(word in result.stderr for word in ("ImportError", "ModuleNotFoundError", "pip install")), (
        f"the block at {block.name} fails for another reason than a missing extra:\n{result.stderr[-4000:]}"
    )
