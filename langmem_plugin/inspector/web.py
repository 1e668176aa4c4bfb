"""The web page of the memory inspector (``langmem-plugin inspect STORE``).

Server-rendered pages over an :class:`~langmem_plugin.surfaces.inspector.Inspector`, with no
script and no asset from elsewhere:

- ``/``: the catalog, the users, threads and agents the store has memory for;
- ``/users/{user_id}``, ``/threads/{thread_id}``, ``/agents/{agent}``: a compartment's memories,
  paged (``offset``, ``limit``) and filtered (``kind``, ``category``, ``contains``);
- ``/users/{user_id}/search?q=...`` (and ``/threads/...``): a search as recall sees it, every
  candidate with its signals and outcome, and the fenced prompt the model would get;
- ``/users/{user_id}/memories/{memory_id}`` (and ``/threads/...``): one memory, its history as a
  timeline and the exchanges it came from; with a writable inspector, forms to edit or forget it.

Stored text is hostile input. Every value a template writes goes through one path
(:mod:`langmem_plugin.core.html`): HTML-escaped, its bidi controls and other invisible characters
shown as escapes (``\\u202e``), and stored text put in a ``<bdi>`` so it cannot reorder the page
around it (form fields alone hold the exact text, so a save changes only what was changed). Every
response carries a ``Content-Security-Policy`` that runs no script, loads nothing from elsewhere and
cannot be framed.

Every id has its own address: an id is one path segment, percent-encoded whole (``/`` is ``%2F``),
and the app routes on the path as it was sent, so ``a/b`` never opens ``b``; an id made only of
dots (which a browser would resolve as ``.``/``..`` before sending) takes one more ``~`` in front
(``requests.segment``). A query parameter the page cannot take (an ``offset`` that is not a whole
number from 0 to :data:`MAX_OFFSET`, a repeated one, a control character) is a 400 that says why.
A change (``POST``) needs the app's token, in the form's hidden ``token`` field or the
``X-Inspector-Token`` header, compared in constant time, and is refused when the browser says it
comes from another site; :func:`serve` answers only on loopback unless told otherwise, and then
only to the loopback host names (no DNS rebinding).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
import webbrowser
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

from langmem_plugin.core import html
from langmem_plugin.core.record import MemoryKind
from langmem_plugin.core.scope import exact_id
from langmem_plugin.errors import (
    ConfigurationError,
    LangMemPluginError,
    MemoryNotFoundError,
    MissingDependencyError,
    ReadOnlyError,
    shown,
)
from langmem_plugin.inspector.hosts import is_loopback
from langmem_plugin.inspector.requests import (
    MAX_OFFSET,
    Refused,
    changeable,
    form_changes,
    id_in_path,
    query_text,
    query_whole,
    read_form,
    route_path,
    segment,
)
from langmem_plugin.services.inspect import MAX_PAGE
from langmem_plugin.services.layout import Compartment
from langmem_plugin.surfaces.inspector import Inspector

_FIX = "Fix: pip install 'langmem-plugin[inspect]' (in a checkout: pip install -e '.[inspect]')"

try:
    import jinja2
    from markupsafe import Markup, escape
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route
    from starlette.types import ASGIApp, Message, Receive, Send
    from starlette.types import Scope as ASGIScope
except ImportError as exc:  # pragma: no cover - the inspect extra is part of dev
    raise MissingDependencyError(
        f"the inspector's web page needs starlette, jinja2 and uvicorn (the inspect extra). {_FIX}"
    ) from exc

__all__ = ["CONTENT_SECURITY_POLICY", "MAX_OFFSET", "TOKEN_HEADER", "inspector_app", "segment", "serve"]

logger = logging.getLogger(__name__)

#: No script, no plugin, nothing from elsewhere; inline styles, forms to this page only; never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
#: The header a script sends the token in (a form sends the hidden field ``token``).
TOKEN_HEADER = "X-Inspector-Token"
_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a form post Origin: null
    (b"cache-control", b"no-store"),
)
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_LIST_CHARS = 600
_DEFAULT_LIMIT = 50
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone one cannot be sent as UTF-8
_KINDS = tuple(kind.value for kind in MemoryKind)

OwnerKind = Literal["users", "threads", "agents"]


@dataclass(frozen=True)
class _Owner:
    """Whose memory a page shows: a user, a thread or an agent, by the id in the URL."""

    kind: OwnerKind
    id: str

    @property
    def label(self) -> str:
        return {"users": "user", "threads": "thread", "agents": "agent"}[self.kind]

    @property
    def ids(self) -> dict[str, str]:
        """The inspector's keyword for the id: ``user_id``, ``thread_id`` or ``agent``."""
        return {{"users": "user_id", "threads": "thread_id", "agents": "agent"}[self.kind]: self.id}

    @property
    def url(self) -> str:
        return f"/{self.kind}/{segment(self.id)}"

    @property
    def searchable(self) -> bool:
        """Whether recall can be explained for it (a user's or a thread's memory, not knowledge)."""
        return self.kind != "agents"

    def memory_url(self, memory_id: str) -> str:
        return f"{self.url}/memories/{segment(memory_id)}"


_SLOTS: tuple[tuple[OwnerKind, str], ...] = (
    ("users", "user_id"),
    ("threads", "thread_id"),
    ("agents", "agent"),
)


def _owner(request: Request) -> _Owner:
    """The owner named by the URL; an id the scope refuses (a ``.``, a control character) is a 400."""
    for kind, key in _SLOTS:
        if key in request.path_params:
            return _Owner(kind, exact_id(key, id_in_path(request, key)))
    raise Refused(404, "no such page")  # pragma: no cover - every route names an owner


def _host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8765`` is ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class _Guard:
    """Every response gets the security headers; a request for a host not served, or whose path
    is not UTF-8, is refused; the path is routed as it was sent (``requests.route_path``)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None = None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in _HEADERS}
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in names]
                message = {**message, "headers": [*kept, *_HEADERS]}
            await send(message)

        refused = None
        if self.hosts is not None:
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if _host_name(host) not in self.hosts:
                refused = "this inspector answers only to its loopback address (127.0.0.1 or localhost)"
        raw = scope.get("raw_path")
        if refused is None and isinstance(raw, bytes) and not scope.get("root_path"):
            try:  # route on the path as sent: an id's %2F is part of the id
                scope = {**scope, "path": route_path(raw)}
            except UnicodeDecodeError:
                refused = "the address is not UTF-8 percent-encoded: open the links the pages give"
        if refused is not None:
            refusal = Response(refused, status_code=400, media_type="text/plain")
            await refusal(scope, receive, send_guarded)
            return
        await self.app(scope, receive, send_guarded)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("langmem_plugin.inspector", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Every {{ value }} is escaped and revealed (core.html); stored text is also isolated: |bdi
    # in an element, |plain in the title. |exact keeps a form field's value as it is, so a save
    # does not write the escapes back (a form field's text cannot reorder the page around it).
    env.finalize = lambda value: value if isinstance(value, Markup) else Markup(html.escape(value))
    env.filters["bdi"] = lambda value: Markup(html.isolated(value))
    env.filters["plain"] = lambda value: Markup(html.isolated_plain(value))
    env.filters["exact"] = lambda value: escape(_SURROGATE.sub("\ufffd", str(value)))
    env.filters["labels"] = lambda parts: Markup("/".join(html.isolated(part) for part in parts))
    env.filters["q"] = lambda value: segment(str(value))
    env.filters["num"] = lambda value: "" if value is None else f"{value:.3f}"
    env.filters["cut"] = lambda text, limit=_LIST_CHARS: (
        text if len(text) <= limit else text[: limit - 1] + "…"
    )
    return env


class _Pages:
    """The handlers: each reads through the inspector in a worker thread and renders a template."""

    def __init__(self, inspector: Inspector, token: str) -> None:
        self.inspector = inspector
        self.token = token
        self.env = _environment()

    # -- rendering ----------------------------------------------------------------------------

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        page = self.env.get_template(template).render(
            writable=self.inspector.writable, store=type(self.inspector.store).__name__, **context
        )
        return HTMLResponse(page, status_code=status)

    def failure(self, status: int, message: str) -> HTMLResponse:
        titles = {400: "Bad request", 403: "Refused", 404: "Not found", 413: "Too large", 415: "Not a form"}
        return self.render(
            "error.html", status, status_code=status, title=titles.get(status, "Error"), message=message
        )

    def answer(
        self, handler: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` with the package's errors as pages: 404 for a memory not found, 403 for a
        read-only inspector, 400 for a bad value, 500 (logged) for anything else."""

        async def answered(request: Request) -> Response:
            try:
                return await handler(request)
            except Refused as refusal:
                return self.failure(refusal.status, refusal.message)
            except MemoryNotFoundError as exc:
                return self.failure(404, str(exc))
            except ReadOnlyError as exc:
                return self.failure(403, str(exc))
            except LangMemPluginError as exc:
                if isinstance(exc, ValueError):
                    return self.failure(400, str(exc))
                logger.exception("the inspector failed on %s", request.url.path)
                return self.failure(500, str(exc))
            except Exception:
                logger.exception("the inspector failed on %s", request.url.path)
                return self.failure(500, "the inspector failed; the server's log has the details")

        return answered

    # -- reading ------------------------------------------------------------------------------

    async def catalog(self, request: Request) -> Response:
        catalog = await run_in_threadpool(self.inspector.catalog)
        return self.render("catalog.html", catalog=catalog)

    async def memories(self, request: Request) -> Response:
        owner = _owner(request)
        compartment = {
            "users": Compartment.USER,
            "threads": Compartment.SESSION,
            "agents": Compartment.KNOWLEDGE,
        }[owner.kind]
        room = query_text(request, "compartment")
        if owner.kind == "threads" and room:
            if room not in (Compartment.SESSION.value, Compartment.RESULTS.value):
                raise Refused(400, f"a thread's compartment is 'session' or 'results', got {shown(room)}")
            compartment = Compartment(room)
        filters = {name: query_text(request, name) for name in ("kind", "category", "contains")}
        if filters["kind"] and filters["kind"] not in _KINDS:
            raise Refused(400, f"kind is one of {', '.join(_KINDS)}; got {shown(filters['kind'])}")
        offset = query_whole(request, "offset", 0, 0, MAX_OFFSET)
        limit = query_whole(request, "limit", _DEFAULT_LIMIT, 1, MAX_PAGE)
        page = await run_in_threadpool(
            lambda: self.inspector.page(
                compartment,
                **owner.ids,
                offset=offset,
                limit=limit,
                **{k: v or None for k, v in filters.items()},
            )
        )
        kept = {k: v for k, v in {**filters, "limit": str(limit), "compartment": room}.items() if v}
        if limit == _DEFAULT_LIMIT:
            kept.pop("limit")

        def at(start: int) -> str:
            query = {**kept, **({"offset": str(start)} if start else {})}
            return owner.url + ("?" + urlencode(query) if query else "")

        return self.render(
            "memories.html",
            owner=owner,
            page=page,
            filters=filters,
            limit=limit,
            shown=room,
            details=compartment in (Compartment.USER, Compartment.SESSION),
            previous=at(max(0, offset - limit)) if offset else None,
            following=at(offset + limit) if page.more else None,
        )

    async def search(self, request: Request) -> Response:
        owner = _owner(request)
        if not owner.searchable:
            raise Refused(404, "recall is explained for a user's or a thread's memory")
        query = query_text(request, "q")
        thread_id = query_text(request, "thread_id") if owner.kind == "users" else ""
        ids: dict[str, str] = {
            **owner.ids,
            **({"thread_id": exact_id("thread_id", thread_id)} if thread_id else {}),
        }
        recall = None
        elapsed = None
        if query.strip():
            started = time.perf_counter()
            recall = await run_in_threadpool(lambda: self.inspector.explain(query, **ids))
            elapsed = round((time.perf_counter() - started) * 1000)
        return self.render(
            "search.html", owner=owner, query=query, thread_id=thread_id, recall=recall, elapsed_ms=elapsed
        )

    async def detail(self, request: Request) -> Response:
        owner = _owner(request)
        memory_id = id_in_path(request, "memory_id")
        detail = await run_in_threadpool(lambda: self.inspector.show(memory_id, **owner.ids))
        return self.render("detail.html", owner=owner, detail=detail, token=self.token)

    # -- changing -----------------------------------------------------------------------------

    async def _authorised_form(self, request: Request) -> dict[str, str]:
        """The form of a change, once the request proved it may make one."""
        fetched = request.headers.get("sec-fetch-site")
        origin = request.headers.get("origin")
        if (fetched is not None and fetched not in ("same-origin", "none")) or (
            origin is not None and urlsplit(origin).netloc != request.headers.get("host")
        ):
            raise Refused(403, "refused: the change comes from another site")
        form = await read_form(request)
        supplied = request.headers.get(TOKEN_HEADER) or form.get("token") or ""
        if not secrets.compare_digest(supplied.encode(), self.token.encode()):
            raise Refused(
                403,
                "refused: a change needs the inspector's token (the form's, or the X-Inspector-Token header)",
            )
        if not self.inspector.writable:
            raise Refused(
                403,
                "refused: this inspector is read-only. Fix: restart it with --allow-writes "
                "(langmem-plugin inspect STORE --allow-writes)",
            )
        return form

    async def edit(self, request: Request) -> Response:
        owner = _owner(request)
        memory_id = changeable(id_in_path(request, "memory_id"))
        form = await self._authorised_form(request)
        current = (await run_in_threadpool(lambda: self.inspector.show(memory_id, **owner.ids))).row
        changes = form_changes(
            form,
            content=current.content,
            category=current.category,
            tags=current.tags,
            priority=current.priority,
        )
        if changes:
            await run_in_threadpool(lambda: self.inspector.edit(memory_id, **owner.ids, **changes))
        return RedirectResponse(owner.memory_url(memory_id), status_code=303)

    async def forget(self, request: Request) -> Response:
        owner = _owner(request)
        memory_id = changeable(id_in_path(request, "memory_id"))
        await self._authorised_form(request)
        await run_in_threadpool(lambda: self.inspector.forget(memory_id, **owner.ids))
        return RedirectResponse(owner.url, status_code=303)


def inspector_app(
    inspector: Inspector, *, token: str | None = None, allowed_hosts: Iterable[str] | None = None
) -> Starlette:
    """The inspector's web pages over ``inspector`` (see the module's docstring).

    Args:
        inspector: what the pages read, and change when it is writable.
        token: what a change must carry (a form's hidden ``token`` field or the ``X-Inspector-Token``
            header); default: a fresh random one, in ``app.state.token``.
        allowed_hosts: the host names the app answers to (``None``: any; :func:`serve` gives the
            loopback names, so a page of another site cannot reach it by DNS rebinding).
    """
    if not isinstance(inspector, Inspector):
        raise ConfigurationError(f"inspector_app needs an Inspector, got {type(inspector).__name__}")
    if token is not None and (not isinstance(token, str) or len(token) < 8 or not token.isascii()):
        raise ConfigurationError(
            "token must be a str of at least 8 ASCII characters, or None for a random one"
        )
    token = token or secrets.token_urlsafe(32)
    pages = _Pages(inspector, token)
    routes = [Route("/", pages.answer(pages.catalog), name="catalog")]
    for kind, key in _SLOTS:
        base = f"/{kind}/{{{key}}}"
        routes.append(Route(base, pages.answer(pages.memories)))
        if kind == "agents":
            continue
        routes += [
            Route(f"{base}/search", pages.answer(pages.search)),
            Route(f"{base}/memories/{{memory_id}}", pages.answer(pages.detail)),
            Route(f"{base}/memories/{{memory_id}}/edit", pages.answer(pages.edit), methods=["POST"]),
            Route(f"{base}/memories/{{memory_id}}/forget", pages.answer(pages.forget), methods=["POST"]),
        ]
    hosts = None if allowed_hosts is None else frozenset(_host_name(h) for h in allowed_hosts)
    app = Starlette(routes=routes, middleware=[Middleware(_Guard, hosts=hosts)])
    app.state.token = token
    return app


def _open_when_started(server: Any, url: str) -> None:
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline and not server.should_exit:
        time.sleep(0.05)
    if server.started:
        webbrowser.open(url)


def serve(
    inspector: Inspector,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    open_browser: bool = False,
    log_level: str = "warning",
    allow_remote: bool = False,
) -> None:
    """Serve :func:`inspector_app` with uvicorn until interrupted, printing its address.

    Args:
        inspector: what the pages show (and change, when it is writable).
        host: the address to listen on; loopback only unless ``allow_remote``.
        port: the port (``0``: any free one).
        token: what a change must carry; default: a fresh random one (printed when writable).
        open_browser: open the page in the default browser once it answers.
        log_level: uvicorn's log level.
        allow_remote: listen on a non-loopback address: everyone who reaches it reads every memory.

    Raises:
        ConfigurationError: a non-loopback ``host`` without ``allow_remote``, or a bad port.
        MissingDependencyError: the ``inspect`` extra is not installed.
    """
    if not isinstance(host, str) or not host:
        raise ConfigurationError(f"host must be an address such as '127.0.0.1', got {host!r}")
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise ConfigurationError(
            f"the inspector listens on this machine only (127.0.0.1); {host!r} would show every memory to "
            "whoever reaches it. Fix: host='127.0.0.1' (reach it remotely through an SSH tunnel: "
            "ssh -L 8765:127.0.0.1:8765 HOST), or allow_remote=True behind your own access control"
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigurationError(f"port must be a whole number from 0 to 65535, got {port!r}")
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - the inspect extra is part of dev
        raise MissingDependencyError(
            f"the inspector's web page needs uvicorn (the inspect extra). {_FIX}"
        ) from exc
    secret = token or secrets.token_urlsafe(32)
    hosts = {*_LOOPBACK_NAMES, host.strip("[]").lower()} if loopback else None
    app = inspector_app(inspector, token=secret, allowed_hosts=hosts)
    config = uvicorn.Config(
        app,
        host=host.strip("[]"),
        port=port,
        log_level=log_level,
        ws="none",
        lifespan="off",
        server_header=False,
    )
    server = uvicorn.Server(config)
    shown_host = f"[{host.strip('[]')}]" if ":" in host else host
    url = f"http://{shown_host}:{port}/"
    mode = "writable" if inspector.writable else "read-only"
    print(f"memory inspector ({mode}) at {url} (Ctrl+C stops it)", flush=True)
    if inspector.writable and token is None:
        print(f"a change from a script sends the header {TOKEN_HEADER}: {secret}", flush=True)
    if open_browser:
        threading.Thread(target=_open_when_started, args=(server, url), daemon=True).start()
    server.run()
