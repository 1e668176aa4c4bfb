"""Any provider, not only OpenAI: an OpenAI-compatible server (Ollama, vLLM, LM Studio) as the embedder.

The server here is real: an ``http.server`` in a thread that speaks the OpenAI embeddings API
(``POST /v1/embeddings``) and chat API (``POST /v1/chat/completions``, which refuses every key),
reached by LangChain's ``OpenAIEmbeddings`` / ``ChatOpenAI`` over HTTP. A closed port stands for
a server that is down. Nothing of this package is replaced.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_openai import OpenAIEmbeddings
from langgraph.graph import StateGraph
from langgraph.store.memory import InMemoryStore
from langgraph.types import default_retry_on
from pydantic import SecretStr

from langmem_plugin import Memory, MemoryState, QdrantStore, memory_index
from langmem_plugin.core.embeddings import known_dims, resolve_embeddings
from langmem_plugin.errors import (
    ConfigurationError,
    EmbeddingsError,
    EmbeddingsUnavailableError,
    ProviderError,
)
from langmem_plugin.testing import ScriptedChatModel

DIMS = 48  # what the server's model makes: a dimension no table of known models has
MODEL = "nomic-embed-text"
KEY = "sk-good"
PROBE = "dimension probe"


@dataclass
class Server:
    """What the server saw: each embeddings request's inputs, and each chat request."""

    url: str
    inputs: list[list[str]] = field(default_factory=list)
    chats: int = 0

    @property
    def embedded(self) -> list[str]:
        return [text for request in self.inputs for text in request]


def _vector(text: str) -> list[float]:
    """A bag of hashed words, L2-normalised: texts that share words are near."""
    vector = [0.0] * DIMS
    for word in text.lower().replace("?", " ").replace(".", " ").split():
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/chat/completions":
                server.chats += 1
                error = {
                    "message": "Incorrect API key provided: sk-wr***ng.",
                    "type": "invalid_request_error",
                }
                self._answer(401, {"error": {**error, "code": "invalid_api_key"}})
                return
            if self.path != "/v1/embeddings":
                self._answer(404, {"error": {"message": f"no route {self.path}"}})
                return
            if self.headers.get("Authorization") != f"Bearer {KEY}":
                self._answer(
                    401, {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}
                )
                return
            if request.get("model") != MODEL:
                self._answer(404, {"error": {"message": f"model {request.get('model')!r} not found"}})
                return
            texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
            texts = [t if isinstance(t, str) else " ".join(map(str, t)) for t in texts]  # token ids: words
            server.inputs.append(texts)
            data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
            usage = {"prompt_tokens": 0, "total_tokens": 0}
            self._answer(200, {"object": "list", "data": data, "model": MODEL, "usage": usage})

    return Handler


@pytest.fixture
def server() -> Iterator[Server]:
    """An OpenAI-compatible server on a free loopback port, for one test."""
    seen = Server(url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(seen))
    seen.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def closed_url() -> str:
    """The URL of a port nothing listens on: a server that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _embeddings(url: str, *, key: str = KEY, model: str = MODEL) -> OpenAIEmbeddings:
    # what docs/models.md tells an Ollama user to write: strings sent as they are, no retries here
    return OpenAIEmbeddings(
        model=model,
        base_url=url,
        api_key=SecretStr(key),
        check_embedding_ctx_length=False,
        max_retries=0,
    )


SAM: RunnableConfig = {"configurable": {"user_id": "sam", "thread_id": "t1"}}


def test_memory_on_a_compatible_server_calls_it_first_at_the_first_use(server: Server) -> None:
    embeddings = _embeddings(server.url)
    assert known_dims(embeddings) is None  # not a model whose dims are known: learned by a call
    with Memory(embeddings=embeddings) as memory:
        assert server.inputs == []  # nothing was called while Memory() was made
        builder = StateGraph(MemoryState)
        memory.add_to(builder, ScriptedChatModel(["Noted.", "You drink green tea."]))
        graph = builder.compile(store=memory.store)
        assert server.inputs == []
        graph.invoke({"messages": [HumanMessage("I drink green tea every morning")]}, SAM)
        assert server.embedded[0] == PROBE  # the first use learned the dims, then embedded
        assert len(server.inputs) > 1
        out = memory.recall([HumanMessage("what tea do I drink every morning?")], SAM)
        assert "green tea" in out.prompt
        store = memory.store
        assert isinstance(store, QdrantStore)
        assert f"dims={DIMS}" in repr(store)


def test_dims_given_are_used_and_no_probe_is_sent(server: Server) -> None:
    with Memory(embeddings=_embeddings(server.url), dims=DIMS) as memory:
        memory.store.put(("memories", "user", "sam"), "tea", {"content": "Sam drinks green tea"})
        hits = memory.store.search(("memories", "user", "sam"), query="green tea")
    assert [h.key for h in hits] == ["tea"]
    assert PROBE not in server.embedded
    assert memory_index(_embeddings(server.url), dims=DIMS)["dims"] == DIMS  # no probe there either
    assert PROBE not in server.embedded


def test_a_durable_store_reopens_on_the_server_and_learns_its_dims_again(
    server: Server, tmp_path: Path
) -> None:
    path = tmp_path / "memory"
    with Memory(path=path, embeddings=_embeddings(server.url)) as memory:
        memory.store.put(("memories", "user", "sam"), "tea", {"content": "Sam drinks green tea"})
    assert json.loads((path / "store.json").read_text())["dims"] == DIMS
    probes = server.embedded.count(PROBE)
    with Memory(path=path, embeddings=_embeddings(server.url)) as again:
        assert server.embedded.count(PROBE) == probes  # reopened without a call
        assert again.store.get(("memories", "user", "sam"), "tea") is not None
    assert server.embedded.count(PROBE) == probes + 1  # learned at the first use, then checked


def test_a_server_that_is_down_is_an_embeddings_error_that_says_why_what_and_the_fix(closed_url: str) -> None:
    with (
        Memory(embeddings=_embeddings(closed_url)) as memory,  # made: nothing is called yet
        pytest.raises(EmbeddingsError) as caught,
    ):
        memory.store.put(("memories", "user", "sam"), "tea", {"content": "Sam drinks green tea"})
    message = str(caught.value)
    assert "\n" not in message
    assert closed_url in message
    assert MODEL in message
    assert "to learn the dimension of its vectors" in message  # why
    assert "did not answer" in message
    assert "APIConnectionError" in message
    assert "dims=" in message
    assert "is running" in message
    assert caught.value.provider == f"OpenAIEmbeddings(model={MODEL!r}, base_url={closed_url!r})"
    assert type(caught.value.__cause__).__name__ == "APIConnectionError"
    assert isinstance(caught.value, ProviderError)
    assert isinstance(caught.value, RuntimeError)
    # a server that may answer later: a ConnectionError too, which LangGraph's RetryPolicy retries
    assert isinstance(caught.value, EmbeddingsUnavailableError)
    assert default_retry_on(caught.value)


def test_memory_index_names_the_server_when_its_probe_fails(closed_url: str) -> None:
    with pytest.raises(EmbeddingsError, match=r"to learn the dimension.*did not answer"):
        memory_index(_embeddings(closed_url))


async def test_a_server_down_at_a_write_with_dims_given_says_the_write_stored_nothing(
    closed_url: str,
) -> None:
    with Memory(embeddings=_embeddings(closed_url), dims=DIMS) as memory:
        store = memory.store
        with pytest.raises(EmbeddingsError, match="to embed the texts a write stores") as caught:
            await store.aput(("memories", "user", "sam"), "tea", {"content": "Sam drinks green tea"})
        assert "dimension" not in str(caught.value)
        assert await store.aget(("memories", "user", "sam"), "tea") is None
        with pytest.raises(EmbeddingsError, match="to embed a search's query"):
            store.search(("memories",), query="green tea")


def test_a_refused_key_and_an_unknown_model_say_so(server: Server) -> None:
    store = QdrantStore(":memory:", index={"embed": _embeddings(server.url, key="sk-wrong")})
    with pytest.raises(
        EmbeddingsError, match=r"refused the API key \(HTTP 401\).*check the API key"
    ) as refused:
        store.put(("docs",), "a", {"text": "green tea"})
    assert not isinstance(refused.value, ConnectionError)  # asking again changes nothing: not retried
    assert not default_retry_on(refused.value)
    store = QdrantStore(":memory:", index={"dims": DIMS, "embed": _embeddings(server.url, model="nomic")})
    with pytest.raises(EmbeddingsError, match=r"no such model.*ollama pull"):
        store.put(("docs",), "a", {"text": "green tea"})


def test_an_embedder_bug_is_not_called_a_provider_failure() -> None:
    def broken(texts: Any) -> list[list[float]]:
        raise ValueError("my embedder's own bug")

    store = QdrantStore(":memory:", index={"dims": 4, "embed": broken})
    with pytest.raises(ValueError, match="own bug") as caught:
        store.put(("docs",), "a", {"text": "green tea"})
    assert not isinstance(caught.value, ProviderError)


def test_openai_embeddings_without_a_key_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingsError) as caught:
        resolve_embeddings("openai:text-embedding-3-small")
    assert str(caught.value).startswith("the embeddings 'openai:text-embedding-3-small' could not be made")
    assert "Fix: set OPENAI_API_KEY" in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(EmbeddingsError, match="no API key"):
        _ = Memory(embeddings="openai:text-embedding-3-small").store  # made at construction or first use


@pytest.mark.parametrize("dims", [0, -3, 1.5, True, "768"])
def test_dims_that_are_not_a_dimension_are_refused(dims: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"dims must be .* positive int, got"):
        Memory(embeddings=_embeddings("http://127.0.0.1:9/v1"), dims=dims)
    with pytest.raises(ConfigurationError, match="positive int"):
        memory_index(_embeddings("http://127.0.0.1:9/v1"), dims=dims)


def test_dims_with_a_store_of_ones_own_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"both a store .* and dims=768"):
        Memory(InMemoryStore(), dims=768)


def test_an_azure_deployment_behind_a_default_model_name_is_not_taken_for_it() -> None:
    from langchain_openai import AzureOpenAIEmbeddings

    azure = {
        "azure_endpoint": "https://example.openai.azure.com",
        "api_version": "2024-10-21",
        "api_key": "x",
    }
    deployment = AzureOpenAIEmbeddings(azure_deployment="my-embedder", **azure)  # type: ignore[arg-type]
    assert known_dims(deployment) is None  # any model may be deployed there: learned by a call
    named = AzureOpenAIEmbeddings(model="text-embedding-3-large", azure_deployment="big", **azure)  # type: ignore[arg-type]
    assert known_dims(named) == 3072


@pytest.mark.parametrize("down", [False, True], ids=["refused-key", "server-down"])
def test_the_demo_on_a_real_model_that_fails_says_it_in_one_line(
    down: bool,
    server: Server,
    closed_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from langmem_plugin.cli import main

    url = closed_url if down else server.url
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"langmem-plugin demo: ChatOpenAI(model='gpt-4o-mini', base_url='{url}/')")
    assert "for the demo's turn 1" in err
    assert "unset OPENAI_API_KEY and OPENAI_BASE_URL" in err
    if down:
        assert "its server did not answer" in err
        assert server.chats == 0
    else:
        assert "refused the API key (HTTP 401)" in err
        assert "check the API key" in err
        assert server.chats == 1
