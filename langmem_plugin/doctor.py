"""``langmem-plugin doctor``: is this machine ready to run memory offline?

Each check does the real thing (loads the encodings, embeds a sentence, opens a
Qdrant store in a temporary folder) and reports what it found and how long it
took. Required checks failing make the command exit 1; optional ones (extras,
an OpenAI key) only inform.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """The outcome of one check."""

    name: str
    status: str  # "ok", "FAIL", or "info"
    detail: str
    seconds: float
    required: bool = True

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _python() -> str:
    return f"Python {sys.version.split()[0]} on {sys.platform}"


def _encodings() -> str:
    from langmem_plugin.core.tokens import get_encoding

    found = []
    expected = {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}
    for name, ids in expected.items():
        got = get_encoding(name).encode("hello world")
        if got != ids:
            raise RuntimeError(f"{name} encodes 'hello world' as {got}, expected {ids}")
        found.append(name)
    return ", ".join(found) + " load offline; 'hello world' ids match"


def _langchain_openai_counting() -> str:
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from langmem_plugin.core.tokens import count_message_tokens

    messages = [HumanMessage("hello world")]
    theirs = ChatOpenAI(model="gpt-4o-mini", api_key="sk-doctor").get_num_tokens_from_messages(messages)  # type: ignore[arg-type]
    ours = count_message_tokens(messages, model="gpt-4o-mini")
    if theirs != ours:
        raise RuntimeError(f"langchain-openai counts {theirs} tokens, we count {ours}")
    return f"ChatOpenAI.get_num_tokens_from_messages works offline ({ours} tokens, same as ours)"


def _embedder() -> str:
    import numpy as np

    from langmem_plugin.core.embeddings import MiniLMEmbeddings

    embeddings = MiniLMEmbeddings()
    start = time.perf_counter()
    embeddings.load()
    loaded = time.perf_counter() - start
    a, b, c = np.array(
        embeddings.embed_documents(
            ["My dog loves the beach", "The puppy enjoys the seaside", "Quarterly tax filing deadlines"]
        )
    )
    if not a @ b > a @ c:
        raise RuntimeError(f"paraphrase similarity {a @ b:.2f} is not above unrelated {a @ c:.2f}")
    return (
        f"all-MiniLM-L6-v2 int8 on onnxruntime, {len(a)} dims, loaded in {loaded:.2f}s; "
        f"paraphrase {a @ b:.2f} vs unrelated {a @ c:.2f}"
    )


def _bm25() -> str:
    from langmem_plugin.core.lexical import BM25Index

    index = BM25Index()
    index.add("cat", "I adopted a cat named Luna")
    index.add("hike", "We went hiking in the Alps")
    top = index.search("cats")
    if not top or top[0][0] != "cat":
        raise RuntimeError(f"BM25 search for 'cats' returned {top}")
    return "Qdrant's BM25 encoder (stemming, stopwords) scores as expected"


def _qdrant_edge() -> str:
    import qdrant_edge as q

    with tempfile.TemporaryDirectory(prefix="langmem-doctor-") as path:
        config = q.EdgeConfig(vectors={"dense": q.EdgeVectorParams(size=4, distance=q.Distance.Cosine)})
        shard = q.EdgeShard.create(path, config)
        try:
            point_id = str(uuid.uuid4())
            shard.update(
                q.UpdateOperation.upsert_points(
                    [q.Point(point_id, {"dense": [0.1, 0.2, 0.3, 0.4]}, {"k": "v"})]
                )
            )
            found = shard.query(
                q.QueryRequest(
                    limit=1, query=q.Query.Nearest([0.1, 0.2, 0.3, 0.4], using="dense"), with_payload=True
                )
            )
            if not found or str(found[0].id) != point_id:
                raise RuntimeError(f"query returned {found}")
            shard.flush()
        finally:
            shard.close()
    version = importlib.metadata.version("qdrant-edge-py")
    return f"qdrant-edge-py {version}: created, wrote, searched a temporary shard"


def _qdrant_client_local() -> str:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    try:
        client.create_collection(
            "doctor", vectors_config=models.VectorParams(size=2, distance=models.Distance.DOT)
        )
        client.upsert("doctor", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={})])
        hits = client.query_points("doctor", query=[1.0, 0.0], limit=1).points
        if not hits:
            raise RuntimeError("qdrant-client local mode found nothing")
    finally:
        client.close()
    return f"qdrant-client {importlib.metadata.version('qdrant-client')} local mode (':memory:') works"


def _installed(module: str, requirement: str) -> Callable[[], str]:
    """A check that ``module`` (of a dependency of the main install) imports."""

    def check() -> str:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"{module} is missing: pip install '{requirement}'")
        return f"{module} installed"

    return check


def _extra(module: str, extra: str) -> Callable[[], str]:
    def check() -> str:
        if importlib.util.find_spec(module) is None:
            return f"not installed (pip install 'langmem-plugin[{extra}]')"
        return f"{module} installed"

    return check


def _openai() -> str:
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        return "OPENAI_API_KEY / OPENAI_BASE_URL set: ChatOpenAI and OpenAIEmbeddings can be configured"
    return "no OPENAI_API_KEY: offline defaults are used (scripted model in the demo)"


_CHECKS: list[tuple[str, Callable[[], str], bool]] = [
    ("python", _python, True),
    ("token encodings", _encodings, True),
    ("langchain-openai counting", _langchain_openai_counting, True),
    ("embedder", _embedder, True),
    ("bm25", _bm25, True),
    ("qdrant embedded (edge)", _qdrant_edge, True),
    ("qdrant-client local", _qdrant_client_local, True),
    ("langchain (create_agent)", _installed("langchain.agents", "langchain>=1.0,<2"), True),
    ("extra: sqlite", _extra("langgraph.checkpoint.sqlite", "sqlite"), False),
    ("openai", _openai, False),
]


def run_checks() -> list[Check]:
    """Run every check; never raises for a failed check (it is reported)."""
    results = []
    for name, func, required in _CHECKS:
        start = time.perf_counter()
        try:
            detail = func()
            status = "ok" if required else "info"
        except Exception as exc:  # a doctor reports every failure instead of stopping at the first
            detail = f"{type(exc).__name__}: {exc}"
            status = "FAIL" if required else "info"
        results.append(Check(name, status, detail, time.perf_counter() - start, required))
    return results
