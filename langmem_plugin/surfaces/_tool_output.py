"""Tool calls whose output cannot become text: an error message for the model, not a crash.

:func:`contain_tool_call` (and :func:`acontain_tool_call`) wrap the tool calls of the graph's
``ToolNode`` (:func:`~langmem_plugin.surfaces.nodes.add_memory_agent`) and of ``create_agent``
(the middleware's ``wrap_tool_call``): a tool output nested too deeply for LangChain to write as
text (a 10,000-deep dict raises ``RecursionError`` while it is turned into a ``ToolMessage``)
becomes an error ``ToolMessage`` the model reads, and the run goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

__all__ = ["acontain_tool_call", "contain_tool_call"]


def _unwritable(request: ToolCallRequest, exc: RecursionError) -> ToolMessage:
    call = request.tool_call
    name = str(call.get("name", ""))
    return ToolMessage(
        content=f"Error: the output of the tool {name!r} nests too deeply to be written as text ({exc}). "
        "Ask the tool for a smaller or flatter part of it.",
        name=name,
        tool_call_id=str(call.get("id") or ""),
        status="error",
    )


def contain_tool_call(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
) -> ToolMessage | Command[Any]:
    """Run a tool call (a ``ToolNode`` ``wrap_tool_call``): an output too deep to write as text is an
    error message, not the end of the run."""
    try:
        return execute(request)
    except RecursionError as exc:
        return _unwritable(request, exc)


async def acontain_tool_call(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
) -> ToolMessage | Command[Any]:
    """Async :func:`contain_tool_call` (a ``ToolNode`` ``awrap_tool_call``)."""
    try:
        return await execute(request)
    except RecursionError as exc:
        return _unwritable(request, exc)
