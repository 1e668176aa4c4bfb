"""The public surface, the error tree and the layering are pinned here."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from langgraph.store.base import InvalidNamespaceError as LangGraphInvalidNamespaceError

import langmem_plugin
from langmem_plugin import errors, stores

PACKAGE = Path(langmem_plugin.__file__).parent

# The names an agent needs; everything else is in a documented submodule (README, docs/).
EXPECTED_ALL = {
    "AgentRules",
    "ChatModelReranker",
    "CheckpointerStore",
    "Compartment",
    "ContextConfig",
    "CompartmentLimits",
    "ConfigurationError",
    "ExtractionConfig",
    "LangMemPluginError",
    "Memory",
    "MemoryKind",
    "MemoryLayout",
    "MemoryRecord",
    "MemoryState",
    "MiniLMEmbeddings",
    "QdrantStore",
    "RecallConfig",
    "RememberConfig",
    "ResultsConfig",
    "Scope",
    "TokenBudgets",
    "WindowConfig",
    "__version__",
    "add_documents",
    "add_memory_agent",
    "count_tokens",
    "create_memory_tools",
    "memory_index",
    "trim_window",
}

EXPECTED_STORES_ALL = {
    "CheckpointerStore",
    "LangGraphServerStore",
    "LexicalStore",
    "PostgresMemoryIndexConfig",
    "PostgresMemoryStore",
    "QdrantIndexConfig",
    "QdrantOptions",
    "QdrantSearchConfig",
    "QdrantStore",
    "copy_items",
    "export_jsonl",
    "import_jsonl",
    "lexical_view",
}

# The submodules README.md and docs/ document; none has a leading underscore in its path.
DOCUMENTED_SUBMODULES = (
    "langmem_plugin.errors",
    "langmem_plugin.stores",
    "langmem_plugin.core.tokens",
    "langmem_plugin.core.embeddings",
    "langmem_plugin.core.multilingual",
    "langmem_plugin.core.lexical",
    "langmem_plugin.core.candidates",
    "langmem_plugin.core.scope",
    "langmem_plugin.core.record",
    "langmem_plugin.services.recall.retrieval",
    "langmem_plugin.services.store_steps",
    "langmem_plugin.services.context.window",
    "langmem_plugin.services.knowledge",
    "langmem_plugin.services.turn",
    "langmem_plugin.services.plan.state",
    "langmem_plugin.services.context.results",
    "langmem_plugin.services.context.summary",
    "langmem_plugin.services.context.model_compactor",
    "langmem_plugin.services.upkeep.extraction",
    "langmem_plugin.services.upkeep.consolidation",
    "langmem_plugin.services.upkeep.forgetting",
    "langmem_plugin.surfaces",
    "langmem_plugin.surfaces.plan_tools",
    "langmem_plugin.surfaces.result_tools",
    "langmem_plugin.core.fence",
    "langmem_plugin.testing",
)


def test_all_is_pinned() -> None:
    assert set(langmem_plugin.__all__) == EXPECTED_ALL
    assert len(langmem_plugin.__all__) == len(EXPECTED_ALL)
    for name in langmem_plugin.__all__:
        assert hasattr(langmem_plugin, name), name


def test_stores_all_is_pinned() -> None:
    assert set(stores.__all__) == EXPECTED_STORES_ALL
    assert len(stores.__all__) == len(EXPECTED_STORES_ALL)
    for name in stores.__all__:
        assert hasattr(stores, name), name
    assert stores.QdrantStore is langmem_plugin.QdrantStore
    assert stores.CheckpointerStore is langmem_plugin.CheckpointerStore


def test_unknown_attributes_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="BM25Index"):
        langmem_plugin.BM25Index  # noqa: B018 - moved to langmem_plugin.core.lexical
    with pytest.raises(AttributeError, match="nope"):
        stores.nope  # noqa: B018


@pytest.mark.parametrize("name", DOCUMENTED_SUBMODULES)
def test_documented_submodules_are_public_and_import(name: str) -> None:
    assert not any(part.startswith("_") for part in name.split("."))
    module = importlib.import_module(name)
    for exported in getattr(module, "__all__", ()):
        assert hasattr(module, exported), f"{name}.{exported}"


def test_import_is_lazy_about_qdrant_and_installs_the_offline_encodings() -> None:
    # qdrant-client alone takes about a second to import: QdrantStore is imported on first use.
    code = (
        "import sys, langmem_plugin, langmem_plugin.stores\n"
        "from langmem_plugin.core import tokens\n"
        "assert tokens._installed, 'install_offline_encodings() was not called'\n"
        "heavy = sorted(m for m in sys.modules if m.startswith('qdrant_client'))\n"
        "assert not heavy, heavy\n"
        "assert langmem_plugin.QdrantStore.__name__ == 'QdrantStore'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_version_is_the_installed_one() -> None:
    from importlib.metadata import version

    assert langmem_plugin.__version__ == version("langmem-plugin")


def _error_classes() -> list[type[BaseException]]:
    return [
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj)
        and issubclass(obj, errors.LangMemPluginError)
        and obj.__module__ == errors.__name__
    ]


def test_every_error_is_in_all_and_in_the_docstring_tree() -> None:
    classes = _error_classes()
    assert {c.__name__ for c in classes} == set(errors.__all__)
    for cls in classes:
        assert cls.__name__ in (errors.__doc__ or ""), cls
        assert cls.__doc__, cls


def test_every_error_subclasses_a_builtin() -> None:
    builtin_errors = {
        obj for obj in vars(builtins).values() if inspect.isclass(obj) and issubclass(obj, Exception)
    }
    for cls in _error_classes():
        if cls is errors.LangMemPluginError:
            continue
        assert any(base in builtin_errors for base in cls.__mro__[1:] if base is not Exception), cls


def test_invalid_namespace_error_is_langgraphs_too() -> None:
    assert issubclass(errors.InvalidNamespaceError, LangGraphInvalidNamespaceError)
    assert issubclass(errors.StoreLockedError, errors.StoreError)
    assert issubclass(errors.ScopeError, KeyError)


# Layers of DESIGN.md: arrows point down only.
LAYERS = {
    "errors": 1,
    "core": 1,
    "testing": 1,
    "stores": 2,
    "services": 3,
    "surfaces": 4,
    "bench": 5,
    "inspector": 5,
    "doctor": 5,
    "cli": 5,
    "demo": 5,
    "demo_script": 5,
    "__main__": 5,
    "__init__": 5,
}

# The surfaces modules that may import the adapters: the composition root and the package.
# the composition root: memory.py and the mixins it is made of (_inspecting.py builds an Inspector)
SURFACE_ROOTS = {
    "langmem_plugin.surfaces",
    "langmem_plugin.surfaces.memory",
    "langmem_plugin.surfaces._inspecting",
    "langmem_plugin.surfaces._team",  # Memory's team mixin builds the promote tool
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. "langmem_plugin.surfaces.nodes"
    target: str  # the imported module, e.g. "langmem_plugin.services.recall.rank"
    line: int
    typing_only: bool  # inside an ``if TYPE_CHECKING:`` block

    def __str__(self) -> str:
        where = f"{self.source.replace('.', '/')}.py:{self.line}"
        return f"{self.source} imports {self.target} ({where}{', TYPE_CHECKING' if self.typing_only else ''})"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = PACKAGE.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> Iterator[Import]:
    """Every import of a ``langmem_plugin`` module in ``path``, ``from pkg import module`` resolved."""
    return _imports_in(_module_name(path), path.read_text(), is_package=path.name == "__init__.py")


def _imports_in(source: str, text: str, *, is_package: bool) -> Iterator[Import]:
    package = source if is_package else source.rpartition(".")[0]

    def visit(node: ast.AST, typing_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, True)
            for child in node.orelse:
                yield from visit(child, typing_only)
            return
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                module = ".".join([*base, module] if module else base)
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                targets.append(submodule if _is_module(submodule) else module)
        for target in dict.fromkeys(targets):
            if target == "langmem_plugin" or target.startswith("langmem_plugin."):
                yield Import(source, target, getattr(node, "lineno", 0), typing_only)
        for inner in ast.iter_child_nodes(node):
            yield from visit(inner, typing_only)

    yield from visit(ast.parse(text), False)


def test_the_import_scanner_resolves_modules_and_type_checking_blocks() -> None:
    text = (
        "from typing import TYPE_CHECKING\n"
        "from langmem_plugin import errors, Memory\n"
        "from . import _runtime\n"
        "from ..services import recall\n"
        "if TYPE_CHECKING:\n"
        "    from langmem_plugin.surfaces.memory import Memory\n"
        "def later():\n"
        "    import langmem_plugin.stores.qdrant._edge\n"
    )
    found = {
        (imp.target, imp.typing_only)
        for imp in _imports_in("langmem_plugin.surfaces.nodes", text, is_package=False)
    }
    assert found == {
        ("langmem_plugin.errors", False),
        ("langmem_plugin", False),
        ("langmem_plugin.surfaces._runtime", False),
        ("langmem_plugin.services.recall", False),
        ("langmem_plugin.surfaces.memory", True),
        ("langmem_plugin.stores.qdrant._edge", False),
    }
    assert _private_package("langmem_plugin.stores.qdrant._edge") == "langmem_plugin.stores.qdrant"
    assert _private_package("langmem_plugin.__main__") is None


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _all_imports() -> list[Import]:
    return [imp for path in _modules() for imp in _imports(path)]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "langmem_plugin":
        return None
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS.get(parts[1])


def _report(kind: str, violations: list[Import]) -> str:
    lines = sorted({str(v) for v in violations})
    return f"{len(lines)} {kind}:\n  " + "\n  ".join(lines)


def test_every_module_has_a_layer() -> None:
    missing = sorted(_module_name(p) for p in _modules() if _layer(_module_name(p)) is None)
    assert not missing, f"add their top-level module to LAYERS: {missing}"


def test_imports_point_down_only() -> None:
    violations = [
        imp
        for imp in _all_imports()
        if (own := _layer(imp.source)) is not None
        and (layer := _layer(imp.target)) is not None
        and layer > own
    ]
    assert not violations, _report("upward imports", violations)


def _private_package(module: str) -> str | None:
    """The package a private module belongs to: ``a.b._x.y`` -> ``a.b``; ``None`` if nothing is private."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def test_no_private_module_is_imported_from_another_package() -> None:
    # A package's own modules (its __init__ included, which may re-export them) may import its
    # private modules; nobody else may: `bench` uses `stores`, never `stores.qdrant._edge`.
    violations = []
    for imp in _all_imports():
        owner = _private_package(imp.target)
        if owner is not None and not (imp.source == owner or imp.source.startswith(owner + ".")):
            violations.append(imp)
    assert not violations, _report("imports of another package's private modules", violations)


def test_surface_adapters_do_not_import_each_other() -> None:
    # nodes, middleware, callbacks, tools (every public surfaces module but the composition
    # root, memory.py) are adapters over the services: they may share a private helper
    # (surfaces/_runtime.py), never import one another or memory.py (except for type hints).
    def is_public_surface(module: str) -> bool:
        parts = module.split(".")
        return parts[:2] == ["langmem_plugin", "surfaces"] and not any(p.startswith("_") for p in parts)

    violations = [
        imp
        for imp in _all_imports()
        if not imp.typing_only
        and imp.source.startswith("langmem_plugin.surfaces")
        and imp.source not in SURFACE_ROOTS
        and is_public_surface(imp.target)
        and imp.target != imp.source
    ]
    assert not violations, _report("imports between surfaces", violations)


def test_bundled_tokenizer_and_notice_ship_with_the_package() -> None:
    data = PACKAGE / "_data"
    assert (data / "minilm-tokenizer.json").stat().st_size > 400_000
    assert "Apache" in (data / "NOTICE.md").read_text()
    assert (PACKAGE / "py.typed").exists()


# The feature rooms of services/ (docs/architecture.md): each may use the rooms listed, through
# their __init__ only; the base modules (turn, operations, filters, layout, limits, history,
# store_steps) stay at services/ top level. turn.py, the one turn service, may use every room.
SERVICE_ROOMS: dict[str, set[str]] = {
    "recall": {"context", "plan"},
    "remember": {"recall", "upkeep"},
    "context": {"upkeep", "stored_results"},
    "stored_results": set(),
    "plan": set(),
    "upkeep": {"stored_results"},  # forgetting reaches the stored tool results that hold the text
    "knowledge": set(),
    "inspect": {"recall", "upkeep"},
}
SERVICES = "langmem_plugin.services"


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["langmem_plugin", "services"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in SERVICE_ROOMS else None


def test_every_services_package_is_a_pinned_room() -> None:
    packages = {p.parent.name for p in (PACKAGE / "services").glob("*/__init__.py")}
    assert packages == set(SERVICE_ROOMS)
    for room in SERVICE_ROOMS:
        init = importlib.import_module(f"{SERVICES}.{room}")
        assert init.__doc__, f"{room}: say what it owns"
        assert len(init.__doc__.strip().splitlines()) > 2, f"{room}: say what it owns"
        for name in init.__all__:
            assert hasattr(init, name), f"{room}.{name}"


def test_rooms_import_only_the_rooms_they_may_and_only_through_their_init() -> None:
    wrong_room, through_a_side_door = [], []
    for imp in _all_imports():
        target = _room(imp.target)
        if target is None or imp.source.split(".")[:1] != ["langmem_plugin"]:
            continue
        source = _room(imp.source)
        if source == target:
            continue
        if imp.target != f"{SERVICES}.{target}":
            through_a_side_door.append(imp)  # every module of the package reaches a room by its door
        if source is not None and target not in SERVICE_ROOMS[source]:
            wrong_room.append(imp)
        if (
            source is None
            and imp.source.startswith(SERVICES)
            and imp.source not in {SERVICES, f"{SERVICES}.turn"}
        ):
            wrong_room.append(imp)  # the base modules are below every room
    assert not wrong_room, _report("imports between rooms that are not pinned", wrong_room)
    assert not through_a_side_door, _report("imports of a room's module from outside it", through_a_side_door)


def test_the_rooms_have_no_circle() -> None:
    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in SERVICE_ROOMS[start]
        )

    assert not [room for room in SERVICE_ROOMS if reaches(room, room)]
    # and inside a room, no two modules import each other (extraction and consolidation once did)
    edges = {
        (imp.source, imp.target)
        for imp in _all_imports()
        if _room(imp.source) is not None
        and _room(imp.source) == _room(imp.target)
        and not imp.source.endswith(tuple(f".{r}" for r in SERVICE_ROOMS))
    }
    assert not [(a, b) for a, b in edges if (b, a) in edges]
