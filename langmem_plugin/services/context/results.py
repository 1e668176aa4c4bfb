"""Tool results as memory: stored once with an id, shown once in a first view, then compacted to a citation.

A tool result over :attr:`ResultsConfig.min_chars` (of a tool the include and
exclude lists allow) is written to the ``results`` compartment, owned by the run's
user and exact thread (:mod:`~langmem_plugin.services.stored_results.result_store`:
``(..., "results", thread_id, "user", user_id)``) and with a TTL, under a short id
derived from its tool-call id (so a replay writes nothing new), as a
:class:`~langmem_plugin.core.record.MemoryRecord` of kind ``tool_result`` with the tool,
its arguments and its size. A result longer than the compartment's ``max_chars``
(:class:`~langmem_plugin.services.layout.MemoryLayout` limits), or than a store takes,
is stored cut to it, and says so when shown and read back.

Whatever a tool returns never stops the run: text blocks of a list are read as text (other
blocks are left alone), a lone surrogate is stored and shown as U+FFFD (and the view says so),
a 10 MB result is counted in part and stored cut, JSON nested 10,000 deep is described as
text, and a result no store takes is left as the tool returned it.

What the model sees of a stored result (:func:`results_view`):

1. a first view: up to :attr:`ResultsConfig.full_tokens` tokens (400 by default), followed by its
   id and, when it is longer, a note that it continues and how to read the rest
   (``retrieve_result``: from where the view stops, page by page, filtered, ...);
2. once the conversation passes :attr:`ResultsConfig.compact_above_tokens` (6000 by default),
   every result seen so far at once, down to :attr:`ResultsConfig.compact_target` of it — or
   once the model has been called :attr:`ResultsConfig.keep_calls` times with it (per tool:
   :attr:`ResultsConfig.keep_calls_by_tool`; no limit by default): a citation — id, tool,
   arguments, size, a short description (:mod:`~langmem_plugin.services.stored_results.compactors`, or a
   chat model's written in the background: :mod:`~langmem_plugin.services.context.model_compactor`)
   and how to get the rest.

The default (a small first view, compaction batched at a threshold) keeps the prompt an
append-only extension of the previous one between compactions, so the provider's prompt cache
stays warm, and the context light. ``ResultsConfig(full_tokens=4000, keep_calls=1,
compact_above_tokens=None)`` is the former default: each result seen in full once (up to 4000
tokens), then a citation after one model call.

Two state keys carry it, both merged with :func:`keep_first` (an entry, once
written, never changes): ``tool_results`` (tool-call id → what was stored) and
``compacted`` (tool-call id → the citation text). The citation is decided once
and kept verbatim, so the prompt prefix stays byte-identical from call to call
(the provider's prompt cache keeps working) and a second pass changes nothing.
The checkpointed messages are never rewritten: only the copy the model sees is.

Sub-agents: a subgraph run under the parent's config (same ``thread_id`` and ``user_id``) whose
``Memory`` has the same layout shares the parent's stored results — each side's
``retrieve_result`` reads what the other stored. Give the sub-agent its own
results template to isolate it:
``MemoryLayout(namespaces={"results": ("memories", "results", "{thread_id}", "researcher")})``.
The ``tool_results`` and ``compacted`` keys live in each graph's own state.

Everything here is pure or store steps (:data:`~langmem_plugin.services.store_steps.StoreSteps`);
:class:`~langmem_plugin.services.turn.MemoryTurn` runs them for every surface.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langmem_plugin.core.fence import quote
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_message_tokens, count_tokens
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.context.model_compactor import ModelCompactor, ResultDescriber
from langmem_plugin.services.layout import Compartment, MemoryLayout
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.stored_results import (
    Compactor,
    PendingResult,
    compact,
    head_tokens,
    store_results_steps,
    without_surrogates,
)

__all__ = [
    "RESULT_TOOL_NAMES",
    "PendingResult",
    "ResultsConfig",
    "citation",
    "decide_compaction",
    "full_view",
    "keep_first",
    "pending_results",
    "result_describer",
    "result_id",
    "results_update_steps",
    "results_view",
    "store_results_steps",
]

#: The tools that read stored results; their own output is never stored again.
RESULT_TOOL_NAMES = ("retrieve_result", "query_results")

_MAX_ARGS_CHARS = 400
_COUNTED_CHARS = 1_000_000


@dataclass(frozen=True)
class ResultsConfig:
    """Which tool results are stored, and when the model sees a citation instead.

    The default shows the first 400 tokens of a result and compacts every result seen so far
    at once when the conversation passes 6000 tokens (down to 5% of that, i.e. all of them):
    between compactions each prompt is the previous one plus new messages. To see each result
    in full once instead (the former default): ``ResultsConfig(full_tokens=4000, keep_calls=1,
    compact_above_tokens=None)``.

    Attributes:
        min_chars: results shorter than this are neither stored nor compacted.
        include: only these tools (``None``: every tool).
        exclude: never these tools (the result tools themselves are always excluded).
        full_tokens: the most tokens of a result the model sees the first time (a longer one says
            it continues and how to read the rest).
        keep_calls: model calls that see a result in full before it is compacted (``None``: no
            limit by calls; use ``compact_above_tokens``).
        keep_calls_by_tool: ``keep_calls`` for one tool: ``{"web_fetch": 2}``.
        compact_above_tokens: when the conversation the model sees passes this many tokens,
            results already seen once are compacted, oldest first (``None``: never).
        compact_target: how far that goes: until the conversation is at most this fraction of
            ``compact_above_tokens``. Lower: compaction fires seldom, and between firings every
            prompt is the previous one plus new messages (the provider's prompt cache reuses it).
        ttl_minutes: how long a stored result lives (stores with TTL support). ``None`` (the
            default): as long as its thread — the checkpoint cites results by id, so they go when
            the thread is deleted (``delete_threads``, ``delete_idle_threads``) or the user forgotten.
        page_tokens: the tokens of one page of ``retrieve_result``.
        summary_chars: the length of the description in a citation.
        compactors: a compactor per tool name, ``(text, max_chars) -> description``; other tools
            are described by ``model_compactor``, else by shape (JSON, table, text).
        model_compactor: a chat model that describes results with the plan's goal and the user's
            last message as the focus, in the background
            (:mod:`~langmem_plugin.services.context.model_compactor`); a description not ready
            when a result is compacted is the extractive one. ``None``: no model.
    """

    min_chars: int = 2000
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    full_tokens: int = 400
    keep_calls: int | None = None
    keep_calls_by_tool: Mapping[str, int] = field(default_factory=dict)
    compact_above_tokens: int | None = 6000
    compact_target: float = 0.05
    ttl_minutes: float | None = None
    page_tokens: int = 2000
    summary_chars: int = 200
    compactors: Mapping[str, Compactor] = field(default_factory=dict)
    model_compactor: ModelCompactor | None = None

    def __post_init__(self) -> None:
        if self.model_compactor is not None and not isinstance(self.model_compactor, ModelCompactor):
            raise ConfigurationError(
                f"ResultsConfig.model_compactor takes a ModelCompactor, got "
                f"{type(self.model_compactor).__name__}. Fix: model_compactor=ModelCompactor(chat_model)"
            )
        for name in ("min_chars", "full_tokens", "keep_calls", "page_tokens", "summary_chars"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigurationError(
                    f"ResultsConfig.{name} must be at least 1, got {getattr(self, name)}"
                )
        if not 0 < self.compact_target <= 1:
            raise ConfigurationError(
                f"ResultsConfig.compact_target must be in (0, 1], got {self.compact_target}"
            )
        bad = {tool: n for tool, n in self.keep_calls_by_tool.items() if n < 1}
        if bad:
            raise ConfigurationError(f"ResultsConfig.keep_calls_by_tool values must be at least 1, got {bad}")

    def stores(self, tool: str) -> bool:
        """Whether results of ``tool`` are stored (include and exclude lists)."""
        if tool in RESULT_TOOL_NAMES or tool in self.exclude:
            return False
        return self.include is None or tool in self.include

    def keep_calls_for(self, tool: str) -> int | None:
        """The model calls that see a result of ``tool`` in full."""
        return self.keep_calls_by_tool.get(tool, self.keep_calls)


def result_describer(config: ResultsConfig | None, *, model: str | None = None) -> ResultDescriber | None:
    """The background describer of ``config.model_compactor`` (``None`` without one); ``model``: whose
    tokenizer counts what the compactor model is sent."""
    if config is None or config.model_compactor is None:
        return None
    return ResultDescriber(
        config.model_compactor,
        max_chars=config.summary_chars,
        skip_tools=frozenset(config.compactors),
        tokenizer_model=model,
    )


def keep_first(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """The reducer of ``tool_results`` and ``compacted``: new keys are added, existing ones never change."""
    return {**(right or {}), **(left or {})}


def result_id(tool_call_id: str) -> str:
    """The short id of the result of ``tool_call_id``: ``r`` + 12 hex digits, whatever the call id.

    >>> result_id("call_1") == result_id("call_1"), len(result_id("x" * 5000))
    (True, 13)
    """
    return "r" + hashlib.blake2b(tool_call_id.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _text(message: BaseMessage) -> str:
    """The text of a message: its string content, or the text blocks of a list (others are skipped)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def _clean(text: str) -> str:
    return without_surrogates(text)[0]


def _args_text(args: Any) -> str:
    """The arguments of a call as short JSON text; ones too deep to write are said to be."""
    try:
        text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (ValueError, TypeError, RecursionError):
        text = "<arguments nested too deep to show>"
    text = _clean(text)
    return text if len(text) <= _MAX_ARGS_CHARS else text[: _MAX_ARGS_CHARS - 1] + "…"


def _count(text: str, model: str | None) -> tuple[int, bool]:
    """The tokens of ``text``, and whether that is an estimate: past :data:`_COUNTED_CHARS`
    characters, the count of that prefix scaled to the length (a tokenizer takes seconds on 10 MB)."""
    if len(text) <= _COUNTED_CHARS:
        return count_tokens(text, model=model), False
    counted = count_tokens(text[:_COUNTED_CHARS], model=model)
    return max(counted, round(counted * len(text) / _COUNTED_CHARS)), True


def pending_results(
    messages: Sequence[BaseMessage],
    stored: Mapping[str, Any],
    config: ResultsConfig,
    *,
    model: str | None = None,
) -> list[PendingResult]:
    """The tool results of ``messages`` to store: large enough, of an allowed tool, not ``stored`` yet."""
    calls: dict[str, dict[str, Any]] = {}
    pending: list[PendingResult] = []
    for message in messages:
        if isinstance(message, AIMessage):
            calls.update({str(c["id"]): dict(c) for c in message.tool_calls if c.get("id")})
            continue
        if not isinstance(message, ToolMessage) or message.tool_call_id in stored:
            continue
        call = calls.get(message.tool_call_id, {})
        tool = str(message.name or call.get("name") or "unknown")
        raw = _text(message)
        if message.status == "error" or len(raw) < config.min_chars or not raw.strip():
            continue
        if not config.stores(tool):
            continue
        text, cleaned = without_surrogates(raw)
        tokens, estimated = _count(text, model)
        pending.append(
            PendingResult(
                tool_call_id=message.tool_call_id,
                id=result_id(message.tool_call_id),
                tool=_clean(tool),
                args=_args_text(call.get("args", {})),
                text=text,
                tokens=tokens,
                cleaned=cleaned,
                estimated=estimated,
            )
        )
    return pending


# -- what the model sees ------------------------------------------------------------------------


def full_view(text: str, entry: Mapping[str, Any], config: ResultsConfig, *, model: str | None = None) -> str:
    """A stored result as the model sees it first: in full up to ``full_tokens``, then its id.

    A longer result is shown up to there, and the view says plainly that it continues and how to
    read the rest with ``retrieve_result`` (from where the view stops, page by page, or in part).
    """
    rid = entry["id"]
    text = _clean(text)
    shown = head_tokens(text, config.full_tokens, model=model)
    if shown is None:
        return (
            f"{text}\n[result {rid} stored ({entry['chars']} characters){_notes(entry)}; "
            f'retrieve_result(id="{rid}") reads it again]'
        )
    return (
        f"{shown}\n[result {rid} continues: its first {config.full_tokens} of {_tokens(entry)} tokens "
        f"are shown{_notes(entry)}. Read on: "
        f'retrieve_result(id="{rid}", transform="excerpt", start={len(shown)}); or '
        f'transform="full" (page=1, 2, ...), "filtered" (pattern= or path=), "first_n" / "last_n" (n=), '
        '"summary"]'
    )


def _tokens(entry: Mapping[str, Any]) -> str:
    return f"about {entry['tokens']}" if entry.get("estimated") else str(entry["tokens"])


def _notes(entry: Mapping[str, Any]) -> str:
    """What the store holds differs from what the tool returned: how (``""`` when it does not)."""
    notes = []
    if entry.get("stored_chars") is not None:
        notes.append(f"only its first {entry['stored_chars']} characters are stored")
    if entry.get("cleaned"):
        notes.append(f"{entry['cleaned']} lone surrogates (not valid text) were replaced with U+FFFD")
    return "".join(f"; {note}" for note in notes)


def citation(
    text: str, entry: Mapping[str, Any], config: ResultsConfig, *, description: str | None = None
) -> str:
    """The compacted form of a stored result: id, tool, arguments, size, a description, how to get the rest.

    The description is the tool's own compactor's, else ``description`` (the model compactor's),
    else one by shape. Every field that comes from the tool or the model is quoted
    (:func:`~langmem_plugin.core.fence.quote`), so none can open or close a prompt fence.
    """
    rid = entry["id"]
    if description and entry["tool"] not in config.compactors:
        about = description[: config.summary_chars]
    else:
        about = compact(_clean(text), config.summary_chars, tool=entry["tool"], compactors=config.compactors)
    return (
        f"[result {rid} compacted: tool {quote(str(entry['tool']))}, args {quote(str(entry['args']))}, "
        f"{entry['chars']} characters, {_tokens(entry)} tokens{_notes(entry)}]\n"
        f"about: {quote(about)}\n"
        f'more: retrieve_result(id="{rid}", transform=full|excerpt|first_n|last_n|filtered|summary)'
    )


def _ages(messages: Sequence[BaseMessage]) -> dict[str, tuple[ToolMessage, int]]:
    """Each tool message by call id, with the number of model answers (AI messages) after it."""
    ages: dict[str, tuple[ToolMessage, int]] = {}
    answers = 0
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            answers += 1
        elif isinstance(message, ToolMessage) and message.tool_call_id not in ages:
            ages[message.tool_call_id] = (message, answers)
    return dict(reversed(list(ages.items())))  # oldest first


def results_view(
    messages: Sequence[BaseMessage],
    stored: Mapping[str, Any],
    compacted: Mapping[str, str],
    config: ResultsConfig,
    *,
    model: str | None = None,
) -> list[BaseMessage]:
    """``messages`` as the model sees them: stored results in full with their id, or their citation.

    A new list of copies; ``messages`` is not changed, and the pairs of tool call and result stay.
    """
    view: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id in stored:
            key = message.tool_call_id
            content = compacted.get(key) or full_view(_text(message), stored[key], config, model=model)
            message = message.model_copy(update={"content": content})
        view.append(message)
    return view


def decide_compaction(
    messages: Sequence[BaseMessage],
    stored: Mapping[str, Any],
    compacted: Mapping[str, str],
    config: ResultsConfig,
    *,
    model: str | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The results to compact now (tool-call id → citation); one in ``compacted`` is never decided again.

    ``descriptions``: the model compactor's, ready now (result id → text); the others are extractive.
    """
    ages = _ages(messages)
    about = descriptions or {}
    new: dict[str, str] = {}
    for key, (message, age) in ages.items():
        entry = stored.get(key)
        keep = config.keep_calls_for(entry["tool"]) if entry is not None else None
        if entry is not None and key not in compacted and keep is not None and age >= keep:
            new[key] = citation(_text(message), entry, config, description=about.get(entry["id"]))
    if config.compact_above_tokens is None:
        return new
    view = results_view(messages, stored, {**compacted, **new}, config, model=model)
    total = count_message_tokens(view, model=model)
    if total <= config.compact_above_tokens:
        return new
    target = config.compact_above_tokens * config.compact_target
    for key, (message, age) in ages.items():
        if total <= target:
            break
        entry = stored.get(key)
        if entry is None or key in compacted or key in new or age < 1:
            continue  # a result the model has not seen yet is shown once in full
        new[key] = citation(_text(message), entry, config, description=about.get(entry["id"]))
        full = full_view(_text(message), entry, config, model=model)
        total -= count_tokens(full, model=model) - count_tokens(new[key], model=model)
    return new


def results_update_steps(
    messages: Sequence[BaseMessage],
    stored: Mapping[str, Any],
    compacted: Mapping[str, str],
    scope: Scope,
    layout: MemoryLayout,
    config: ResultsConfig,
    *,
    keys: tuple[str, str] = ("tool_results", "compacted"),
    ttl: float | None = None,
    model: str | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> StoreSteps[dict[str, Any]]:
    """Store the new results of ``messages`` and decide what to compact: the state update (maybe empty).

    Args:
        messages: the conversation in state (not changed).
        stored: the ``tool_results`` state value.
        compacted: the ``compacted`` state value.
        scope: whose results (``user_id`` and ``thread_id``:
            :func:`~langmem_plugin.services.stored_results.result_store.results_namespace`).
        layout: where the results compartment lives.
        config: what is stored and when it is compacted.
        keys: the state keys of ``tool_results`` and ``compacted``.
        ttl: the TTL of new results in minutes (``None``: the store keeps them).
        model: whose tokenizer counts.
        descriptions: the model compactor's descriptions ready now (result id → text).
    """
    pending = pending_results(messages, stored, config, model=model)
    max_chars = layout.limits_for(Compartment.RESULTS).max_chars
    new_entries = yield from store_results_steps(scope, layout, pending, max_chars=max_chars, ttl=ttl)
    decided = decide_compaction(
        messages, {**stored, **new_entries}, compacted, config, model=model, descriptions=descriptions
    )
    update: dict[str, Any] = {}
    if new_entries:
        update[keys[0]] = new_entries
    if decided:
        update[keys[1]] = decided
    return update
