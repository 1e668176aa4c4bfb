"""``langmem-plugin bench updates``: when a fact changed, does the newer statement reach the prompt?

Knowledge updates as LongMemEval asks them, on histories built here (no downloaded data): a
seeded generator (:func:`make_histories`) writes user–assistant chats of about 30 dated sessions
over six months of everyday exchanges (:func:`~langmem_plugin.bench.core.sample_sentences` and
stock assistant advice), into which it places about ten facts from varied templates — a count
("I have 17 postcards in my collection", later "my postcard collection is up to 25 now"), the
city, the job title, the car, the cat's name, the weekly running distance, the favourite band,
the manager... Each fact is stated in one session and updated in a later one (some twice), in a
different phrasing each time, and each has a question ("How many postcards do I have in my
collection?"). The topic also comes up once without a value, as real chats do.

Each history goes into a fresh :class:`~langmem_plugin.Memory` with its defaults
(``Memory(embeddings=...)``: the default store) through
:meth:`~langmem_plugin.Memory.import_history`, and every question is recalled with
:meth:`~langmem_plugin.Memory.recall` from another thread of the same user, twice: as of a day
after the last session (``as_of``), and "now", years later (``as_of`` left out), where recency
can no longer tell the two statements apart. An injected item (``section == "memories"``) is
mapped back to the exchanges it holds by the message ids ``import_history`` keeps in
``metadata.message_ids``. Per question it measures:

- **newest injected** (the metric): the latest statement of the fact is in the prompt;
- **older too**: an earlier statement is injected beside it;
- **only older** (the failure): an earlier statement is injected and the latest is not;
- **newest first**: of the questions with both injected, the latest ranks above every earlier;
- the tokens injected and the query time of the whole recall (embedding included), p50/p95.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langmem_plugin.bench.core import sample_sentences, session_dates
from langmem_plugin.bench.report import format_table, percentile

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from langmem_plugin import Memory
    from langmem_plugin.core.scope import Scope

__all__ = [
    "KINDS",
    "Answer",
    "Fact",
    "FactKind",
    "Statement",
    "UpdateHistory",
    "UpdatesResult",
    "make_histories",
    "make_history",
    "run_updates_bench",
]

#: The date format of LongMemEval's sessions (``import_history`` reads it).
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


def _counts(
    low: int, high: int, step: tuple[int, int], *, down: bool = False, unit: int = 1
) -> Callable[..., list[str]]:
    """Values of a count: a start in ``low..high``, then each a ``step`` further (up, or ``down``),
    all in multiples of ``unit``."""

    def values(rng: random.Random, n: int) -> list[str]:
        value = rng.randint(low // unit, high // unit)
        out = [value]
        for _ in range(n - 1):
            move = rng.randint(step[0] // unit, step[1] // unit)
            value += -move if down else move
            out.append(value)
        return [str(v * unit) for v in out]

    return values


def _pool(*names: str) -> Callable[..., list[str]]:
    """Values drawn from ``names``, each different."""

    def values(rng: random.Random, n: int) -> list[str]:
        return rng.sample(names, n)

    return values


@dataclass(frozen=True)
class FactKind:
    """A kind of fact: its question, its values, how it is first stated, updated, and mentioned.

    Attributes:
        name: what it is (``"postcards"``).
        question: what is asked of it.
        values: ``values(rng, n)``: ``n`` different values, oldest first.
        first: phrasings of the first statement (``{v}``: the value).
        later: phrasings of an update, none of them a ``first`` one.
        mention: the topic without a value (a distractor, as real chats have).
    """

    name: str
    question: str
    values: Callable[[random.Random, int], list[str]] = field(repr=False)
    first: tuple[str, ...]
    later: tuple[str, ...]
    mention: tuple[str, ...]


# Each kind: its name and question, then the phrasings of a first statement (``=``), of an update
# (``>``, none of them a first one's) and mentions of the topic without a value (``?``); ``{v}`` is
# the value.
_PHRASINGS = """
postcards: How many postcards do I have in my collection?
= I collect postcards from every trip, and I have {v} in my collection so far.
= Fun fact about me: my postcard collection stands at {v} cards.
> My postcard collection is up to {v} now!
> I just sorted my postcards into albums: {v} of them in total.
> A friend mailed me a few more postcards, so I'm at {v} now.
? Where can I buy nice albums to keep postcards in?
? Do old postcards fade in sunlight?
houseplants: How many houseplants do I have?
= I keep {v} houseplants in my apartment.
= Counting them all, there are {v} houseplants at home.
> Update on my plant family: {v} houseplants as of today.
> After repotting everything I counted {v} houseplants.
> I picked up more plants at the market, so I have {v} houseplants now.
? Which houseplants survive low light?
? How often should I water a fern?
running: How many kilometres do I run per week?
= I run about {v} km a week these days.
= My weekly running adds up to around {v} kilometres.
> I've increased my weekly running to {v} km.
> Training plan update: I'm running {v} kilometres a week now.
> These days I do {v} km of running every week.
? What shoes are good for running on gravel?
? How do I avoid shin splints when running?
books: How many books have I read this year?
= I've read {v} books so far this year.
= My reading tracker says I finished {v} books this year.
> Finished another novel last night, that makes {v} books this year.
> My book count for the year just hit {v}.
> Reading goal check-in: {v} books done this year.
? Can you recommend a mystery book for a rainy weekend?
? Are audiobooks worth it?
rent: How much is my monthly rent?
= My rent is ${v} a month.
= I pay ${v} in rent every month.
> The landlord raised the rent, it's ${v} a month now.
> New lease signed: the monthly rent is ${v}.
> Rent went up again, I'm paying ${v} per month.
? Is it normal for a landlord to ask for two months of deposit?
? How do I budget for rent?
5k: What is my best 5k time?
= My best 5k time is {v} minutes.
= My personal record for a 5k run is {v} minutes.
> New personal best on the 5k today: {v} minutes!
> I shaved time off my 5k record, it's {v} minutes now.
> Park run this morning, and my 5k best is down to {v} minutes.
? How should I pace a 5k race?
? What do I eat before a 5k?
city: Which city do I live in?
= I live in {v}, it's been home for a few years.
= Here in {v} where I live, it's been rainy.
> We finally moved! Our new apartment is in {v}.
> Still unpacking boxes after the move to {v}.
> Life in {v} has been good since we moved here.
? What should I check before moving to a new city?
? How do I find a good neighbourhood?
job: What is my job title?
= I work as a {v} at a mid-sized company.
= My job title is {v}, mostly spreadsheets and meetings.
> Big news: I got promoted and my title is now {v}.
> I started a new role at work this week, as {v}.
> HR finally changed my job title to {v}.
? How do I ask for a raise at work?
? What makes a good job title on a resume?
car: What car do I drive?
= I drive a {v} to work every day.
= My car, a {v}, is due for an oil change.
> I traded in my old car and bought a {v}.
> Picked up my new car from the dealer yesterday: a {v}.
> Loving the {v} I just bought to replace my car.
? How often should I rotate my car's tyres?
? Is it worth washing a car in winter?
cat: What is my cat's name?
= My cat {v} knocked a glass off the table again.
= We named our kitten {v}.
> We decided to rename the cat, she answers to {v} now.
> The kids insisted on a new name for our cat, so she's {v} from now on.
> Our cat has a new name: {v}. The old one never stuck.
? Why does my cat knock things off tables?
? What toys keep a cat busy?
band: What is my favourite band?
= My favourite band is {v}.
= Nobody beats {v}, they're my all-time favourite band.
> I have a new favourite band: {v}.
> After that concert, {v} is officially my favourite band.
> These days my favourite band has to be {v}.
? How do I get cheap tickets for a band's concert?
? What makes a band's live show great?
manager: What is my manager's name?
= My manager {v} wants the report by Friday.
= I report to {v}, who manages our team.
> We had a reorg and {v} is my manager now.
> My new manager is {v}; we had our first one-on-one today.
> {v} took over as my manager this month.
? How do I prepare for a one-on-one with my manager?
? How do I give my manager feedback?
phone: What phone do I use?
= I use a {v} and the battery is fine.
= My phone is a {v}, it takes decent photos.
> I switched phones, I'm on a {v} now.
> Dropped my old phone in the lake, so I upgraded to a {v}.
> Just finished setting up my new phone, a {v}.
? How do I back up the photos on my phone?
? Is a phone case really necessary?
language: Which language am I learning?
= I'm learning {v} on my lunch breaks.
= I practise {v} with a language app every morning.
> I switched language courses, I'm learning {v} instead.
> My new language project is {v}.
> Dropped my old language course; now I'm studying {v}.
? How long does it take to learn a new language?
? Do language apps actually work?
"""

_VALUES: dict[str, Callable[[random.Random, int], list[str]]] = {
    "postcards": _counts(8, 30, (3, 12)),
    "houseplants": _counts(4, 15, (2, 6)),
    "running": _counts(10, 25, (4, 10)),
    "books": _counts(3, 12, (2, 7)),
    "rent": _counts(1200, 2000, (50, 250), unit=25),
    "5k": _counts(24, 32, (1, 2), down=True),
    "city": _pool(
        "Denver", "Portland", "Austin", "Chicago", "Seattle", "Atlanta", "Minneapolis", "Pittsburgh"
    ),
    "job": _pool(
        "data analyst",
        "business analyst",
        "product manager",
        "UX designer",
        "software engineer",
        "engineering manager",
        "marketing coordinator",
        "operations lead",
    ),
    "car": _pool("Honda Civic", "Toyota RAV4", "Subaru Outback", "Mazda 3", "Ford Focus", "Tesla Model 3"),
    "cat": _pool("Luna", "Milo", "Pepper", "Mochi", "Oliver", "Ziggy", "Clementine", "Noodle"),
    "band": _pool("Radiohead", "Fleetwood Mac", "Arcade Fire", "The National", "Tame Impala", "Bon Iver"),
    "manager": _pool("Priya Shah", "Tom Becker", "Alicia Gomez", "Daniel Kim", "Rachel Owens", "Marcus Lee"),
    "phone": _pool("Pixel 7", "iPhone 14", "Galaxy S23", "iPhone 15 Pro", "Pixel 8", "OnePlus 11"),
    "language": _pool("Spanish", "Italian", "Japanese", "German", "Portuguese", "Korean", "French"),
}


def _kinds(text: str) -> tuple[FactKind, ...]:
    """The kinds written in :data:`_PHRASINGS`."""
    kinds = []
    for block in re.split(r"\n(?=[\w ]+: )", text.strip()):
        head, *lines = block.splitlines()
        name, question = head.split(": ", 1)
        said = {mark: tuple(line[2:] for line in lines if line[0] == mark) for mark in "=>?"}
        kinds.append(FactKind(name, question, _VALUES[name], said["="], said[">"], said["?"]))
    return tuple(kinds)


#: The kinds of fact a history draws from (ten of them per history by default).
KINDS: tuple[FactKind, ...] = _kinds(_PHRASINGS)

_ASKS = ("Any advice?", "What do you think?", "Can you help me plan around it?", "Any tips?", "")
_LEADS = ("Quick update.", "Oh, by the way.", "Random thing to share.", "", "", "")
_ADVICE = (
    "That sounds like a good plan.",
    "It helps to write things down so you can track how they change.",
    "Try breaking it into small steps and doing one each day.",
    "A short walk can clear your head before you decide.",
    "Make sure to leave some buffer time in your schedule.",
    "Talking it through with a friend often helps.",
    "Keep an eye on your budget while you're at it.",
    "It's worth checking reviews before you commit.",
    "Rest matters as much as effort, so don't skip sleep.",
    "A checklist can keep the details from slipping.",
    "Start with whatever feels easiest to build momentum.",
    "Take some photos so you can look back on it later.",
    "Congratulations, that's great to hear!",
    "Thanks for letting me know, I'll keep that in mind.",
)
_NUMBERED = re.compile(r" \(#\d+\)$")


@dataclass(frozen=True)
class Statement:
    """One statement of a fact: where it was said and what it said."""

    id: str
    session: int
    value: str
    text: str


@dataclass(frozen=True)
class Fact:
    """A fact of a history: its kind, its question, and its statements, oldest first."""

    kind: str
    question: str
    statements: tuple[Statement, ...]

    @property
    def newest(self) -> Statement:
        """The statement that holds now."""
        return self.statements[-1]


@dataclass(frozen=True)
class UpdateHistory:
    """A generated history: its sessions (as ``import_history`` takes them) and its facts."""

    sessions: list[dict[str, Any]]
    facts: tuple[Fact, ...]
    last: datetime

    @property
    def exchanges(self) -> int:
        """The user–assistant exchanges in it."""
        return sum(len(s["messages"]) // 2 for s in self.sessions)


def _sentence(filler: str) -> str:
    """A sentence of :func:`~langmem_plugin.bench.core.sample_sentences` as a user says it."""
    filler = _NUMBERED.sub("", filler)
    return filler if filler.endswith(("!", ".", "?")) else f"{filler}."


def _reply(rng: random.Random) -> str:
    return " ".join(rng.sample(_ADVICE, 2))


def make_history(
    seed: int = 0, *, sessions: int = 30, facts: int = 10, days: int = 182, twice: float = 0.3
) -> UpdateHistory:
    """One history of ``sessions`` dated sessions over ``days`` days holding ``facts`` facts.

    Each fact is stated once and updated in a later session, and a second time with the chance
    ``twice``; its statements are in different sessions, each phrased differently (a first
    statement's phrasing, then update phrasings not used before) and each with another value.
    Deterministic for a ``seed``.
    """
    if not 1 <= facts <= len(KINDS):
        raise ValueError(f"facts must be from 1 to {len(KINDS)}, got {facts}")
    if sessions < 3 or days < sessions:
        raise ValueError(f"need at least 3 sessions and a day for each, got {sessions} over {days} days")
    rng = random.Random(seed)
    dates = session_dates(rng, sessions, days)
    # per session, the user's words of each exchange (filler now, statements and mentions below)
    fillers = iter(_sentence(s) for s in sample_sentences(sessions * 8, seed=rng.randrange(10**6)))
    turns: list[list[tuple[str, tuple[int, int] | None]]] = [
        [(f"{next(fillers)} {rng.choice(_ASKS)}".strip(), None) for _ in range(rng.randint(3, 6))]
        for _ in range(sessions)
    ]
    kinds = rng.sample(KINDS, facts)
    values: list[list[str]] = []
    texts: list[list[str]] = []
    for f, kind in enumerate(kinds):
        n = 3 if rng.random() < twice else 2
        values.append(kind.values(rng, n))
        phrasings = [rng.choice(kind.first), *rng.sample(kind.later, n - 1)]
        texts.append([p.format(v=v) for p, v in zip(phrasings, values[f], strict=True)])
        for k, session in enumerate(sorted(rng.sample(range(sessions), n))):
            words = f"{rng.choice(_LEADS)} {texts[f][k]} {rng.choice(_ASKS)}".strip()
            turns[session].insert(rng.randint(0, len(turns[session])), (words, (f, k)))
        mention = turns[rng.randrange(sessions)]
        mention.insert(rng.randint(0, len(mention)), (rng.choice(kind.mention), None))
    history: list[dict[str, Any]] = []
    said: dict[tuple[int, int], Statement] = {}
    for s, (date, exchanges) in enumerate(zip(dates, turns, strict=True)):
        messages: list[dict[str, str]] = []
        for m, (words, fact) in enumerate(exchanges):
            user_id = f"s{s}.u{m}"
            messages.append({"role": "user", "content": words, "id": user_id})
            messages.append({"role": "assistant", "content": _reply(rng), "id": f"s{s}.a{m}"})
            if fact is not None:
                f, k = fact
                said[fact] = Statement(user_id, s, values[f][k], texts[f][k])
        history.append({"date": date.strftime(DATE_FORMAT), "messages": messages})
    made = tuple(
        Fact(kind.name, kind.question, tuple(said[(f, k)] for k in range(len(values[f]))))
        for f, kind in enumerate(kinds)
    )
    return UpdateHistory(history, made, dates[-1])


def make_histories(n: int = 10, seed: int = 0, **options: Any) -> list[UpdateHistory]:
    """``n`` histories (:func:`make_history`), deterministic for a ``seed``."""
    return [make_history(seed * 10_007 + i, **options) for i in range(n)]


# -- the measurement -------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What one recall of a fact's question injected.

    Attributes:
        newest: the rank (1 first, among the injected memories) of the fact's latest
            statement; ``None``: not injected.
        older: the ranks of its earlier statements that were injected.
        items: the memories injected; tokens: the tokens injected; seconds: the recall's time.
    """

    history: int
    kind: str
    statements: int
    newest: int | None
    older: tuple[int, ...]
    items: int
    tokens: int
    seconds: float

    @property
    def only_older(self) -> bool:
        """The failure: an earlier statement reached the prompt and the latest did not."""
        return self.newest is None and bool(self.older)

    @property
    def newest_first(self) -> bool | None:
        """The latest ranks above every earlier one injected (``None``: not both injected)."""
        if self.newest is None or not self.older:
            return None
        return self.newest < min(self.older)


#: The rows: recalled as of a day after the last session, and "now" (``as_of`` left out).
ROWS: tuple[str, ...] = ("as of the day after", "now (as_of omitted)")
_SHORT = ("day after", "now")


@dataclass
class UpdatesResult:
    """Every answer of every row, and the histories' imports."""

    histories: int
    seed: int
    answers: dict[str, list[Answer]] = field(default_factory=lambda: {row: [] for row in ROWS})
    exchanges: int = 0
    import_seconds: float = 0.0

    def table(self) -> str:
        """One line per row: the shares of questions, tokens and recall time."""
        rows = []
        for row, answers in self.answers.items():
            n = max(len(answers), 1)
            both = [a.newest_first for a in answers if a.newest_first is not None]
            ms = [a.seconds * 1000 for a in answers] or [0.0]
            rows.append(
                (
                    row,
                    len(answers),
                    _share(sum(a.newest is not None for a in answers), n),
                    _share(sum(a.newest is not None and bool(a.older) for a in answers), n),
                    _share(sum(a.only_older for a in answers), n),
                    _share(sum(a.newest is None and not a.older for a in answers), n),
                    f"{_share(sum(both), max(len(both), 1))} of {len(both)}",
                    f"{sum(a.tokens for a in answers) / n:.0f}",
                    f"{percentile(ms, 50):.1f}",
                    f"{percentile(ms, 95):.1f}",
                )
            )
        headers = (
            "recalled",
            "questions",
            "newest injected",
            "older too",
            "only older",
            "neither",
            "newest first",
            "tokens",
            "p50 ms",
            "p95 ms",
        )
        return format_table(headers, rows)

    def kinds_table(self) -> str:
        """Per kind of fact, for each row: the newest injected, and how often only an older one."""
        kinds = sorted({a.kind for answers in self.answers.values() for a in answers})
        headers = ["kind", "questions"]
        for short in _SHORT:
            headers += [f"newest ({short})", f"only older ({short})"]
        rows = []
        for kind in kinds:
            cells: list[object] = [kind, sum(a.kind == kind for a in self.answers[ROWS[0]])]
            for answers in self.answers.values():
                mine = [a for a in answers if a.kind == kind]
                cells += [_share(sum(a.newest is not None for a in mine), max(len(mine), 1))]
                cells += [sum(a.only_older for a in mine)]
            rows.append(cells)
        return format_table(headers, rows)

    def failures(self, row: str = ROWS[0]) -> list[Answer]:
        """The answers of ``row`` where only an earlier statement reached the prompt."""
        return [a for a in self.answers[row] if a.only_older]


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%"


def _message_ids(memory: Memory, scope: Scope, compartment: str, key: str) -> set[str]:
    """The message ids an injected item holds (a passage: its episode's)."""
    item = memory.store.get(memory.layout.namespace(compartment, scope), key)
    meta = (item.value.get("metadata") or {}) if item is not None else {}
    if meta.get("episode") and "message_ids" not in meta:
        return _message_ids(memory, scope, compartment, str(meta["episode"]))
    return set(str(meta.get("message_ids", "")).split())


def _ask(memory: Memory, scope: Scope, fact: Fact, n: int, as_of: datetime | None) -> Answer:
    config: Any = {"configurable": {"user_id": scope.user_id, "thread_id": scope.thread_id}}
    started = time.perf_counter()
    recall = memory.recall(fact.question, config, as_of=as_of)
    seconds = time.perf_counter() - started
    injected = [item for item in recall.items if item.section == "memories"]
    ranks: dict[str, int] = {}
    for rank, item in enumerate(injected, start=1):
        for message_id in _message_ids(memory, scope, item.compartment, item.id):
            ranks.setdefault(message_id, rank)
    found = [ranks.get(s.id) for s in fact.statements]
    return Answer(
        history=n,
        kind=fact.kind,
        statements=len(fact.statements),
        newest=found[-1],
        older=tuple(r for r in found[:-1] if r is not None),
        items=len(injected),
        tokens=recall.tokens.get("total", 0),
        seconds=seconds,
    )


def run_updates_bench(
    *,
    histories: int = 10,
    seed: int = 0,
    embeddings: Embeddings | None = None,
    progress: Callable[[str], None] | None = None,
) -> UpdatesResult:
    """Import each of ``histories`` generated histories into a fresh ``Memory()``; ask every fact.

    ``embeddings``: what the store embeds with (default: the offline MiniLM, as ``Memory()``).
    """
    from langmem_plugin import Memory
    from langmem_plugin.core.scope import Scope

    if embeddings is None:
        from langmem_plugin.core.embeddings import MiniLMEmbeddings

        embeddings = MiniLMEmbeddings().load()
    result = UpdatesResult(histories=histories, seed=seed)
    for n, history in enumerate(make_histories(histories, seed)):
        user = f"user-{n}"
        with Memory(embeddings=embeddings) as memory:  # the default store, in a temporary directory
            write: Any = {"configurable": {"user_id": user, "thread_id": "chat"}}
            report = memory.import_history(history.sessions, write, progress=False)
            result.exchanges += report.turns
            result.import_seconds += report.seconds
            scope = Scope(user_id=user, thread_id="questions")
            memory.recall("warm-up query", {"configurable": {"user_id": user, "thread_id": "questions"}})
            after = history.last + timedelta(days=1)
            for row, as_of in zip(ROWS, (after, None), strict=True):
                for fact in history.facts:
                    result.answers[row].append(_ask(memory, scope, fact, n, as_of))
        if progress is not None:
            rate = report.turns / report.seconds if report.seconds else float("nan")
            progress(f"history {n}: {report.turns} exchanges imported at {rate:.0f}/s")
    return result


def example_failures(result: UpdatesResult, limit: int = 5) -> Sequence[str]:
    """A line for each of the first ``limit`` failures of the dated row (for the report)."""
    return [
        f"history {a.history} {a.kind}: older at rank {min(a.older)}, newest not among {a.items}"
        for a in result.failures()[:limit]
    ]
