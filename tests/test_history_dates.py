"""The dates of imported sessions: one instant read from what people's logs hold, or a typed refusal.

Issue #28 item 4, "Time is data, never a guess": ``langmem_plugin.core.times.read_time`` reads
datetimes, ISO text, LoCoMo's and LongMemEval's formats, month names, unambiguous numeric dates
and epoch seconds; it refuses incomplete, ambiguous and unknown text with ``InvalidTimeError``,
never filling a part in from today. A session's ``id`` is kept apart from its date, which is
what BM25 reads of the session.
"""

from __future__ import annotations

import email.utils
import math
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_plugin import Memory
from langmem_plugin.core.candidates import CandidateQuery
from langmem_plugin.core.record import MemoryRecord
from langmem_plugin.core.times import read_time
from langmem_plugin.errors import ConfigurationError, InvalidTimeError
from langmem_plugin.services.remember.history_import import history_episodes, parse_time
from langmem_plugin.testing import FakeEmbeddings

USER_NS = ("memories", "user", "u1")
CONFIG = {"configurable": {"thread_id": "t-old", "user_id": "u1"}}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory(embeddings=FakeEmbeddings()) as made:
        yield made


def _at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


# --------------------------------------------------------------------------- accepted, refused

ACCEPTED: list[tuple[Any, datetime]] = [
    (datetime(2023, 5, 21, 19, 50), _at(2023, 5, 21, 19, 50)),  # naive: UTC
    (datetime(2023, 5, 21, 21, 50, tzinfo=timezone(timedelta(hours=2))), _at(2023, 5, 21, 19, 50)),
    (date(2023, 5, 21), _at(2023, 5, 21)),
    ("2023-05-21", _at(2023, 5, 21)),
    ("2023-05-21T19:50:00+02:00", _at(2023, 5, 21, 17, 50)),
    ("2023-05-21 19:50:00Z", _at(2023, 5, 21, 19, 50)),
    ("20230521", _at(2023, 5, 21)),
    ("1:56 pm on 8 May, 2023", _at(2023, 5, 8, 13, 56)),  # LoCoMo
    ("2023/05/21 (Sun) 19:50", _at(2023, 5, 21, 19, 50)),  # LongMemEval
    ("2023/05/06 (Sat) 10:00", _at(2023, 5, 6, 10)),  # year first: month before day, always
    ("2023/05/21", _at(2023, 5, 21)),
    ("May 21, 2023", _at(2023, 5, 21)),
    ("21 May 2023", _at(2023, 5, 21)),
    ("Sunday, May 21, 2023", _at(2023, 5, 21)),
    ("Sun, 21 May 2023 19:50:00 +0000", _at(2023, 5, 21, 19, 50)),
    ("May 21, 2023 7:50 pm -0500", _at(2023, 5, 22, 0, 50)),
    ("05/21/2023", _at(2023, 5, 21)),  # month first: 21 is no month
    ("21/05/2023", _at(2023, 5, 21)),  # day first
    ("05/05/2023", _at(2023, 5, 5)),  # both readings agree
    ("31.12.2023", _at(2023, 12, 31)),
    (1684698600, _at(2023, 5, 21, 19, 50)),  # epoch seconds
    (1684698600.25, _at(2023, 5, 21, 19, 50) + timedelta(milliseconds=250)),
]

REFUSED: list[tuple[Any, str]] = [
    ("sometime next week", "not a datetime, a date or text in a known format"),
    ("banana", "known format"),
    ("today", "known format"),
    ("now", "known format"),
    ("yesterday", "known format"),
    ("May 2023", "lacks a year, a month or a day"),
    ("21 May", "lacks a year, a month or a day"),
    ("19:50", "lacks a year, a month or a day"),
    ("2023", "lacks a year, a month or a day"),
    ("Sunday, July 2023", "lacks a year, a month or a day"),  # a weekday never picks the day
    ("05/06/2023", "reads both month-first (6 May 2023) and day-first (5 June 2023)"),
    ("10.05.2023", "reads both month-first"),
    ("05/21/23", "year not written in full"),
    ("2023/05/21 (Mon) 19:50", "weekday that is not the date's (2023-05-21 was a Sunday)"),
    ("Monday, May 21, 2023", "weekday that is not the date's"),
    ("2023-05-21 19:50 EST", "names the timezone 'EST'"),
    ("May 21, 2023 10:00 GMT+2", "zone name followed by an offset"),
    ("1850-01-01", "names the year 1850, not one from 1900 to 2100"),
    ("2023-05-21x19:50", "known format"),
    ("1684698600", "known format"),  # epoch seconds go as a number
    ("", "is blank"),
    (1684698600000, "milliseconds? divide by 1000"),
    (2023, "a count, a year or YYYYMMDD?"),
    (20230521, "a count, a year or YYYYMMDD?"),
    (-1, "epoch seconds of 1980 to 2100"),
    (float("nan"), "not finite"),
    (float("inf"), "not finite"),
    (True, "not a datetime, a date, text or epoch seconds"),
    (b"2023-05-21", "not a datetime, a date, text or epoch seconds"),
    (None, "not a datetime, a date, text or epoch seconds"),
    ("x" * 101, "longer than 100 characters"),
]


@pytest.mark.parametrize(("value", "instant"), ACCEPTED, ids=[repr(v)[:40] for v, _ in ACCEPTED])
def test_what_reads_as_one_instant(value: Any, instant: datetime) -> None:
    found = read_time(value)
    assert found == instant
    assert found.tzinfo is UTC


@pytest.mark.parametrize(("value", "problem"), REFUSED, ids=[repr(v)[:40] for v, _ in REFUSED])
def test_what_is_refused_names_the_value_and_the_fix(value: Any, problem: str) -> None:
    with pytest.raises(InvalidTimeError) as info:
        read_time(value, what="the date", where="history, session 3")
    message = str(info.value)
    assert message.startswith("history, session 3: the date "), message
    assert problem in message, message
    assert "Fix: " in message
    assert info.value.value is value or (isinstance(value, float) and math.isnan(value))
    assert isinstance(info.value, ConfigurationError)
    assert parse_time(value) is None  # the lenient form says "no date", and the import refuses it


def test_dateutil_is_imported_only_to_read_text_that_is_not_iso() -> None:
    probe = (
        "import sys\nfrom langmem_plugin import Memory\nfrom langmem_plugin.core.times import read_time\n"
        "read_time('2023-05-21T19:50'); read_time(1684698600)\n"
        "print('dateutil' in sys.modules)\nread_time('May 21, 2023')\nprint('dateutil' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "True"]


# --------------------------------------------------------------------------- properties

moments = st.datetimes(min_value=datetime(1980, 1, 2), max_value=datetime(2100, 12, 30)).map(
    lambda d: d.replace(second=0, microsecond=0)
)
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


def _locomo(d: datetime) -> str:
    return f"{d:%I:%M %p}".lstrip("0").lower() + f" on {d.day} {d:%B}, {d.year}"


RENDERINGS: dict[str, tuple[Any, Any]] = {
    # name: (render, an independent parse of what was rendered)
    "iso": (datetime.isoformat, datetime.fromisoformat),
    "locomo": (_locomo, lambda t: datetime.strptime(t, "%I:%M %p on %d %B, %Y")),
    "longmemeval": (
        lambda d: d.strftime("%Y/%m/%d (%a) %H:%M"),
        lambda t: datetime.strptime(t, "%Y/%m/%d (%a) %H:%M"),
    ),
    "month-day-year": (lambda d: f"{d:%B} {d.day}, {d.year}", lambda t: datetime.strptime(t, "%B %d, %Y")),
    "day-month-year": (lambda d: f"{d.day} {d:%b} {d.year}", lambda t: datetime.strptime(t, "%d %b %Y")),
    "rfc2822": (
        lambda d: email.utils.format_datetime(d.replace(tzinfo=UTC)),
        email.utils.parsedate_to_datetime,
    ),
}


@SETTINGS
@given(moment=moments, how=st.sampled_from(sorted(RENDERINGS)))
def test_every_rendering_reads_back_as_the_instant_an_independent_parse_gives(
    moment: datetime, how: str
) -> None:
    render, independent = RENDERINGS[how]
    text = render(moment)
    expected = independent(text)
    expected = expected if expected.tzinfo else expected.replace(tzinfo=UTC)
    assert read_time(text) == expected
    if how not in ("month-day-year", "day-month-year"):  # those name the day only
        assert expected == moment.replace(tzinfo=UTC)


@SETTINGS
@given(moment=moments, offset=offsets)
def test_aware_datetimes_and_their_iso_text_keep_their_instant(moment: datetime, offset: timezone) -> None:
    aware = moment.replace(tzinfo=offset)
    assert read_time(aware) == aware
    assert read_time(aware.isoformat()) == aware
    assert read_time(aware.timestamp()) == aware
    assert read_time(int(aware.timestamp())) == aware  # whole minutes: exact


@SETTINGS
@given(day=st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)))
def test_numeric_dates_read_only_when_one_reading_is_possible(day: date) -> None:
    month_first, day_first = f"{day:%m/%d/%Y}", f"{day:%d/%m/%Y}"
    if day.day > 12 or day.day == day.month:
        assert read_time(month_first) == read_time(day_first) == _at(day.year, day.month, day.day)
    else:
        for text in (month_first, day_first):
            with pytest.raises(InvalidTimeError, match="reads both month-first"):
                read_time(text)


@SETTINGS
@given(moment=moments, shift=st.integers(1, 6))
def test_a_weekday_that_is_not_the_dates_is_refused(moment: datetime, shift: int) -> None:
    wrong = (moment + timedelta(days=shift)).strftime("%a")
    with pytest.raises(InvalidTimeError, match="weekday that is not the date's"):
        read_time(moment.strftime(f"%Y/%m/%d ({wrong}) %H:%M"))


date_words = st.sampled_from(
    [*"0123456789/-.:, ()+", "May", "Sun", "Mon", "2023", "UTC", "EST", "on", "at", "pm", "T", "Z", " "]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=40), st.lists(date_words, max_size=14).map("".join)))
def test_random_text_is_a_date_it_names_whole_or_a_typed_refusal(text: str) -> None:
    refusal: InvalidTimeError | None = None
    try:
        found = read_time(text)
    except InvalidTimeError as exc:
        refusal = exc
    if refusal is not None:
        assert str(refusal).startswith("the time "), str(refusal)
        return
    assert found.tzinfo is UTC
    assert str(found.year) in text or any(str(y) in text for y in (found.year - 1, found.year + 1))
    if abs(found - datetime.now(UTC)) < timedelta(days=2):  # never "now" unless the text says so
        assert str(datetime.now(UTC).year) in text


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


hostile = st.one_of(
    st.binary(max_size=8),
    st.complex_numbers(),
    st.booleans(),
    st.floats(allow_nan=True).filter(lambda f: not (315532800 <= f < 4133980800)),
    st.integers().filter(lambda n: not (315532800 <= n < 4133980800)),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(object),
    st.builds(_Unprintable),
    st.text(alphabet="\x00\u2028\ud800\ufeff(){}[]<>'\"\\%$", max_size=20),
    st.text(min_size=101, max_size=300),
)


@SETTINGS
@given(hostile)
def test_hostile_values_are_refused_with_the_typed_error(value: Any) -> None:
    with pytest.raises(InvalidTimeError) as info:
        read_time(value, what="the date", where="history, session 1")
    assert str(info.value).startswith("history, session 1: the date ")
    assert type(value).__name__ in str(info.value)


# --------------------------------------------------------------------------- through the import


def _session(when: Any, n: int, ident: str | None = None) -> dict[str, Any]:
    session: dict[str, Any] = {
        "date": when,
        "messages": [
            {"role": "user", "content": f"My cousin number {n} adopted a parrot called Pip{n}."},
            {"role": "assistant", "content": f"Pip{n} is a lovely name for a parrot!"},
        ],
    }
    if ident is not None:
        session["id"] = ident
    return session


def _stored(memory: Memory) -> list[dict[str, Any]]:
    items = memory.store.search(USER_NS, limit=100)
    return sorted((i.value for i in items), key=lambda v: int(v["metadata"]["position"]))


def test_longmemeval_sessions_import_with_their_dates_and_ids_apart(memory: Memory) -> None:
    history = [
        _session("2023/05/21 (Sun) 19:50", 1, "answer_4be1b6b4_1"),
        _session("2023/06/02 (Fri) 08:05", 2, "sharegpt_9x7kq2_0"),
        _session(1688205600, 3, "answer_4be1b6b4_2"),  # 2023-07-01 10:00 UTC
        _session("05/21/2023", 4),
    ]
    report = memory.import_history(history, CONFIG)
    assert (report.turns, report.written, report.failed) == (4, 4, 0)
    values = _stored(memory)
    stamped = [MemoryRecord.from_value(v).created_at for v in values]
    assert stamped == [
        _at(2023, 5, 21, 19, 50),
        _at(2023, 6, 2, 8, 5),
        _at(2023, 7, 1, 10),
        _at(2023, 5, 21),
    ]
    meta = [v["metadata"] for v in values]
    assert [m["session"] for m in meta] == [
        "2023/05/21 (Sun) 19:50",
        "2023/06/02 (Fri) 08:05",
        "2023-07-01T10:00:00+00:00",  # a number: its ISO text
        "05/21/2023",
    ]
    assert [m.get("session_id") for m in meta] == [
        "answer_4be1b6b4_1",
        "sharegpt_9x7kq2_0",
        "answer_4be1b6b4_2",
        None,
    ]


def test_bm25_reads_a_sessions_date_never_its_id(memory: Memory) -> None:
    history = [
        _session("2023/05/21 (Sun) 19:50", 1, "answer_4be1b6b4_1"),
        _session("2023/06/02 (Fri) 08:05", 2, "sharegpt_9x7kq2_0"),
    ]
    memory.import_history(history, CONFIG)
    store: Any = memory.store
    by_id, by_date = store.search_candidates(
        [CandidateQuery(USER_NS, "4be1b6b4 9x7kq2", 10), CandidateQuery(USER_NS, "2023/06/02 Fri", 10)]
    )
    assert by_date.lexical_index
    assert by_id.lexical == []  # the ids are not words of the session
    assert by_date.lexical[0].value["metadata"]["session"] == "2023/06/02 (Fri) 08:05"


def test_an_undated_session_with_an_id_is_labelled_by_its_number() -> None:
    episodes = history_episodes(
        [
            _session(None, 1, "first-chat"),
            _session("  ", 2),
            _session(datetime(2023, 5, 21, 19, 50), 3, "third"),
        ]
    )
    assert [(e.session, e.session_id, e.time) for e in episodes] == [
        ("1", "first-chat", None),
        ("2", None, None),
        ("2023-05-21 19:50:00", "third", _at(2023, 5, 21, 19, 50)),
    ]


@pytest.mark.parametrize(
    ("when", "problem"),
    [
        ("05/06/2023", "reads both month-first (6 May 2023) and day-first (5 June 2023)"),
        ("sometime next week", "the date is not a datetime, a date or text in a known format"),
        (1684698600000, "milliseconds? divide by 1000"),
        (True, "not a datetime, a date, text or epoch seconds"),
    ],
)
def test_an_import_with_a_date_that_is_not_one_instant_writes_nothing(
    memory: Memory, when: Any, problem: str
) -> None:
    history = [_session("2023-05-01", 1), _session(when, 2, "s2")]
    with pytest.raises(InvalidTimeError) as info:
        memory.import_history(history, CONFIG)
    message = str(info.value)
    assert message.startswith("history, session 2: the date "), message
    assert problem in message
    assert "Fix: " in message
    assert memory.store.search(USER_NS, limit=10) == []
