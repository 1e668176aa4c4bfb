"""The inspector over the demo's real data (issue 37, item 3): ``langmem-plugin demo --dir D`` then
``langmem-plugin inspect D/memory``, as a person reads it.

The store is what :func:`~langmem_plugin.demo.run_demo` leaves (embedded Qdrant, MiniLM, five
threads, one memory superseded by extraction), opened as the CLI opens it (``open_store``). The
pages are read through Starlette's TestClient, then in headless Chromium (tests/browser.py) at 1280
and 1920 px: the content column's share of the table is measured on the page and on its
screenshot, words never break mid-word, the table stays within the page, times are short,
every thread page shows the thread's memories, and the JSON view, the sorting, the export and
the link from a superseded memory to the one that replaced it work. The screenshot at 1280 px goes
to ``docs/images/inspect-demo-1280.png`` when ``LANGMEM_PLUGIN_SCREENSHOTS`` is set.
"""

from __future__ import annotations

import base64
import html as std_html
import json
import os
import re
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.base import BaseStore
from starlette.testclient import TestClient

from langmem_plugin.demo import EXTRACTED, SCENARIO, USER_ID, run_demo
from langmem_plugin.inspector import terminal
from langmem_plugin.inspector.opening import open_store
from langmem_plugin.inspector.web import inspector_app
from langmem_plugin.surfaces.inspector import Inspector
from tests.browser import browser, screenshot, serve_asgi  # noqa: F401  (a fixture)

if TYPE_CHECKING:
    from selenium.webdriver import Chrome
    from selenium.webdriver.remote.webelement import WebElement

TOKEN = "a-test-token-of-some-length"
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "images"
THREADS = sorted({thread for thread, _ in SCENARIO})
SHORT_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")
# the least share of the table the content column takes, by window width (before: 68 of 1405 px)
CONTENT_SHARE = {1280: 0.30, 1920: 0.50}


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseStore]:
    folder = tmp_path_factory.mktemp("demo")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_API_KEY", raising=False)
        patch.delenv("OPENAI_BASE_URL", raising=False)
        run_demo(directory=folder, out=lambda line: None)
    with open_store(str(folder / "memory")) as store:
        yield store


@pytest.fixture(scope="module")
def inspector(demo_store: BaseStore) -> Inspector:
    return Inspector(demo_store)


@pytest.fixture(scope="module")
def client(inspector: Inspector) -> TestClient:
    return TestClient(inspector_app(inspector, token=TOKEN), follow_redirects=False)


def _id_of(inspector: Inspector, text: str) -> str:
    (row,) = [row for row in inspector.page(user_id=USER_ID, limit=500).rows if row.content == text]
    return row.id


def _rows(page: str) -> list[str]:
    """The memory ids of a list page, in order (each id link's title holds the whole id)."""
    return [std_html.unescape(i) for i in re.findall(r'<td class="id"><a href="[^"]+" title="([^"]*)"', page)]


def _visible_text(page: str) -> str:
    """The page's text, without tags (so without their attributes: the tooltips)."""
    return std_html.unescape(re.sub(r"<[^>]*>", " ", page))


# -- the pages, through the app ------------------------------------------------------------------


def test_every_thread_page_shows_the_memory_of_its_thread(client: TestClient, inspector: Inspector) -> None:
    said = {thread: [text for t, text in SCENARIO if t == thread] for thread in THREADS}
    for thread in THREADS:
        page = client.get(f"/threads/{thread}")
        assert page.status_code == 200
        assert "No memory" not in page.text, thread
        shown = inspector.page("thread", thread_id=thread).rows
        assert shown
        assert [row.id for row in shown] == _rows(page.text)
        exchanges = [row.content for row in shown if row.kind == "episode"]
        assert exchanges, thread  # remember stored its exchanges in sam's user memory
        for exchange in exchanges:
            assert any(exchange.startswith(f"User: {text}") for text in said[thread]), (thread, exchange)
        assert f'href="/users/{USER_ID}"' in page.text  # whose memory it came from
    thread_1 = {row.content for row in inspector.page("thread", thread_id="thread-1").rows}
    assert "Sam wants quantities in metric units" in thread_1  # saved by the tool in thread 1
    assert EXTRACTED in {row.content for row in inspector.page("thread", thread_id="thread-5").rows}
    session = client.get("/threads/thread-1", params={"compartment": "session"})
    assert "No memory" in session.text  # with a user, the session compartment holds nothing here


def test_a_list_is_sorted_by_the_column_asked_for(client: TestClient, inspector: Inspector) -> None:
    rows = {row.id: row for row in inspector.page(user_id=USER_ID, limit=500).rows}
    by_priority = _rows(client.get(f"/users/{USER_ID}", params={"sort": "-priority"}).text)
    assert sorted(by_priority) == sorted(rows)
    priorities = sorted((r.priority for r in rows.values()), reverse=True)
    assert [rows[i].priority for i in by_priority] == priorities
    assert rows[by_priority[0]].content == EXTRACTED  # priority 8
    by_kind = _rows(client.get(f"/users/{USER_ID}", params={"sort": "kind"}).text)
    assert [rows[i].kind for i in by_kind] == sorted(r.kind for r in rows.values())
    oldest = _rows(client.get(f"/users/{USER_ID}", params={"sort": "created", "limit": "3"}).text)
    stored = inspector.export(user_id=USER_ID)["items"]
    by_time = sorted(stored, key=lambda item: datetime.fromisoformat(item["value"]["created_at"]))
    assert oldest == [item["key"] for item in by_time][:3]
    page = client.get(f"/users/{USER_ID}", params={"sort": "-priority"}).text
    assert 'aria-sort="descending"' in page
    assert f'href="/users/{USER_ID}?sort=priority"' in page  # the heading turns the order round
    bad = client.get(f"/users/{USER_ID}", params={"sort": "colour"})
    assert bad.status_code == 400
    assert "sort is one of id, content, kind" in bad.text


def test_times_are_short_and_whole_in_their_tooltip(client: TestClient) -> None:
    page = client.get(f"/users/{USER_ID}").text
    cells = re.findall(r'<td class="when"><span title="([^"]+)"><bdi>([^<]+)</bdi>', page)
    assert cells
    for whole, short in cells:
        assert SHORT_TIME.match(short), short
        assert whole.startswith(short.replace(" ", "T")), (whole, short)
    assert not re.search(r"\d{2}:\d{2}:\d{2}\.\d+", _visible_text(page))  # no microseconds in sight


def test_an_export_is_the_view_as_stored(client: TestClient, demo_store: BaseStore) -> None:
    answer = client.get(f"/users/{USER_ID}", params={"format": "json", "kind": "fact"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.headers["content-disposition"] == 'attachment; filename="user-memories.json"'
    document = answer.json()
    stored = {i.key: i.value for i in demo_store.search(("memories", "user", USER_ID), limit=100)}
    facts = {key for key, value in stored.items() if value["kind"] == "fact"}
    assert document["complete"] is True
    assert {item["key"] for item in document["items"]} == facts
    for item in document["items"]:
        assert item["value"] == stored[item["key"]]
        assert item["namespace"] == ["memories", "user", USER_ID]
    thread = client.get("/threads/thread-5", params={"format": "json"}).json()
    assert EXTRACTED in [item["value"]["content"] for item in thread["items"]]
    history = client.get("/namespaces", params={"prefix": f"memory_meta/history/{USER_ID}", "format": "json"})
    entries = history.json()["items"]
    assert {entry["value"]["action"] for entry in entries} >= {"ADD", "UPDATE", "INVALIDATE", "DELETE"}
    assert history.headers["content-disposition"] == 'attachment; filename="namespace.json"'


def test_a_memory_shows_its_stored_json_and_the_memory_that_replaced_it(
    client: TestClient, inspector: Inspector, demo_store: BaseStore
) -> None:
    old = _id_of(inspector, "Sam is pescatarian: eats fish, no meat")
    new = _id_of(inspector, EXTRACTED)
    page = client.get(f"/users/{USER_ID}/memories/{old}").text
    assert f'replaced by <a href="/users/{USER_ID}/memories/{new}"' in page
    raw = client.get(f"/users/{USER_ID}/memories/{old}", params={"format": "json"})
    assert raw.headers["content-type"].startswith("application/json")
    item = demo_store.get(("memories", "user", USER_ID), old)
    assert item is not None
    assert raw.json()["value"] == item.value
    assert raw.json()["value"]["metadata"]["superseded_by"] == new
    shown = re.search(r'<pre id="stored"><bdi>(.*?)</bdi></pre>', page, re.DOTALL)
    assert shown
    assert json.loads(std_html.unescape(shown.group(1))) == raw.json()
    history = re.search(r'<ol class="timeline" id="history">(.*?)</ol>', page, re.DOTALL)
    assert history
    assert f'replaced by <a href="/users/{USER_ID}/memories/{new}"' in history.group(1).split("INVALIDATE")[1]
    listing = client.get(f"/users/{USER_ID}").text
    assert f'class="badge warn superseded" href="/users/{USER_ID}/memories/{new}"' in listing


def test_the_reads_column_says_what_it_counts_on_the_page_and_in_the_terminal(
    client: TestClient, inspector: Inspector
) -> None:
    page = client.get(f"/users/{USER_ID}").text
    heading = re.search(r'<th class="reads num"><a href="[^"]+" title="([^"]+)">reads</a>', page)
    assert heading
    assert "a memory tool (search_memory, get_memory)" in heading.group(1)
    assert "RecallConfig(track_access=True)" in heading.group(1)
    old = _id_of(inspector, "Sam is pescatarian: eats fish, no meat")
    new = _id_of(inspector, EXTRACTED)
    shown = terminal.detail_text(inspector.show(old, user_id=USER_ID), width=120).splitlines()
    (reads,) = [line for line in shown if line.startswith("reads ")]
    assert reads.split()[1:3] == ["1", "(by"]  # the search_memory of thread 2 returned it once
    assert "by recall only with track_access=True" in reads
    (current,) = [line for line in shown if line.startswith("current ")]
    assert current.endswith(f", replaced by {new}")
    listing = terminal.page_text(inspector.page(user_id=USER_ID), width=160)
    assert "reads" in listing.splitlines()[2]
    assert "used" not in listing.splitlines()[2]


def test_the_namespaces_can_be_browsed(client: TestClient) -> None:
    root = client.get("/namespaces").text
    assert re.findall(r'<li><a href="/namespaces\?prefix=([^"]+)"', root) == ["memories", "memory_meta"]
    under = client.get("/namespaces", params={"prefix": "memories/user"}).text
    assert f'href="/namespaces?prefix=memories%2Fuser%2F{USER_ID}"' in under
    assert "Sam is vegetarian again" in under  # the items under it, raw
    assert client.get("/namespaces", params={"prefix": "memories//user"}).status_code == 400
    assert 'href="/namespaces"' in client.get("/").text


# -- in a browser, at two widths -----------------------------------------------------------------

_COLUMN_WIDTHS = """
const table = document.getElementById('memories');
const widths = {};
for (const th of table.querySelectorAll('thead th')) {
  widths[th.classList[0]] = th.getBoundingClientRect().width;
}
const box = table.getBoundingClientRect();
const content = table.querySelector('thead th.content').getBoundingClientRect();
return {widths, table: box.width, left: box.left, right: box.right, top: box.top, bottom: box.bottom,
        contentLeft: content.left, contentRight: content.right, dpr: window.devicePixelRatio,
        viewport: document.documentElement.clientWidth, scroll: document.documentElement.scrollWidth};
"""

# Every word of the content cells: laid out on one line (a word broken mid-word has two rects).
_BROKEN_WORDS = """
const broken = [];
for (const cell of document.querySelectorAll('#memories td.content .text')) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(word[0]);
    }
  }
}
return broken;
"""

# The browser decodes the screenshot: the widest run of dark (text) pixels on one pixel row
# between x0 and x1 (CSS px), rows y0 to y1.
_INK_SPAN = """
const [png, x0, x1, y0, y1, dpr, done] = arguments;
const image = new Image();
image.onload = () => {
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const [left, right] = [Math.round(x0 * dpr), Math.round(x1 * dpr)];
  let widest = 0;
  for (let y = Math.round(y0 * dpr); y < Math.min(image.height, Math.round(y1 * dpr)); y++) {
    const row = context.getImageData(left, y, right - left, 1).data;
    let first = -1, last = -1;
    for (let x = 0; x < right - left; x++) {
      const dark = row[4 * x] < 140 && row[4 * x + 1] < 140 && row[4 * x + 2] < 140;
      if (dark) { if (first < 0) first = x; last = x; }
    }
    if (first >= 0) widest = Math.max(widest, last - first);
  }
  done(widest / dpr);
};
image.onerror = () => done(-1);
image.src = 'data:image/png;base64,' + png;
"""


def _ink_span(browser: Chrome, png: bytes, box: dict[str, Any]) -> float:  # noqa: F811
    """The widest text line inside the content column of the screenshot ``png``, in CSS px."""
    browser.get("about:blank")  # a page without the inspector's CSP, to decode the image on
    browser.set_script_timeout(30)
    span = browser.execute_async_script(
        _INK_SPAN,
        base64.b64encode(png).decode(),
        box["contentLeft"],
        box["contentRight"],
        box["top"],
        box["bottom"],
        box["dpr"],
    )
    assert span >= 0, "the screenshot could not be decoded"
    return float(span)


@pytest.fixture
def sized(browser: Chrome, request: pytest.FixtureRequest) -> Iterator[Chrome]:  # noqa: F811
    width = request.param
    browser.set_window_size(width, 1600)  # tall enough for the demo's whole list
    try:
        yield browser
    finally:
        browser.set_window_size(1280, 900)


def _attr(element: WebElement, name: str) -> str:
    value = element.get_attribute(name)
    assert value is not None, (element.tag_name, name)
    return value


def _open(browser: Chrome, url: str) -> None:  # noqa: F811
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")


@pytest.mark.parametrize("sized", [1280, 1920], indirect=True)
def test_the_content_column_has_room_on_the_demos_data(
    sized: Chrome, inspector: Inspector, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    width = sized.get_window_size()["width"]
    with serve_asgi(inspector_app(inspector, token=TOKEN, allowed_hosts=["127.0.0.1"])) as url:
        _open(sized, f"{url}/users/{USER_ID}")
        box = sized.execute_script(_COLUMN_WIDTHS)
        shot = screenshot(sized, tmp_path / f"memories-{width}.png")
        if os.environ.get("LANGMEM_PLUGIN_SCREENSHOTS") and width == 1280:  # docs/inspect.md shows it
            screenshot(sized, SHOTS / f"inspect-demo-{width}.png")
        share = box["widths"]["content"] / box["table"]
        assert share >= CONTENT_SHARE[width], (width, box["widths"], box["table"])
        assert box["right"] <= box["viewport"], box  # the table is within the page
        assert box["scroll"] <= box["viewport"], box  # and nothing runs off it
        assert sized.execute_script(_BROKEN_WORDS) == []
        for cell in sized.find_elements(By.CSS_SELECTOR, "#memories td.when span"):
            assert SHORT_TIME.match(cell.text), cell.text
            assert _attr(cell, "title").startswith(cell.text.replace(" ", "T"))
        for link in sized.find_elements(By.CSS_SELECTOR, "#memories td.id a"):
            whole = _attr(link, "title")
            assert _attr(link, "href").endswith(f"/memories/{whole}")  # the id is whole
            assert link.size["width"] <= box["widths"]["id"]  # shown cut to its column
        # the screenshot: text runs across the column, as wide as the column allows
        ink = _ink_span(sized, shot.read_bytes(), box)
        assert ink >= 0.25 * box["table"], (width, ink, box["table"])
        assert ink <= box["widths"]["content"], (ink, box["widths"]["content"])


@pytest.mark.parametrize("sized", [1280, 1920], indirect=True)
def test_a_person_reads_the_demo_through_the_pages(sized: Chrome, inspector: Inspector) -> None:
    from selenium.webdriver.common.by import By

    old = _id_of(inspector, "Sam is pescatarian: eats fish, no meat")
    new = _id_of(inspector, EXTRACTED)
    with serve_asgi(inspector_app(inspector, token=TOKEN, allowed_hosts=["127.0.0.1"])) as url:
        for thread in THREADS:  # from the catalog to every thread: each shows its memory
            _open(sized, url + "/")
            link = sized.find_element(By.CSS_SELECTOR, f'#threads a[href="/threads/{thread}"]')
            _open(sized, _attr(link, "href"))
            rows = sized.find_elements(By.CSS_SELECTOR, "#memories tbody tr")
            assert rows, thread
            assert "No memory" not in sized.find_element(By.ID, "summary").text
            table = sized.find_element(By.ID, "memories").rect
            assert table["x"] + table["width"] <= sized.execute_script(
                "return document.documentElement.clientWidth"
            )

        _open(sized, f"{url}/users/{USER_ID}")  # sort by a heading, then the other way round
        _open(sized, _attr(sized.find_element(By.CSS_SELECTOR, "th.priority a"), "href"))
        assert "sort=-priority" in sized.current_url
        first = sized.find_element(By.CSS_SELECTOR, "#memories tbody tr td.content").text
        assert first == EXTRACTED
        assert sized.find_element(By.CSS_SELECTOR, "th.priority .arrow").text == "▼"
        _open(sized, _attr(sized.find_element(By.CSS_SELECTOR, "th.priority a"), "href"))
        assert sized.find_element(By.CSS_SELECTOR, "th.priority .arrow").text == "▲"

        export = _attr(sized.find_element(By.ID, "export"), "href")
        with urllib.request.urlopen(export, timeout=30) as answer:  # what the download saves
            document = json.load(answer)
        assert document["sort"] == "priority"
        assert len(document["items"]) == len(sized.find_elements(By.CSS_SELECTOR, "#memories tbody tr"))

        # a superseded memory links to the one that replaced it, from the list and from its page
        superseded = sized.find_element(By.CSS_SELECTOR, f'a.superseded[href$="/memories/{new}"]')
        _open(sized, _attr(superseded, "href"))
        assert sized.find_element(By.ID, "content").text == EXTRACTED
        _open(sized, f"{url}/users/{USER_ID}/memories/{old}")
        panel = sized.find_element(By.ID, "superseded")
        assert panel.text.endswith(f"replaced by {new}")
        _open(sized, _attr(panel.find_element(By.TAG_NAME, "a"), "href"))
        assert sized.find_element(By.ID, "content").text == EXTRACTED
        sized.back()

        # the item as stored, as JSON on the page (opened) and at its own address
        stored = sized.find_element(By.CSS_SELECTOR, "#raw pre")
        assert not stored.is_displayed()
        sized.find_element(By.CSS_SELECTOR, "#raw summary").click()
        assert stored.is_displayed()
        shown = json.loads(stored.text)
        assert shown["key"] == old
        assert shown["value"]["metadata"]["superseded_by"] == new
        with urllib.request.urlopen(_attr(sized.find_element(By.ID, "raw-json"), "href"), timeout=30) as raw:
            assert json.load(raw) == shown
