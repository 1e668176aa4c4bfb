"""The data of ``bench locomo`` and ``bench realtalk``: conversations, and each turn as a stored memory.

Two sets in one schema (LoCoMo's), read by one loader, :func:`load_conversations`, which tells them
apart by their shape:

- **LoCoMo** (Maharana et al., 2024): ``locomo10.json``, a list of samples (:func:`load_locomo`);
- **REALTALK** (Lee et al., 2025, by LoCoMo's authors): a folder of ``Chat_N_<name>_<name>.json``
  files, one chat each, or one such file (:func:`load_realtalk`). Its turns carry ``clean_text``
  and a timestamp per message; its session dates (``"29.12.2023, 22:42:04"``) are written in
  LoCoMo's form (``"10:42 pm on 29 December, 2023"``), so every row reads one date format.

Evidence is read by one function for both, :func:`normalise_evidence`; a question counts only when
its evidence names turns of its conversation, all of them (the others are skipped and counted).
:func:`turn_value` is what a turn is stored as (a memory record, with its :func:`sentences` as
``metadata.part_*``); :func:`conversation_text` and :func:`injected_text` are the texts whose
tokens are counted. The run itself is :func:`langmem_plugin.bench.locomo.run_locomo_bench`.

Neither set is shipped: the paths are given (``--data``); the REALTALK chats carry no licence,
so they are read from where they lie and never copied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.errors import ConfigurationError

__all__ = [
    "CATEGORIES",
    "MAX_PARTS",
    "REALTALK_CATEGORIES",
    "TOKEN_MODEL",
    "Conversation",
    "Dataset",
    "Evidence",
    "Question",
    "Turn",
    "chosen",
    "conversation_text",
    "injected_text",
    "load_conversations",
    "load_locomo",
    "load_realtalk",
    "normalise_evidence",
    "sentences",
    "turn_value",
]

#: LoCoMo's question categories.
CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: REALTALK's question categories (its memory-probing questions).
REALTALK_CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "commonsense"}
#: The token encoding of LoCoMo's comparisons (gpt-4 / gpt-3.5).
TOKEN_MODEL = "gpt-4"

#: At most this many of a turn's sentences are embedded alone (the rest go into the last one).
MAX_PARTS = 8

_TURN_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_RANGE_DASH = re.compile(r"\s*-\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SESSION = re.compile(r"session_(\d+)")
_CHAT_NUMBER = re.compile(r"(\d+)")


class Evidence(NamedTuple):
    """A question's evidence read against its conversation: the turn ids found, and what named none."""

    ids: tuple[str, ...]
    missing: tuple[str, ...]


def _turn_id(token: str) -> str | None:
    match = _TURN_ID.fullmatch(token)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def normalise_evidence(raw: Iterable[Any], turn_ids: Sequence[str]) -> Evidence:
    """A question's evidence as the ids of turns of its conversation — the one reading of both sets.

    ``turn_ids`` are the conversation's turn ids in order. Each entry of ``raw`` is read so:

    1. split on ``;``, ``,`` and white space, each piece stripped of a trailing ``.``
       (``"D8:6; D9:17"``, ``"D13:4. D14:4"``, ``"D1:3 D1:4"``);
    2. an id is ``D<number>:<number>`` without leading zeros (``"D30:05"`` → ``"D30:5"``,
       ``"D:11:26"`` → ``"D11:26"``);
    3. a range ``"D12:3-D12:5"`` is every turn from the first to the last *in the conversation's
       order* — the lookup, never the numbers: a REALTALK session may continue another's
       numbering (session 4 at ``"D3:30"``);
    4. a piece that names no turn of the conversation (``"D9:9"`` of a removed message, ``"D17"``
       and ``"39"`` of ``"D17;39"``, a range whose ends are not both turns) is ``missing``; a
       piece without a digit (a stray ``"D"``) names nothing and is dropped, as are repeats.

    A question whose ``ids`` are empty or whose ``missing`` is not is skipped by the loaders and
    counted (:attr:`Conversation.skipped`).

    >>> order = ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    >>> normalise_evidence(["D1:2; D2:02", "D:1:1", "D1:3-D2:1", "D1:2."], order)
    Evidence(ids=('D1:2', 'D2:2', 'D1:1', 'D1:3', 'D2:1'), missing=())
    >>> normalise_evidence(["D17;39", "D9:9", "D"], order)
    Evidence(ids=(), missing=('D17', '39', 'D9:9'))
    """
    position = {dia_id: n for n, dia_id in enumerate(turn_ids)}
    ids: list[str] = []
    missing: list[str] = []
    for entry in raw:
        for piece in _EVIDENCE_SPLIT.split(_RANGE_DASH.sub("-", str(entry))):
            piece = piece.strip().rstrip(".")
            if not any(c.isdigit() for c in piece):
                continue  # "D", "": a fragment naming nothing
            first, dash, last = piece.partition("-")
            ends = [_turn_id(first), _turn_id(last)] if dash else [_turn_id(piece)]
            if any(end is None or end not in position for end in ends):
                missing.append(piece)
                continue
            start, stop = position[ends[0] or ""], position[ends[-1] or ""]
            for n in range(min(start, stop), max(start, stop) + 1):
                if turn_ids[n] not in ids:
                    ids.append(turn_ids[n])
    return Evidence(tuple(ids), tuple(missing))


@dataclass(frozen=True)
class Turn:
    """One dialogue turn."""

    dia_id: str
    session: int
    date: str
    speaker: str
    text: str
    caption: str | None = None

    @property
    def line(self) -> str:
        """``"Speaker: text [shares caption]"``."""
        shared = f" [shares {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{shared}"


@dataclass(frozen=True)
class Question:
    """One question, its category and its evidence turn ids."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One conversation (a LoCoMo sample, a REALTALK chat): its turns in order and its questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    #: questions skipped: evidence that names no turn, or not only turns (:func:`normalise_evidence`)
    skipped: int = 0


@dataclass(frozen=True)
class Dataset:
    """One set's conversations, its name and what its question categories are called."""

    name: str
    conversations: tuple[Conversation, ...]
    categories: dict[int, str] = field(default_factory=lambda: dict(CATEGORIES))


def _parse_date(text: str) -> datetime | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _questions(qa: Iterable[Mapping[str, Any]], turns: Sequence[Turn]) -> tuple[tuple[Question, ...], int]:
    """The questions whose evidence all names turns (:func:`normalise_evidence`), and how many were not."""
    order = [t.dia_id for t in turns]
    questions: list[Question] = []
    skipped = 0
    for q in qa:
        evidence = normalise_evidence(q.get("evidence") or [], order)
        if evidence.ids and not evidence.missing:
            questions.append(Question(str(q["question"]), int(q["category"]), evidence.ids))
        else:
            skipped += 1
    return tuple(questions), skipped


def _read_json(source: Path) -> Any:
    try:
        return json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{str(source)!r} is not JSON: {exc}") from exc


def _not_found(source: Path) -> ConfigurationError:
    return ConfigurationError(
        f"LoCoMo data not found at {str(source)!r}. Fix: pass --data PATH to locomo10.json or to "
        "the REALTALK folder, or put them at data/locomo/locomo10.json and data/realtalk/ in the "
        "checkout (or under $LANGMEM_PLUGIN_DATA); docs/benchmarks.md says where to get them."
    )


def _sessions(conversation: Mapping[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for k in conversation if (m := _SESSION.fullmatch(k)))


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read ``locomo10.json`` (or any file of its shape).

    Raises:
        ConfigurationError: the file is missing or is not LoCoMo-shaped (the message says which).
    """
    source = Path(path)
    if not source.is_file():
        raise _not_found(source)
    return _locomo_samples(_read_json(source), source)


def _locomo_samples(raw: Any, source: Path) -> list[Conversation]:
    if not isinstance(raw, list):
        raise ConfigurationError(f"{str(source)!r}: expected a list of samples, got {type(raw).__name__}")
    conversations: list[Conversation] = []
    for n, sample in enumerate(raw):
        try:
            conv = sample["conversation"]
            turns = tuple(
                Turn(
                    dia_id=str(t["dia_id"]),
                    session=s,
                    date=str(conv.get(f"session_{s}_date_time", "")),
                    speaker=str(t["speaker"]),
                    text=str(t["text"]),
                    caption=t.get("blip_caption") or None,
                )
                for s in _sessions(conv)
                for t in conv[f"session_{s}"]
            )
            questions, skipped = _questions(sample["qa"], turns)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigurationError(
                f"{str(source)!r}: sample {n} is not LoCoMo-shaped ({type(exc).__name__}: {exc})"
            ) from exc
        sample_id = str(sample.get("sample_id", f"sample-{n}"))
        conversations.append(Conversation(sample_id, turns, questions, skipped))
    return conversations


def _locomo_date(text: str) -> str:
    """A REALTALK time (``"29.12.2023, 22:42:04"``) in LoCoMo's form (``"10:42 pm on 29 December, 2023"``).

    >>> _locomo_date("06.01.2024, 09:05:00"), _locomo_date("not a date")
    ('9:05 am on 6 January, 2024', 'not a date')
    """
    try:
        when = datetime.strptime(text.strip(), "%d.%m.%Y, %H:%M:%S")
    except ValueError:
        return text
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {when.strftime('%B')}, {when.year}"


def _realtalk_chat(source: Path, chat: Any = None) -> Conversation:
    if chat is None:
        chat = _read_json(source)
    try:
        sessions = _sessions(chat)
        if not isinstance(chat, dict) or not sessions:
            raise ValueError("no session_N lists")
        turns: list[Turn] = []
        for s in sessions:
            listed = chat[f"session_{s}"]
            first = str(listed[0].get("date_time", "")) if listed else ""
            date = _locomo_date(str(chat.get(f"session_{s}_date_time") or first))
            turns.extend(
                Turn(
                    dia_id=str(t["dia_id"]),
                    session=s,
                    date=date,
                    speaker=str(t["speaker"]),
                    text=str(t.get("clean_text", t.get("text", ""))),
                )
                for t in listed
            )
        questions, skipped = _questions(chat["qa"], turns)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ConfigurationError(
            f"{str(source)!r} is not a REALTALK chat (session_N turn lists and qa) "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    return Conversation(source.stem, tuple(turns), questions, skipped)


def _chat_order(path: Path) -> tuple[int, str]:
    number = _CHAT_NUMBER.search(path.stem)
    return (int(number.group(1)) if number else 1 << 30, path.name)


def load_realtalk(path: str | Path) -> list[Conversation]:
    """Read REALTALK: a folder of chat files (``Chat_1_Emi_Elise.json``, ...; in their number's order)
    or one chat file.

    A turn's text is its ``clean_text``; its date is its session's (``session_N_date_time``, else
    the session's first message's), in LoCoMo's form. Evidence is read by :func:`normalise_evidence`.

    Raises:
        ConfigurationError: the path is missing, holds no chat, or a file is not a chat.
    """
    source = Path(path)
    if source.is_dir():
        files = sorted((f for f in source.glob("*.json") if f.is_file()), key=_chat_order)
        if not files:
            raise ConfigurationError(
                f"no REALTALK chat (*.json) in {str(source)!r}. Fix: pass --data the folder that "
                "holds Chat_1_Emi_Elise.json and the others."
            )
        return [_realtalk_chat(f) for f in files]
    if not source.is_file():
        raise _not_found(source)
    return [_realtalk_chat(source)]


def load_conversations(path: str | Path) -> Dataset:
    """Either set from its path: a list of samples is LoCoMo; a folder, or a file of one chat, REALTALK.

    Raises:
        ConfigurationError: the path is missing or is neither set's shape (the message says why).
    """
    source = Path(path)
    if source.is_dir():
        return Dataset("REALTALK", tuple(load_realtalk(source)), dict(REALTALK_CATEGORIES))
    if not source.is_file():
        raise _not_found(source)
    raw = _read_json(source)
    if isinstance(raw, dict):
        return Dataset("REALTALK", (_realtalk_chat(source, raw),), dict(REALTALK_CATEGORIES))
    return Dataset("LoCoMo", tuple(_locomo_samples(raw, source)), dict(CATEGORIES))


def chosen(conversations: Sequence[Conversation], which: int | str | None) -> list[Conversation]:
    """The conversations a run takes: all (``None``), the first N (an int, or its digits), or those
    numbered ``"FIRST-LAST"`` (0-based, in the set's file order, both included: the held-out ones of
    the learned ranker are LoCoMo's ``5-9`` and REALTALK's ``3-4``).

    >>> chosen("abcdefghij", "5-9"), chosen("abc", 2), chosen("abc", "2")
    (['f', 'g', 'h', 'i', 'j'], ['a', 'b'], ['a', 'b'])

    Raises:
        ConfigurationError: ``which`` is neither, or names no conversation of the set.
    """
    if which is None:
        return list(conversations)
    text = str(which).strip()
    first, dash, last = text.partition("-")
    if not first.isdecimal() or (dash and not last.isdecimal()):
        raise ConfigurationError(
            f"cannot read the conversations {which!r}: give the first N (e.g. 2) or FIRST-LAST, "
            "0-based and both included (e.g. 5-9)"
        )
    picked = list(conversations[int(first) : int(last) + 1] if dash else conversations[: int(first)])
    if not picked:
        raise ConfigurationError(
            f"the conversations {which!r} name none of the set's {len(conversations)} "
            f"(0-based: 0-{len(conversations) - 1})"
        )
    return picked


def sentences(turn: Turn) -> list[str]:
    """The turn's sentences of three words or more, then its photo's caption: each embedded alone.

    >>> sentences(Turn("D1:1", 1, "", "Ann", "Hi! I adopted a cat. Her name is Luna.", "a photo of a cat"))
    ['I adopted a cat.', 'Her name is Luna.', 'a photo of a cat']
    """
    parts = [p for p in _SENTENCE_END.split(turn.text.strip()) if len(p.split()) >= 3]
    return [*parts, turn.caption] if turn.caption else parts


def turn_value(turn: Turn, previous: Turn | None, following: Turn | None = None) -> dict[str, Any]:
    """The stored value of a turn: a memory record.

    ``previous`` and ``following`` are the turns around it; within the same session, the
    previous one's line becomes ``metadata.context`` and both their ids ``metadata.neighbours``.
    ``metadata.part_1``, ``part_2``, ... hold :func:`sentences` (at most :data:`MAX_PARTS`), which
    the dense index embeds beside the content
    (:data:`~langmem_plugin.bench.locomo.variants.EMBEDDED_FIELDS`).
    """
    metadata = {"dia_id": turn.dia_id, "session_date": turn.date, "speaker": turn.speaker}
    parts = sentences(turn)
    if len(parts) > MAX_PARTS:
        parts = [*parts[: MAX_PARTS - 1], " ".join(parts[MAX_PARTS - 1 :])]
    metadata.update({f"part_{n}": part for n, part in enumerate(parts, start=1)})
    if previous is not None and previous.session == turn.session:
        metadata["context"] = previous.line[:2000]
    around = [t.dia_id for t in (previous, following) if t is not None and t.session == turn.session]
    if around:
        metadata["neighbours"] = " ".join(around)
    created = _parse_date(turn.date)
    record = MemoryRecord(
        content=turn.line,
        category="locomo",
        kind=MemoryKind.EPISODE,
        source="bench:locomo",
        metadata=metadata,
        **({"created_at": created, "updated_at": created} if created else {}),
    )
    return record.to_value()


def conversation_text(conversation: Conversation) -> str:
    """The whole conversation as plain text: a date line per session, then one line per turn."""
    lines: list[str] = []
    session = None
    for turn in conversation.turns:
        if turn.session != session:
            session = turn.session
            lines.append(f"Session {session} ({turn.date})")
        lines.append(turn.line)
    return "\n".join(lines)


def injected_text(values: Sequence[dict[str, Any]]) -> str:
    """What recall would inject for these memories: one ``[date] content`` line each."""
    return "\n".join(f"[{v.get('metadata', {}).get('session_date', '')}] {v['content']}" for v in values)
