"""Shared fixtures. Tests never reach the network: only the LLM is ever faked."""

from __future__ import annotations

import pytest

from langmem_plugin.core.embeddings import MiniLMEmbeddings

pytest_plugins = ["tests.memory_fixtures"]


#: ``pytest -m quick`` (the README's first check): a few minutes that touch every layer — core,
#: both stores, recall, the turn service, the tools, a real graph, plan state, the fence, the
#: package's walls, the CLI's arguments and start-up — beside 16-20 minutes for the whole suite on a
#: busy 2-core machine. tests/test_docs.py marks its README blocks quick itself.
QUICK_FILES = frozenset(
    {
        "test_package.py",
        "test_tokens.py",
        "test_scope.py",
        "test_record.py",
        "test_lexical.py",
        "test_checkpointer_store.py",
        "test_qdrant_store.py",
        "test_recall.py",
        "test_turn.py",
        "test_memory_tools.py",
        "test_memory_graph.py",
        "test_plan_state.py",
        "test_hostile_fence.py",
        "test_cli_arguments.py",
        "test_startup.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in QUICK_FILES:
            item.add_marker(pytest.mark.quick)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbeddings:
    """The real default embedder, loaded once for the session."""
    return MiniLMEmbeddings().load()
