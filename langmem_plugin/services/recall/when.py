"""Time named in a question ("in May 2023", "on 21.01.2024", "last week"), read as periods.

Recall's time lift (:attr:`~langmem_plugin.services.recall.retrieval.RetrievalConfig.time_weight`)
lifts a memory dated inside a period the question names. The periods are read by
`dateparser <https://dateparser.readthedocs.io>`_ (BSD-3-Clause), in the languages given
(``RetrievalConfig.time_languages``; any of dateparser's locales, ``("en",)`` by default), never
from a month table of our own:

- each date expression the library finds is read again alone for its granularity: a day
  ("December 4, 2023", "21.01.2024", "yesterday"), a week ("last week"), a month ("in May
  2023", "last May"), or a year ("in 2023");
- relative expressions and a month without a year are measured from ``now`` (recall's time, or
  its ``as_of``), toward the past;
- an expression is used only when it holds a digit, or two words or more that are not the
  language's own filler words (dateparser's ``skip`` list: "the", "at", "of", ...), or is one
  of the language's relative dates in dateparser's own table ("yesterday", "gestern", "ayer",
  "hier", "昨日", "la semana pasada"; not "now"): a lone word such as "may" in "she may go",
  "the march" or "the sun at the" is not read as a time;
- the relative dates of that table are also found where dateparser's search misses them
  ("la semaine dernière", "先週" inside a sentence), and so are dates written with 年, 月 and
  日 ("2023年5月");
- a period in the future of ``now`` is dropped: memory holds what was said before it.

Languages must be given: with dateparser's language detection every question costs tens of
milliseconds and common words ("do", "pet") read as dates. Unknown codes raise
:class:`~langmem_plugin.errors.ConfigurationError` when the config is made.

>>> from datetime import datetime, UTC
>>> now = datetime(2024, 2, 1, tzinfo=UTC)
>>> [(p.start.date().isoformat(), p.end.date().isoformat()) for p in question_periods(
...     "What book was Emi reading on 21.01.2024?", now)]
[('2024-01-21', '2024-01-22')]
>>> [(p.start.date().isoformat(), p.end.date().isoformat()) for p in question_periods(
...     "Where did Dave travel in May 2023?", now)]
[('2023-05-01', '2023-06-01')]
>>> question_periods("Did she say she may come?", now)
()
>>> [(p.start.date().isoformat(), p.granularity) for p in question_periods(
...     "¿Adónde fui la semana pasada?", now, ("en", "es"))]
[('2024-01-22', 'week')]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langmem_plugin.errors import ConfigurationError

__all__ = ["Period", "check_languages", "question_periods"]

_CJK_LANGUAGES = frozenset({"ja", "zh", "zh-Hans", "zh-Hant", "yue"})  # dates in 年, 月, 日
_MAX_QUERY_CHARS = 2_000  # a question longer than this is read from its start only
_WORD = re.compile(r"\w+")
_DIGIT = re.compile(r"\d")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")  # a phrase written with letters is found as whole words
_CJK_DATE = re.compile(r"\d{4}年(?:\d{1,2}月(?:\d{1,2}日)?)?|\d{1,2}月\d{1,2}日")


@dataclass(frozen=True, slots=True)
class Period:
    """``[start, end)`` in UTC, as a question named it (``text``), with its ``granularity``."""

    start: datetime
    end: datetime
    granularity: str
    text: str

    def holds(self, when: datetime, after_days: float = 0.0) -> bool:
        """Whether ``when`` is in the period, or up to ``after_days`` after its end."""
        return self.start <= when < self.end + timedelta(days=after_days)


def check_languages(languages: Sequence[str]) -> tuple[str, ...]:
    """``languages`` as a tuple of dateparser locale codes; a :class:`ConfigurationError` otherwise."""
    if isinstance(languages, str) or not all(isinstance(code, str) and code for code in languages):
        raise ConfigurationError(
            f"time_languages must be a tuple of language codes such as ('en',) or ('en', 'de'), "
            f"got {languages!r}"
        )
    codes = tuple(languages)
    if any(code != "en" for code in codes):  # English needs no look-up (nor dateparser's import)
        known = _known_languages()
        unknown = [code for code in codes if code != "en" and code not in known]
        if unknown:
            raise ConfigurationError(
                f"time_languages has codes dateparser does not know: {unknown!r}. Fix: use its "
                "language codes ('en', 'de', 'fr', 'es', ...), or () to read no time in questions"
            )
    return codes


@functools.lru_cache(maxsize=8)
def _filler(languages: tuple[str, ...]) -> frozenset[str]:
    """The words the languages' dates may hold around a time without naming one ("the", "at")."""
    from dateparser.languages.loader import default_loader

    return frozenset(
        str(word).lower()
        for code in languages
        for word in default_loader.get_locale(code).info.get("skip", ())
    )


@functools.lru_cache(maxsize=8)
def _relative(languages: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str]]:
    """The languages' relative dates in dateparser's table ("yesterday", "先週"), but "now",
    lowercased; and a pattern that finds them, longest first, as whole words where they are
    written with letters."""
    from dateparser.languages.loader import default_loader

    phrases = {
        str(phrase).lower()
        for code in languages
        for key, listed in default_loader.get_locale(code).info.get("relative-type", {}).items()
        if not str(key).startswith("0 second")
        for phrase in listed
    }
    alternatives = (
        rf"(?<!\w){re.escape(p)}(?!\w)" if _LATIN.search(p) else re.escape(p)
        for p in sorted(phrases, key=len, reverse=True)
    )
    return frozenset(phrases), re.compile("|".join(alternatives) or r"(?!)", re.IGNORECASE)


@functools.cache
def _known_languages() -> frozenset[str]:
    from dateparser.languages.loader import default_loader

    return frozenset(default_loader.get_locale_map())


_SETTINGS: dict[str, Any] = {
    "PREFER_DATES_FROM": "past",
    "RETURN_AS_TIMEZONE_AWARE": False,
    "TIMEZONE": "UTC",
    "TO_TIMEZONE": "UTC",
    "PREFER_DAY_OF_MONTH": "first",
}


def question_periods(query: str, now: datetime, languages: Sequence[str] = ("en",)) -> tuple[Period, ...]:
    """The periods ``query`` names, measured from ``now`` (see the module docs); ``()`` for none."""
    codes = tuple(languages)
    if not codes or not query or not query.strip():
        return ()
    base = now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now
    return _periods(query[:_MAX_QUERY_CHARS], base.replace(second=0, microsecond=0), codes)


#: The languages whose date words :func:`_may_name_a_date` knows well enough to skip the search:
#: English's tables are plain words (other locales' simplifications are patterns such as
#: ``pasad[oa]`` and their words are read accent-folded, so their questions are always searched).
_PREFILTERED = frozenset({"en"})


@functools.lru_cache(maxsize=8)
def _date_words(languages: tuple[str, ...]) -> frozenset[str]:
    """Every word a date can be written with in ``languages``, lowercased: each word of each text
    in the languages' dateparser tables (month and day names, units, relative dates, the words its
    simplifications rewrite such as "noon" or "a", "ago", "in", ...) and of the time zones it reads."""
    from dateparser.languages.loader import default_loader
    from dateparser.timezones import timezone_info_list

    words: set[str] = set()

    def gather(data: Any) -> None:
        if isinstance(data, str):
            words.update(w.lower() for w in _WORD.findall(data))
        elif isinstance(data, dict):
            for key, item in data.items():
                gather(key)
                gather(item)
        elif isinstance(data, list | tuple):
            for item in data:
                gather(item)

    for code in languages:
        info = default_loader.get_locale(code).info
        gather({key: item for key, item in info.items() if key not in ("name", "date_order")})
    for zones in timezone_info_list:
        gather([str(zone[0]) for zone in zones.get("timezones", ())])
    return frozenset(words)


def _may_name_a_date(query: str, languages: tuple[str, ...]) -> bool:
    """Whether dateparser's search could find a time in ``query`` that :func:`_periods` keeps.

    The search reads a date from a run of words its tables know (an unknown word ends the run),
    and :func:`_periods` keeps one only when it holds a digit or two words that are not filler
    (a relative date alone, "yesterday", is found by :func:`_relative`'s pattern). So a question
    with no digit and no run of known words holding two such words names no time the search
    could give, and most questions are of that kind; the search costs about as much as the rest
    of a recall. Only for :data:`_PREFILTERED` languages: for any other, ``True``.
    """
    if _DIGIT.search(query):
        return True
    if not set(languages) <= _PREFILTERED:
        return True
    vocabulary = _date_words(languages)
    filler = _filler(languages)
    named = 0  # the words of the current run of known words that are not filler
    for word in _WORD.findall(query):
        word = word.lower()
        if not word.isascii():  # read accent-folded by dateparser: it may be a known word
            return True
        if word not in vocabulary:
            named = 0
        elif word not in filler:
            named += 1
            if named >= 2:
                return True
    return False


@functools.lru_cache(maxsize=1024)
def _periods(query: str, base: datetime, languages: tuple[str, ...]) -> tuple[Period, ...]:
    from dateparser.search import search_dates

    settings = {**_SETTINGS, "RELATIVE_BASE": base}
    found: list[tuple[str, datetime]] = []
    if _may_name_a_date(query, languages):
        try:
            found = search_dates(query, languages=list(languages), settings=settings) or []
        except (ValueError, OverflowError, TypeError):  # the library's own limits: no time read
            return ()
    periods: list[Period] = []
    filler = _filler(languages)
    relative, pattern = _relative(languages)
    texts = [
        text
        for text, _ in found
        if _DIGIT.search(text)
        or text.strip().lower() in relative
        or sum(w.lower() not in filler for w in _WORD.findall(text)) >= 2
    ]
    texts += [m.group() for m in pattern.finditer(query)]
    if any(code in _CJK_LANGUAGES for code in languages):
        texts += _CJK_DATE.findall(query)
    for text in texts:
        period = _period(text, base, languages)
        if period is not None and period.start <= base.replace(tzinfo=UTC) and period not in periods:
            periods.append(period)
    return tuple(periods)


def _period(text: str, base: datetime, languages: tuple[str, ...]) -> Period | None:
    from dateparser.date import DateDataParser

    try:
        parser = DateDataParser(languages=list(languages), settings={**_SETTINGS, "RELATIVE_BASE": base})
        data = parser.get_date_data(text)
    except (ValueError, OverflowError, TypeError):
        return None
    if data is None or data.date_obj is None:
        return None
    day = data.date_obj.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
    granularity = str(data.period or "day")
    if granularity == "year":
        start = day.replace(month=1, day=1)
        end = start.replace(year=start.year + 1)
    elif granularity == "month":
        start = day.replace(day=1)
        end = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else start.replace(month=start.month + 1)
        )
    elif granularity == "week":
        start = day - timedelta(days=day.weekday())
        end = start + timedelta(days=7)
    else:  # a day, or a time of day: its day
        granularity = "day"
        start, end = day, day + timedelta(days=1)
    return Period(start, end, granularity, text)
