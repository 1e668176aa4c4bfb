"""Tools that read stored tool results: ``retrieve_result`` and ``query_results``.

A compacted result in the conversation is a citation with an id; these tools
give the rest back. Both find the results of the run's own user and thread only
(``config["configurable"]["user_id"]`` and ``["thread_id"]``, exactly as given): no
argument the model writes names a user, a thread or a namespace, and an id of another
user's result — guessed or seen — answers as an unknown one. A pattern is RE2 syntax,
matched in linear time, and a JSON path is read with loops, both within bounds
(:mod:`~langmem_plugin.services.stored_results.patterns`,
:mod:`~langmem_plugin.services.stored_results.json_text`). An unknown or expired id, a pattern
RE2 cannot take, a bad path or a page past the end comes back as an error message the
model can act on; a missing store or ``thread_id`` raises.

>>> [t.name for t in create_result_tools()]
['retrieve_result', 'query_results']
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.store.base import BaseStore
from pydantic import BaseModel, Field

from langmem_plugin.core.scope import Scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.errors import InvalidFilterError, MemoryNotFoundError
from langmem_plugin.services.context import (
    RESULT_TOOL_NAMES,
    ResultsConfig,
    StoredResult,
    Transform,
    get_result_steps,
    list_results_steps,
    transform_result,
)
from langmem_plugin.services.layout import MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.surfaces._runtime import resolve_scope_and_store
from langmem_plugin.surfaces._tooling import store_tool

__all__ = ["RESULT_TOOL_NAMES", "create_result_tools"]

_FIXABLE = (InvalidFilterError, MemoryNotFoundError)


class RetrieveResultInput(BaseModel):
    id: str = Field(
        description="The result's id, as the conversation or query_results shows it (r + 12 hex)."
    )
    transform: Transform = Field(
        default="full",
        description="full: the whole result, one page at a time; excerpt: `length` characters from `start`; "
        "first_n / last_n: `n` lines (or items of a JSON list); filtered: lines or JSON items matching "
        "`pattern` (a regular expression, RE2 syntax) or the values at a JSON `path`; summary: the key "
        "sentences.",
    )
    page: int = Field(default=1, description="full: the page, from 1.")
    start: int = Field(default=0, description="excerpt: the first character.")
    length: int = Field(default=2000, description="excerpt: how many characters.")
    n: int = Field(default=20, description="first_n / last_n: how many lines or items.")
    pattern: str | None = Field(
        default=None,
        description="filtered: a regular expression in RE2 syntax, case-insensitive, at most 1000 "
        "characters (no backreferences such as \\1, no lookaround such as (?=...)).",
    )
    path: str | None = Field(
        default=None,
        description="filtered: a JSON path such as '$.items[*].title' (keys, [index], [*], .*).",
    )


class QueryResultsInput(BaseModel):
    tool: str | None = Field(default=None, description="Only results of this tool.")
    since: str | None = Field(default=None, description="Only results stored on/after this ISO date or time.")
    text: str | None = Field(default=None, description="Only results whose text or arguments contain this.")
    limit: int = Field(default=10, description="How many to list, 1 to 100.")


@dataclass(frozen=True)
class _Context:
    store: BaseStore | StoreSource | None
    layout: MemoryLayout
    config: ResultsConfig
    model: str | None

    def resolve(self, config: RunnableConfig) -> tuple[Scope, BaseStore]:
        return resolve_scope_and_store(config, self.store, what="the result tools")


def _retrieve(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[str]:
    result: StoredResult = yield from get_result_steps(scope, ctx.layout, a["id"])
    return transform_result(
        result,
        a.get("transform", "full"),
        page=a.get("page", 1),
        start=a.get("start", 0),
        length=a.get("length", 2000),
        n=a.get("n", 20),
        pattern=a.get("pattern"),
        path=a.get("path"),
        page_tokens=ctx.config.page_tokens,
        model=ctx.model,
    )


def _query(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[str]:
    found = yield from list_results_steps(
        scope,
        ctx.layout,
        tool=a.get("tool"),
        since=a.get("since"),
        text=a.get("text"),
        limit=a.get("limit", 10),
    )
    if not found:
        return "No stored results match."
    return json.dumps([r.describe() for r in found], ensure_ascii=False)


_TOOLS: dict[
    str, tuple[type[BaseModel], Callable[[_Context, Scope, dict[str, Any]], StoreSteps[str]], str]
] = {
    "retrieve_result": (
        RetrieveResultInput,
        _retrieve,
        "Read a stored tool result by its id: in full (page by page) or a part of it.",
    ),
    "query_results": (
        QueryResultsInput,
        _query,
        "List the tool results stored in this conversation (id, tool, arguments, size, preview), newest "
        "first; filter by tool, date or text.",
    ),
}


def _make_tool(ctx: _Context, name: str) -> StructuredTool:
    schema, build, description = _TOOLS[name]
    return store_tool(
        name=name,
        description=description,
        schema=schema,
        resolve=ctx.resolve,
        build=lambda scope, args: build(ctx, scope, args),
        answer=str,
        fixable=_FIXABLE,
    )


def create_result_tools(
    *,
    store: BaseStore | StoreSource | None = None,
    layout: MemoryLayout | None = None,
    config: ResultsConfig | None = None,
    model: str | None = None,
) -> list[BaseTool]:
    """``retrieve_result`` and ``query_results`` over the results compartment of the run's thread.

    Args:
        store: the store; ``None`` uses the graph's store at call time.
        layout: where the results compartment lives.
        config: the page size of ``retrieve_result`` (``page_tokens``).
        model: whose tokenizer cuts pages (``None``: o200k_base).
    """
    ctx = _Context(
        store=store, layout=layout or MemoryLayout(), config=config or ResultsConfig(), model=model
    )
    return [_make_tool(ctx, name) for name in RESULT_TOOL_NAMES]
