"""The LoCoMo data of ``bench locomo``: its conversations, and each turn as a stored memory.

:func:`load_locomo` reads ``locomo10.json`` into :class:`Conversation` s (their :class:`Turn` s and
:class:`Question` s, evidence normalised by :func:`parse_evidence`); :func:`turn_value` is what a
turn is stored as (a memory record, with its :func:`sentences` as ``metadata.part_*``);
:func:`conversation_text` and :func:`injected_text` are the texts whose tokens are counted. The run
itself is :func:`langmem_plugin.bench.locomo.run_locomo_bench`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langmem_plugin.core.record import MemoryKind, MemoryRecord
from langmem_plugin.errors import ConfigurationError

__all__ = [
    "CATEGORIES",
    "MAX_PARTS",
    "TOKEN_MODEL",
    "Conversation",
    "Question",
    "Turn",
    "conversation_text",
    "injected_text",
    "load_locomo",
    "parse_evidence",
    "sentences",
    "turn_value",
]

CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
#: The token encoding of LoCoMo's comparisons (gpt-4 / gpt-3.5).
TOKEN_MODEL = "gpt-4"

#: At most this many of a turn's sentences are embedded alone (the rest go into the last one).
MAX_PARTS = 8

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SESSION = re.compile(r"session_(\d+)")


def parse_evidence(raw: Iterable[Any]) -> tuple[str, ...]:
    """Evidence turn ids, normalised: ``["D8:6; D9:17", "D30:05"]`` → ``("D8:6", "D9:17", "D30:5")``.

    >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D1:3 D1:4", "D1:3"])
    ('D8:6', 'D9:17', 'D11:26', 'D30:5', 'D1:3', 'D1:4')
    """
    out: list[str] = []
    for entry in raw:
        for session, turn in _EVIDENCE.findall(str(entry)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id not in out:
                out.append(dia_id)
    return tuple(out)


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
    """One LoCoMo sample: its turns in order and its questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped: int = 0  # questions without parseable evidence


def _parse_date(text: str) -> datetime | None:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read ``locomo10.json`` (or any file of its shape).

    Raises:
        ConfigurationError: the file is missing or is not LoCoMo-shaped (the message says which).
    """
    source = Path(path)
    if not source.is_file():
        raise ConfigurationError(
            f"LoCoMo data not found at {str(source)!r}. Fix: pass --data PATH to locomo10.json "
            "(e.g. ../shared/data/locomo/locomo10.json from the repository root)."
        )
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{str(source)!r} is not JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise ConfigurationError(f"{str(source)!r}: expected a list of samples, got {type(raw).__name__}")
    conversations: list[Conversation] = []
    for n, sample in enumerate(raw):
        try:
            conv = sample["conversation"]
            sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
            turns = tuple(
                Turn(
                    dia_id=str(t["dia_id"]),
                    session=s,
                    date=str(conv.get(f"session_{s}_date_time", "")),
                    speaker=str(t["speaker"]),
                    text=str(t["text"]),
                    caption=t.get("blip_caption") or None,
                )
                for s in sessions
                for t in conv[f"session_{s}"]
            )
            questions: list[Question] = []
            skipped = 0
            for q in sample["qa"]:
                evidence = parse_evidence(q.get("evidence") or [])
                if evidence:
                    questions.append(Question(str(q["question"]), int(q["category"]), evidence))
                else:
                    skipped += 1
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{str(source)!r}: sample {n} is not LoCoMo-shaped ({type(exc).__name__}: {exc})"
            ) from exc
        sample_id = str(sample.get("sample_id", f"sample-{n}"))
        conversations.append(Conversation(sample_id, turns, tuple(questions), skipped))
    return conversations


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
