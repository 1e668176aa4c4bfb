"""The public surface, the error tree and the layering are pinned here."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pytest
from langgraph.store.base import InvalidNamespaceError as LangGraphInvalidNamespaceError

import langmem_plugin
from langmem_plugin import errors

PACKAGE = Path(langmem_plugin.__file__).parent

EXPECTED_ALL = {
    "BM25Encoder",
    "BM25Index",
    "Compartment",
    "CompartmentError",
    "CompartmentLimits",
    "BlockingCallError",
    "CheckpointerStore",
    "ConfigurationError",
    "HybridRetriever",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidRecordError",
    "InvalidValueError",
    "LangMemPluginError",
    "Memory",
    "MemoryKind",
    "MemoryLayout",
    "MemoryLimitError",
    "MemoryNotFoundError",
    "MemoryRecord",
    "MemoryState",
    "MiniLMEmbeddings",
    "MissingDependencyError",
    "OfflineResourceError",
    "QdrantIndexConfig",
    "QdrantSearchConfig",
    "QdrantStore",
    "RecallConfig",
    "RememberConfig",
    "RetrievalConfig",
    "Scope",
    "ScopeError",
    "SparseVector",
    "StateKeys",
    "StoreError",
    "StoreLockedError",
    "TokenBudgets",
    "TokenCounter",
    "UnknownEmbeddingsError",
    "WindowConfig",
    "__version__",
    "add_documents",
    "add_memory_agent",
    "copy_items",
    "count_message_tokens",
    "count_tokens",
    "create_memory_tools",
    "delete_idle_threads",
    "embedding_dims",
    "export_jsonl",
    "encoding_for_model",
    "ensure_offline_encodings",
    "fill_namespace",
    "import_jsonl",
    "install_offline_encodings",
    "memory_salience",
    "resolve_embeddings",
    "resolve_scope",
    "trim_window",
    "turn_salience",
}


def test_all_is_pinned() -> None:
    assert set(langmem_plugin.__all__) == EXPECTED_ALL
    assert len(langmem_plugin.__all__) == len(EXPECTED_ALL)
    for name in langmem_plugin.__all__:
        assert hasattr(langmem_plugin, name), name


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
    "doctor": 5,
    "cli": 5,
    "demo": 5,
    "__main__": 5,
    "__init__": 5,
}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "langmem_plugin":
        return None
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS.get(parts[1])


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_only(path: Path) -> None:
    relative = path.relative_to(PACKAGE).with_suffix("")
    name = ".".join(("langmem_plugin", *relative.parts))
    if name.endswith(".__init__"):
        name = name[: -len(".__init__")]
    own = _layer(name)
    assert own is not None, f"{name}: add its top-level module to LAYERS"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module]
        for target in targets:
            layer = _layer(target)
            if layer is None or (target == "langmem_plugin" and own == 5):
                continue
            assert layer <= own, f"{name} (layer {own}) imports {target} (layer {layer})"


def test_bundled_tokenizer_and_notice_ship_with_the_package() -> None:
    data = PACKAGE / "_data"
    assert (data / "minilm-tokenizer.json").stat().st_size > 400_000
    assert "Apache" in (data / "NOTICE.md").read_text()
    assert (PACKAGE / "py.typed").exists()
