"""What every answer of the inspector's web page carries, and which requests reach it at all.

:class:`Guard` (an ASGI middleware) adds the security headers to every response (a
``Content-Security-Policy`` that runs no script, loads nothing from elsewhere and cannot be
framed), refuses a request for a host it does not serve (no DNS rebinding) or whose path is not
UTF-8, and routes on the path as it was sent (``requests.route_path``), so an id's ``%2F`` stays
part of the id.
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as ASGIScope

from langmem_plugin.inspector.requests import route_path

__all__ = ["CONTENT_SECURITY_POLICY", "Guard", "host_name"]

#: No script, no plugin, nothing from elsewhere; inline styles, forms to this page only; never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a form post Origin: null
    (b"cache-control", b"no-store"),
)


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8765`` is ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class Guard:
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
            if host_name(host) not in self.hosts:
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
