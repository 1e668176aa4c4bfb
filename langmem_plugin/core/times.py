"""Times given by people (a session's date, recall's ``as_of``) read as one instant, or refused.

:func:`read_time` takes

- a ``datetime`` (naive: UTC, the package's convention) or a ``date`` (its midnight, UTC);
- ISO 8601 text (``"2023-05-21"``, ``"2023-05-21T19:50:00+02:00"``);
- text that python-dateutil reads *whole*, without fuzzy matching, with a year, a month and a day:
  LoCoMo's ``"1:56 pm on 8 May, 2023"``, LongMemEval's ``"2023/05/21 (Sun) 19:50"``,
  ``"May 21, 2023"``, ``"21 May 2023"``, ``"Sun, 21 May 2023 19:50 +0000"``;
  numeric day/month text only when it reads one way (``"05/21/2023"``, ``"21/05/2023"``);
- epoch seconds as an ``int`` or ``float`` from 1980 to 2100.

Text must name a year from 1900 to 2100 (:data:`TEXT_YEARS`).

Everything else is refused with :class:`~langmem_plugin.errors.InvalidTimeError` naming the
value and the fix; nothing is ever guessed or filled in from today:

- text with a missing part (``"May 2023"``, ``"21 May"``, ``"19:50"``, ``"Sunday, July 2023"``),
  a two-digit year (``"05/21/23"``), words a date does not hold (``"sometime next week"``,
  ``"today"``, ``"banana"``), or more than 100 characters;
- numeric text that reads both day-first and month-first as two dates (``"05/06/2023"``);
- a weekday that is not the date's (``"2023/05/21 (Mon)"``: the 21st was a Sunday);
- a named timezone other than UTC/GMT/Z (``"EST"``, ``"IST"``: abbreviations are ambiguous)
  and ``"GMT+2"`` forms (read with POSIX's reversed sign by parsers): give an offset, ``+02:00``;
- numbers below 1980 (a count, a year or ``20230521`` rather than a time) or above 2100
  (milliseconds: divide by 1000), NaN, infinities, and ``bool``.

The time comes back timezone-aware, in UTC.

>>> read_time("2023/05/21 (Sun) 19:50").isoformat()
'2023-05-21T19:50:00+00:00'
>>> read_time(1684698600).isoformat()
'2023-05-21T19:50:00+00:00'
"""

from __future__ import annotations

import math
import numbers
import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any, TypeAlias

from langmem_plugin.errors import InvalidTimeError, shown

__all__ = ["EPOCH_RANGE", "TEXT_YEARS", "TimeLike", "read_time"]

#: What :func:`read_time` takes.
TimeLike: TypeAlias = datetime | date | str | int | float

#: The epoch seconds a number may hold: from 1980-01-01 to the end of 2100 (UTC).
EPOCH_RANGE: tuple[datetime, datetime] = (datetime(1980, 1, 1, tzinfo=UTC), datetime(2101, 1, 1, tzinfo=UTC))
#: The years text may name: a date outside them in a chat log is a typo or a number, not a time.
TEXT_YEARS: tuple[int, int] = (1900, 2100)

_MAX_CHARS = 100
_UNKNOWN = "is not a datetime, a date or text in a known format"
_FIX = "pass a datetime, or ISO text such as '2023-05-21T19:50' (or '2023-05-21')"
_UTC_NAMES = frozenset({"UTC", "GMT", "Z", "UT"})
_WORD = re.compile(r"[A-Za-z]+")
_PAREN_WORD = re.compile(r"\(\s*([A-Za-z]+)\.?\s*\)")
_YEAR_FIRST = re.compile(r"\s*\d{4}\D")
# what fromisoformat reads here (it alone also takes any character between date and time)
_ISO = re.compile(
    r"\d{4}(?:-\d{2}-\d{2}|\d{4})"
    r"(?:[Tt ]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d{1,6})?)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?"
)
# "GMT+2", "BRST-3": dateutil reads a zone name followed by an offset with POSIX's reversed sign
_NAME_THEN_OFFSET = re.compile(r"(?<![A-Za-z])([A-Za-z]{1,5})\s*[+-]\s*\d")
# two sets of defaults that share no year, month or day: a part the text lacks shows as a difference
_DEFAULTS = (datetime(2000, 1, 1), datetime(2004, 3, 2))
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Refused(Exception):
    """A reason to refuse (``problem`` follows the value's name: "the date ..."), and its fix."""

    def __init__(self, problem: str, fix: str = _FIX) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def _utc(value: datetime) -> datetime:
    aware = value if value.tzinfo is not None and value.utcoffset() is not None else value.replace(tzinfo=UTC)
    try:
        return aware.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise _Refused("is out of the range a datetime holds in UTC") from exc


def _from_number(value: numbers.Real) -> datetime:
    seconds = float(value)
    low, high = EPOCH_RANGE
    if not math.isfinite(seconds):
        raise _Refused("is a number that is not finite (a number is read as epoch seconds)")
    if not low.timestamp() <= seconds < high.timestamp():
        hint = (
            "milliseconds? divide by 1000" if seconds >= high.timestamp() else "a count, a year or YYYYMMDD?"
        )
        raise _Refused(
            f"is a number outside the epoch seconds of {low.year} to {high.year - 1} ({hint})",
            "pass epoch seconds, a datetime, or ISO text such as '2023-05-21T19:50'",
        )
    if isinstance(value, numbers.Integral):  # exact: no float rounding
        return _EPOCH + timedelta(seconds=int(value))
    return datetime.fromtimestamp(seconds, UTC)


def _zone(name: str | None, offset: int | None) -> tzinfo | None:
    """dateutil's ``tzinfos`` callback: offsets and UTC's names; any other zone name is refused."""
    from dateutil import tz

    if offset is not None and name is None:
        return tz.tzoffset(None, offset)
    if name is None:
        return None
    if name.upper() in _UTC_NAMES and not offset:
        return tz.UTC
    if offset is not None:  # "+0200 (CEST)": the offset says it
        return tz.tzoffset(name, offset)
    raise _Refused(
        f"names the timezone {name!r}, and zone names are ambiguous",
        "give the offset instead, e.g. '2023-05-21 19:50 +02:00', or a timezone-aware datetime",
    )


def _parsed(text: str, *, dayfirst: bool, yearfirst: bool) -> datetime:
    """``text`` read by dateutil with each set of defaults: the same datetime, or refused."""
    from dateutil import parser

    found: list[datetime] = []
    for default in _DEFAULTS:
        try:
            found.append(
                parser.parse(
                    text, default=default, dayfirst=dayfirst, yearfirst=yearfirst, fuzzy=False, tzinfos=_zone
                )
            )
        except _Refused:
            raise
        except (ValueError, OverflowError, TypeError, IndexError, AttributeError) as exc:
            if len(found) == 1:  # read with one default, not the other: a part is missing
                break
            raise _Refused(_UNKNOWN) from exc
    if len(found) < 2 or found[0] != found[1]:
        raise _Refused("lacks a year, a month or a day (nothing is filled in from today)")
    return found[0]


def _prepared(text: str) -> tuple[str, set[int]]:
    """``text`` without a parenthesised weekday, and the weekdays (0: Monday) it names anywhere.

    Also refuses a zone name followed by an offset (``"GMT+2"``), which dateutil reads reversed.
    """
    from dateutil import parser

    info = parser.parserinfo()
    for match in _NAME_THEN_OFFSET.finditer(text):
        word = match.group(1)
        if (word.isupper() or word in info.UTCZONE) and not (
            info.month(word) or info.weekday(word) is not None or info.ampm(word) is not None
        ):
            raise _Refused(
                f"has a zone name followed by an offset ({match.group()!r}), which POSIX reads reversed",
                "give the offset alone, e.g. '2023-05-21 19:50 +02:00'",
            )
    named = {day for word in _WORD.findall(text) if (day := info.weekday(word)) is not None}

    def drop(match: re.Match[str]) -> str:
        return " " if info.weekday(match.group(1)) is not None else match.group()

    def drop_word(match: re.Match[str]) -> str:  # dateutil would move a date without a day to it
        return " " if info.weekday(match.group()) is not None else match.group()

    return _WORD.sub(drop_word, _PAREN_WORD.sub(drop, text)), named


def _from_text(text: str) -> datetime:
    found = _from_iso(text) if _ISO.fullmatch(text) else None
    if found is None:
        found = _from_words(text)
    low, high = TEXT_YEARS
    if not low <= found.year <= high:
        raise _Refused(f"names the year {found.year}, not one from {low} to {high}")
    return found


def _from_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _from_words(text: str) -> datetime:
    if len(text) > _MAX_CHARS:
        raise _Refused(f"is longer than {_MAX_CHARS} characters, which no date is")
    cleaned, named = _prepared(text)
    if _YEAR_FIRST.match(cleaned):  # year/month/day: nobody writes year/day/month
        found = _parsed(cleaned, dayfirst=False, yearfirst=True)
    else:
        found = _parsed(cleaned, dayfirst=False, yearfirst=False)
        day_first = _parsed(cleaned, dayfirst=True, yearfirst=False)
        if day_first != found:
            first, second = f"{found.day} {found:%B %Y}", f"{day_first.day} {day_first:%B %Y}"
            raise _Refused(
                f"reads both month-first ({first}) and day-first ({second})",
                "write it unambiguously: ISO text such as '2023-05-21', a month name, or a datetime",
            )
    if not re.search(rf"(?<!\d){found.year:04d}(?!\d)", cleaned):
        raise _Refused(
            "has a year not written in full (a two-digit year is a guess)",
            "write the year with four digits, or pass ISO text such as '2023-05-21'",
        )
    if named - {found.weekday()}:
        raise _Refused(
            f"names a weekday that is not the date's ({found:%Y-%m-%d} was a {found:%A})",
            "check the date: drop the weekday, or fix the day",
        )
    return found


def read_time(value: Any, *, what: str = "the time", where: str | None = None) -> datetime:
    """``value`` as one instant, timezone-aware UTC; anything else refused (see the module docs).

    Args:
        value: a ``datetime``, a ``date``, text, or epoch seconds (``int``/``float``).
        what: the value's name in an error (``"the date"``, ``"as_of"``).
        where: the place named first in an error (``"history, session 2"``).

    Raises:
        InvalidTimeError: ``value`` is not a time this module reads; the message names ``where``,
            ``what``, the value, the rule and the fix.
    """
    try:
        if isinstance(value, datetime):
            return _utc(value)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, bool) or not isinstance(value, numbers.Real | str):
            raise _Refused("is not a datetime, a date, text or epoch seconds")
        if isinstance(value, numbers.Real):
            return _from_number(value)
        text = str.__str__(value).strip()
        if not text:
            raise _Refused("is blank")
        return _utc(_from_text(text))
    except _Refused as refused:
        place = f"{where}: " if where else ""
        raise InvalidTimeError(
            f"{place}{what} {refused.problem}, got {type(value).__name__} {shown(value)}. Fix: {refused.fix}",
            value=value,
        ) from None
