"""The browser fixture works: a Starlette page served by ``serve_asgi``, clicked in headless Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.browser import browser, screenshot, serve_asgi  # noqa: F401  (a fixture)

if TYPE_CHECKING:
    from selenium.webdriver import Chrome

PAGE = """<!doctype html>
<html><head><title>fixture</title></head>
<body>
  <button id="go" onclick="document.getElementById('out').textContent = 'clicked'">Go</button>
  <p id="out">waiting</p>
</body></html>
"""


async def page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE)


APP = Starlette(routes=[Route("/", page)])


def test_a_served_page_is_clicked_in_headless_chromium(browser: Chrome, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with serve_asgi(APP) as url:
        browser.get(url + "/")
        assert browser.title == "fixture"
        assert browser.find_element(By.ID, "out").text == "waiting"
        browser.find_element(By.ID, "go").click()
        WebDriverWait(browser, 5).until(lambda b: b.find_element(By.ID, "out").text == "clicked")
        shot = screenshot(browser, tmp_path / "page.png")
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 100


def test_serve_asgi_stops_the_server() -> None:
    from tests.browser import _answers

    with serve_asgi(APP) as url:
        host, port = url.removeprefix("http://").split(":")
        assert _answers(host, int(port))
    assert not _answers(host, int(port))
