"""Who and where a memory belongs to, from the run's config — never from the model.

A :class:`Scope` holds ``user_id``, ``thread_id``, ``agent`` and ``run_id``
(plus any other string values of ``configurable``). It is resolved from a
``RunnableConfig`` (``config["configurable"]``) and/or a LangGraph ``Runtime``
context (a dict, a dataclass or a pydantic model); values in the runtime
context win over ``configurable``. Namespace templates such as
``("memories", "{user_id}")`` or ``("u-{user_id}", "session", "{thread_id}")``
are filled from it.

>>> scope = Scope.from_config({"configurable": {"user_id": "u1", "thread_id": "t9"}})
>>> scope.namespace(("memories", "u-{user_id}", "{thread_id}"))
('memories', 'u-u1', 't9')
>>> Scope(user_id="u1").namespace(("memories", "{thread_id}"))
Traceback (most recent call last):
...
langmem_plugin.errors.ScopeError: the namespace template ('memories', '{thread_id}') needs 'thread_id', ...
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from langmem_plugin.errors import ConfigurationError, InvalidNamespaceError, ScopeError

__all__ = [
    "NamespaceTemplate",
    "Scope",
    "current_runtime",
    "fill_namespace",
    "resolve_scope",
    "template_keys",
]

NamespaceTemplate = tuple[str, ...]

_KNOWN = ("user_id", "thread_id", "agent", "run_id")
# Other spellings users pass for the same thing.
_ALIASES = {"assistant_id": "agent", "agent_name": "agent", "session_id": "thread_id"}


def _context_items(context: Any) -> dict[str, Any]:
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return dict(context)
    if dataclasses.is_dataclass(context) and not isinstance(context, type):
        return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    dump = getattr(context, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if isinstance(dumped, dict):
            return dumped
    return (
        {k: v for k, v in vars(context).items() if not k.startswith("_")}
        if hasattr(context, "__dict__")
        else {}
    )


def _clean(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str | int):
        text = str(value).strip()
        return text or None
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return None


@dataclass(frozen=True)
class Scope:
    """The identities a memory operation runs under.

    Attributes:
        user_id: whose long-term memory.
        thread_id: which conversation (session memory, plan, tool results).
        agent: which agent's knowledge.
        run_id: which run (run memory).
        extra: any other string values found in the config or context.
    """

    user_id: str | None = None
    thread_id: str | None = None
    agent: str | None = None
    run_id: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: RunnableConfig | Mapping[str, Any] | None, *, context: Any = None) -> Scope:
        """Resolve from ``config["configurable"]`` (and ``config["run_id"]``), then ``context``."""
        values: dict[str, str] = {}
        config = config or {}
        configurable = config.get("configurable") or {}
        sources: list[Mapping[str, Any]] = [configurable, _context_items(context)]
        for source in sources:
            for raw_key, raw_value in source.items():
                if not isinstance(raw_key, str) or raw_key.startswith("__"):
                    continue
                value = _clean(raw_value)
                if value is None:
                    continue
                key = _ALIASES.get(raw_key, raw_key)
                if raw_key in _ALIASES and key in source:
                    continue  # the canonical spelling in the same source wins
                values[key] = value
        if "run_id" not in values:
            run_id = _clean(config.get("run_id"))
            if run_id is not None:
                values["run_id"] = run_id
        known = {k: values.pop(k, None) for k in _KNOWN}
        return cls(**known, extra=values)

    @classmethod
    def from_runtime(cls, runtime: Any, config: RunnableConfig | Mapping[str, Any] | None = None) -> Scope:
        """Resolve from a LangGraph ``Runtime`` (or ``ToolRuntime``): its context, then its config.

        The run id and thread id of the runtime's ``execution_info`` fill in what the config lacks.
        """
        if config is None:
            config = getattr(runtime, "config", None)
        scope = cls.from_config(config, context=getattr(runtime, "context", None))
        info = getattr(runtime, "execution_info", None)
        run_id = scope.run_id or _clean(getattr(info, "run_id", None))
        thread_id = scope.thread_id or _clean(getattr(info, "thread_id", None))
        if (run_id, thread_id) != (scope.run_id, scope.thread_id):
            scope = dataclasses.replace(scope, run_id=run_id, thread_id=thread_id)
        return scope

    def get(self, key: str) -> str | None:
        """The value of ``key`` (``user_id``, ..., or a key of ``extra``), or ``None``."""
        if key in _KNOWN:
            value: str | None = getattr(self, key)
            return value
        return self.extra.get(_ALIASES.get(key, key))

    def require(self, key: str, *, purpose: str = "this operation") -> str:
        """The value of ``key``, or a :class:`ScopeError` that says how to pass it."""
        value = self.get(key)
        if value is None:
            raise ScopeError(
                key,
                f"{purpose} needs {key!r}, which the run's config does not carry. Fix: pass it as "
                f'config={{"configurable": {{"{key}": ...}}}} (or in the graph\'s runtime context).',
            )
        return value

    def namespace(self, template: NamespaceTemplate) -> tuple[str, ...]:
        """Fill ``template`` from this scope (see :func:`fill_namespace`)."""
        return fill_namespace(template, self)


def template_keys(template: NamespaceTemplate) -> list[str]:
    """The ``{placeholders}`` a namespace template uses, in order.

    >>> template_keys(("memories", "u-{user_id}", "{thread_id}"))
    ['user_id', 'thread_id']
    """
    keys: list[str] = []
    for label in template:
        for _, name, spec, conversion in string.Formatter().parse(label):
            if name is None:
                continue
            if not name.isidentifier() or spec or conversion:
                raise ConfigurationError(
                    f"namespace template label {label!r} has the placeholder {{{name}}}; placeholders are "
                    "plain names such as {user_id}, with no format spec or conversion."
                )
            if name not in keys:
                keys.append(name)
    return keys


def fill_namespace(template: NamespaceTemplate, scope: Scope) -> tuple[str, ...]:
    """Fill each label of ``template`` with the scope's values.

    Raises:
        ScopeError: the scope lacks a value the template needs.
        InvalidNamespaceError: a filled label is empty or contains ``.``.
    """
    values: dict[str, str] = {}
    for key in template_keys(template):
        value = scope.get(key)
        if value is None:
            raise ScopeError(
                key,
                f"the namespace template {tuple(template)!r} needs {key!r}, which the run's config does "
                f'not carry. Fix: pass config={{"configurable": {{"{key}": ...}}}} '
                "(or set it in the graph's runtime context).",
            )
        values[key] = value
    labels = tuple(label.format(**values) for label in template)
    for label in labels:
        if not label or "." in label:
            raise InvalidNamespaceError(
                f"namespace {labels!r} from template {tuple(template)!r} has the label {label!r}; "
                "labels must be non-empty and contain no '.'. Fix: use ids without dots."
            )
    return labels


def _current_config() -> RunnableConfig | None:
    from langgraph.config import get_config

    try:
        return get_config()
    except RuntimeError:  # outside a runnable context
        return None


def current_runtime() -> Any:
    """The LangGraph ``Runtime`` of the current graph run, or ``None`` outside a graph."""
    from langgraph.runtime import get_runtime

    try:
        return get_runtime()
    except RuntimeError:  # outside a runnable context
        return None


def resolve_scope(
    config: RunnableConfig | Mapping[str, Any] | None = None,
    *,
    runtime: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> Scope:
    """The scope of the current call: the one place every surface resolves it.

    Args:
        config: the run's config; ``None``: the current LangGraph run's, when there is one.
        runtime: a LangGraph ``Runtime`` (or ``ToolRuntime``) whose context wins over
            ``configurable``; ``None``: the current run's, when there is one.
        metadata: a callback's run metadata: its string values fill ids the config lacks
            (LangGraph copies ``configurable`` there for callbacks).

    >>> resolve_scope({"configurable": {"user_id": "u1"}}, metadata={"thread_id": "t1"})
    Scope(user_id='u1', thread_id='t1', agent=None, run_id=None, extra={})
    """
    if config is None:
        config = _current_config()
    if runtime is None:
        runtime = current_runtime()
    if metadata:
        configurable = {k: v for k, v in metadata.items() if isinstance(v, str)}
        configurable.update((config or {}).get("configurable") or {})
        config = {**(config or {}), "configurable": configurable}
    if runtime is not None:
        return Scope.from_runtime(runtime, config)
    return Scope.from_config(config)
