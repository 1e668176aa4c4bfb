"""``import langmem_plugin`` and ``langmem-plugin --help`` import only what they need.

Not timed here (times belong to ``langmem-plugin bench startup``): these tests check *what*
a fresh interpreter has imported, which is what makes the start slow or fast.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import langmem_plugin
from langmem_plugin.bench.startup import ROWS, run_startup_bench

# Each of these takes from a tenth of a second to over a second to import on a small machine.
HEAVY = (
    "langgraph.graph",
    "langgraph.pregel",
    "langchain_core.tools",
    "langchain_openai",
    "openai",
    "qdrant_client",
    "qdrant_edge",
    "onnxruntime",
    "tokenizers",
    "numpy",
    "re2",
    "langmem_plugin.services",
    "langmem_plugin.surfaces",
    "langmem_plugin.stores",
)


def _imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return set(done.stdout.split())


def test_importing_the_package_imports_nothing_heavy() -> None:
    modules = _imported_after("import langmem_plugin")
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert "langmem_plugin.core.tokens" in modules  # the offline encodings are registered at import


def test_the_help_imports_no_benchmark_and_nothing_heavy() -> None:
    code = "from langmem_plugin.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    modules = _imported_after(code)
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert not [m for m in modules if m.startswith("langmem_plugin.bench")]


def test_a_name_loads_its_module_on_first_use() -> None:
    modules = _imported_after("from langmem_plugin import Memory, QdrantStore")
    assert {"langmem_plugin.surfaces", "langmem_plugin.stores.qdrant", "langgraph.graph"} <= modules


@pytest.mark.parametrize("name", langmem_plugin.__all__)
def test_every_public_name_resolves(name: str) -> None:
    value = getattr(langmem_plugin, name)
    assert value is not None
    assert name in dir(langmem_plugin)
    if name != "__version__":
        assert getattr(value, "__name__", name) == name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'Memroy'"):
        langmem_plugin.Memroy  # noqa: B018  (the attribute access is the test)
    with pytest.raises(ImportError):
        exec("from langmem_plugin import Memroy", {})


def test_the_startup_bench_times_fresh_processes() -> None:
    result = run_startup_bench(runs=1)
    assert set(result.samples) == set(ROWS)
    assert all(len(times) == 1 and times[0] > 0 for times in result.samples.values())
    table = result.table()
    assert "import langmem_plugin" in table
    assert "langmem-plugin --help" in table
    with pytest.raises(ValueError, match="runs must be at least 1"):
        run_startup_bench(runs=0)
