"""The web page of the memory inspector (``langmem-plugin inspect STORE``).

Server-rendered pages over an :class:`~langmem_plugin.surfaces.inspector.Inspector`, with no
script and no asset from elsewhere:

- ``/``: the catalog, the users, threads and agents the store has memory for;
- ``/users/{user_id}``, ``/threads/{thread_id}``, ``/agents/{agent}``: a compartment's memories,
  paged (``offset``, ``limit``), filtered (``kind``, ``category``, ``contains``) and sorted by a
  column (``sort``, ``-`` in front for the largest first); a thread's page shows everything of the
  thread (its session memory, and the exchanges and memories its users' memory holds from it),
  or one compartment (``compartment=session`` or ``results``);
- ``/users/{user_id}/search?q=...`` (and ``/threads/...``): a search as recall sees it, every
  candidate with its signals and outcome, and the fenced prompt the model would get;
- ``/users/{user_id}/memories/{memory_id}`` (and ``/threads/...``): one memory, its history as a
  timeline, the exchanges it came from, the memory that replaced it or those it replaced, and the
  item as stored; with a writable inspector, forms to edit or forget it;
- ``/namespaces?prefix=a/b``: the store as namespaces, and the items under one, raw.

``format=json`` on a list (or ``/namespaces``) exports the whole view as JSON, the items as
stored; on a memory's page it answers the item as stored.

Stored text is hostile input. Every value a template writes goes through one path
(:mod:`langmem_plugin.core.html`, :mod:`.views`): HTML-escaped, its bidi controls and other
invisible characters shown as escapes (``\\u202e``), and stored text put in a ``<bdi>`` so it
cannot reorder the page around it (form fields alone hold the exact text, so a save changes only
what was changed); JSON answers carry those characters as ``\\u`` escapes. Every response carries
a ``Content-Security-Policy`` that runs no script, loads nothing from elsewhere and cannot be
framed (:mod:`.guard`).

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
import secrets
import threading
import time
import webbrowser
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

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
    segment,
)
from langmem_plugin.services.inspect import MAX_PAGE, SCAN, SORTS, THREAD, MemoryPage
from langmem_plugin.services.layout import Compartment
from langmem_plugin.surfaces.inspector import Inspector

_FIX = "Fix: pip install 'langmem-plugin[inspect]' (in a checkout: pip install -e '.[inspect]')"

try:
    import jinja2  # noqa: F401  (checked here: the templates need it)
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - the inspect extra is part of dev
    raise MissingDependencyError(
        f"the inspector's web page needs starlette, jinja2 and uvicorn (the inspect extra). {_FIX}"
    ) from exc

from langmem_plugin.inspector.guard import CONTENT_SECURITY_POLICY, Guard, host_name  # noqa: E402
from langmem_plugin.inspector.views import browse_url, environment, json_text, read_labels  # noqa: E402

__all__ = ["CONTENT_SECURITY_POLICY", "MAX_OFFSET", "TOKEN_HEADER", "inspector_app", "segment", "serve"]

logger = logging.getLogger(__name__)

#: The header a script sends the token in (a form sends the hidden field ``token``).
TOKEN_HEADER = "X-Inspector-Token"
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_LIMIT = 50
_KINDS = tuple(kind.value for kind in MemoryKind)
_FORMATS = ("html", "json")
#: The list's columns: the sort key, the heading, what it means (the heading's tooltip).
_COLUMNS = (
    ("id", "id", "the memory's id (the whole id on hover and on its page)"),
    ("content", "content", "what the memory says; its tags below it"),
    ("kind", "kind", "fact, preference, episode (an exchange), document, ..."),
    ("category", "category", "a path such as preferences/food"),
    ("priority", "priority", "1 to 10; recall ranks by it besides relevance and recency"),
    ("created", "created", "when it was first saved (UTC; the full time on hover)"),
    ("updated", "updated", "when it last changed (UTC; the full time on hover)"),
    ("current", "status", "current, or superseded (the link opens the memory that replaced it)"),
    (
        "reads",
        "reads",
        "how often a memory tool (search_memory, get_memory) returned it; recall's injections "
        "count only when recall was configured to count them (RecallConfig(track_access=True))",
    ),
)
_LARGEST_FIRST = frozenset({"priority", "created", "updated", "current", "reads"})

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


def _format(request: Request) -> str:
    """What the ``format`` parameter asks for: ``"html"`` (the default) or ``"json"``."""
    wanted = query_text(request, "format") or "html"
    if wanted not in _FORMATS:
        raise Refused(400, f"format is 'html' or 'json'; got {shown(wanted)}")
    return wanted


def _json(document: Any, download: str | None = None) -> Response:
    """``document`` as JSON (:func:`~.views.json_text`); ``download``: saved as that file name."""
    headers = {"content-disposition": f'attachment; filename="{download}"'} if download else None
    return Response(json_text(document) + "\n", media_type="application/json", headers=headers)


def _next_sort(column: str, sort: str) -> str:
    """The ``sort`` a column's heading asks for: the other direction when the list is sorted by
    it, else the column's natural one (the largest first for numbers, times and status)."""
    if sort == column:
        return "-" + column
    if sort == "-" + column:
        return column
    return ("-" if column in _LARGEST_FIRST else "") + column


def _links(owner: _Owner, page: MemoryPage) -> Callable[[tuple[str, ...], str | None], str | None]:
    """The address of a memory of ``page`` (by its namespace and id): in the compartments a memory
    page exists for (a user's, a thread's session memory); ``None`` elsewhere."""
    places: dict[tuple[str, ...], _Owner] = {}
    if page.compartment in (Compartment.USER.value, Compartment.SESSION.value, THREAD):
        places[tuple(page.namespace)] = owner
    for user, namespace in page.users.items():
        places[tuple(namespace)] = _Owner("users", user)

    def link(namespace: tuple[str, ...], memory_id: str | None) -> str | None:
        place = places.get(tuple(namespace))
        return None if place is None or memory_id is None else place.memory_url(memory_id)

    return link


class _Pages:
    """The handlers: each reads through the inspector in a worker thread and renders a template."""

    def __init__(self, inspector: Inspector, token: str) -> None:
        self.inspector = inspector
        self.token = token
        self.env = environment()

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
        view = {"users": "user", "threads": THREAD, "agents": "knowledge"}[owner.kind]
        room = query_text(request, "compartment")
        if owner.kind == "threads" and room:
            if room not in (Compartment.SESSION.value, Compartment.RESULTS.value):
                raise Refused(
                    400,
                    "a thread's compartment is 'session' or 'results' (none: everything of the thread), "
                    f"got {shown(room)}",
                )
            view = room
        filters = {name: query_text(request, name) for name in ("kind", "category", "contains")}
        if filters["kind"] and filters["kind"] not in _KINDS:
            raise Refused(400, f"kind is one of {', '.join(_KINDS)}; got {shown(filters['kind'])}")
        sort = query_text(request, "sort")
        if sort and sort.removeprefix("-") not in SORTS:
            raise Refused(
                400, f"sort is one of {', '.join(SORTS)} (a '-' in front: largest first); got {shown(sort)}"
            )
        chosen = {k: v or None for k, v in filters.items()}
        if _format(request) == "json":
            document = await run_in_threadpool(
                lambda: self.inspector.export(view, **owner.ids, **chosen, sort=sort or None)
            )
            return _json(document, f"{owner.label}-memories.json")
        offset = query_whole(request, "offset", 0, 0, MAX_OFFSET)
        limit = query_whole(request, "limit", _DEFAULT_LIMIT, 1, MAX_PAGE)
        page = await run_in_threadpool(
            lambda: self.inspector.page(
                view, **owner.ids, offset=offset, limit=limit, **chosen, sort=sort or None
            )
        )
        kept = {"compartment": room, **filters, "sort": sort}
        if limit != _DEFAULT_LIMIT:
            kept["limit"] = str(limit)

        def at(start: int = 0, **changed: str) -> str:
            query = {k: v for k, v in {**kept, **changed}.items() if v}
            query |= {"offset": str(start)} if start else {}
            return owner.url + ("?" + urlencode(query) if query else "")

        return self.render(
            "memories.html",
            owner=owner,
            page=page,
            filters=filters,
            limit=limit,
            shown=room,
            sort=sort,
            columns=[(*column, at(sort=_next_sort(column[0], sort))) for column in _COLUMNS],
            link=_links(owner, page),
            export=at(format="json"),
            scan=SCAN,
            previous=at(max(0, offset - limit)) if offset else None,
            following=at(offset + limit) if page.more else None,
        )

    async def namespaces(self, request: Request) -> Response:
        prefix = read_labels("prefix", query_text(request, "prefix"))
        if _format(request) == "json":
            if not prefix:
                raise Refused(400, "format=json exports one namespace: open it first (its prefix=...)")
            document = await run_in_threadpool(lambda: self.inspector.export_namespace(prefix))
            return _json(document, "namespace.json")
        offset = query_whole(request, "offset", 0, 0, MAX_OFFSET)
        limit = query_whole(request, "limit", _DEFAULT_LIMIT, 1, MAX_PAGE)
        page = await run_in_threadpool(lambda: self.inspector.namespaces(prefix, offset=offset, limit=limit))
        here = browse_url(prefix)
        joiner = "&" if prefix else "?"
        kept = "" if limit == _DEFAULT_LIMIT else f"{joiner}limit={limit}"

        def at(start: int) -> str:
            return here + kept + (f"{'&' if kept or prefix else '?'}offset={start}" if start else "")

        return self.render(
            "namespaces.html",
            page=page,
            crumbs=[(label, browse_url(prefix[: n + 1])) for n, label in enumerate(prefix)],
            export=f"{here}&format=json" if prefix else None,
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
        wanted = _format(request)
        detail = await run_in_threadpool(lambda: self.inspector.show(memory_id, **owner.ids))
        if wanted == "json":
            return _json(detail.stored)
        return self.render(
            "detail.html",
            owner=owner,
            detail=detail,
            token=self.token,
            stored=json_text(detail.stored),
            raw=owner.memory_url(memory_id) + "?format=json",
        )

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
    routes = [
        Route("/", pages.answer(pages.catalog), name="catalog"),
        Route("/namespaces", pages.answer(pages.namespaces)),
    ]
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
    hosts = None if allowed_hosts is None else frozenset(host_name(h) for h in allowed_hosts)
    app = Starlette(routes=routes, middleware=[Middleware(Guard, hosts=hosts)])
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
