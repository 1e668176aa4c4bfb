"""Who and where a memory belongs to, from the run's config — never from the model.

A :class:`Scope` holds ``user_id``, ``thread_id``, ``agent`` and ``run_id``
(plus any other string values of ``configurable``). It is resolved from a
``RunnableConfig`` (``config["configurable"]``) and/or a LangGraph ``Runtime``
context (a dict, a dataclass or a pydantic model); values in the runtime
context win over ``configurable``. Namespace templates such as
``("memories", "{user_id}")`` or ``("u-{user_id}", "session", "{thread_id}")``
are filled from it.

**Identity is exact.** An id (``user_id``, ``thread_id``, ``agent``, ``run_id``, and any
other value a template places in a label) is a ``str`` used exactly as given: no strip, no
case folding, no Unicode normalisation, no ``str()`` of an int, a UUID or bytes — so two
distinct ids never share a namespace. An id that cannot be a namespace label on every
store is refused with :class:`~langmem_plugin.errors.ScopeError` before anything is read
or written: the empty string, a ``.``, a control character (Unicode category ``Cc``:
NUL, ``\\n``, ``\\t``, DEL, C1) or a lone surrogate. ``None`` (or a missing key) is "not
given"; ``""`` is an error. ``run_id`` also takes the ``uuid.UUID`` LangChain assigns.
See :func:`exact_id`.

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
import re
import string
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from langmem_plugin.errors import ConfigurationError, InvalidNamespaceError, ScopeError, shown

__all__ = [
    "NamespaceTemplate",
    "Scope",
    "current_runtime",
    "exact_id",
    "exact_ids",
    "fill_namespace",
    "resolve_scope",
    "template_keys",
    "templates_may_meet",
]

NamespaceTemplate = tuple[str, ...]

_KNOWN = ("user_id", "thread_id", "agent", "run_id")
# Other spellings users pass for the same thing.
_ALIASES = {"assistant_id": "agent", "agent_name": "agent", "session_id": "thread_id"}
# Ids kept in ``extra`` but checked like the known ones (the team of shared team memory).
_EXACT_EXTRA = ("team_id",)


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


# Ids a store cannot take as a namespace label: a '.' (LangGraph's separator), a control
# character (Unicode category Cc: U+0000-U+001F, U+007F-U+009F) or a lone surrogate.
_NOT_IN_ID = re.compile("[.\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_ID_KEYS = frozenset(_KNOWN) | frozenset(_ALIASES) | frozenset(_EXACT_EXTRA)
# What a node name cannot keep as it is in a derived agent name (percent-encoded there).
_NOT_IN_PATH = re.compile("[%./\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def exact_id(key: str, value: Any, *, uuid_ok: bool = False) -> str:
    """The id ``value`` exactly as given, or :class:`ScopeError` when it cannot be one.

    An id is a ``str`` (a subclass gives its plain text) used as it is: no strip, no case
    folding, no Unicode normalisation. Refused: any other type (``1``, ``1.0``, ``True``,
    a ``UUID``, ``b"x"``: ``str()`` of them would merge ``1`` and ``"1"``), the empty string,
    a ``.``, a control character (category ``Cc``) and a lone surrogate — what some store
    cannot take in a namespace label. ``uuid_ok``: also take a ``uuid.UUID`` (the run id
    LangChain assigns), as its canonical text.

    >>> exact_id("user_id", " Sam ")
    ' Sam '
    >>> exact_id("user_id", 7)
    Traceback (most recent call last):
    ...
    langmem_plugin.errors.ScopeError: user_id must be a str, got int 7; ids are used exactly as given, ...

    Raises:
        ScopeError: ``value`` is not a ``str``, or cannot be a namespace label.
    """
    if isinstance(value, str):
        text = str.__str__(value)  # the plain text, whatever a subclass's __str__/__format__ say
    elif uuid_ok and isinstance(value, uuid.UUID):
        text = str(value)
    else:
        raise ScopeError(
            key,
            f"{key} must be a str, got {type(value).__name__} {shown(value)}; ids are used exactly as "
            "given, so a non-string is not turned into one (1 and '1' would name one tenant). "
            f"Fix: pass str(your_id) yourself if that is the {key} you mean.",
        )
    if not text:
        raise ScopeError(
            key,
            f"{key} is the empty string, which names no one. Fix: pass the real id, or leave {key!r} "
            "out (or None) when there is none.",
        )
    bad = _NOT_IN_ID.search(text)
    if bad is not None:
        char = bad.group()
        if char == ".":
            what = "a '.', which no store accepts in a namespace label"
        else:
            kind = "a lone surrogate" if ord(char) >= 0xD800 else "a control character"
            what = (
                f"the character U+{ord(char):04X} ({kind}), which cannot be a namespace label on every store"
            )
        raise ScopeError(
            key,
            f"{key} {shown(text)} holds {what} (at index {bad.start()}). Ids are used exactly as given and "
            "never cleaned up. Fix: map your ids to ones without '.', control characters or lone "
            "surrogates yourself, one-to-one (e.g. hashlib.sha256(raw.encode()).hexdigest()).",
        )
    return text


def exact_ids(key: str, values: Iterable[Any]) -> list[str]:
    """Each of ``values`` through :func:`exact_id`; a bare ``str`` (not a list of ids) is refused.

    Raises:
        ScopeError: ``values`` is a single string, or one of them is not a valid id.
    """
    if isinstance(values, str | bytes):
        raise ScopeError(
            key,
            f"expected a list of {key}s, got the single {type(values).__name__} {shown(values)} "
            f"(which would be read one character at a time). Fix: pass [{shown(values)}].",
        )
    return [exact_id(key, v) for v in values]


@dataclass(frozen=True)
class Scope:
    """The identities a memory operation runs under.

    Attributes:
        user_id: whose long-term memory.
        thread_id: which conversation (session memory, plan, tool results).
        agent: which agent runs: its knowledge, and the rules of
            :class:`~langmem_plugin.services.agents.AgentRules` when it is a sub-agent.
        run_id: which run (run memory).
        extra: any other string values found in the config or context; ``team_id`` (whose
            team memory the run reads: :mod:`langmem_plugin.services.team`) is checked as an id.
        subagent: the run is a sub-agent's (a subgraph, an agent run inside another agent's
            tool, or surfaces made by ``memory.agent(name)``), to which the compartments' rules
            across agents apply; the top of the graph is never one.
        root_agent: the agent the top of the graph runs as (its ``agent``), which a sub-agent
            reads the shared knowledge of.
    """

    user_id: str | None = None
    thread_id: str | None = None
    agent: str | None = None
    run_id: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    subagent: bool = field(default=False, repr=False)
    root_agent: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Every id given goes through :func:`exact_id`: a scope never holds one that is not exact."""
        for key in (*_KNOWN, "root_agent"):
            value = getattr(self, key)
            if value is not None:
                text = exact_id(key, value, uuid_ok=key == "run_id")
                if text is not value:
                    object.__setattr__(self, key, text)
        if self.subagent and self.agent is None:
            raise ScopeError(
                "agent",
                "a sub-agent's scope needs its agent name. Fix: name it (memory.agent('researcher'), "
                "create_agent(..., name='researcher')).",
            )

    @classmethod
    def from_config(cls, config: RunnableConfig | Mapping[str, Any] | None, *, context: Any = None) -> Scope:
        """Resolve from ``config["configurable"]`` (and ``config["run_id"]``), then ``context``.

        Raises:
            ScopeError: an id (``user_id``, ``thread_id``, ``agent``, ``run_id``, ``team_id`` or an
                alias of one) that :func:`exact_id` refuses. ``None`` is "not given"; other string values are
                kept as given for templates (:func:`fill_namespace` checks those it uses).
        """
        values: dict[str, str] = {}
        config = config or {}
        configurable = config.get("configurable") or {}
        sources: list[Mapping[str, Any]] = [configurable, _context_items(context)]
        for source in sources:
            for raw_key, raw_value in source.items():
                if not isinstance(raw_key, str) or raw_key.startswith("__") or raw_value is None:
                    continue
                key = _ALIASES.get(raw_key, raw_key)
                if raw_key in _ALIASES and source.get(key) is not None:
                    continue  # the canonical spelling in the same source wins
                if key in _KNOWN or key in _EXACT_EXTRA:
                    values[key] = exact_id(key, raw_value, uuid_ok=key == "run_id")
                elif isinstance(raw_value, str):
                    values[key] = str.__str__(raw_value)
        run_id = config.get("run_id")
        if "run_id" not in values and run_id is not None:
            values["run_id"] = exact_id("run_id", run_id, uuid_ok=True)
        user_id, thread_id, agent, run_id = (values.pop(k, None) for k in _KNOWN)
        return cls(user_id, thread_id, agent, run_id, extra=values)

    @classmethod
    def from_runtime(cls, runtime: Any, config: RunnableConfig | Mapping[str, Any] | None = None) -> Scope:
        """Resolve from a LangGraph ``Runtime`` (or ``ToolRuntime``): its context, then its config.

        The run id and thread id of the runtime's ``execution_info`` fill in what the config lacks.
        """
        if config is None:
            config = getattr(runtime, "config", None)
        scope = cls.from_config(config, context=getattr(runtime, "context", None))
        info = getattr(runtime, "execution_info", None)
        run_id, thread_id = scope.run_id, scope.thread_id
        info_run_id, info_thread_id = getattr(info, "run_id", None), getattr(info, "thread_id", None)
        if run_id is None and info_run_id is not None:
            run_id = exact_id("run_id", info_run_id, uuid_ok=True)
        if thread_id is None and info_thread_id is not None:
            thread_id = exact_id("thread_id", info_thread_id)
        if (run_id, thread_id) != (scope.run_id, scope.thread_id):
            scope = dataclasses.replace(scope, run_id=run_id, thread_id=thread_id)
        return scope

    def as_subagent(self, agent: str) -> Scope:
        """This scope for the sub-agent ``agent`` run under it (``memory.agent(name)``'s surfaces).

        Raises:
            ScopeError: ``agent`` is not an exact id (:func:`exact_id`).
        """
        name = exact_id("agent", agent)
        root = self.root_agent if self.subagent else self.agent
        return dataclasses.replace(self, agent=name, subagent=True, root_agent=root)

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

    Raises:
        ConfigurationError: a placeholder with a format spec or conversion, or a label with
            more than one placeholder (two ids in one label could fill it alike).
    """
    _one_placeholder_per_label(template)
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


def _one_placeholder_per_label(template: NamespaceTemplate) -> None:
    for label in template:
        names = [name for _, name, _, _ in string.Formatter().parse(label) if name is not None]
        if len(names) > 1:
            raise ConfigurationError(
                f"namespace template label {label!r} holds {len(names)} placeholders; two ids in one label "
                "can fill it alike (user 'a-b' with thread 'c', and user 'a' with thread 'b-c', both give "
                "'u-a-b-c'), so distinct ids could share a namespace. Fix: give each placeholder its own "
                "label, e.g. ('u-{user_id}', '{thread_id}')."
            )


def _label_parts(label: str) -> tuple[str, str | None]:
    """The label's text before its placeholder and after it (``None``: it has no placeholder)."""
    before: list[str] = []
    after: list[str] | None = None
    for literal, name, _, _ in string.Formatter().parse(label):
        (before if after is None else after).append(literal)
        if name is not None:
            after = []
    return "".join(before), None if after is None else "".join(after)


def _labels_may_meet(one: str, two: str) -> bool:
    (pre_a, post_a), (pre_b, post_b) = _label_parts(one), _label_parts(two)
    if post_a is None and post_b is None:  # two fixed labels
        return pre_a == pre_b
    if post_a is None or post_b is None:  # a fixed label against "pre{id}post", the id non-empty
        text, pre, post = (pre_a, pre_b, post_b) if post_a is None else (pre_b, pre_a, post_a)
        assert post is not None
        return len(text) > len(pre) + len(post) and text.startswith(pre) and text.endswith(post)
    return (pre_a.startswith(pre_b) or pre_b.startswith(pre_a)) and (
        post_a.endswith(post_b) or post_b.endswith(post_a)
    )


def templates_may_meet(one: NamespaceTemplate, two: NamespaceTemplate) -> bool:
    """Whether some ids fill ``one`` and ``two`` alike, or one inside the other (a prefix search reaches it).

    >>> templates_may_meet(("m", "user", "{user_id}"), ("m", "session", "{thread_id}"))
    False
    >>> templates_may_meet(("m", "u-{user_id}"), ("m", "{thread_id}"))  # thread 'u-1' is user '1'
    True
    """
    return all(_labels_may_meet(a, b) for a, b in zip(one, two, strict=False))


def fill_namespace(template: NamespaceTemplate, scope: Scope) -> tuple[str, ...]:
    """Fill each label of ``template`` with the scope's values, each checked by :func:`exact_id`.

    Raises:
        ScopeError: the scope lacks a value the template needs, or holds one that cannot be
            an id (an ``extra`` value with a ``.``, say).
        InvalidNamespaceError: the template itself gives an empty label, a ``.``, or the root
            ``"langgraph"``.
    """
    values: dict[str, str] = {}
    for key in template_keys(template):
        value = scope.get(key)
        if value is None:
            raise ScopeError(
                key,
                f"the namespace template {tuple(template)!r} needs {key!r}, which the run's config does "
                f'not carry (as a str). Fix: pass config={{"configurable": {{"{key}": ...}}}} '
                "(or set it in the graph's runtime context).",
            )
        values[key] = exact_id(key, value)
    labels = tuple(label.format(**values) for label in template)
    for label in labels:
        if not label or "." in label:
            raise InvalidNamespaceError(
                f"namespace {labels!r} from template {tuple(template)!r} has the label {label!r}; "
                "labels must be non-empty and contain no '.'. Fix: change the template."
            )
    if labels and labels[0] == "langgraph":
        raise InvalidNamespaceError(
            f"namespace {labels!r} from template {tuple(template)!r} starts with 'langgraph', which "
            "LangGraph reserves. Fix: start the template with a fixed label such as 'memories'."
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
        metadata: a callback's run metadata: its values fill ids the config lacks
            (LangGraph copies ``configurable`` there for callbacks); ids there obey the same rule.

    Raises:
        ScopeError: an id in the config, the runtime context or the metadata that
            :func:`exact_id` refuses.

    >>> resolve_scope({"configurable": {"user_id": "u1"}}, metadata={"thread_id": "t1"})
    Scope(user_id='u1', thread_id='t1', agent=None, run_id=None, extra={})
    """
    if config is None:
        config = _current_config()
    if runtime is None:
        runtime = current_runtime()
    if metadata:  # ids of any type (checked as ids), other values only when text
        configurable = {
            k: v for k, v in metadata.items() if isinstance(v, str) or (k in _ID_KEYS and v is not None)
        }
        configurable.update((config or {}).get("configurable") or {})
        config = {**(config or {}), "configurable": configurable}
    scope = Scope.from_runtime(runtime, config) if runtime is not None else Scope.from_config(config)
    return _as_run_agent(scope, config, metadata)


def _subgraph_path(namespace: str) -> tuple[str, ...]:
    """The node names of the subgraphs a checkpoint namespace runs in (``""``, ``"node:id"``: none),
    percent-encoded where a name holds what an id cannot (``"Mw.before_model"``: ``"Mw%2Ebefore_model"``;
    one-to-one, so two nodes never become one agent)."""
    return tuple(
        _NOT_IN_PATH.sub(lambda m: f"%{ord(m.group()):02X}", part.split(":", 1)[0])
        for part in namespace.split("|")[:-1]
        if part
    )


def _as_run_agent(
    scope: Scope, config: RunnableConfig | Mapping[str, Any] | None, metadata: Mapping[str, Any] | None
) -> Scope:
    """``scope`` with the agent the run says it is (module :mod:`langmem_plugin.services.agents`).

    At the top of the graph the agent is the config's or context's ``agent``. Inside a subgraph —
    a compiled graph as a node, an agent invoked in a tool — the run is a sub-agent: its name is
    the nearest ``create_agent(name=...)`` (``lc_agent_name``), else the path of the subgraph's
    node names (``"team/writer"``); the ``agent`` the parent's config carries names the root,
    not it.
    """
    places = [(config or {}).get("metadata") or {}, metadata or {}, (config or {}).get("configurable") or {}]
    namespace = next(
        (
            str(place[key])
            for place in places
            for key in ("langgraph_checkpoint_ns", "checkpoint_ns")
            if isinstance(place.get(key), str) and place.get(key)
        ),
        "",
    )
    named = next((place["lc_agent_name"] for place in places if place.get("lc_agent_name")), None)
    path = _subgraph_path(namespace)
    if not path:
        return scope
    agent = exact_id("agent", named) if named is not None else "/".join(path)
    return dataclasses.replace(scope, agent=agent, subagent=True, root_agent=scope.agent)
