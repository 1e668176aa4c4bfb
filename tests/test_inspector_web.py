"""The inspector's web page (``langmem_plugin.inspector.web``) over a real ``Memory()``: its pages through
Starlette's TestClient, then clicked through in headless Chromium (tests/browser.py).

One store for the module: a few exchanges of user ``u1`` (one of them hostile HTML), a thread
``t2`` with session memory only. The tests that change memory each change their own one
(the dog, the tea, the chess), so the others read the same store whatever the order.
Screenshots of the main views go to ``docs/images/inspect-*.png`` when ``LANGMEM_PLUGIN_SCREENSHOTS``
is set.
"""

from __future__ import annotations

import html as std_html
import json
import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from langmem_plugin import ConfigurationError, Memory
from langmem_plugin.core.html import BIDI_CONTROLS
from langmem_plugin.errors import MemoryNotFoundError
from langmem_plugin.inspector.views import json_text
from langmem_plugin.inspector.web import CONTENT_SECURITY_POLICY, TOKEN_HEADER, inspector_app, serve
from langmem_plugin.surfaces.inspector import Inspector
from tests.browser import browser, screenshot, serve_asgi  # noqa: F401  (a fixture)

if TYPE_CHECKING:
    from selenium.webdriver import Chrome

HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
TOKEN = "a-test-token-of-some-length"
U1 = {"configurable": {"thread_id": "t1", "user_id": "u1"}}
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "images"


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    memory = Memory()
    memory.import_history(
        [
            ("user", "My dog is called Rex"),
            ("assistant", "Noted, Rex it is."),
            ("user", "I live in Lisbon, near the river"),
            ("assistant", "Lisbon is a lovely city."),
            ("user", HOSTILE),
            ("assistant", "ok"),
            ("user", "I like green tea in the morning"),
            ("assistant", "Green tea, noted."),
            ("user", "I play chess on Sundays"),
            ("assistant", "A good habit."),
        ],
        U1,
    )
    memory.import_history(
        [("user", "Book a table for two"), ("assistant", "Done.")], {"configurable": {"thread_id": "t2"}}
    )
    yield memory
    memory.close()


@pytest.fixture(scope="module")
def reader(memory: Memory) -> Inspector:
    return memory.inspector()


@pytest.fixture(scope="module")
def writer(memory: Memory) -> Inspector:
    return memory.inspector(writable=True)


@pytest.fixture(scope="module")
def client(reader: Inspector) -> TestClient:
    return TestClient(inspector_app(reader, token=TOKEN), follow_redirects=False)


@pytest.fixture(scope="module")
def writing(writer: Inspector) -> TestClient:
    return TestClient(inspector_app(writer, token=TOKEN), follow_redirects=False)


def _id_of(inspector: Inspector, needle: str) -> str:
    (row,) = inspector.page(user_id="u1", contains=needle).rows
    return row.id


def _message(page: str) -> str:
    found = re.search(r'id="message">(.*?)</p>', page, re.DOTALL)
    assert found, page[:2000]
    return found.group(1)


# -- reading ----------------------------------------------------------------------------------


def test_the_catalog_links_the_users_and_threads(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert 'href="/users/u1"' in page.text
    assert 'href="/threads/t2"' in page.text
    assert "read-only" in page.text


def test_a_user_page_lists_the_memories_with_links_to_each(client: TestClient, reader: Inspector) -> None:
    page = client.get("/users/u1")
    assert page.status_code == 200
    for text in ("My dog is called Rex", "I live in Lisbon", "green tea", "episode"):
        assert text in page.text
    lisbon = _id_of(reader, "Lisbon")
    assert f'href="/users/u1/memories/{lisbon}"' in page.text


def test_a_user_page_filters_and_pages(client: TestClient) -> None:
    only = client.get("/users/u1", params={"contains": "lisbon"})
    assert "I live in Lisbon" in only.text
    assert "My dog" not in only.text
    assert client.get("/users/u1", params={"kind": "fact"}).text.count("/users/u1/memories/") == 0
    first = client.get("/users/u1", params={"limit": "2"})
    assert first.text.count('href="/users/u1/memories/') == 2
    assert 'href="/users/u1?limit=2&amp;offset=2" rel="next"' in first.text
    second = client.get("/users/u1", params={"limit": "2", "offset": "2"})
    assert second.text.count('href="/users/u1/memories/') == 2
    assert 'rel="prev"' in second.text


def test_a_thread_page_lists_its_session_memory(client: TestClient) -> None:
    page = client.get("/threads/t2")
    assert page.status_code == 200
    assert "Book a table for two" in page.text
    memory_id = re.search(r'href="/threads/t2/memories/([^"]+)"', page.text)
    assert memory_id
    assert client.get(f"/threads/t2/memories/{memory_id.group(1)}").status_code == 200


def test_a_search_shows_every_candidate_and_the_fenced_prompt(client: TestClient) -> None:
    page = client.get("/users/u1/search", params={"q": "where do I live?"})
    assert page.status_code == 200
    assert "injected" in page.text
    candidates = re.search(r'<table id="candidates">(.*?)</table>', page.text, re.DOTALL)
    assert candidates
    assert "Lisbon" in candidates.group(1)
    prompt = re.search(r'<pre id="prompt"><bdi>(.*?)</bdi></pre>', page.text, re.DOTALL)
    assert prompt, "the fenced prompt is shown"
    assert prompt.group(1).startswith("&lt;memory_context&gt;")
    assert "I live in Lisbon" in prompt.group(1)
    assert '<table id="tokens"' in page.text
    assert "memories" in page.text
    assert "total" in page.text


def test_a_memory_page_shows_its_fields_and_history(client: TestClient, reader: Inspector) -> None:
    lisbon = _id_of(reader, "Lisbon")
    page = client.get(f"/users/u1/memories/{lisbon}")
    assert page.status_code == 200
    assert "I live in Lisbon" in page.text
    assert "History" in page.text
    assert "Came from" in page.text
    assert "<form" not in page.text.split("<main>")[1].replace('method="get"', ""), "no change form read-only"


def test_hostile_text_is_escaped_on_every_page(client: TestClient, reader: Inspector) -> None:
    hostile = _id_of(reader, "<script>")
    pages = [
        client.get("/users/u1").text,
        client.get(f"/users/u1/memories/{hostile}").text,
        client.get("/users/u1/search", params={"q": "document title script"}).text,
        client.get("/users/u1/search", params={"q": HOSTILE}).text,
    ]
    for page in pages:
        assert "<script" not in page
        assert "<img" not in page
        assert "&lt;script&gt;" in page or "\\u003cscript\\u003e" in page


def test_every_response_carries_the_security_headers(client: TestClient, writing: TestClient) -> None:
    answers = [
        client.get("/"),
        client.get("/users/u1"),
        client.get("/users/u1/memories/nope"),
        client.get("/no/such/page"),
        client.post("/users/u1/memories/nope/edit"),
        writing.post("/users/u1/memories/nope/forget", data={"token": TOKEN}),
    ]
    assert [a.status_code for a in answers] == [200, 200, 404, 404, 403, 404]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert "script-src" not in CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/users/a%00b", 400),
        ("/users/%2E%2E", 400),
        ("/users/a%2Eb/search?q=x", 400),
        ("/threads/%0A", 400),
        ("/users/u1/memories/nope", 404),
        ("/users/u1?offset=minus", 400),
        ("/users/u1?limit=100000", 400),
        ("/threads/t2?compartment=knowledge", 400),
    ],
)
def test_bad_values_in_urls_are_answered_with_a_page(client: TestClient, path: str, status: int) -> None:
    answer = client.get(path)
    assert answer.status_code == status
    assert "text/html" in answer.headers["content-type"]
    assert _message(answer.text)


def test_only_the_served_hosts_are_answered(reader: Inspector) -> None:
    app = inspector_app(reader, token=TOKEN, allowed_hosts=["127.0.0.1", "localhost"])
    local = TestClient(app, base_url="http://127.0.0.1:8765")
    assert local.get("/").status_code == 200
    rebound = TestClient(app, base_url="http://attacker.example:8765")
    refused = rebound.get("/")
    assert refused.status_code == 400
    assert refused.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_serve_refuses_a_host_that_is_not_loopback(reader: Inspector) -> None:
    with pytest.raises(ConfigurationError, match="allow_remote"):
        serve(reader, host="0.0.0.0")
    with pytest.raises(ConfigurationError, match="port"):
        serve(reader, port=70000)


# -- JSON, export and namespaces ----------------------------------------------------------------

HIDDEN = "a\u202eb\u2066c\x1b[2J\u200bd\U000e0041\u2028é日本\ud800"


def test_json_text_shows_every_invisible_character_as_an_escape_and_reads_back() -> None:
    value = {"k\u202e": [HIDDEN, 1.5, None, {"nested": HIDDEN}]}
    text = json_text(value)
    assert json.loads(text) == value
    assert not [c for c in text if unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"} and c != "\n"]
    assert "é日本" in text  # letters stay as they are
    assert "\\u202e" in text
    assert "\\udb40\\udc41" in text  # an astral character as its UTF-16 pair


def test_a_namespace_with_any_label_is_browsed_and_exported_exactly(
    memory: Memory, client: TestClient
) -> None:
    labels = ("memories", "odd", "a/b\u202e", "%2F ?#&")
    stored = HIDDEN.replace("\ud800", "")  # a store takes valid Unicode text only
    memory.store.put(labels, "k/1\u2066", {"content": stored, "n": 1})
    root = client.get("/namespaces")
    assert root.status_code == 200
    assert 'href="/namespaces?prefix=memories"' in root.text
    odd = client.get("/namespaces", params={"prefix": "memories/odd"})
    child = re.search(r'<li><a href="(/namespaces\?prefix=[^"]+)"><bdi>a/b\\u202e</bdi></a>', odd.text)
    assert child, odd.text[-2000:]
    page = client.get(std_html.unescape(child.group(1)))
    assert page.status_code == 200
    for body in (odd.text, page.text):
        assert not BIDI_CONTROLS & set(body.split("</title>", 1)[1])  # revealed, never raw
    deeper = re.search(r'<li><a href="(/namespaces\?prefix=[^"]+)"><bdi>%2F \?#&amp;</bdi></a>', page.text)
    assert deeper
    exported = client.get(std_html.unescape(deeper.group(1)) + "&format=json")
    assert exported.status_code == 200
    assert not BIDI_CONTROLS & set(exported.text)
    (item,) = exported.json()["items"]
    assert (tuple(item["namespace"]), item["key"], item["value"]) == (
        labels,
        "k/1\u2066",
        {"content": stored, "n": 1},
    )
    memory.store.delete(labels, "k/1\u2066")


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/users/u1?format=xml", "format is 'html' or 'json'"),
        ("/users/u1?sort=priority%00", "control character"),
        ("/users/u1?sort=size", "sort is one of"),
        ("/namespaces?prefix=memories//user", "prefix holds an empty label"),
        ("/namespaces?format=json", "format=json exports one namespace"),
    ],
)
def test_a_format_sort_or_prefix_the_page_cannot_take_is_a_400(
    client: TestClient, path: str, says: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == 400
    assert says in std_html.unescape(_message(answer.text))


def test_an_export_holds_the_view_as_stored(client: TestClient, memory: Memory) -> None:
    answer = client.get("/users/u1", params={"format": "json", "contains": "lisbon"})
    assert answer.headers["content-disposition"] == 'attachment; filename="user-memories.json"'
    document = answer.json()
    assert document["filters"] == {"contains": "lisbon"}
    (item,) = document["items"]
    stored = memory.store.get(("memories", "user", "u1"), item["key"])
    assert stored is not None
    assert item["value"] == stored.value
    thread = client.get("/threads/t2", params={"format": "json"}).json()
    assert [i["value"]["content"] for i in thread["items"]] == [
        "User: Book a table for two\nAssistant: Done."
    ]


# -- changing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "data"),
    [
        ({}, {"content": "hacked"}),
        ({}, {"content": "hacked", "token": "wrong-token-wrong"}),
        ({TOKEN_HEADER: "wrong-token-wrong"}, {"content": "hacked"}),
        ({"Origin": "http://attacker.example"}, {"content": "hacked", "token": TOKEN}),
        ({"Sec-Fetch-Site": "cross-site"}, {"content": "hacked", "token": TOKEN}),
    ],
    ids=["no token", "wrong token", "wrong header", "other origin", "cross-site"],
)
def test_a_change_without_the_token_is_refused_and_writes_nothing(
    writing: TestClient, writer: Inspector, headers: dict[str, str], data: dict[str, str]
) -> None:
    lisbon = _id_of(writer, "Lisbon")
    before = writer.show(lisbon, user_id="u1")
    for action in ("edit", "forget"):
        answer = writing.post(f"/users/u1/memories/{lisbon}/{action}", data=data, headers=headers)
        assert answer.status_code == 403, answer.text
        assert "refused" in _message(answer.text)
    assert writer.show(lisbon, user_id="u1") == before


def test_a_read_only_inspector_refuses_a_change_even_with_the_token(
    client: TestClient, reader: Inspector
) -> None:
    lisbon = _id_of(reader, "Lisbon")
    before = reader.show(lisbon, user_id="u1")
    answer = client.post(f"/users/u1/memories/{lisbon}/edit", data={"token": TOKEN, "content": "hacked"})
    assert answer.status_code == 403
    assert "--allow-writes" in _message(answer.text)
    assert client.post(f"/users/u1/memories/{lisbon}/forget", data={"token": TOKEN}).status_code == 403
    assert reader.show(lisbon, user_id="u1") == before


def test_an_edit_with_the_token_changes_the_memory_and_its_history(
    writing: TestClient, writer: Inspector
) -> None:
    dog = _id_of(writer, "My dog")
    detail = writing.get(f"/users/u1/memories/{dog}")
    assert f'name="token" value="{TOKEN}"' in detail.text
    assert 'id="edit"' in detail.text
    answer = writing.post(
        f"/users/u1/memories/{dog}/edit",
        data={
            "token": TOKEN,
            "content": "My dog is called Max",
            "category": "pets",
            "tags": "dog, name",
            "priority": "7",
        },
    )
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/users/u1/memories/{dog}"
    shown = writer.show(dog, user_id="u1")
    assert (shown.row.content, shown.row.category, shown.row.tags, shown.row.priority) == (
        "My dog is called Max",
        "pets",
        ["dog", "name"],
        7,
    )
    assert [entry.source for entry in shown.history] == ["inspector"]
    timeline = writing.get(answer.headers["location"]).text
    assert re.search(
        r'<ol class="timeline" id="history">.*inspector.*My dog is called Max', timeline, re.DOTALL
    )
    # the header carries the token as well; a form that changes nothing writes nothing
    again = writing.post(
        f"/users/u1/memories/{dog}/edit",
        data={"content": "My dog is called Max"},
        headers={TOKEN_HEADER: TOKEN},
    )
    assert again.status_code == 303
    assert len(writer.show(dog, user_id="u1").history) == 1


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"priority": "99"}, "priority"),
        ({"priority": "<b>many</b>"}, "&lt;b&gt;many&lt;/b&gt;"),
        ({"content": ""}, "content"),
        ({"content": "<b>x</b>" * 2000}, "at most"),
    ],
)
def test_a_value_the_memory_cannot_hold_is_a_400_that_shows_why(
    writing: TestClient, writer: Inspector, data: dict[str, str], says: str
) -> None:
    lisbon = _id_of(writer, "Lisbon")
    before = writer.show(lisbon, user_id="u1")
    answer = writing.post(f"/users/u1/memories/{lisbon}/edit", data={"token": TOKEN, **data})
    assert answer.status_code == 400
    assert says in _message(answer.text)
    assert "<b>" not in answer.text
    assert writer.show(lisbon, user_id="u1") == before


def test_forgetting_with_the_token_removes_the_memory(writing: TestClient, writer: Inspector) -> None:
    tea = _id_of(writer, "green tea")
    answer = writing.post(f"/users/u1/memories/{tea}/forget", data={"token": TOKEN, "confirm": "yes"})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/users/u1"
    with pytest.raises(MemoryNotFoundError):
        writer.show(tea, user_id="u1")
    assert writing.get(f"/users/u1/memories/{tea}").status_code == 404


# -- in a browser -----------------------------------------------------------------------------


def _shoot(browser: Chrome, name: str) -> None:  # noqa: F811
    if os.environ.get("LANGMEM_PLUGIN_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        screenshot(browser, SHOTS / f"inspect-{name}.png")


def _assert_no_script_ran(browser: Chrome) -> None:  # noqa: F811
    from selenium.common.exceptions import NoAlertPresentException

    assert "pwned" not in browser.title
    assert browser.title.endswith("memory inspector")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - raises when no alert is open


def _navigates(browser: Chrome, action: Callable[[], object]) -> None:  # noqa: F811
    """Run ``action`` (a click, a submit) and wait until the page it leaves is gone and the next is in."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.wait import WebDriverWait

    page = browser.find_element(By.TAG_NAME, "html")
    action()
    WebDriverWait(browser, 30).until(staleness_of(page))
    WebDriverWait(browser, 30).until(lambda b: b.execute_script("return document.readyState") == "complete")


def _serve(inspector: Inspector) -> Starlette:
    return inspector_app(inspector, token=TOKEN, allowed_hosts=["127.0.0.1"])


def test_a_person_browses_searches_and_reads_a_history(browser: Chrome, reader: Inspector) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    with serve_asgi(_serve(reader)) as url:
        browser.get(url + "/")
        assert browser.find_element(By.ID, "users").text.splitlines() == ["u1"]
        _shoot(browser, "catalog")
        _navigates(browser, browser.find_element(By.LINK_TEXT, "u1").click)
        table = browser.find_element(By.ID, "memories")
        assert "I live in Lisbon" in table.text
        assert HOSTILE in table.text  # shown as the text it is
        _assert_no_script_ran(browser)
        _shoot(browser, "memories")

        box = browser.find_element(By.CSS_SELECTOR, "#search input[name=q]")
        box.send_keys("where do I live?")
        _navigates(browser, box.submit)
        candidates = browser.find_element(By.ID, "candidates")
        assert "injected" in candidates.text
        assert browser.find_element(By.ID, "prompt").text.startswith("<memory_context>")
        _assert_no_script_ran(browser)
        _shoot(browser, "search")

        _navigates(browser, browser.find_element(By.LINK_TEXT, "user u1").click)
        hostile = _id_of(reader, "<script>")
        _navigates(browser, browser.find_element(By.LINK_TEXT, hostile).click)
        assert browser.find_element(By.ID, "content").text == f"User: {HOSTILE}\nAssistant: ok"
        assert browser.find_element(By.ID, "history").text  # the timeline, or what it lacks
        _assert_no_script_ran(browser)
        assert not browser.find_elements(By.CSS_SELECTOR, "form[method=post]"), "read-only: no change form"


def test_a_person_edits_a_memory_through_the_form(browser: Chrome, writer: Inspector) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    chess = _id_of(writer, "chess")
    with serve_asgi(_serve(writer)) as url:
        browser.get(f"{url}/users/u1/memories/{quote(chess)}")
        content = browser.find_element(By.CSS_SELECTOR, "#edit textarea[name=content]")
        assert content.get_property("value") == "User: I play chess on Sundays\nAssistant: A good habit."
        content.clear()
        content.send_keys("I play chess on Sundays,\nat the club")
        tags = browser.find_element(By.CSS_SELECTOR, "#edit input[name=tags]")
        tags.send_keys("hobby, weekend")
        # the form posts, then the answer redirects back: wait until the old page is gone
        _navigates(browser, browser.find_element(By.CSS_SELECTOR, "#edit button[type=submit]").click)
        assert browser.current_url == f"{url}/users/u1/memories/{chess}", browser.page_source[-1500:]
        assert "at the club" in browser.find_element(By.ID, "history").text
        _assert_no_script_ran(browser)
        _shoot(browser, "history")
    shown = writer.show(chess, user_id="u1")
    assert shown.row.content == "I play chess on Sundays,\nat the club"  # the textarea's CRLF undone
    assert shown.row.tags == ["hobby", "weekend"]
    assert [entry.source for entry in shown.history] == ["inspector"]
    hostile = _id_of(writer, "<script>")
    with serve_asgi(_serve(writer)) as url:
        browser.get(f"{url}/users/u1/memories/{quote(hostile)}")
        boxes = browser.find_elements(By.CSS_SELECTOR, "#edit textarea")
        assert boxes, browser.page_source[-1500:]
        assert HOSTILE in boxes[0].get_property("value")
        _assert_no_script_ran(browser)
