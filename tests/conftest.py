"""Shared fixtures. Tests never reach the network: only the LLM is ever faked."""

from __future__ import annotations

import pytest

from langmem_plugin.core.embeddings import MiniLMEmbeddings

pytest_plugins = ["tests.memory_fixtures"]


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbeddings:
    """The real default embedder, loaded once for the session."""
    return MiniLMEmbeddings().load()
