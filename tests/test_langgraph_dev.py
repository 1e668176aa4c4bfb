"""``langgraph dev`` serving examples/langgraph_app: the memories live in the server's store.

A real server (``langgraph-cli[inmem]``, the dev extra) runs the example from a copy of its folder;
a thread saves a memory over HTTP, the Store API (what LangGraph Studio's store view reads) shows
it, and a second thread recalls it: one store, seen by the runtime, by Studio and by recall.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage

from langmem_plugin import Memory
from langmem_plugin.errors import StoreError
from langmem_plugin.stores import LangGraphServerStore

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "examples" / "langgraph_app"
CLI = Path(sys.executable).parent / "langgraph"

pytestmark = pytest.mark.skipif(
    not CLI.exists(), reason="langgraph-cli[inmem] is not installed: pip install -e '.[dev]' installs it"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev`` on a copy of the example, offline; its URL."""
    folder = tmp_path_factory.mktemp("app")
    shutil.copy(APP / "agent.py", folder / "agent.py")
    config = json.loads((APP / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    (folder / "langgraph.json").write_text(json.dumps(config))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
    log = (folder / "server.log").open("w")
    process = subprocess.Popen(
        [str(CLI), "dev", "--no-browser", "--no-reload", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"langgraph dev exited: {(folder / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not start: {(folder / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def _run(url: str, text: str, user: str) -> dict[str, Any]:
    body = {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": text}]},
        "config": {"configurable": {"user_id": user}},
    }
    response = httpx.post(f"{url}/runs/wait", json=body, timeout=120)
    response.raise_for_status()
    out: dict[str, Any] = response.json()
    return out


def _store_items(url: str, prefix: list[str]) -> list[dict[str, Any]]:
    response = httpx.post(
        f"{url}/store/items/search", json={"namespace_prefix": prefix, "limit": 100}, timeout=30
    )
    response.raise_for_status()
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def test_the_store_api_shows_what_a_thread_saved_and_another_thread_recalls_it(server: str) -> None:
    assert _store_items(server, ["memories"]) == []
    first = _run(server, "remember my favourite language is OCaml", "ada")
    assert "Saved memory" in first["messages"][-1]["content"]

    items = _store_items(server, ["memories", "user", "ada"])
    contents = {item["value"]["content"] for item in items}
    assert "my favourite language is OCaml" in contents  # the memory the tool saved
    assert any(item["value"]["kind"] == "episode" for item in items)  # the exchange remember kept
    assert _store_items(server, ["memories", "user", "grace"]) == []

    second = _run(server, "Which language do I like?", "ada")
    assert "OCaml" in second["messages"][-1]["content"]  # recalled from the server's store
    other = _run(server, "Which language do I like?", "grace")
    assert "OCaml" not in other["messages"][-1]["content"]


def test_our_inspector_reads_the_memories_studio_shows(server: str) -> None:
    _run(server, "remember my bike is a green Brompton", "linus")
    studio = {item["value"]["content"] for item in _store_items(server, ["memories", "user", "linus"])}
    assert "my bike is a green Brompton" in studio

    with LangGraphServerStore(server) as store:  # the same items, through the Store API
        ours = {item.value["content"] for item in store.search(("memories", "user", "linus"), limit=100)}
        assert ours == studio
        with Memory(store) as memory:  # and recall over them, from outside the server
            config: Any = {"configurable": {"user_id": "linus"}}
            assert "Brompton" in memory.recall([HumanMessage("What bike do I ride?")], config).prompt

    listed = subprocess.run(
        [
            str(Path(sys.executable).parent / "langmem-plugin"),
            "memories",
            "list",
            "--store",
            f"langgraph+{server}",
            "--user",
            "linus",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert "my bike is a green Brompton" in json.dumps(rows)


def test_a_server_that_is_not_there_is_a_store_error_naming_it() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there any more
    with (
        LangGraphServerStore(url) as store,
        pytest.raises(StoreError, match=rf"{re.escape(url)} did not answer"),
    ):
        store.get(("memories",), "k")


async def test_the_server_store_from_async_code(server: str) -> None:
    _run(server, "remember my tea is sencha", "mika")
    store = LangGraphServerStore(server)
    try:
        found = await store.asearch(("memories", "user", "mika"), limit=100)
        assert "my tea is sencha" in {item.value["content"] for item in found}
        assert await store.aget(("memories", "user", "mika"), "no-such-key") is None
        await store.aput(("notes", "mika"), "k", {"content": "written from outside"})
        assert (await store.aget(("notes", "mika"), "k")).value["content"] == "written from outside"  # type: ignore[union-attr]
        await store.adelete(("notes", "mika"), "k")
        assert await store.aget(("notes", "mika"), "k") is None
    finally:
        await store.aclose()
