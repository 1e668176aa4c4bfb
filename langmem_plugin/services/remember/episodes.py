"""Remember: store each exchange as an episode, and never lose a write quietly.

:func:`~langmem_plugin.services.remember.exchanges.episode_from_messages` turns the end of a
conversation (the last user message, the tools called since, the final answer) into the text of one
episode. :func:`remember_steps` writes it under a key derived from the thread
and the messages, so writing the same exchange twice — a retry, a replay —
leaves one episode.

**Where.** By default (:meth:`RememberConfig.compartments_for`) an episode goes
to the user's memory when the run names a user — so every thread of that user
recalls it — and to the thread's session memory when it does not (narrower,
never wider). Either way its metadata keeps its ``thread_id``.
``RememberConfig(compartments=("session",))`` keeps episodes in their thread only.
When a compartment is full, its oldest *episodes* make room; other memories
are never evicted.

:class:`~langmem_plugin.services.remember.writer.EpisodeWriter` runs those writes inline
or in the background, retries, and never loses one quietly. A text longer than
what the embedder sees is split into passages
(:mod:`~langmem_plugin.services.recall.passages`), each searchable and linked to its
episode.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from langgraph.store.base import GetOp, PutOp

from langmem_plugin.core.bounded import Bound
from langmem_plugin.core.record import MAX_TAGS, MemoryKind, MemoryRecord, exchange_link
from langmem_plugin.core.scope import Scope
from langmem_plugin.core.tokens import count_tokens
from langmem_plugin.errors import CompartmentError, ConfigurationError
from langmem_plugin.services.layout import (
    STORED_COMPARTMENTS,
    Compartment,
    MemoryLayout,
    parse_compartment,
)
from langmem_plugin.services.limits import bound_of, bounded_steps
from langmem_plugin.services.operations import INDEX_FIELDS
from langmem_plugin.services.recall import Passage, join_passages, split_passages
from langmem_plugin.services.store_steps import StoreSteps
from langmem_plugin.services.upkeep import link_memories_steps

__all__ = [
    "EPISODE_CATEGORY",
    "EPISODE_PART_FIELDS",
    "LEAD_FIELD",
    "PASSAGE_CATEGORY",
    "Episode",
    "EpisodesWritten",
    "RememberConfig",
    "episode_index",
    "episode_key",
    "episode_records",
    "episode_text_steps",
    "passage_key",
    "remember_steps",
    "write_episodes_steps",
]

logger = logging.getLogger(__name__)

EPISODE_CATEGORY = "episodes"


@dataclass(frozen=True)
class RememberConfig:
    """What remember writes, and how.

    Attributes:
        compartments: where episodes go. ``None`` (the default): user memory when the run's
            scope has a user id (every thread of that user recalls them), else the thread's
            session memory (:meth:`compartments_for`). ``("session",)``: this thread only;
            ``("user",)``: user memory, and a run without a user id fails to write (logged,
            kept in ``writer.failed``); ``("user", "session")``: both (recall merges the
            copies).
        background: write in a background worker instead of inline.
        retries: attempts after the first before a write is given up (and kept in ``failed``).
        retry_delay: seconds before the first retry; doubles each time.
        passage_tokens: the most tokens (:func:`~langmem_plugin.core.tokens.count_tokens`) of one
            passage: an episode longer than that is also stored as passages of about this size,
            each searchable on its own (MiniLM embeds the first 256 of its own tokens of a text
            and ignores the rest; the default leaves room for its finer tokenizer).
        passage_overlap_tokens: about how many tokens (whole sentences) a passage repeats from
            the end of the one before it.
        index_fields: the value fields the store embeds for an episode (``PutOp.index``); add
            ``"metadata.part_1"`` ... (:data:`EPISODE_PART_FIELDS`) for one vector per sentence
            on a store that keeps several vectors per item.
    """

    compartments: tuple[Compartment, ...] | None = None
    background: bool = False
    retries: int = 3
    retry_delay: float = 0.05
    passage_tokens: int = 180
    passage_overlap_tokens: int = 24
    index_fields: tuple[str, ...] = tuple(INDEX_FIELDS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compartments", _episode_compartments(self.compartments))
        object.__setattr__(self, "index_fields", tuple(self.index_fields))
        if self.retries < 0 or self.retry_delay < 0:
            raise ConfigurationError("retries and retry_delay must be >= 0")
        if self.passage_tokens < 16:
            raise ConfigurationError(f"passage_tokens must be at least 16, got {self.passage_tokens!r}")
        if not 0 <= self.passage_overlap_tokens < self.passage_tokens // 2:
            raise ConfigurationError(
                f"passage_overlap_tokens must be >= 0 and under half of passage_tokens, "
                f"got {self.passage_overlap_tokens!r}"
            )
        if not self.index_fields:
            raise ConfigurationError("index_fields must name at least one field, e.g. ('content',)")

    def compartments_for(self, scope: Scope) -> tuple[Compartment, ...]:
        """Where the episodes of a run of ``scope`` go: :attr:`compartments` when given, else
        user memory when ``scope`` has a user id and the thread's session memory when not.

        >>> RememberConfig().compartments_for(Scope(user_id="u1", thread_id="t1"))
        (<Compartment.USER: 'user'>,)
        >>> RememberConfig().compartments_for(Scope(thread_id="t1"))
        (<Compartment.SESSION: 'session'>,)
        """
        if self.compartments is not None:
            return self.compartments
        return (Compartment.USER,) if scope.user_id else (Compartment.SESSION,)


_EPISODE_ROOMS = (Compartment.USER, Compartment.SESSION)


def _episode_compartments(value: object) -> tuple[Compartment, ...] | None:
    """``RememberConfig.compartments`` checked: ``None``, or distinct ``"user"``/``"session"``."""
    if value is None:
        return None
    fix = "use None (user memory when the run names a user), ('session',), ('user',) or ('user', 'session')"
    if isinstance(value, (str, Compartment)) or not isinstance(value, Sequence) or not value:
        raise ConfigurationError(
            f"RememberConfig.compartments must be a non-empty tuple, got {value!r}; {fix}"
        )
    comps: list[Compartment] = []
    for item in value:
        try:
            comp = parse_compartment(item, allowed=_EPISODE_ROOMS)
        except CompartmentError:
            raise ConfigurationError(
                f"RememberConfig.compartments cannot hold {item!r}: episodes go to 'user' or "
                f"'session' memory; {fix}"
            ) from None
        if comp in comps:
            raise ConfigurationError(
                f"RememberConfig.compartments names {comp.value!r} twice in {value!r}; {fix}"
            )
        comps.append(comp)
    return tuple(comps)


#: How many sentences an episode keeps in ``metadata.part_1`` ... ``part_N``.
MAX_EPISODE_PARTS = 8
#: The metadata fields holding an episode's sentences (for :attr:`RememberConfig.index_fields`).
EPISODE_PART_FIELDS: tuple[str, ...] = tuple(f"metadata.part_{n}" for n in range(1, MAX_EPISODE_PARTS + 1))
#: The category of an episode's passages.
PASSAGE_CATEGORY = f"{EPISODE_CATEGORY}/passages"
#: The field of an episode stored in passages that holds its first passage on one line (its vector's text).
LEAD_FIELD = "metadata.lead"
CONTEXT_CHARS = 400
_METADATA_CHARS = 2000
_TAG_CHARS = 64
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SENTENCE = re.compile(r"[^\n.!?]*(?:[.!?]+[\"')\]]*|\n|$)\s*")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced: a bad decode never makes a write fail."""
    return _SURROGATE.sub("\ufffd", text)


@dataclass(frozen=True)
class Episode:
    """One exchange (what the user said, which tools ran, what the assistant answered), or one
    message of a conversation between people (``assistant`` empty, ``speaker`` set), or a
    user's turn that no answer followed in an imported history (``assistant`` empty).

    The fields after ``message_ids`` place it in its thread; they are written as metadata
    and left out of :meth:`key`, so the same exchange keeps its key however it was written.

    Attributes:
        speaker: who spoke: the user's name, or the speaker of a one-message episode.
        position: its index among the thread's exchanges (or messages).
        previous: what the key of the episode before it in the thread is made of (:meth:`basis`).
        following: the same of the episode after it (known when a history is imported).
        context: the beginning of the episode before it (for lexical search).
        time: when it was said (``None``: now).
        session: the session of an imported history it belongs to: its date as the history gave
            it, else its number (``metadata.session``, which BM25 reads).
        session_id: that session's id, if it has one (``metadata.session_id``: recall's session
            lift groups by it; BM25 does not read it).
        memories: the ids of the memories saved or changed in it (the memory tools' artifacts):
            written as the exchange's ``derived`` links, and each of those memories gets the
            exchange among its ``sources`` in the same batch.
        forgot: a memory was forgotten in it: it is not kept as an episode (it is about what
            was forgotten).
    """

    user: str
    assistant: str
    tools: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    speaker: str | None = None
    position: int | None = None
    previous: tuple[str, ...] | None = field(default=None, repr=False)
    following: tuple[str, ...] | None = field(default=None, repr=False)
    context: str = ""
    time: datetime | None = None
    session: str | None = None
    session_id: str | None = None
    memories: tuple[str, ...] = ()
    forgot: bool = False

    @property
    def is_message(self) -> bool:
        """One message of a conversation between people, not a user/assistant exchange."""
        return not self.assistant and self.speaker is not None

    def text(self) -> str:
        """The episode's whole text."""
        if self.is_message:
            return f"{self.speaker}: {self.user}"
        tools = f"\nTools: {', '.join(self.tools)}" if self.tools else ""
        if not self.assistant:  # a user's turn no answer followed (an imported history)
            return f"User: {self.user}{tools}"
        return f"User: {self.user}\nAssistant: {self.assistant}{tools}"

    def content(self, max_chars: int) -> str:
        """The episode's text, each side shortened to fit ``max_chars`` in all."""
        if self.is_message or not self.assistant:
            return shorten(self.text(), max_chars)
        tools = f"\nTools: {', '.join(self.tools)}" if self.tools else ""
        budget = max(max_chars - len(tools) - len("User: \nAssistant: "), 20)
        user, assistant = self.user, self.assistant
        if len(user) + len(assistant) > budget:
            half = budget // 2
            if len(user) > half and len(assistant) > half:
                user, assistant = shorten(user, half), shorten(assistant, budget - half)
            elif len(user) > half:
                user = shorten(user, budget - len(assistant))
            else:
                assistant = shorten(assistant, budget - len(user))
        return f"User: {user}\nAssistant: {assistant}{tools}"[:max_chars]

    def basis(self) -> tuple[str, ...]:
        """What its key is made of, besides the thread: its message ids and texts."""
        return (*self.message_ids, self.user, self.assistant)

    def key(self, scope: Scope) -> str:
        """A key that is the same for the same exchange in the same thread."""
        return episode_key(scope.thread_id, self.basis())

    def neighbour_keys(self, scope: Scope) -> tuple[str | None, str | None]:
        """The keys of the episodes before and after it in the thread (``None``: not known)."""
        return tuple(  # type: ignore[return-value]
            episode_key(scope.thread_id, b) if b is not None else None
            for b in (self.previous, self.following)
        )


def episode_key(thread_id: str | None, basis: Sequence[str]) -> str:
    """The key of an episode: the same for the same exchange (:meth:`Episode.basis`) in the same thread."""
    joined = "\x1f".join([thread_id or "", *basis])
    return "ep-" + hashlib.sha256(joined.encode()).hexdigest()[:16]


def passage_key(key: str, index: int) -> str:
    """The key of passage ``index`` of the episode ``key``."""
    return f"{key}-p{index}"


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _sentences(text: str) -> list[str]:
    """The sentences of three words or more, at most :data:`MAX_EPISODE_PARTS` (the rest joined)."""
    parts = [s for m in _SENTENCE.finditer(text) if len((s := m.group().strip()).split()) >= 3]
    if len(parts) > MAX_EPISODE_PARTS:
        parts = [*parts[: MAX_EPISODE_PARTS - 1], " ".join(parts[MAX_EPISODE_PARTS - 1 :])]
    return [shorten(p, _METADATA_CHARS) for p in parts]


def _metadata(episode: Episode, scope: Scope, key: str) -> dict[str, str]:
    meta: dict[str, str] = {"thread_id": scope.thread_id} if scope.thread_id else {}
    if episode.position is not None:
        meta["position"] = str(episode.position)
    previous, following = episode.neighbour_keys(scope)
    if previous:
        meta["previous"] = previous
    if following:
        meta["next"] = following
    around = [k for k in (previous, following) if k]
    if around:
        meta["neighbours"] = " ".join(around)
    if episode.session is not None:
        meta["session"] = shorten(episode.session, _METADATA_CHARS)
    if episode.session_id is not None:
        meta["session_id"] = shorten(episode.session_id, _METADATA_CHARS)
    meta["speaker"] = shorten(episode.speaker or "user", 200)
    meta["role"] = "message" if episode.is_message else "exchange"
    if episode.context:
        meta["context"] = shorten(episode.context, _METADATA_CHARS)
    ids = " ".join(i for i in episode.message_ids if i)
    if ids:
        meta["message_ids"] = shorten(ids, _METADATA_CHARS)
    return meta


def episode_records(
    scope: Scope, episode: Episode, *, max_chars: int, config: RememberConfig | None = None
) -> tuple[str, MemoryRecord, list[tuple[str, MemoryRecord]]]:
    """The episode's key, its record (a head of its text of at most ``max_chars``), and its passages.

    The record's metadata places it in its thread (``thread_id``, ``position``, ``previous``,
    ``next``, ``neighbours``, ``session``, ``session_id``), says who spoke (``speaker``, ``role``),
    what was said before (``context``), its sentences (``part_1`` ...), its ``time`` and, for a
    text longer than one passage, how many ``passages`` hold it whole (keys :func:`passage_key`)
    and the first of them on one line (``lead``), which the record is embedded by
    (:func:`episode_index`).
    """
    config = config or RememberConfig()
    key = episode.key(scope)
    text = episode.text()
    meta = _metadata(episode, scope, key)
    meta.update({f"part_{n}": part for n, part in enumerate(_sentences(text), start=1)})
    times = {"created_at": episode.time, "updated_at": episode.time} if episode.time is not None else {}
    passages: list[Passage] = []
    # a text of no more UTF-8 bytes than passage_tokens has no more tokens: no count needed
    if len(text.encode()) > config.passage_tokens and count_tokens(text) > config.passage_tokens:
        passages = split_passages(
            text, max_tokens=config.passage_tokens, overlap_tokens=config.passage_overlap_tokens
        )
    if len(passages) > 1:
        meta["passages"] = str(len(passages))
        lead = " ".join(passages[0].text.split())
        if lead != passages[0].text:  # see episode_index: never the passage's own text
            meta[LEAD_FIELD.removeprefix("metadata.")] = lead
    else:
        passages = []
    tags = list(dict.fromkeys(t[:_TAG_CHARS] for t in episode.tools))[:MAX_TAGS]
    record = MemoryRecord(
        content=episode.content(max_chars),
        category=EPISODE_CATEGORY,
        kind=MemoryKind.EPISODE,
        source="remember",
        tags=tags,
        metadata=meta,
        derived=list(episode.memories),
        **times,
    )
    meta["time"] = record.created_at.isoformat()
    record = record.model_copy(update={"metadata": meta})
    placing = ("thread_id", "position", "session", "session_id", "speaker", "time")
    shared = {k: meta[k] for k in placing if k in meta}
    parts = [
        (
            passage_key(key, n),
            MemoryRecord(
                content=p.text,
                category=PASSAGE_CATEGORY,
                kind=MemoryKind.EPISODE,
                source="remember",
                metadata={
                    **shared,
                    "episode": key,
                    "passage": str(n),
                    "passages": str(len(passages)),
                    "offset": str(p.offset),
                    "overlap": str(p.overlap),
                },
                **times,
            ),
        )
        for n, p in enumerate(passages)
    ]
    return key, record, parts


def episode_index(record: MemoryRecord, index_fields: Sequence[str]) -> list[str]:
    """The fields the store embeds for an episode's ``record`` (``PutOp.index``).

    An episode stored in passages is embedded by its first passage on one line
    (``metadata.lead``, whitespace collapsed) instead of its ``content``: its head (what an
    embedder reads of its content, 256 of MiniLM's tokens) says what that passage says, and
    MiniLM reads the two texts as the same tokens, so it embeds them once
    (:meth:`~langmem_plugin.core.embeddings.MiniLMEmbeddings.embed_array`) and one vector
    serves both. The lead is never the passage's own text: a store may fail on two equal
    texts in one batch (LangGraph's ``InMemoryStore`` does), so a passage that is one line
    already gets no lead and its episode is embedded by its content. BM25 still reads the
    whole head: the default index's ``lexical_fields`` name ``content``.

    >>> episode_index(MemoryRecord(content="hi"), ["content"])
    ['content']
    """
    if LEAD_FIELD.removeprefix("metadata.") not in record.metadata:
        return list(index_fields)
    return [LEAD_FIELD if f == "content" else f for f in index_fields]


def episode_text_steps(namespace: tuple[str, ...], key: str) -> StoreSteps[str | None]:
    """The whole text of the episode ``key`` in ``namespace`` (rebuilt from its passages when it
    has some), or ``None`` when there is no such episode."""
    (item,) = yield [GetOp(namespace, key)]
    if item is None:
        return None
    meta = item.value.get("metadata") or {}
    count = int(meta.get("passages") or 0)
    if not count:
        return str(item.value.get("content", ""))
    parts = yield [GetOp(namespace, passage_key(key, n)) for n in range(count)]
    if any(p is None for p in parts):
        return str(item.value.get("content", ""))
    return join_passages((p.value["content"], int(p.value["metadata"]["overlap"])) for p in parts)


# -- writing ----------------------------------------------------------------------------------


@dataclass
class EpisodesWritten:
    """What :func:`write_episodes_steps` wrote: ``(compartment, namespace, key)`` of each episode,
    how many passages, the episodes left as they were (already stored), and how many older
    items (episodes and passages) were deleted to make room."""

    written: list[tuple[Compartment, tuple[str, ...], str]] = field(default_factory=list)
    passages: int = 0
    skipped: int = 0
    evicted: int = 0


def _stored_steps(
    scope: Scope, namespace: tuple[str, ...], episodes: Sequence[Episode], max_chars: int
) -> StoreSteps[set[str]]:
    """The keys of ``episodes`` stored whole in ``namespace``: the episode with the same content
    and, when it has passages, its last passage (a write cut short by a crash is written again).

    Only the keys and the heads are made (no passages split, no tokens counted), so a replayed
    import costs one read per episode.
    """
    heads = {e.key(scope): e.content(max_chars) for e in episodes}
    found = yield [GetOp(namespace, key) for key in heads]
    same = [item for item in found if item is not None and item.value.get("content") == heads[item.key]]
    counts = {item.key: (item.value.get("metadata") or {}).get("passages") for item in same}
    tails = [(key, int(n)) for key, n in counts.items() if isinstance(n, str) and n.isdecimal() and int(n)]
    last = (yield [GetOp(namespace, passage_key(key, n - 1)) for key, n in tails]) if tails else []
    missing = {key for (key, _), item in zip(tails, last, strict=True) if item is None}
    return {item.key for item in same} - missing


def write_episodes_steps(
    scope: Scope,
    layout: MemoryLayout,
    episodes: Sequence[Episode],
    *,
    compartments: Sequence[Compartment] | None = None,
    config: RememberConfig | None = None,
    skip_existing: bool = False,
) -> StoreSteps[EpisodesWritten]:
    """Write ``episodes`` (and their passages) into each compartment, in as few batches as the
    store allows; the oldest episodes make room when a compartment is full.

    Args:
        compartments: where to write (``None``: ``config``'s choice for ``scope``,
            :meth:`RememberConfig.compartments_for`).
        skip_existing: leave an episode that is already stored with the same text (and all its
            passages) as it is: a replayed import writes nothing, one cut short by a crash
            writes what is missing.

    Raises:
        ScopeError: the scope lacks the id a compartment needs.
        MemoryLimitError: a compartment is full of memories that are not episodes.
    """
    config = config or RememberConfig()
    index = list(config.index_fields)
    result = EpisodesWritten()
    ops: list[PutOp] = []
    bounds: list[Bound | None] = []
    links: dict[str, tuple[str, ...]] = {}  # exchange link -> the memories saved or changed in it
    for compartment in config.compartments_for(scope) if compartments is None else compartments:
        comp = parse_compartment(compartment, allowed=STORED_COMPARTMENTS)
        namespace = layout.namespace(comp, scope, write=True)
        max_chars = layout.limits_for(comp).max_chars
        kept = list(episodes)
        if skip_existing and kept:
            stored = yield from _stored_steps(scope, namespace, kept, max_chars)
            result.skipped += len(stored)
            kept = [e for e in kept if e.key(scope) not in stored]
        built = [episode_records(scope, e, max_chars=max_chars, config=config) for e in kept]
        bounds.append(bound_of(layout, comp, namespace))
        for (key, record, parts), episode in zip(built, kept, strict=True):
            if episode.memories:
                links[exchange_link(scope.thread_id, key)] = episode.memories
            # the passages first: a store that writes in order never holds the episode without them
            ops.extend(PutOp(namespace, k, r.to_value(), index=INDEX_FIELDS) for k, r in parts)
            ops.append(PutOp(namespace, key, record.to_value(), index=episode_index(record, index)))
            result.written.append((comp, namespace, key))
            result.passages += len(parts)
    # provenance: each memory saved or changed in an exchange gets the exchange among its sources
    ops.extend((yield from link_memories_steps(scope, layout, list(links.items()))))
    evicted = yield from bounded_steps(ops, bounds)
    if evicted:
        logger.info("memory is full: %d older episode items make room", len(evicted))
    result.evicted += len(evicted)
    return result


def remember_steps(
    scope: Scope,
    layout: MemoryLayout,
    episode: Episode,
    *,
    compartments: Sequence[Compartment] | None = None,
    config: RememberConfig | None = None,
) -> StoreSteps[list[tuple[Compartment, tuple[str, ...], str]]]:
    """Write ``episode`` into each compartment (``None``: ``config``'s choice for ``scope``,
    :meth:`RememberConfig.compartments_for`); returns ``(compartment, namespace, key)`` written.

    A text longer than one passage is also written as passages (:func:`episode_records`);
    nothing is rejected for its length.

    Raises:
        ScopeError: the scope lacks the id a compartment needs.
        MemoryLimitError: a compartment is full of memories that are not episodes.
    """
    done = yield from write_episodes_steps(scope, layout, [episode], compartments=compartments, config=config)
    return done.written
