"""The inspector's web page against hostile ids, stored text and addresses (issue 35, class 6),
through the real app (Starlette's TestClient, as tests/test_inspector_web.py starts it) over
InMemoryStore and an embedded QdrantStore.

- every id (a memory's, a user's, a thread's; with ``/``, ``%``, ``?``, ``#``, dots, spaces,
  any script) opens its own page from the links the pages give, never another memory's;
- stored text cannot reorder the page: no bidi control reaches it raw (but in a form field,
  which holds the exact text), every stored field sits in a ``<bdi>`` (the title: U+2068/U+2069);
- a query parameter the page cannot take is a 400 that names it, never a 500.
The terminal tables and the notebook tables (``langmem_plugin.core.html``) are checked too.
"""

from __future__ import annotations

import contextlib
import html as std_html
import itertools
import re
import sys
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from starlette.testclient import TestClient

from langmem_plugin import MemoryRecord, memory_index
from langmem_plugin.core import html
from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import exact_id
from langmem_plugin.errors import ScopeError
from langmem_plugin.inspector import terminal
from langmem_plugin.inspector.web import MAX_OFFSET, TOKEN_HEADER, inspector_app, segment
from langmem_plugin.services.history import HISTORY_NAMESPACE, HistoryEntry
from langmem_plugin.services.inspect import MAX_PAGE
from langmem_plugin.surfaces.inspector import Inspector
from langmem_plugin.testing import FakeEmbeddings

TOKEN = "a-test-token-of-some-length"
BIDI = sorted(html.BIDI_CONTROLS)
# What reveal() writes for a bidi control: the page's own text never holds it.
REVEALED_BIDI = re.compile(r"\\u(?:202[a-e]|206[6-9]|200[ef]|061c)")
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


@dataclass
class World:
    """A store, the app over it (read-only and writable), and what each test put there."""

    store: BaseStore
    reader: TestClient
    writer: TestClient
    nonce: Iterator[int] = field(default_factory=itertools.count)
    memories: dict[str, dict[str, str]] = field(default_factory=dict)  # user -> {memory id: content}

    def __repr__(self) -> str:
        return f"World({type(self.store).__name__})"

    def put(self, user: str, memory_id: str, content: str, **fields: Any) -> None:
        record = MemoryRecord(content=content, **fields).to_value()
        self.store.put(("memories", "user", user), memory_id, record, index=["content"])
        self.memories.setdefault(user, {})[memory_id] = content


@contextlib.contextmanager
def _store(kind: str, folder: Path) -> Iterator[BaseStore]:
    index: Any = dict(memory_index(FakeEmbeddings()))
    if kind == "inmemory":
        yield InMemoryStore(index=index)
    else:
        from langmem_plugin.stores import QdrantStore

        with QdrantStore(folder / "qdrant", index=index) as qdrant:
            yield qdrant


@pytest.fixture(scope="module", params=["inmemory", "qdrant"])
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with _store(request.param, tmp_path_factory.mktemp(request.param)) as store:
        reader = TestClient(inspector_app(Inspector(store), token=TOKEN), follow_redirects=False)
        writer = TestClient(
            inspector_app(Inspector(store, writable=True), token=TOKEN), follow_redirects=False
        )
        yield World(store, reader, writer)


# -- reading a page -----------------------------------------------------------------------------

_VOID = frozenset({"input", "br", "meta", "img", "link", "hr", "col", "source", "wbr"})


class Page(HTMLParser):
    """A page read as a browser lays it out: what text sits where, and what breaks the rules.

    ``problems``: a bidi control raw in text or in an attribute (but a form field's value, which
    holds the exact text), stored text (a revealed bidi escape) outside a ``<bdi>``, a title
    whose bidi controls are not the isolating pair around stored text.
    """

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.isolated: list[str] = []  # the text of every <bdi>
        self.fields: dict[str, str] = {}  # the text of each named form field (input values, textareas)
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._link: list[Any] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs).get("name") or ""
        if tag == "textarea":
            self.fields[named] = ""
        for name, value in attrs:
            if tag == "input" and name == "value":
                self.fields[named] = value or ""
            elif value and html.BIDI_CONTROLS & set(value):
                self.problems.append(f"a bidi control in <{tag} {name}={value!r}>")
        if tag == "a":
            self._link = [dict(attrs).get("href") or "", ""]
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass
        if tag == "a" and self._link is not None:
            self.links.append((self._link[0], self._link[1]))
            self._link = None

    def handle_data(self, data: str) -> None:
        if self._link is not None:
            self._link[1] += data
        if "textarea" in self.stack:
            self.fields[next(reversed(self.fields))] = data.removeprefix("\n")  # a browser drops it
            return
        if "title" in self.stack:
            rest = re.sub("\u2068[^\u2068\u2069]*\u2069", "", data)
            if html.BIDI_CONTROLS & set(rest) or REVEALED_BIDI.search(rest):
                self.problems.append(f"stored text not isolated in the title {data!r}")
            return
        if html.BIDI_CONTROLS & set(data):
            self.problems.append(f"a raw bidi control in the text {data!r}")
        if "bdi" in self.stack:
            self.isolated.append(data)
        elif REVEALED_BIDI.search(data):
            self.problems.append(f"stored text outside a <bdi>: {data!r} in {self.stack}")


def _read(client: TestClient, url: str, status: int = 200) -> Page:
    answer = client.get(url)
    assert answer.status_code == status, (url, answer.status_code, answer.text[-1500:])
    page = Page(answer.text)
    assert not page.problems, (url, page.problems)
    return page


def _shows(page: Page, text: str) -> bool:
    """Whether ``text`` is on the page, revealed and isolated."""
    return any(html.reveal(text) in part for part in page.isolated)


def _valid_id(text: str) -> bool:
    try:
        exact_id("user_id", text)
    except ScopeError:
        return False
    return True


def _no_dot_segment(url: str) -> bool:
    """Whether a browser sends ``url``'s path as written (it resolves ``.``/``..``, ``%2e`` too)."""
    dots = {".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"}
    return not any(part.lower() in dots for part in url.split("?")[0].split("/"))


# -- every id opens its own page ----------------------------------------------------------------

_TRICKY = st.sampled_from(["/", "%", "%2F", "?", "#", ".", "..", " ", "~", "é", "日本", "\u202e", "&", "+"])
MEMORY_IDS = st.lists(
    st.one_of(_TRICKY, st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=4)),
    min_size=1,
    max_size=5,
).map("".join)
OWNER_IDS = st.lists(
    st.one_of(_TRICKY, st.text(st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=3)),
    min_size=1,
    max_size=4,
).map(lambda parts: "".join(parts).replace(".", ""))


def _splits(text: str) -> set[str]:
    """What naive handling of ``text`` as a path could take it for."""
    parts = [part for part in re.split("[/?#]", text) if part]
    return {*parts, text.rsplit("/", 1)[-1], text.split("/", 1)[0], text + "/edit"} - {""}


def _check_user(world: World, href: str, user: str) -> None:
    """The user page at ``href`` lists each of ``user``'s memories once, and each link opens it."""
    page = _read(world.reader, href)
    assert _shows(page, user)
    expected = world.memories[user]
    links = [(h, text) for h, text in page.links if "/memories/" in h]
    assert len(links) == len(expected), (user, links, expected)
    reached = set()
    for link, text in links:
        assert _no_dot_segment(link), link
        detail = world.reader.get(link)
        assert detail.status_code == 200, (user, link, detail.text[-800:])
        content = re.search(r'<pre id="content"><bdi>(.*?)</bdi></pre>', detail.text, re.DOTALL)
        assert content, detail.text[-800:]
        (memory_id,) = [
            m for m, c in expected.items() if html.reveal(c) == std_html.unescape(content.group(1))
        ]
        assert html.reveal(memory_id) == text, (link, memory_id, text)
        reached.add(memory_id)
    assert reached == set(expected)


@SETTINGS
@given(memory_id=MEMORY_IDS, owner=OWNER_IDS)
def test_every_id_opens_its_own_page_never_another(world: World, memory_id: str, owner: str) -> None:
    n = next(world.nonce)
    user = f"n{n}-{owner}"
    memory_ids = {memory_id, *_splits(memory_id)}
    users = {user, *filter(_valid_id, _splits(user))}
    users |= {u for m in memory_ids if _valid_id(u := f"{user}/memories/{m}")}
    for u in users:
        for m in memory_ids:
            world.put(u, m, f"memory {n}: {u!r} {m!r}")
    catalog = _read(world.reader, "/")
    hrefs = {std_html.unescape(text): href for href, text in catalog.links if href.startswith("/users/")}
    for u in users:
        assert html.reveal(u) in hrefs, (u, sorted(hrefs))
        _check_user(world, hrefs[html.reveal(u)], u)
        assert hrefs[html.reveal(u)] == f"/users/{segment(u)}"


# The memory tools (which edit and forget run) address ids of [A-Za-z0-9_-]; others are refused.
@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("b", True),
        ("a-b_1", True),
        ("a/b", False),
        ("..", False),
        (".", False),
        ("~..", False),
        ("a%2Fb", False),
        ("x?y#z", False),
        ("a b", False),
        (" b", False),
        ("b ", False),
        ("\u05d0/b", False),
    ],
)
def test_a_form_changes_only_the_memory_of_its_own_page(world: World, name: str, changes: bool) -> None:
    n = next(world.nonce)
    user = f"form{n}/memories/b"
    others = sorted({"b", "a", "a/b", "..", "%2F", "~..", "a-b_1"} - {name})
    for memory_id in [name, *others]:
        world.put(user, memory_id, f"{memory_id!r} as it was")
    url = f"/users/{segment(user)}/memories/{segment(name)}"
    page = _read(world.writer, url)
    assert _shows(page, f"{name!r} as it was")
    action = re.search(r'<form class="edit" method="post" action="([^"]+)"', world.writer.get(url).text)
    assert action
    assert _no_dot_segment(action.group(1))
    assert std_html.unescape(action.group(1)) == f"{url}/edit"
    answer = world.writer.post(f"{url}/edit", data={"token": TOKEN, "content": "changed"})
    assert answer.status_code == (303 if changes else 400 if name != name.strip() else 404), answer.text[
        -800:
    ]
    inspector = Inspector(world.store)
    expected = "changed" if changes else f"{name!r} as it was"
    assert inspector.show(name, user_id=user).row.content == expected
    for memory_id in others:
        assert inspector.show(memory_id, user_id=user).row.content == f"{memory_id!r} as it was"
    gone = world.writer.post(f"{url}/forget", headers={TOKEN_HEADER: TOKEN})
    left = {row.id for row in inspector.page(user_id=user).rows}
    if changes:
        assert gone.status_code == 303
        assert gone.headers["location"] == f"/users/{segment(user)}"
        assert world.reader.get(url).status_code == 404
        assert left == set(others)
        del world.memories[user][name]
    else:
        assert gone.status_code in (400, 404)
        assert left == {name, *others}


def test_segment_reads_back_every_id() -> None:
    for value in ["a/b", ".", "..", "...", "~", "~.", "~~..", ".a", "a.", "%2E", "\ud800"]:
        text = segment(value)
        assert _no_dot_segment("/" + text)
        assert "/" not in text
    assert segment("..") == "~.."
    assert segment("~..") == "~~.."
    assert segment("~a") == "~a"


def test_a_path_that_is_not_utf8_is_refused(world: World) -> None:
    answer = world.reader.get("/users/%FF")
    assert answer.status_code == 400
    assert "UTF-8" in answer.text


# -- stored text cannot reorder the page --------------------------------------------------------

STORED = st.tuples(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
    st.sampled_from(BIDI),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
).map("".join)
LABELS = st.text(st.characters(exclude_categories=["Cs", "Cc"], exclude_characters="./"), max_size=6)


@SETTINGS
@given(text=STORED, label=LABELS, mark=st.sampled_from(BIDI))
def test_stored_text_is_revealed_and_isolated_on_every_page(
    world: World, text: str, label: str, mark: str
) -> None:
    n = next(world.nonce)
    user, thread, agent = f"u{n}{mark}{label}", f"t{n}{mark}{label}", f"a{n}{mark}{label}"
    memory_id, episode = f"m{n}{text}", f"ep{n}{mark}"
    world.put(
        user,
        memory_id,
        f"c{n} {text}",
        tags=[text, "plain"],
        source=text,
        sources=[f"{thread}/{episode}"],
        metadata={"invalid_at": text},
    )
    world.put(user, episode, f"x{n} {text}", kind=MemoryKind.EPISODE)
    entry = HistoryEntry(
        memory_id, text, text, text, text, f"2024-01-01T00:00:0{n % 10}{text}", text, thread, text
    )
    world.store.put(
        tuple(part.format(user_id=user) for part in HISTORY_NAMESPACE), f"h{n}", entry.as_dict(), index=False
    )
    session = MemoryRecord(content=f"s{n} {text}", category="travel").to_value()
    world.store.put(("memories", "session", thread), f"s{n}{text}", session, index=["content"])
    knowledge = MemoryRecord(content=f"k{n} {text}", kind=MemoryKind.DOCUMENT).to_value()
    world.store.put(("memories", "agent", agent, "knowledge"), f"k{n}{text}", knowledge, index=["content"])

    owner = f"/users/{segment(user)}"
    catalog = _read(world.reader, "/")
    for who in (user, thread, agent):
        assert _shows(catalog, who)
    listing = _read(world.reader, f"{owner}?kind=fact&contains=c{n}")
    for shown in (user, memory_id, f"c{n} {text}", text):
        assert _shows(listing, shown), shown
    detail = _read(world.reader, f"{owner}/memories/{segment(memory_id)}")
    for shown in (memory_id, f"c{n} {text}", text, thread, f"x{n} {text}", f"{thread}/{episode}"):
        assert _shows(detail, shown), shown
    assert 'id="history"' in world.reader.get(f"{owner}/memories/{segment(memory_id)}").text
    query = f"c{n} " + "".join(c for c in text if unicodedata.category(c) != "Cc")
    search = _read(world.reader, f"{owner}/search?" + _query(q=query, thread_id=thread))
    assert _shows(search, query)
    assert search.fields["q"] == query  # the search box holds what was asked, exactly
    for path in (f"/threads/{segment(thread)}", f"/agents/{segment(agent)}"):
        assert _shows(_read(world.reader, path), text)
    assert _shows(_read(world.reader, f"/threads/{segment(thread)}/memories/{segment(f's{n}{text}')}"), text)
    missing = _read(world.reader, f"{owner}/memories/{segment('nope' + text)}", status=404)
    assert any("nope" in part and REVEALED_BIDI.search(part) for part in missing.isolated)  # the id, as repr

    # a form field holds the exact text, so saving it unchanged writes nothing
    editable = f"e{n}"  # an id the memory tools address
    world.put(user, editable, f"c{n} {text}", tags=[text, "plain"])
    form = _read(world.writer, f"{owner}/memories/{editable}")
    assert form.fields["content"] == f"c{n} {text}"
    before = Inspector(world.store).show(editable, user_id=user)
    posted = {  # what a browser posts: a textarea's line breaks as CRLF, an input's without any
        name: re.sub("\r\n?|\n", "\r\n", value) if name == "content" else re.sub("[\r\n]", "", value)
        for name, value in form.fields.items()
        if name in ("content", "category", "tags", "priority")
    }
    saved = world.writer.post(f"{owner}/memories/{editable}/edit", data=posted, headers={TOKEN_HEADER: TOKEN})
    assert saved.status_code == 303, saved.text[-800:]
    assert Inspector(world.store).show(editable, user_id=user) == before


def _query(**params: str) -> str:
    from urllib.parse import urlencode

    return urlencode(params)


def test_an_id_with_a_lone_surrogate_is_shown_escaped_and_opens_its_page() -> None:
    store = InMemoryStore()  # a record refuses one in its text; a key in memory holds it
    store.put(("memories", "user", "u"), "m\ud800", MemoryRecord(content="half").to_value())
    client = TestClient(inspector_app(Inspector(store), token=TOKEN))
    listing = client.get("/users/u")
    assert listing.status_code == 200
    (href,) = [(h, text) for h, text in Page(listing.text).links if "/memories/" in h]
    assert href == ("/users/u/memories/m%ED%A0%80", "m\\ud800")
    detail = client.get(href[0])
    assert detail.status_code == 200
    assert "<bdi>m\\ud800</bdi>" in detail.text
    assert "<bdi>half</bdi>" in detail.text


# -- query parameters ---------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=8),
    st.sampled_from(["", "0", "1", "-0", "+1", " 1", "1_0", "\u0663", "１", "0x10", "1e3", str(MAX_OFFSET)]),
)


@SETTINGS
@given(name=st.sampled_from(["offset", "limit"]), value=NUMBERS)
def test_an_offset_or_limit_the_page_cannot_take_is_a_400_that_says_why(
    world: World, name: str, value: str
) -> None:
    answer = world.reader.get("/users/someone?" + _query(**{name: value}))
    most = MAX_OFFSET if name == "offset" else MAX_PAGE
    least = 0 if name == "offset" else 1
    takes = value == "" or (value.isascii() and value.isdigit() and least <= int(value) <= most)
    assert answer.status_code == (200 if takes else 400), (value, answer.text[-600:])
    if not takes:
        (message,) = [part for part in Page(answer.text).isolated if part.startswith(f"{name} ")]
        assert f"from {least} to {most}" in message or "control character" in message, message


@SETTINGS
@given(
    name=st.sampled_from(["kind", "category", "contains", "compartment", "q", "thread_id", "other"]),
    value=st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
    where=st.sampled_from(["/users/someone", "/threads/t1", "/users/someone/search", "/agents/a1"]),
)
def test_any_query_parameter_is_answered_never_a_500(world: World, name: str, value: str, where: str) -> None:
    answer = world.reader.get(f"{where}?" + _query(**{name: value}))
    assert answer.status_code in (200, 400), (name, value, answer.text[-600:])
    page = Page(answer.text)
    assert not page.problems
    if answer.status_code == 400:
        assert any(name in part for part in page.isolated), page.isolated


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("offset=1&offset=2", "offset is given 2 times"),
        ("offset=" + "9" * 40, "offset must be a whole number from 0 to"),
        ("offset=-1", "offset must be a whole number from 0 to"),
        ("offset=1.5", "offset must be a whole number from 0 to"),
        ("limit=0", "limit must be a whole number from 1 to 500"),
        ("kind=facts", "kind is one of fact, preference"),
        ("contains=a%00b", "contains holds the control character U+0000"),
        ("category=" + "x" * 1001, "category is longer than 1000 characters"),
    ],
)
def test_a_bad_query_parameter_is_a_400_naming_it(world: World, query: str, says: str) -> None:
    answer = world.reader.get(f"/users/someone?{query}")
    assert answer.status_code == 400
    assert any(says in part for part in Page(answer.text).isolated), answer.text[-600:]


def test_the_largest_offset_is_answered_by_every_store(world: World) -> None:
    world.put("deep", "m1", "one memory")
    assert world.reader.get(f"/users/deep?offset={MAX_OFFSET}").status_code == 200
    assert world.reader.get(f"/users/deep?offset={MAX_OFFSET}&contains=one").status_code == 200
    assert world.reader.get("/users/deep/search?q=x&thread_id=a%0Ab").status_code == 400


# -- the one escaping path: core.html, and the terminal -----------------------------------------


def test_every_invisible_character_is_found_by_the_quick_scan() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(char := chr(code)) in {"Cc", "Cf", "Cs", "Zl", "Zp"}
        and char not in "\t\n\u200c\u200d"
        and html.reveal(char) == char
    ]
    assert missed == []
    assert html.reveal("\t\n\u200d\u200c a") == "\t\n\u200d\u200c a"


@given(st.text(st.sampled_from([*BIDI, "a", "\u05d0", "<", "&", '"', "\n"]), max_size=30))
def test_no_bidi_control_survives_the_html_path(text: str) -> None:
    for out in (
        html.escape(text),
        html.isolated(text),
        html.cell(text),
        html.table(["h"], [[text]], caption=text),
    ):
        assert not html.BIDI_CONTROLS & set(out)
    assert "<" not in html.escape(text)
    assert '"' not in html.escape(text)
    assert std_html.unescape(html.escape(text)) == html.reveal(text)
    plain = html.isolated_plain(text)
    assert plain[0] == "\u2068"
    assert plain[-1] == "\u2069"
    assert not html.BIDI_CONTROLS & set(plain[1:-1])
    assert html.table(["h"], [[text]]).count("<bdi>") == 2


@SETTINGS
@given(text=STORED)
def test_the_terminal_shows_no_bidi_control(world: World, text: str) -> None:
    n = next(world.nonce)
    user = f"tty{n}\u202e"
    memory_id = f"m{n}{text}"
    world.put(user, memory_id, text, tags=[text], source=text, category="travel")
    inspector = Inspector(world.store)
    detail = inspector.show(memory_id, user_id=user)
    outputs = [
        terminal.catalog_text(inspector.catalog(), store=text),
        terminal.page_text(inspector.page(user_id=user, contains=text[:3] or None), width=80),
        terminal.detail_text(detail, width=80),
        terminal.history_text(detail, width=80),
        terminal.recall_text(inspector.explain(f"x {text}", user_id=user), width=80),
    ]
    for out in outputs:
        assert not html.BIDI_CONTROLS & set(out), out
    assert f"id           {terminal.visible(memory_id)}" in outputs[2].splitlines()
