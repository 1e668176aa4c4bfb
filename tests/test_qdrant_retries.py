"""The remote engine retries transient failures: a scripted HTTP endpoint answers qdrant-client's requests.

No Qdrant server can run here, so these tests put a small HTTP server in front
of the real ``QdrantClient`` / ``AsyncQdrantClient``: it answers each request
with the next scripted status (503, 502, 429, 400, ...) and then with a valid
Qdrant response, and counts what it received. What is under test is our
engine's handling of what the real client raises.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient

from langmem_plugin.errors import ConfigurationError, StoreError
from langmem_plugin.stores.qdrant import QdrantStore
from langmem_plugin.stores.qdrant._calls import Retrieve
from langmem_plugin.stores.qdrant._remote import ClientEngine, Retries, is_transient

POINT = "5c56c793-69f3-5fbf-87a6-2a3a84df59a4"
RECORD = {"id": POINT, "payload": {"key": "k", "value": {"text": "tea"}}, "vector": None}


class Scripted(ThreadingHTTPServer):
    def __init__(self, statuses: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.statuses = statuses
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Scripted

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.paths.append(self.path)
        status = self.server.statuses.pop(0) if self.server.statuses else 200
        body = (
            {"result": [RECORD], "status": "ok", "time": 0.0} if status == 200 else {"status": {"error": "x"}}
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted([])
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


FAST = Retries(retries=2, backoff_s=0.001, max_backoff_s=0.002)


def _engine(url: str, *, asynchronous: bool = False, retries: Retries = FAST) -> ClientEngine:
    client = QdrantClient(url=url, check_compatibility=False)
    aclient = AsyncQdrantClient(url=url, check_compatibility=False) if asynchronous else None
    return ClientEngine(client, aclient=aclient, collection="c", dims=None, owns=True, retries=retries)


@pytest.mark.parametrize("failures", [[503, 503], [502], [429, 504]])
def test_transient_answers_are_retried_until_the_call_succeeds(
    scripted: Scripted, failures: list[int]
) -> None:
    scripted.statuses = list(failures)
    engine = _engine(scripted.url)
    hits = engine.execute(Retrieve((POINT,)))
    assert [(h.id, h.payload["value"]) for h in hits] == [(POINT, {"text": "tea"})]
    assert len(scripted.paths) == len(failures) + 1
    assert set(scripted.paths) == {"/collections/c/points"}


def test_a_call_that_keeps_failing_stops_after_its_retries(scripted: Scripted) -> None:
    scripted.statuses = [503, 503, 503, 503]
    with pytest.raises(StoreError, match=r"Qdrant failed on retrieve \('c'\) after 3 attempts"):
        _engine(scripted.url).execute(Retrieve((POINT,)))
    assert len(scripted.paths) == 3


def test_an_error_a_retry_cannot_fix_fails_at_once(scripted: Scripted) -> None:
    scripted.statuses = [400]
    with pytest.raises(StoreError, match="400") as info:
        _engine(scripted.url).execute(Retrieve((POINT,)))
    assert "attempts" not in str(info.value)
    assert len(scripted.paths) == 1


async def test_the_async_client_retries_alike(scripted: Scripted) -> None:
    scripted.statuses = [502, 503]
    engine = _engine(scripted.url, asynchronous=True)
    hits = await engine.aexecute(Retrieve((POINT,)))
    assert [h.id for h in hits] == [POINT]
    assert len(scripted.paths) == 3
    await engine.aclose()


def test_a_refused_connection_is_retried() -> None:
    engine = _engine("http://127.0.0.1:9", retries=Retries(retries=1, backoff_s=0.001))  # the discard port
    with pytest.raises(StoreError, match="after 2 attempts"):
        engine.execute(Retrieve((POINT,)))


def test_what_counts_as_transient() -> None:
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    def answered(status: int) -> UnexpectedResponse:
        return UnexpectedResponse(status, "", b"", httpx.Headers())

    request = httpx.Request("POST", "http://x")
    assert is_transient(ResponseHandlingException(httpx.ConnectError("refused", request=request)))
    assert is_transient(ResponseHandlingException(httpx.ConnectTimeout("slow", request=request)))
    assert not is_transient(ResponseHandlingException(httpx.ReadTimeout("busy", request=request)))
    assert is_transient(answered(503))
    assert not is_transient(answered(404))
    assert not is_transient(ValueError("a bug"))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_retries_must_be_a_count(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="retries"):
        QdrantStore(url="http://127.0.0.1:9", options={"retries": bad})
