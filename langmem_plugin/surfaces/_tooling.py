"""What every store-backed tool of ours shares: one factory for the sync and async paths.

A tool is an args schema, a builder of store steps (from the run's scope and the
model's arguments) and an answer formatter. :func:`store_tool` turns them into a
``StructuredTool`` whose function and coroutine differ only in the driver
(:func:`~langmem_plugin.services.store_steps.execute` or ``aexecute``). The scope and
store come from the run (``resolve``), never from the model. Errors the model can
fix come back as an error ``ToolMessage`` that says what to do; invalid arguments
too; configuration errors propagate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from langgraph.store.base import BaseStore
from pydantic import BaseModel, ValidationError

from langmem_plugin.core.scope import Scope
from langmem_plugin.services.layout import aroom_held, room_held
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute

__all__ = ["StepsBuilder", "store_tool", "validation_message"]

#: Store steps for one call: from the run's scope and the call's (validated) arguments.
StepsBuilder = Callable[[Scope, dict[str, Any]], StoreSteps[Any]]


def validation_message(exc: ValidationError) -> str:
    """What a tool answers to arguments its schema refuses: each problem, and to call again."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    )
    return f"Error: invalid arguments: {problems}. Fix the arguments and call the tool again."


def store_tool(
    *,
    name: str,
    description: str,
    schema: type[BaseModel],
    resolve: Callable[[RunnableConfig], tuple[Scope, BaseStore]],
    build: StepsBuilder,
    answer: Callable[[Any], str],
    fixable: tuple[type[Exception], ...],
    room: Callable[[Scope, dict[str, Any]], tuple[str, ...] | None] | None = None,
) -> StructuredTool:
    """A tool over store steps.

    Args:
        name: the tool's name.
        description: what the model reads.
        schema: the arguments' schema.
        resolve: the run's scope and store, from its config.
        build: the call's store steps.
        answer: the text the model gets from the steps' result.
        fixable: errors the model can fix: answered as an error message, nothing written.
        room: the namespace a call adds an item to when its item limit must hold (``None``: no
            limit): count-then-put runs under that namespace's lock, so concurrent calls in this
            process never overshoot it.
    """
    fields = set(schema.model_fields)

    def prepare(config: RunnableConfig, kwargs: dict[str, Any]) -> tuple[BaseStore, StoreSteps[Any], Any]:
        scope, store = resolve(config)
        args = {k: v for k, v in kwargs.items() if k in fields}
        held = room(scope, args) if room is not None else None
        return store, build(scope, args), held

    def run(config: RunnableConfig, **kwargs: Any) -> str:
        try:
            store, steps, held = prepare(config, kwargs)
            with room_held(store, held) if held else contextlib.nullcontext():
                return answer(execute(store, steps))
        except fixable as exc:
            raise ToolException(f"Error: {exc}") from exc

    async def arun(config: RunnableConfig, **kwargs: Any) -> str:
        try:
            store, steps, held = prepare(config, kwargs)
            async with aroom_held(store, held) if held else contextlib.nullcontext():
                return answer(await aexecute(store, steps))
        except fixable as exc:
            raise ToolException(f"Error: {exc}") from exc

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=description,
        args_schema=schema,
        infer_schema=False,
        handle_tool_error=True,
        handle_validation_error=validation_message,
    )
