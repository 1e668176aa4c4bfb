"""A real headless browser for the web tests, and an ASGI app served on a local port.

``browser`` (session): Debian's Chromium (``/usr/bin/chromium``) driven by its ``chromedriver``
through Selenium, headless, with a fresh profile in a temporary directory. Nothing is ever
downloaded: the driver and the browser are given by path, so Selenium Manager never runs
(``SE_OFFLINE=true`` besides). Without the Debian packages ``chromium`` and ``chromium-driver``
(``.ci/run`` installs them when it can) the fixture skips, saying so. The browser is shared by
the session: a test opens its own page (``browser.get(url)``) and assumes nothing about the last.

``serve_asgi(app)``: the app under uvicorn on ``127.0.0.1``, a free port, a background thread;
yields the base URL once the server answers and stops it when the block ends.

Use them as ``tests/postgres_server.py``'s fixtures are used::

    from tests.browser import browser, serve_asgi  # noqa: F401  (a fixture)
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from selenium.webdriver import Chrome

__all__ = ["CHROMIUM_ARGUMENTS", "browser", "screenshot", "serve_asgi"]

#: Headless, no sandbox (the tests may run as root), and none of the background traffic a fresh
#: profile starts (component updates, sync, safe-browsing lists): the tests reach only 127.0.0.1.
CHROMIUM_ARGUMENTS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)
_MISSING = "Chromium is not installed: apt-get install chromium chromium-driver (the Debian packages)"
SERVER_START_TIMEOUT_S = 20.0


def _executable(name: str, debian_path: str) -> str | None:
    """Debian's path when it is there, else ``name`` on ``PATH``, else ``None``."""
    if os.access(debian_path, os.X_OK):
        return debian_path
    return shutil.which(name)


@pytest.fixture(scope="session")
def browser() -> Iterator[Chrome]:
    """Headless Chromium through Selenium, with Debian's browser and driver; skips without them."""
    chromium = _executable("chromium", "/usr/bin/chromium")
    driver = _executable("chromedriver", "/usr/bin/chromedriver")
    if chromium is None or driver is None:
        pytest.skip(_MISSING)
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is missing: pip install -e '.[dev]'"
    )
    from selenium.webdriver.chrome.service import Service

    with (
        pytest.MonkeyPatch.context() as patch,
        tempfile.TemporaryDirectory(prefix="langmem-chromium-") as profile,
    ):
        patch.setenv("SE_OFFLINE", "true")  # Selenium Manager would download; it is never called here anyway
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for argument in (*CHROMIUM_ARGUMENTS, f"--user-data-dir={profile}"):
            options.add_argument(argument)
        service = Service(executable_path=driver, log_output=os.path.join(profile, "chromedriver.log"))
        chrome = webdriver.Chrome(service=service, options=options)
        try:
            yield chrome
        finally:
            chrome.quit()


def _free_socket() -> socket.socket:
    """A listening-ready socket bound to a free port of 127.0.0.1 (handed to uvicorn: no race)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def _answers(host: str, port: int) -> bool:
    """Whether an HTTP server answers at ``host:port`` (any status; no proxy is consulted)."""
    connection = http.client.HTTPConnection(host, port, timeout=1)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
    except OSError:
        return False
    finally:
        connection.close()
    return True


@contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """Serve ``app`` under uvicorn on ``127.0.0.1`` in a background thread; yields its base URL.

    The server has the port before the thread starts (a socket bound here), the URL is yielded once
    it answers an HTTP request, and the server is told to exit (``should_exit``) and joined when the
    block ends. WebSockets are off (``ws="none"``): the pages under test are plain HTTP.

    Raises:
        RuntimeError: the server stopped, or did not answer within ``SERVER_START_TIMEOUT_S``.
    """
    import uvicorn

    sock = _free_socket()
    host, port = sock.getsockname()
    config = uvicorn.Config(app, log_level="warning", ws="none", lifespan="auto")
    server = uvicorn.Server(config)
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # reported to the test by the waiting loop below
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not (server.started and _answers(host, port)):
            if failure or not thread.is_alive():
                raise RuntimeError(f"the ASGI server on port {port} stopped before it answered") from (
                    failure[0] if failure else None
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the ASGI server on port {port} did not answer in {SERVER_START_TIMEOUT_S}s"
                )
            time.sleep(0.02)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=SERVER_START_TIMEOUT_S)
        sock.close()
    if thread.is_alive():  # only when the block itself succeeded: never hides its error
        raise RuntimeError(f"the ASGI server on port {port} did not stop in {SERVER_START_TIMEOUT_S}s")


def screenshot(browser: Chrome, path: Path) -> Path:
    """Save what ``browser`` shows as a PNG at ``path``; returns ``path``."""
    if not browser.save_screenshot(str(path)):
        raise RuntimeError(f"the browser could not save a screenshot to {path}")
    return path
