"""What every store-backed tool of ours shares: one factory for the sync and async paths.

A tool is an args schema, a builder of store steps (from the run's scope and the
model's arguments) and an answer formatter. :func:`store_tool` turns them into a
``StructuredTool`` whose function and coroutine differ only in the driver
(:func:`~langmem_plugin.services.store_steps.execute` or ``aexecute``). The scope and
store come from the run (``resolve``), never from the model. Errors the model can
fix come back as an error ``ToolMessage`` that says what to do; invalid arguments
too — an argument the tool does not take among them (the answer names it and the
arguments the tool takes; nothing is done); configuration errors propagate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from langchain_core.tools.base import ArgsSchema
from langgraph.store.base import BaseStore
from pydantic import BaseModel, ConfigDict, ValidationError

from langmem_plugin.core.scope import Scope
from langmem_plugin.services.layout import aroom_held, room_held
from langmem_plugin.services.store_steps import StoreSteps, aexecute, execute

__all__ = [
    "StepsBuilder",
    "plain_schema",
    "sent_arguments",
    "store_tool",
    "strict_schema",
    "validation_message",
]

#: Store steps for one call: from the run's scope and the call's (validated) arguments.
StepsBuilder = Callable[[Scope, dict[str, Any]], StoreSteps[Any]]


def validation_message(exc: ValidationError, tool: str | None = None, takes: Sequence[str] = ()) -> str:
    """What a tool answers to arguments its schema refuses: each problem, and to call again.

    An argument the tool does not take is named, with the arguments it takes (``takes``).
    """
    errors = exc.errors(include_url=False)
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and e["loc"]]
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
        for e in errors
        if e["type"] != "extra_forbidden"
    ]
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        its = f"{tool} takes " if tool else "the tool takes "
        arguments = f"{its}{', '.join(takes)}" if takes else f"{its}no arguments"
        problems.insert(0, f"unknown argument(s) {listed}: {arguments}")
    return (
        f"Error: invalid arguments: {'; '.join(problems)}. Nothing was done. "
        "Fix the arguments and call the tool again."
    )


def strict_schema(schema: type[BaseModel]) -> type[BaseModel]:
    """``schema`` refusing arguments it does not declare (pydantic ignores them by default, so a
    misnamed or invented argument would be dropped in silence and the call do something else)."""
    if schema.model_config.get("extra") == "forbid":
        return schema
    config = ConfigDict(**{**schema.model_config, "extra": "forbid"})
    return type(schema.__name__, (schema,), {"model_config": config, "__doc__": schema.__doc__})


def _plain(schema: dict[str, Any]) -> None:
    """What costs the model tokens and tells it nothing, taken out of an args schema: an optional
    argument's ``anyOf: [T, null]`` becomes ``T`` and its ``default: null`` goes (an argument left
    out says the same), and so does ``additionalProperties: false`` (an argument the tool does not
    take is refused by the strict schema, with a message naming the ones it takes)."""
    schema.pop("additionalProperties", None)
    for field in schema.get("properties", {}).values():
        alternatives = field.get("anyOf")
        if isinstance(alternatives, list) and len(alternatives) == 2 and {"type": "null"} in alternatives:
            del field["anyOf"]
            field.update(next(a for a in alternatives if a != {"type": "null"}))
        if "default" in field and field["default"] is None:
            del field["default"]


def plain_schema(schema: type[BaseModel]) -> type[BaseModel]:
    """``schema`` shown to the model plainly (see :func:`_plain`); it validates as before, so a
    ``null`` the model sends for an optional argument is still taken as leaving it out."""
    config = ConfigDict(**{**schema.model_config, "json_schema_extra": _plain})
    return type(schema.__name__, (schema,), {"model_config": config, "__doc__": schema.__doc__})


def sent_arguments(messages: Any, call_id: str) -> dict[str, Any] | None:
    """The arguments of tool call ``call_id`` as the model sent them (the newest model message
    that made it), for a tool whose runtime is injected and whose schema therefore cannot be
    strict; ``None`` when no message made it."""
    if not call_id or not isinstance(messages, list):
        return None
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call.get("id") == call_id:
                args = call.get("args")
                return args if isinstance(args, dict) else None
    return None


class _StrictTool(StructuredTool):
    """A ``StructuredTool`` that refuses arguments to a tool that takes none (LangChain skips the
    schema of a tool without fields and drops whatever the call passed), and whose schema for the
    model is its args schema as :func:`plain_schema` shows it (LangChain would rebuild it from the
    fields, without the schema's config)."""

    @property
    def tool_call_schema(self) -> ArgsSchema:
        schema = self.args_schema
        return schema if schema is not None else super().tool_call_schema

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        schema = self.args_schema
        takes_none = isinstance(schema, type) and issubclass(schema, BaseModel) and not schema.model_fields
        if takes_none and isinstance(tool_input, dict) and tool_input:
            schema.model_validate(tool_input)  # type: ignore[union-attr]  # extra_forbidden: an error answer
        return super()._to_args_and_kwargs(tool_input, tool_call_id)


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
    artifact: Callable[[Any], Any] | None = None,
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
        artifact: the ``ToolMessage.artifact`` of a call, from the steps' result (``None``: no
            artifact). The memory tools say there which memories a call changed.
    """
    fields = set(schema.model_fields)
    schema = plain_schema(strict_schema(schema))

    def prepare(config: RunnableConfig, kwargs: dict[str, Any]) -> tuple[BaseStore, StoreSteps[Any], Any]:
        scope, store = resolve(config)
        args = {k: v for k, v in kwargs.items() if k in fields}
        held = room(scope, args) if room is not None else None
        return store, build(scope, args), held

    def respond(result: Any) -> Any:
        return (answer(result), artifact(result)) if artifact is not None else answer(result)

    def run(config: RunnableConfig, **kwargs: Any) -> Any:
        try:
            store, steps, held = prepare(config, kwargs)
            with room_held(store, held) if held else contextlib.nullcontext():
                return respond(execute(store, steps))
        except fixable as exc:
            raise ToolException(f"Error: {exc}") from exc

    async def arun(config: RunnableConfig, **kwargs: Any) -> Any:
        try:
            store, steps, held = prepare(config, kwargs)
            async with aroom_held(store, held) if held else contextlib.nullcontext():
                return respond(await aexecute(store, steps))
        except fixable as exc:
            raise ToolException(f"Error: {exc}") from exc

    return _StrictTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=description,
        args_schema=schema,
        infer_schema=False,
        handle_tool_error=True,
        handle_validation_error=lambda exc: validation_message(exc, name, list(schema.model_fields)),
        response_format="content_and_artifact" if artifact is not None else "content",
    )
