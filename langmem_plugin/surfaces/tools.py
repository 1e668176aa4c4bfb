"""Memory tools for a chat model: ``model.bind_tools(tools)`` and ``ToolNode(tools)`` as they are.

:func:`create_memory_tools` returns LangChain ``StructuredTool`` objects, each
with a sync function and a coroutine over the same store steps
(:mod:`langmem_plugin.services.operations`). At call time a tool finds

- its **store**: the one passed to the factory, else the graph's (``compile(store=...)``);
- its **namespace**: from the run's scope only (``config["configurable"]`` and the
  runtime context: ``user_id``, ``thread_id``). No argument the model writes names a
  user, a thread or a namespace; ids are looked up only inside the caller's
  own compartments.

Every change a tool makes (save, update, delete, clear) is recorded in the user's
history in the same batch (``source`` ``"tool:<tool>"``; read it with ``memory.history(id)``).

With a team compartment (``MemoryLayout(team=True)``) the tools have ``promote_memory``
(:data:`TEAM_TOOL_NAMES`, in ``"lean"`` and ``"full"``): it copies one of the caller's memories
into the team memory of the run's ``team_id`` (:mod:`langmem_plugin.services.team`).

Errors the model can fix (an unknown id, an empty content, a bad category or
date, a full compartment) come back as an error ``ToolMessage`` that says what
to do; configuration errors (no store, no ``user_id`` in the config) raise.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.store.base import BaseStore, SearchOp
from pydantic import BaseModel, Field, StrictBool, StrictInt, create_model

from langmem_plugin.core.record import MemoryRecord, memory_artifact
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.store_source import StoreSource
from langmem_plugin.core.validity import is_current
from langmem_plugin.errors import (
    CompartmentError,
    ConfigurationError,
    InvalidFilterError,
    InvalidRecordError,
    InvalidValueError,
    MemoryLimitError,
    MemoryNotFoundError,
    shown,
)
from langmem_plugin.services.layout import (
    STORED_COMPARTMENTS,
    Compartment,
    MemoryLayout,
    parse_compartment,
)
from langmem_plugin.services.operations import (
    StoredMemory,
    categories_steps,
    get_steps,
    save_steps,
    search_steps,
    to_stored,
)
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.team import Promoted, promote_steps
from langmem_plugin.services.upkeep import (
    Cleared,
    Forgotten,
    clear_reaching_steps,
    forget_matching_steps,
    forget_steps,
    revise_steps,
)
from langmem_plugin.surfaces._runtime import resolve_scope_and_store
from langmem_plugin.surfaces._tooling import store_tool

__all__ = [
    "DESTRUCTIVE_TOOL_NAMES",
    "LEAN_TOOL_NAMES",
    "MEMORY_TOOL_NAMES",
    "TEAM_TOOL_NAMES",
    "TOOLSETS",
    "create_memory_tools",
    "tool_names",
]

#: Every memory tool, by its default name.
MEMORY_TOOL_NAMES = (
    "save_memory",
    "search_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "list_categories",
    "clear_memory",
    "forget_memories",
)

#: What a chat agent needs to save, search and correct what it knows: the default set.
LEAN_TOOL_NAMES = ("save_memory", "search_memory", "get_memory", "update_memory", "delete_memory")

#: The tools that delete more than the one memory they name: in ``"full"``, never in ``"lean"``.
DESTRUCTIVE_TOOL_NAMES = ("clear_memory", "forget_memories")

#: The tools of a layout with a team compartment (``MemoryLayout(team=True)``), in both sets.
TEAM_TOOL_NAMES = ("promote_memory",)

#: The named sets ``include=`` takes, beside tool names: ``"lean"`` and ``"full"`` (every tool).
TOOLSETS = ("lean", "full")

_FIXABLE = (
    CompartmentError,
    InvalidFilterError,
    InvalidRecordError,
    InvalidValueError,
    MemoryLimitError,
    MemoryNotFoundError,
)


# What the model reads costs tokens on every call: each word below is there because the model
# needs it to call the tool right (`langmem-plugin bench tools` measures them). A field whose name
# says it all has no description.


class SaveMemoryInput(BaseModel):
    content: str = Field(description="One self-contained statement.")
    category: str | None = Field(default=None, description="A path, e.g. 'preferences/food'.")
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None
    priority: StrictInt | None = Field(default=None, description="1 (low) to 10 (high); default 5.")
    compartment: str | None = Field(
        default=None, description="'user' (all conversations) or 'session' (this one)."
    )


class SearchMemoryInput(BaseModel):
    query: str | None = Field(default=None, description="Omit to list the newest.")
    category: str | None = Field(default=None, description="Includes its sub-categories.")
    tags: list[str] | None = Field(default=None, description="Memories with all of them.")
    since: str | None = Field(default=None, description="ISO date: created on or after.")
    until: str | None = Field(default=None, description="ISO date: created on or before.")
    limit: StrictInt = Field(default=5, description="1 to 100.")


class MemoryIdInput(BaseModel):
    id: str = Field(description="As search_memory returns it.")


class UpdateMemoryInput(BaseModel):
    id: str = Field(description="As search_memory returns it.")
    content: str | None = None
    category: str | None = None
    tags: list[str] | None = Field(default=None, description="Replaces the old ones.")
    metadata: dict[str, str] | None = None
    priority: StrictInt | None = Field(default=None, description="1 to 10.")


class ForgetMemoriesInput(BaseModel):
    query: str = Field(description="The words that name the subject, e.g. 'half marathon'.")


class NoInput(BaseModel):
    pass


class ClearMemoryInput(BaseModel):
    compartment: str = Field(description="'user' or 'session'.")
    category: str | None = Field(default=None, description="Includes its sub-categories.")
    tags: list[str] | None = Field(default=None, description="Memories with all of them.")
    all: StrictBool = Field(default=False, description="true: the whole compartment (no category, no tags).")


_DESCRIPTIONS = {
    "save_memory": "Save a fact, preference or note worth keeping for later conversations.",
    "search_memory": "Search saved memories by meaning. Score: higher is better, comparable only "
    "within one answer.",
    "get_memory": "Read one memory in full by its id.",
    "update_memory": "Correct a memory that is wrong or outdated; pass only the fields to change.",
    "delete_memory": "Delete a memory, and the exchanges it was saved from, by its id.",
    "forget_memories": "Forget a subject: delete every memory and past exchange holding all the words "
    "of the query. Irreversible.",
    "list_categories": "List the categories of saved memories, with their counts.",
    "clear_memory": "Delete a compartment's memories in a category or with all the given tags; all=true "
    "deletes the whole compartment. Irreversible.",
    "promote_memory": "Share one of your memories with your team: its agents and users will read it. "
    "Pass its id.",
}


@dataclass(frozen=True)
class _Context:
    store: BaseStore | StoreSource | None
    layout: MemoryLayout
    compartments: tuple[Compartment, ...]
    default_compartment: Compartment
    track_access: bool

    def resolve(self, config: RunnableConfig) -> tuple[Scope, BaseStore]:
        return resolve_scope_and_store(config, self.store, what="the memory tools")


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _where(memory: StoredMemory) -> str:
    return f"{memory.compartment.value} memory"


# Each tool: (args schema, steps builder, answer formatter).
_Builder = Callable[[_Context, Scope, dict[str, Any]], StoreSteps[Any]]


def _room(ctx: _Context, scope: Scope, kind: str, a: dict[str, Any]) -> tuple[str, ...] | None:
    """The namespace a tool call adds a memory to when that compartment has an item limit, else None."""
    if kind != "save_memory":
        return None
    comp = parse_compartment(a.get("compartment") or ctx.default_compartment, allowed=ctx.compartments)
    if comp not in STORED_COMPARTMENTS or ctx.layout.limits_for(comp).max_items is None:
        return None
    return ctx.layout.namespace(comp, scope, write=True)


@dataclass(frozen=True)
class _Saved:
    """What ``save_memory`` did: saved ``memory``, or found it already there (``existing``)."""

    memory: StoredMemory
    existing: bool


def _save_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[_Saved]:
    """Save the memory, unless a current memory of the compartment already says exactly this:
    then that one is the answer and nothing is written (a model that saves a fact it was told
    twice, or a re-run, does not pile up copies)."""
    comp = parse_compartment(a.get("compartment") or ctx.default_compartment, allowed=ctx.compartments)
    content = a["content"]
    MemoryRecord(content=content)  # a bad content is refused before any store call
    namespace = ctx.layout.namespace(comp, scope)
    (page,) = yield [SearchOp(namespace, filter={"content": content}, limit=10)]
    for item in page:
        same = to_stored(item, comp) if tuple(item.namespace) == namespace else None
        if same is not None and same.record.content == content and is_current(same.record):
            return _Saved(same, existing=True)
    saved = yield from save_steps(
        scope,
        ctx.layout,
        a["content"],
        compartment=comp,
        category=a.get("category"),
        tags=a.get("tags"),
        metadata=a.get("metadata"),
        priority=a.get("priority"),
        source="tool:save_memory",
        recorded_by="tool:save_memory",
    )
    return _Saved(saved, existing=False)


def _save_answer(saved: _Saved) -> str:
    m = saved.memory
    if saved.existing:
        return (
            f"Memory {m.id} in {_where(m)} already says exactly this (category {m.record.category!r}): "
            "nothing was saved again. To change its category, tags or priority, call update_memory "
            "with this id."
        )
    return f"Saved memory {m.id} in {_where(m)} (category {m.record.category!r})."


def _search_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    return search_steps(
        scope,
        ctx.layout,
        a.get("query"),
        compartments=ctx.compartments,
        category=a.get("category"),
        tags=a.get("tags"),
        since=a.get("since"),
        until=a.get("until"),
        limit=a.get("limit", 5),
        track_access=ctx.track_access,
    )


def _search_answer(found: list[StoredMemory]) -> str:
    return _dump([m.compact() for m in found]) if found else "No memories found."


def _get_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    return get_steps(scope, ctx.layout, a["id"], compartments=ctx.compartments, track_access=ctx.track_access)


def _get_answer(m: StoredMemory) -> str:
    r = m.record
    return _dump(
        {
            "id": m.id,
            "compartment": m.compartment.value,
            "content": r.content,
            "category": r.category,
            "tags": r.tags,
            "metadata": r.metadata,
            "priority": r.priority,
            "kind": r.kind.value,
            "created_at": r.created_at.isoformat(timespec="seconds"),
            "updated_at": r.updated_at.isoformat(timespec="seconds"),
        }
    )


def _update_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    fields = {k: a.get(k) for k in ("content", "category", "tags", "metadata", "priority")}
    if all(v is None for v in fields.values()):
        raise InvalidRecordError(
            "update_memory needs at least one field to change: content, category, tags, metadata or priority",
            field="content",
        )
    return revise_steps(
        scope,
        ctx.layout,
        a["id"],
        compartments=ctx.compartments,
        content=a.get("content"),
        category=a.get("category"),
        tags=a.get("tags"),
        metadata=a.get("metadata"),
        priority=a.get("priority"),
        recorded_by="tool:update_memory",
    )


def _update_answer(m: StoredMemory) -> str:
    return f"Updated memory {m.id}: {m.record.content!r} (category {m.record.category!r})."


def _delete_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    return forget_steps(
        scope, ctx.layout, a["id"], compartments=ctx.compartments, recorded_by="tool:delete_memory"
    )


def _delete_answer(m: StoredMemory) -> str:
    return f"Deleted memory {m.id} from {_where(m)}: {m.record.content!r}."


def _forget_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    return forget_matching_steps(scope, ctx.layout, a["query"], recorded_by="tool:forget_memories")


def _forget_answer(forgotten: Forgotten) -> str:
    if not (forgotten.memories or forgotten.exchanges or forgotten.tool_results):
        return "Nothing matched: nothing was removed."
    return f"Forgot {forgotten.summary()}. Memory ids removed: {_dump(forgotten.ids)}."


def _promote_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    if scope.get("team_id") is None:
        raise CompartmentError(
            "this conversation belongs to no team (its config names no team_id): there is no team "
            "memory to promote to. Nothing was written; tell the user instead of retrying."
        )
    return promote_steps(scope, ctx.layout, a["id"], recorded_by="tool:promote_memory")


def _promote_answer(promoted: Promoted) -> str:
    original, copy = promoted.original.id, promoted.copy.id
    if promoted.outcome == "already":
        return f"Memory {original} is in team memory already (as {copy}): nothing was written."
    if promoted.outcome == "refreshed":
        return f"Team memory {copy} now says what memory {original} says: {promoted.copy.record.content!r}."
    return f"Promoted memory {original} to team memory as {copy}: {promoted.copy.record.content!r}."


def _categories_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    return categories_steps(scope, ctx.layout, compartments=ctx.compartments)


def _categories_answer(counts: dict[str, int]) -> str:
    return _dump(counts) if counts else "No memories saved yet."


def _clear_steps(ctx: _Context, scope: Scope, a: dict[str, Any]) -> StoreSteps[Any]:
    comp = parse_compartment(a["compartment"], allowed=ctx.compartments)
    return clear_reaching_steps(
        scope,
        ctx.layout,
        comp,
        category=a.get("category"),
        tags=a.get("tags"),
        everything=a.get("all") is True,
        recorded_by="tool:clear_memory",
    )


def _clear_answer(cleared: Cleared) -> str:
    removed = cleared.memories
    if not removed:
        return "Nothing matched: no memory was removed."
    where = removed[0].compartment.value
    listed = _dump([{"id": m.id, "content": m.record.content} for m in removed[:50]])
    more = f" (and {len(removed) - 50} more)" if len(removed) > 50 else ""
    gone = cleared.forgotten.exchanges
    exchanges = f" and {len(gone)} past exchanges they came from" if gone else ""
    return f"Removed {len(removed)} memories from {where} memory{exchanges}: {listed}{more}"


_TOOLS: dict[str, tuple[type[BaseModel], _Builder, Callable[[Any], str]]] = {
    "save_memory": (SaveMemoryInput, _save_steps, _save_answer),
    "search_memory": (SearchMemoryInput, _search_steps, _search_answer),
    "get_memory": (MemoryIdInput, _get_steps, _get_answer),
    "update_memory": (UpdateMemoryInput, _update_steps, _update_answer),
    "delete_memory": (MemoryIdInput, _delete_steps, _delete_answer),
    "list_categories": (NoInput, _categories_steps, _categories_answer),
    "clear_memory": (ClearMemoryInput, _clear_steps, _clear_answer),
    "forget_memories": (ForgetMemoriesInput, _forget_steps, _forget_answer),
    "promote_memory": (MemoryIdInput, _promote_steps, _promote_answer),
}

#: What each tool's ``ToolMessage.artifact`` says it changed (remember links the exchange to it).
_ARTIFACTS: dict[str, Callable[[Any], Any]] = {
    "save_memory": lambda saved: memory_artifact("saved", [saved.memory.id]),
    "update_memory": lambda m: memory_artifact("updated", [m.id]),
    "delete_memory": lambda m: memory_artifact("forgotten", [m.id]),
    "forget_memories": lambda f: memory_artifact("forgotten", [*f.ids, *f.exchanges]),
    "clear_memory": lambda c: memory_artifact("forgotten", [*c.ids, *c.forgotten.exchanges]),
}


_WHERE = {
    Compartment.USER: "all conversations",
    Compartment.SESSION: "this one",
    Compartment.KNOWLEDGE: "the agent's documents",
}


def _save_schema(ctx: _Context) -> type[BaseModel]:
    """``save_memory``'s arguments, its ``compartment`` described for the compartments it may write."""
    said = [
        f"'{c.value}' ({_WHERE[c]}{'; default' if c == ctx.default_compartment else ''})"
        for c in ctx.compartments
    ]
    listed = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}"
    field = Field(default=None, description=listed[:1].upper() + listed[1:] + ".")
    shown: type[BaseModel] = create_model(
        "SaveMemoryInput", __base__=SaveMemoryInput, compartment=(str | None, field)
    )
    return shown


def _make_tool(ctx: _Context, kind: str, name: str, description: str) -> StructuredTool:
    schema, build, answer = _TOOLS[kind]
    return store_tool(
        name=name,
        description=description,
        schema=_save_schema(ctx) if kind == "save_memory" else schema,
        resolve=ctx.resolve,
        build=lambda scope, args: build(ctx, scope, args),
        answer=answer,
        fixable=_FIXABLE,
        room=lambda scope, args: _room(ctx, scope, kind, args),
        artifact=_ARTIFACTS.get(kind),
    )


def tool_names(
    include: str | Iterable[str],
    *,
    known: Sequence[str] = MEMORY_TOOL_NAMES,
    where: str = "create_memory_tools(include=...)",
) -> tuple[str, ...]:
    """The tools ``include`` selects from ``known``, in the order given, each once.

    ``include`` is a set's name (``"lean"``: :data:`LEAN_TOOL_NAMES`; ``"full"``: every tool of
    ``known``), a tool's name, or a list of both: ``["lean", "clear_memory"]`` is the lean set and
    ``clear_memory``.

    Raises:
        ConfigurationError: an entry that is neither a tool of ``known`` nor a set's name (the
            message names it, the tools and the sets), or an entry that is not a ``str``.

    >>> tool_names(["lean", "clear_memory"])
    ('save_memory', 'search_memory', 'get_memory', 'update_memory', 'delete_memory', 'clear_memory')
    """
    entries: Iterable[object] = [include] if isinstance(include, str) else include
    if not isinstance(entries, Iterable):
        raise ConfigurationError(
            f"{where} takes a set's name ('lean', 'full'), a tool's name or a list of them, got "
            f"{type(include).__name__} {shown(include)}. Fix: e.g. include=['lean', 'clear_memory']."
        )
    chosen: list[str] = []
    for entry in entries:
        if entry == "lean":
            chosen += [n for n in (*LEAN_TOOL_NAMES, *TEAM_TOOL_NAMES) if n in known]
        elif entry == "full":
            chosen += known
        elif isinstance(entry, str) and entry in known:
            chosen.append(entry)
        elif entry in TEAM_TOOL_NAMES:
            raise ConfigurationError(
                f"{where}: {entry} comes with the team compartment: MemoryLayout(team=True) adds it "
                "to the tools; without one there is no team memory to promote to."
            )
        else:
            raise ConfigurationError(_unknown_tool(entry, known, where))
    return tuple(dict.fromkeys(chosen))


def _unknown_tool(entry: object, known: Sequence[str], where: str) -> str:
    if isinstance(entry, str):
        close = difflib.get_close_matches(entry, [*known, *TOOLSETS], n=2)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        what = f"unknown memory tool {shown(entry)}.{hint}"
    else:
        what = f"{type(entry).__name__} {shown(entry)} is not a tool's name."
    return (
        f"{where}: {what} The tools are {', '.join(known)}; the sets are 'lean' "
        f"({', '.join(n for n in LEAN_TOOL_NAMES if n in known)}) and 'full' (every tool). "
        "Fix: name tools and sets from these, e.g. ['lean', 'clear_memory'] to add a destructive tool."
    )


def create_memory_tools(
    *,
    store: BaseStore | StoreSource | None = None,
    layout: MemoryLayout | None = None,
    include: str | Iterable[str] = "lean",
    names: Mapping[str, str] | None = None,
    descriptions: Mapping[str, str] | None = None,
    instructions: str | None = None,
    compartments: Sequence[Compartment | str] = (Compartment.USER, Compartment.SESSION),
    default_compartment: Compartment | str = Compartment.USER,
    track_access: bool = True,
) -> list[BaseTool]:
    """Memory tools, configured.

    Args:
        store: the store to use; ``None`` uses the graph's store at call time.
        layout: namespace templates and limits of the compartments.
        include: which tools (see :func:`tool_names`): ``"lean"`` (the default: save, search,
            read, update and delete one memory; and promote one with a team compartment),
            ``"full"`` (every tool of :data:`MEMORY_TOOL_NAMES` and the team's, the destructive
            ``clear_memory`` and ``forget_memories`` among them), tool names, or
            both: ``["lean", "clear_memory"]``.
        names: rename tools: ``{"save_memory": "remember_fact"}``.
        descriptions: replace a tool's description.
        instructions: text appended to every tool's description (house rules for the model).
        compartments: the compartments these tools may read and write (``"user"``, ``"session"``,
            and ``"knowledge"`` to let the model search or edit agent knowledge).
        default_compartment: where ``save_memory`` writes when the model names none.
        track_access: search and get add one to each returned memory's ``access_count``.

    Raises:
        ConfigurationError: an unknown tool or set name (in ``include``, ``names`` or
            ``descriptions``), or two tools renamed to one name.
        CompartmentError: an unknown compartment, or a default not in ``compartments``.

    >>> tools = create_memory_tools(include=["save_memory", "search_memory"], names={"save_memory": "note"})
    >>> [t.name for t in tools]
    ['note', 'search_memory']
    """
    layout = layout or MemoryLayout()
    wanted = tool_names(
        include, known=(*MEMORY_TOOL_NAMES, *TEAM_TOOL_NAMES) if layout.team else MEMORY_TOOL_NAMES
    )
    names = dict(names or {})
    descriptions = dict(descriptions or {})
    for given, where in ((names, "names"), (descriptions, "descriptions")):
        for kind in given:
            if kind not in _TOOLS:
                raise ConfigurationError(
                    _unknown_tool(kind, MEMORY_TOOL_NAMES, f"create_memory_tools({where}=...)")
                )
    stored = (Compartment.USER, Compartment.SESSION, Compartment.KNOWLEDGE)
    comps = tuple(dict.fromkeys(parse_compartment(c, allowed=stored) for c in compartments))
    if not comps:
        raise CompartmentError("create_memory_tools needs at least one compartment")
    ctx = _Context(
        store=store,
        layout=layout,
        compartments=comps,
        default_compartment=parse_compartment(default_compartment, allowed=comps),
        track_access=track_access,
    )
    tools: list[BaseTool] = []
    for kind in wanted:
        description = descriptions.get(kind, _DESCRIPTIONS[kind])
        if instructions:
            description = f"{description}\n{instructions}"
        tools.append(_make_tool(ctx, kind, names.get(kind, kind), description))
    taken = [t.name for t in tools]
    if len(set(taken)) != len(taken):
        raise ConfigurationError(f"two memory tools would share a name: {taken}")
    return tools
