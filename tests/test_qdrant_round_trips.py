"""The cluster path measured: round trips and points of a recall on ``QdrantStore(url=...)`` (issue 27, 3).

The store is given a ``QdrantClient`` in qdrant-client's local mode, the same request shapes a
server gets (``QdrantStore(url=...)`` builds the same client over HTTP). The client counts each
request it answers — one request is one round trip to a server — and the points in it, sent or
received. docs/stores.md ("The cluster path") quotes these numbers: when a change moves them,
this test fails and the docs are updated with it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from qdrant_client import QdrantClient

from langmem_plugin import Memory, QdrantStore, RecallConfig, memory_index
from langmem_plugin.testing import FakeEmbeddings

CONFIG: Any = {"configurable": {"user_id": "sam", "thread_id": "t1"}}
MEMORIES = 120
QUESTION = "what does Sam drink in the morning?"


@dataclass(frozen=True)
class Request:
    """One request the client answered: its method, the points it carried, their payload bytes."""

    method: str
    points: int
    payload_bytes: int


class CountingClient(QdrantClient):
    """qdrant-client in local mode that records every request made through its public methods."""

    def __init__(self) -> None:
        super().__init__(location=":memory:")
        self.requests: list[Request] = []

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name.startswith("_") or name == "requests" or not callable(attr):
            return attr
        requests = super().__getattribute__("requests")

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            requests.append(Request(name, *_points(name, kwargs, out)))
            return out

        return counted


def _points(method: str, kwargs: dict[str, Any], out: Any) -> tuple[int, int]:
    """The points a request carried (sent for writes, received for reads) and their payloads' size."""
    if method == "query_points":
        found = list(out.points)
    elif method == "query_batch_points":
        found = [p for response in out for p in response.points]
    elif method == "retrieve":
        found = list(out)
    elif method == "scroll":
        found = list(out[0])
    elif method == "upsert":
        found = list(kwargs["points"])
    elif method == "batch_update_points":
        ops = kwargs["update_operations"]
        sizes = [_operation_size(op) for op in ops]
        return sum(n for n, _ in sizes), sum(size for _, size in sizes)
    else:
        return 0, 0
    return len(found), sum(len(json.dumps(p.payload)) for p in found if p.payload)


def _operation_size(op: Any) -> tuple[int, int]:
    """The points one operation of ``batch_update_points`` carries and the size of their payloads."""
    if hasattr(op, "set_payload"):
        return 1, len(json.dumps(op.set_payload.payload))
    if hasattr(op, "upsert"):
        points = list(op.upsert.points)
        return len(points), sum(len(json.dumps(p.payload)) for p in points if p.payload)
    return len(op.delete.points), 0


@pytest.fixture
def cluster() -> Iterator[tuple[CountingClient, Memory, Memory]]:
    """A remote-path store holding ``MEMORIES`` memories of one user; a Memory without and one with
    access counts on it."""
    client = CountingClient()
    store = QdrantStore(client=client, index=memory_index(FakeEmbeddings()))
    assert store.item_limits == "process"  # the server path, not the embedded one
    plain = Memory(store, recall=RecallConfig())
    tracked = Memory(store, recall=RecallConfig(track_access=True))
    save = next(t for t in plain.tools if t.name == "save_memory")
    words = [
        "tea",
        "coffee",
        "marathon",
        "Boston",
        "April",
        "garden",
        "guitar",
        "piano",
        "Paris",
        "Tokyo",
        "sister",
        "dog",
        "book",
    ]
    rng = random.Random(7)
    for i in range(MEMORIES):
        save.invoke({"content": f"Sam {rng.choice(words)} and {rng.choice(words)}, note {i}"}, CONFIG)
    plain.recall([HumanMessage(QUESTION)], CONFIG)  # the question's words probed once
    tracked.recall([HumanMessage("tea")], CONFIG)  # its first recall looks for unfinished operations
    client.requests.clear()
    yield client, plain, tracked
    plain.close()
    tracked.close()
    store.close()


def _taken(client: CountingClient) -> list[Request]:
    taken = list(client.requests)
    client.requests.clear()
    return taken


def test_one_recall_is_four_round_trips(cluster: tuple[CountingClient, Memory, Memory]) -> None:
    client, plain, _ = cluster
    plain.recall([HumanMessage(QUESTION)], CONFIG)
    taken = _taken(client)
    # the agent's knowledge listed (whole when small), user and session memory counted, then every
    # dense and BM25 list of both in one batch; no write, no embedding of a stored text
    assert [r.method for r in taken] == ["query_points", "count", "count", "query_batch_points"]
    candidates = taken[-1]
    limit = RecallConfig().retrieval.candidates  # type: ignore[union-attr]
    assert candidates.points == 2 * min(limit, MEMORIES)  # dense and BM25 of user memory, in full
    assert sum(r.points for r in taken) == candidates.points
    assert candidates.payload_bytes < 1024 * candidates.points  # whole payloads: short memories here


def test_new_query_words_add_one_batch_of_id_only_probes(
    cluster: tuple[CountingClient, Memory, Memory],
) -> None:
    client, plain, _ = cluster
    plain.recall([HumanMessage("which city did Sam visit in April?")], CONFIG)
    taken = _taken(client)
    assert [r.method for r in taken] == [
        "query_points",
        "count",
        "count",
        "query_batch_points",
        "query_batch_points",
    ]
    probes = taken[3]
    assert probes.payload_bytes == 0  # ids only: a probe never reads a payload


def test_access_counts_add_two_round_trips_and_no_upsert(
    cluster: tuple[CountingClient, Memory, Memory],
) -> None:
    client, _, tracked = cluster
    recalled = tracked.recall([HumanMessage(QUESTION)], CONFIG)
    taken = _taken(client)
    methods = [r.method for r in taken]
    assert methods == [
        "query_points",
        "count",
        "count",
        "query_batch_points",
        "retrieve",
        "batch_update_points",
    ]
    retrieved, updated = taken[-2:]
    assert retrieved.points == updated.points == len(recalled.items)  # the injected memories, once each
    assert "upsert" not in methods  # a payload update: the vectors stay, nothing is embedded or sent


def test_a_search_tool_call(cluster: tuple[CountingClient, Memory, Memory]) -> None:
    client, plain, _ = cluster
    search = next(t for t in plain.tools if t.name == "search_memory")
    search.invoke({"query": "tea", "limit": 5}, CONFIG)
    taken = _taken(client)
    assert "upsert" not in [r.method for r in taken]
    assert taken[-2:] == [
        Request("retrieve", 5, taken[-2].payload_bytes),
        Request("batch_update_points", 5, taken[-1].payload_bytes),
    ]


def test_report(cluster: tuple[CountingClient, Memory, Memory], capsys: pytest.CaptureFixture[str]) -> None:
    """Prints the table docs/stores.md shows (``pytest -s tests/test_qdrant_round_trips.py -k report``)."""
    client, plain, tracked = cluster
    save = next(t for t in plain.tools if t.name == "save_memory")
    search = next(t for t in plain.tools if t.name == "search_memory")
    exchange = [HumanMessage("I had tea"), AIMessage("Noted!")]
    actions = {
        "recall": lambda: plain.recall([HumanMessage(QUESTION)], CONFIG),
        "recall, new query words": lambda: plain.recall([HumanMessage("did Sam run in Boston?")], CONFIG),
        "recall with access counts": lambda: tracked.recall([HumanMessage(QUESTION)], CONFIG),
        "search_memory tool (5)": lambda: search.invoke({"query": "tea", "limit": 5}, CONFIG),
        "save_memory tool": lambda: save.invoke({"content": "Sam likes oolong"}, CONFIG),
        "remember (one exchange)": lambda: plain.remember_node.invoke({"messages": exchange}, CONFIG),
    }
    rows = []
    for name, action in actions.items():
        action()
        taken = _taken(client)
        assert taken, name
        calls = ", ".join(r.method for r in taken)
        size = sum(r.payload_bytes for r in taken)
        rows.append(
            f"| {name} | {len(taken)} | {sum(r.points for r in taken)} | {size / 1024:.1f} KiB | {calls} |"
        )
    with capsys.disabled():
        print(f"\n{MEMORIES} memories of one user\n" + "\n".join(rows))
    assert len(rows) == len(actions)
