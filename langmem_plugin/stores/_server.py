"""The store of a LangGraph server (``langgraph dev``, LangGraph Platform), through its Store API.

Under ``langgraph dev`` and on LangGraph Platform, ``Memory()`` keeps its memories in the server's
store (see :mod:`langmem_plugin.core.store_source`), which lives in the server process. A
:class:`LangGraphServerStore` is a ``BaseStore`` over that server's HTTP Store API
(``langgraph_sdk``, a dependency of LangGraph): ``langmem-plugin inspect langgraph+http://...``
and ``langmem-plugin memories ... --store langgraph+http://...`` read the very items Studio's store
view shows, and ``Memory(LangGraphServerStore(url))`` works with them from outside the server.

>>> store = LangGraphServerStore("http://127.0.0.1:2024")
>>> store.url
'http://127.0.0.1:2024'
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from datetime import datetime
from typing import Any

import httpx
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langmem_plugin.core.steps import arun_steps, run_steps
from langmem_plugin.errors import ConfigurationError, StoreError

__all__ = ["LangGraphServerStore"]

#: One SDK call: the store client's method name, its positional and its keyword arguments.
_Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _when(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _item(raw: Mapping[str, Any]) -> Item:
    return Item(
        value=dict(raw["value"]),
        key=str(raw["key"]),
        namespace=tuple(raw["namespace"]),
        created_at=_when(raw["created_at"]),
        updated_at=_when(raw["updated_at"]),
    )


def _search_item(raw: Mapping[str, Any]) -> SearchItem:
    item = _item(raw)
    score = raw.get("score")
    return SearchItem(
        item.namespace,
        item.key,
        item.value,
        item.created_at,
        item.updated_at,
        None if score is None else float(score),
    )


def _conditions(conditions: tuple[MatchCondition, ...] | None) -> tuple[list[str] | None, list[str] | None]:
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    for condition in conditions or ():
        path = [str(part) for part in condition.path]
        if condition.match_type == "prefix":
            prefix = path
        else:
            suffix = path
    return prefix, suffix


class LangGraphServerStore(BaseStore):
    """A ``BaseStore`` over a LangGraph server's Store API (see the module docstring).

    Args:
        url: the server, e.g. ``"http://127.0.0.1:2024"`` (``langgraph dev``'s default).
        api_key: the deployment's key (LangGraph Platform); ``None``: the SDK reads
            ``LANGGRAPH_API_KEY`` / ``LANGSMITH_API_KEY`` from the environment.
        timeout: seconds per request.

    Raises:
        ConfigurationError: ``url`` is not an http(s) URL.
        StoreError: (from its operations) the server cannot be reached or answers an error.
    """

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"LangGraphServerStore takes the server's http(s) URL, got {url!r}. "
                "Fix: pass e.g. 'http://127.0.0.1:2024' (what `langgraph dev` prints)."
            )
        self.url = url.rstrip("/")
        self._api_key = api_key
        self._timeout = timeout
        self._sync: Any = None
        self._async: Any = None

    def __repr__(self) -> str:
        return f"LangGraphServerStore({self.url!r})"

    def _client(self) -> Any:
        if self._sync is None:
            from langgraph_sdk import get_sync_client

            self._sync = get_sync_client(url=self.url, api_key=self._api_key, timeout=self._timeout)
        return self._sync.store

    def _aclient(self) -> Any:
        if self._async is None:
            from langgraph_sdk import get_client

            self._async = get_client(url=self.url, api_key=self._api_key, timeout=self._timeout)
        return self._async.store

    def close(self) -> None:
        """Close the sync client's connections (the async client's: :meth:`aclose`)."""
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        """Close the connections of both clients."""
        self.close()
        if self._async is not None:
            await self._async.aclose()
            self._async = None

    def __enter__(self) -> LangGraphServerStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _failed(self, exc: Exception) -> StoreError:
        return StoreError(
            f"the LangGraph server at {self.url} did not answer its Store API ({type(exc).__name__}: {exc}). "
            "Fix: start it (`langgraph dev` in the app's folder) or check the URL and the API key."
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each op as one Store API request, in order."""
        client = self._client()
        return run_steps(self._calls(ops), lambda call: getattr(client, call[0])(*call[1], **call[2]))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch`, from async code."""
        client = self._aclient()

        async def send(call: _Call) -> Any:
            return await getattr(client, call[0])(*call[1], **call[2])

        return await arun_steps(self._calls(ops), send)

    def _calls(self, ops: Iterable[Op]) -> Generator[_Call, Any, list[Result]]:
        """The SDK call of each op (sent by the driver), and the op's result from its answer."""
        out: list[Result] = []
        for op in ops:
            name, args, kwargs, convert = self._request(op)
            try:
                raw = yield (name, args, kwargs)
            except httpx.HTTPStatusError as exc:
                if isinstance(op, GetOp) and exc.response.status_code == 404:
                    out.append(None)
                    continue
                raise self._failed(exc) from exc
            except httpx.HTTPError as exc:
                raise self._failed(exc) from exc
            out.append(convert(raw))
        return out

    @staticmethod
    def _request(op: Op) -> tuple[str, tuple[Any, ...], dict[str, Any], Any]:
        """The SDK method, its arguments, and how its answer becomes the op's result."""
        kwargs: dict[str, Any]
        if isinstance(op, GetOp):
            return "get_item", (list(op.namespace),), {"key": op.key}, lambda raw: _item(raw) if raw else None
        if isinstance(op, SearchOp):
            kwargs = {"filter": op.filter, "limit": op.limit, "offset": op.offset, "query": op.query}
            return (
                "search_items",
                (list(op.namespace_prefix),),
                kwargs,
                lambda raw: [_search_item(r) for r in raw["items"]],
            )
        if isinstance(op, PutOp):
            if op.value is None:
                return "delete_item", (list(op.namespace),), {"key": op.key}, lambda raw: None
            kwargs = {"key": op.key, "value": op.value, "index": op.index}
            if op.ttl is not None:
                kwargs["ttl"] = int(op.ttl)
            return "put_item", (list(op.namespace),), kwargs, lambda raw: None
        if isinstance(op, ListNamespacesOp):
            prefix, suffix = _conditions(op.match_conditions)
            kwargs = {
                "prefix": prefix,
                "suffix": suffix,
                "max_depth": op.max_depth,
                "limit": op.limit,
                "offset": op.offset,
            }
            return "list_namespaces", (), kwargs, lambda raw: [tuple(ns) for ns in raw["namespaces"]]
        raise ConfigurationError(f"LangGraphServerStore cannot carry out {type(op).__name__}")
