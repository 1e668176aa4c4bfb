"""``langmem-plugin bench longchat``: one long user–assistant chat, imported and recalled.

The shape that hurts: about 50 dated sessions, 500 messages (250 exchanges), short user messages
and assistant answers of 1,000–5,000 characters, each stored as an episode plus passages. The
history is built here by a seeded generator (:func:`make_long_chat`; nothing downloaded, no
held-out data): user messages from :func:`~langmem_plugin.bench.core.sample_sentences` and a
request on one of a few everyday topics, answers of advice sentences written around that topic
(paragraphs, sometimes a numbered list). Into it go 40 facts (:data:`FACTS`), each in its own
exchange of a random session: half said by the user in a sentence ("My daughter's piano teacher
is Ms. Okafor."), half buried at a random place in a long answer of the assistant ("For your
hike, I'd suggest the Kestrel Ridge loop..."), each with a question whose words do not hold the
value ("Which hiking loop did you suggest?").

Each setting imports the chat into a fresh ``Memory()`` (the default store) through
:meth:`~langmem_plugin.Memory.import_history` and recalls every question from another thread of
the same user with :meth:`~langmem_plugin.Memory.recall`. Per setting it measures:

- the import: seconds, exchanges per second, passages written, and what the embedder did
  (document calls, texts per call, seconds spent embedding: the share of the import that is the
  embedder's, and so what a faster embedder can win);
- recall: p50/p95 of the whole recall (embedding included) and of the query embedding alone,
  the tokens injected; **fact exchange injected** (an injected memory, episode or passage, is of
  the exchange holding the fact: mapped back through ``metadata.message_ids``, a passage through
  its episode) and **value in prompt** (the fact's value itself is in the injected text).

The settings: each embedder of :data:`SETTINGS` imports once, queried by itself then by each
other (int8 vectors are within cosine ≈ 0.99 of the float ones); the first also imports with
other ``import_history(batch_size=...)``; last, their throughput on the same texts, in turns.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from langmem_plugin.bench.core import sample_sentences, session_dates
from langmem_plugin.bench.report import format_table, percentile

if TYPE_CHECKING:
    from langmem_plugin import Memory
    from langmem_plugin.core.scope import Scope
    from langmem_plugin.services.remember import ImportReport

__all__ = [
    "FACTS",
    "CountingEmbeddings",
    "LongChat",
    "LongChatResult",
    "PlantedFact",
    "SettingResult",
    "make_long_chat",
    "run_longchat_bench",
]

# -- the generator ---------------------------------------------------------------------------

#: The facts a chat may hold, each from its question (``?``): what the user says (``U``), or the
#: user's request (``>``) and what the assistant says of it inside a long answer (``A``);
#: ``{a|b|c}``: the value, one of these per seed.
FACTS = """
? What is the name of my daughter's piano teacher?
U My daughter's piano teacher is Ms. {Okafor|Lindqvist|Brennan}.
? What am I allergic to?
U I'm allergic to {cashews|shellfish|sesame}, so keep that in mind for recipes.
? When is my wedding anniversary?
U Our wedding anniversary is on {June 14|October 3|March 22}.
? What breed is my dog?
U Our dog is a {border collie|basset hound|greyhound} called Pickles.
? Which digital piano did I buy?
U I bought a {Yamaha P-125|Roland FP-30|Casio PX-S1100} digital piano last month.
? Where am I flying to?
U My flight to {Lisbon|Reykjavik|Osaka} leaves next Friday morning.
? Which hospital do I work at?
U I work night shifts as a nurse at {St. Vincent|Mercy General|Riverside} hospital.
? Which of my brothers is getting married?
U My brother {Tobias|Desmond|Callum} is getting married in the spring.
? What did I name my sourdough starter?
U I named my sourdough starter {Clint Yeastwood|Bread Pitt|Doughlores}.
? Which marathon am I training for?
U I signed up for the {Chicago|Berlin|Valencia} marathon in the autumn.
? How many miles are on my car?
U The odometer on my car reads {142,000|98,500|176,300} miles.
? What book am I reading for my book club?
U My book club is reading {Middlemarch|The Brothers Karamazov|Moby-Dick} this month.
? What is my favourite tea?
U My favourite tea is {genmaicha|lapsang souchong|rooibos}.
? What school does my son go to?
U My son goes to {Hawthorne Elementary|Maple Grove Academy|Lincoln Park School}.
? Which tomato variety do I grow?
U I grow {San Marzano|Cherokee Purple|Brandywine} tomatoes on my balcony.
? What is the name of my band?
U I play bass in a band called {The Velvet Antlers|Copper Lanterns|Static Orchard}.
? What is my mortgage rate?
U Our mortgage is fixed at {3.1 percent|4.7 percent|6.2 percent}.
? Where does my grandmother live?
U My grandmother lives in {Galway|Tromso|Bruges}.
? On which day do I take welding classes?
U I take welding classes at the community college on {Tuesdays|Thursdays|Saturdays}.
? What is my blood type?
U My blood type is {O negative|AB positive|B negative}.
? Which hiking loop did you suggest?
> Can you suggest a loop hike for this weekend?
A For your hike, I'd suggest the {Kestrel Ridge|Silver Fern|Blackwater Falls} loop, 14 km with one climb.
? What fertiliser did you recommend for the tomatoes?
> How should I feed my tomato plants?
A Feed the tomatoes {fish emulsion|worm castings|a 5-10-10 fertiliser} every two weeks from the first flowers.
? Which stretch did you recommend for my lower back?
> My lower back hurts after work, what can I do?
A For your lower back, start with the {pigeon pose|cat-cow stretch|knee-to-chest stretch} stretch.
? Which spreadsheet function did you suggest?
> How do I pull prices from one sheet into another?
A In your spreadsheet, use the {XLOOKUP|INDEX MATCH|SUMIFS} function to pull the prices across.
? What name did you suggest for my bakery?
> I'm opening a small bakery, help me think of a name.
A A name I like for your bakery is {Crumb and Co|The Rising Loaf|Flour Child}.
? Which Python library did you recommend for the scraper?
> I want to write a scraper for concert listings.
A For the scraper I would use the {BeautifulSoup|Scrapy|Playwright} library in Python.
? What share of my pay did you suggest saving?
> Can you help me split my salary into a budget?
A In your budget, put {12 percent|15 percent|20 percent} of each paycheck straight into savings.
? How long did you say to boil the bagels?
> I'm making bagels for the first time.
A Boil the bagels for {45 seconds|90 seconds|2 minutes} on each side before baking.
? Which rail pass did you recommend for Japan?
> We're planning two weeks in Japan, how do we get around?
A For your trip, the {JR Pass 7-day|Hakone Free Pass|Kansai Thru Pass} is worth buying.
? What villain name did you suggest for my novel?
> My novel needs a villain, any ideas?
A For your novel's villain, try a name like {Corvin Ashgrave|Mireille Voss|Silas Thorne}.
? What paint colour did you suggest for the nursery?
> Which colour should we paint the nursery?
A For the nursery, I'd go with {sage green|dusty lavender|butter yellow} paint.
? Which story did you suggest I lead with in my interview?
> I have a job interview on Monday.
A In the interview, lead with your story about the {warehouse migration|billing outage|onboarding redesign}.
? Which chess opening did you suggest I learn?
> I want to get better at chess.
A As a first opening to learn, I'd suggest {the London System|the Caro-Kann|the Italian Game}.
? Which plant did you suggest for my dark bathroom?
> Our bathroom has no window, can anything grow there?
A For the dark bathroom, get {a ZZ plant|a snake plant|a cast-iron plant}.
? Which wine did you suggest with the lamb?
> We're roasting lamb for Easter, what should we drink?
A With the lamb, open {a Rioja|a Cotes du Rhone|a Malbec}.
? What bedroom temperature did you recommend for sleep?
> I keep waking up at night.
A Keep your bedroom at {17 degrees|18 degrees|19 degrees} Celsius for better sleep.
? Which chord did you tell me to practise?
> I'm stuck on the guitar.
A Practise the {F major barre chord|B minor chord|G to C change} for ten minutes a day.
? Which podcast did you recommend?
> Can you recommend something to listen to on my commute?
A For the commute, try the podcast {Hardcore History|99% Invisible|Radiolab}.
? What ISO did you suggest for night-sky photos?
> How do I photograph the night sky?
A For night-sky photos, set your camera to {ISO 3200|ISO 1600|ISO 6400} with a wide aperture.
? What gift did you suggest for my father?
> My father's birthday is coming up.
A As a gift for your father, consider {a fly-fishing reel|a bonsai starter kit|a vinyl record cleaner}.
"""

_TOPICS = {
    "cooking": ("meal prep", "a weeknight curry", "homemade pasta", "batch cooking soups", "knife skills"),
    "fitness": ("a strength routine", "stretching after runs", "a home workout", "building endurance"),
    "money": ("a monthly budget", "paying off a credit card", "an emergency fund", "a savings account"),
    "travel": ("packing light", "a long-haul flight", "a road trip itinerary", "travel insurance"),
    "work": ("a difficult meeting", "a project plan", "a weekly status report", "time blocking"),
    "home": ("decluttering the garage", "a leaky tap", "organising the kitchen", "repainting a hallway"),
    "learning": ("learning a language", "studying for an exam", "taking better notes", "a reading habit"),
    "tech": ("backing up photos", "a slow laptop", "a home network", "a password manager"),
    "garden": ("composting", "pruning roses", "a raised bed", "watering in summer"),
    "health": ("sleeping better", "cutting down on caffeine", "posture at a desk", "managing stress"),
}
_FRAMES = (
    "When it comes to {s}, the most important thing is to start small and stay consistent.",
    "A lot of people find {s} overwhelming at first, and that is completely normal.",
    "Before you change anything about {s}, write down what you do today so you have a baseline.",
    "One practical approach to {s} is to set aside twenty minutes on a fixed day each week.",
    "If {s} keeps slipping, pair it with a habit you already have, like your morning coffee.",
    "It also helps to decide in advance what good enough looks like for {s}.",
    "Keep a short log of what worked and what did not; after a month the patterns in {s} show.",
    "The environment matters more than willpower: make {s} the easy default, not a daily decision.",
    "If you share a home, talk {s} through with the others so that expectations are clear.",
    "Tools can help, but no tool fixes {s} on its own; the routine matters more.",
    "A common mistake with {s} is trying to change everything at once.",
    "Give yourself a checkpoint after two weeks to review how {s} is going, and adjust.",
    "Budget a little time and money for {s}; small investments early save effort later.",
    "If a part of {s} feels unclear, break it down until the next step is concrete.",
    "The first few attempts at {s} are about learning, not results.",
    "Progress with {s} depends as much on rest and recovery as on effort.",
    "A checklist for {s} keeps the details from slipping when you are busy.",
    "Ask a friend to keep you accountable for {s}; a weekly message is enough.",
    "Read a couple of guides on {s} before you commit to anything expensive.",
    "Be kind to yourself if {s} does not go perfectly the first time.",
)
_OPENERS = (
    "Great question, and there is a lot to say here.",
    "Here is how I would think about it.",
    "Let me break this down into a few parts.",
    "Sure, happy to help with that.",
    "That is a very common situation, so you are in good company.",
)
_CLOSERS = (
    "To sum up: keep it simple, and review it regularly.",
    "Let me know how it goes, and we can adjust the plan together.",
    "If you want, I can turn this into a printable checklist.",
    "Tell me more about your constraints and I can make this more specific.",
)
_ASKS = ("Any advice on {s}?", "Can you help me with {s}?", "How should I approach {s}?", "Thoughts on {s}?")
_NUMBERED = re.compile(r" \(#\d+\)$")
_VALUE = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class PlantedFact:
    """A fact of the chat: who said it, where, its value, and its question.

    Attributes:
        speaker: ``"user"`` or ``"assistant"``.
        text: the sentence that states it (``value`` is in it, not in ``question``).
        session: the index of its session; message_ids: the ids of its exchange (user, assistant).
    """

    speaker: str
    text: str
    value: str
    question: str
    session: int
    message_ids: tuple[str, str]


@dataclass(frozen=True)
class LongChat:
    """A generated chat: its sessions (as ``import_history`` takes them) and its facts."""

    sessions: list[dict[str, Any]]
    facts: tuple[PlantedFact, ...]

    @property
    def exchanges(self) -> int:
        """The user–assistant exchanges in it (what ``ImportReport.turns`` counts)."""
        return sum(len(s["messages"]) // 2 for s in self.sessions)

    @property
    def answers(self) -> list[str]:
        """The assistant's answers, in order."""
        return [m["content"] for s in self.sessions for m in s["messages"] if m["role"] == "assistant"]


def _facts(rng: random.Random) -> list[tuple[str, str, str, str, str]]:
    """(speaker, request, statement, value, question) of every fact of :data:`FACTS`."""
    out = []
    for block in FACTS.strip().split("\n? "):
        question, *lines = block.removeprefix("? ").splitlines()
        said = {line[0]: line[2:] for line in lines}
        statement = said.get("U") or said["A"]
        match = _VALUE.search(statement)
        if match is None:
            raise AssertionError(f"a fact without a value: {block}")
        value = rng.choice(match.group(1).split("|"))
        text = statement[: match.start()] + value + statement[match.end() :]
        out.append(("user" if "U" in said else "assistant", said.get(">", ""), text, value, question))
    return out


def _answer(rng: random.Random, topic: str, subject: str, chars: int) -> list[str]:
    """The sentences (``"\\n\\n"``: a paragraph break) of an answer of about ``chars`` characters."""
    subjects = _TOPICS[topic]
    examples = iter(sample_sentences(64, seed=rng.randrange(10**6)))
    out, size, item = [rng.choice(_OPENERS)], 0, 0
    listed = rng.random() < 0.3
    while size < chars:
        if rng.random() < 0.15:
            example = _NUMBERED.sub("", next(examples)).rstrip("!. ")
            head, rest = example.split(" ", 1)
            head = head.lower() if head in ("My", "Our", "The") else head
            sentence = f"For example, {head} {rest}."
        else:
            s = subject if rng.random() < 0.6 else rng.choice(subjects)
            sentence = rng.choice(_FRAMES).format(s=s)
        if listed and rng.random() < 0.3:
            item += 1
            sentence = f"\n{item}. {sentence}"
        elif rng.random() < 0.2:
            out.append("\n\n")
        out.append(sentence)
        size += len(sentence) + 1
    out.append(rng.choice(_CLOSERS))
    return out


def _join(sentences: Sequence[str]) -> str:
    return re.sub(r" ?(\n+) ?", r"\1", " ".join(sentences)).strip()


def make_long_chat(
    seed: int = 0,
    *,
    sessions: int = 50,
    exchanges: int = 250,
    facts: int = 40,
    answer_chars: tuple[int, int] = (1000, 5000),
    days: int = 365,
) -> LongChat:
    """One chat of ``exchanges`` exchanges in ``sessions`` dated sessions over ``days`` days.

    Answers are ``answer_chars`` characters long (drawn uniformly; a sentence more at most);
    ``facts`` of :data:`FACTS` are planted, each in its own exchange (user facts in the user's
    message, assistant facts at a random place in the answer). Deterministic for a ``seed``.
    """
    all_facts = FACTS.strip().count("\n? ") + 1
    if not 0 <= facts <= min(all_facts, exchanges):
        raise ValueError(f"facts must be from 0 to {min(all_facts, exchanges)}, got {facts}")
    if not 1 <= sessions <= min(exchanges, days):
        raise ValueError(f"need 1 to {min(exchanges, days)} sessions (an exchange and a day each)")
    rng = random.Random(seed)
    dates = session_dates(rng, sessions, days)
    sizes = [1] * sessions
    for s in rng.choices(range(sessions), k=exchanges - sessions):
        sizes[s] += 1
    planted = dict(zip(rng.sample(range(exchanges), facts), rng.sample(_facts(rng), facts), strict=True))
    fillers = iter(sample_sentences(exchanges, seed=rng.randrange(10**6)))
    history: list[dict[str, Any]] = []
    made: list[PlantedFact] = []
    n = 0
    for s, (date, size) in enumerate(zip(dates, sizes, strict=True)):
        messages: list[dict[str, str]] = []
        for m in range(size):
            topic = rng.choice(list(_TOPICS))
            subject = rng.choice(_TOPICS[topic])
            filler = _NUMBERED.sub("", next(fillers)).rstrip("!. ")
            user = f"{filler}. {rng.choice(_ASKS).format(s=subject)}"
            answer = _answer(rng, topic, subject, rng.randint(*answer_chars))
            ids = (f"s{s}.u{m}", f"s{s}.a{m}")
            if n in planted:
                speaker, request, text, value, question = planted[n]
                if speaker == "user":
                    user = f"{text} {rng.choice(_ASKS).format(s=subject)}"
                else:
                    user = request
                    answer.insert(rng.randint(1, len(answer) - 1), text)
                made.append(PlantedFact(speaker, text, value, question, s, ids))
            messages.append({"role": "user", "content": user, "id": ids[0]})
            messages.append({"role": "assistant", "content": _join(answer), "id": ids[1]})
            n += 1
        history.append({"date": date.strftime("%Y-%m-%dT%H:%M"), "messages": messages})
    return LongChat(history, tuple(made))


# -- the measurement -------------------------------------------------------------------------


class CountingEmbeddings(Embeddings):
    """Embeds documents with ``documents`` and queries with ``queries``, counting calls and time.

    The store records the documents' embedder (:attr:`embedder_id`); ``queries`` may be another
    embedder of the same vectors' space (MiniLM int8 for float passages), switched between
    recalls of one import.
    """

    def __init__(self, documents: Embeddings, queries: Embeddings | None = None) -> None:
        from langmem_plugin.core.embeddings import embedder_id, embedding_dims

        self.documents, self.queries = documents, queries or documents
        self.embedder_id = embedder_id(documents) or "bench:unknown"
        self.dims = embedding_dims(documents)
        self.calls: list[int] = []  # texts per document call
        self.texts: list[str] = []
        self.document_seconds = 0.0
        self.query_seconds: list[float] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        started = time.perf_counter()
        vectors = self.documents.embed_documents(texts)
        self.document_seconds += time.perf_counter() - started
        self.calls.append(len(texts))
        self.texts += texts
        return vectors

    def embed_query(self, text: str) -> list[float]:
        started = time.perf_counter()
        vector = self.queries.embed_query(text)
        self.query_seconds.append(time.perf_counter() - started)
        return vector


@dataclass
class SettingResult:
    """One row: an import (shared by the rows of one embedder and batch size) and a recall pass."""

    label: str
    report: ImportReport
    calls: list[int]
    embed_seconds: float
    recall_seconds: list[float] = field(default_factory=list)
    query_seconds: list[float] = field(default_factory=list)
    found: list[bool] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def row(self) -> list[object]:
        """The cells of this row in :meth:`LongChatResult.table`."""
        ms = [s * 1000 for s in self.recall_seconds] or [0.0]
        qms = [s * 1000 for s in self.query_seconds] or [0.0]
        n = max(len(self.found), 1)
        texts, seconds = sum(self.calls), self.report.seconds
        return [
            self.label,
            f"{seconds:.1f}",
            f"{self.report.turns_per_second:.1f}",
            self.report.passages,
            f"{len(self.calls)} x {texts / max(len(self.calls), 1):.0f}",
            f"{self.embed_seconds:.1f} ({100 * self.embed_seconds / max(seconds, 1e-9):.0f}%)",
            f"{percentile(ms, 50):.1f} / {percentile(ms, 95):.1f}",
            f"{percentile(qms, 50):.1f}",
            f"{100 * sum(self.found) / n:.1f}%",
            f"{100 * sum(self.answered) / n:.1f}%",
            f"{sum(self.tokens) / n:.0f}",
        ]


HEADERS = (
    "setting",
    "import s",
    "turns/s",
    "passages",
    "embed calls x texts",
    "embed s (share)",
    "recall p50 / p95 ms",
    "query embed p50 ms",
    "fact exchange injected",
    "value in prompt",
    "tokens",
)


@dataclass
class LongChatResult:
    """The chat measured and one :class:`SettingResult` per row."""

    exchanges: int
    messages: int
    answer_chars: int
    facts: int
    rows: list[SettingResult] = field(default_factory=list)
    throughput: dict[str, float] = field(default_factory=dict)
    sample: int = 0

    def table(self) -> str:
        """The markdown table of every row."""
        return format_table(HEADERS, [r.row() for r in self.rows])

    def throughput_line(self) -> str:
        """Texts per second of each embedder on the same sample of the import's texts."""
        rates = ", ".join(f"{name} {rate:.1f}" for name, rate in self.throughput.items())
        return f"embedding {self.sample} of the import's texts, in turns of 32 (texts/s): {rates}"


#: ``--embedder``: MiniLM with float or int8 products (``LOCAL_EMBEDDERS``' two).
SETTINGS: tuple[str, ...] = ("float", "int8")


def _load(name: str) -> Embeddings:
    """The embedder of :data:`SETTINGS` called ``name``, loaded and warm."""
    from langmem_plugin.core.embeddings import local_embeddings

    embeddings = local_embeddings({"float": "all-MiniLM-L6-v2", "int8": "all-MiniLM-L6-v2-int8"}[name])
    embeddings.embed_documents(["warm up"])
    embeddings.embed_query("warm up")
    return embeddings


def _message_ids(
    memory: Memory, scope: Scope, compartment: str, key: str, seen: dict[Any, set[str]]
) -> set[str]:
    """The message ids an injected item holds (a passage: its episode's)."""
    if (compartment, key) in seen:
        return seen[(compartment, key)]
    item = memory.store.get(memory.layout.namespace(compartment, scope), key)
    meta = (item.value.get("metadata") or {}) if item is not None else {}
    if meta.get("episode") and "message_ids" not in meta:
        ids = _message_ids(memory, scope, compartment, str(meta["episode"]), seen)
    else:
        ids = set(str(meta.get("message_ids", "")).split())
    seen[(compartment, key)] = ids
    return ids


def _throughput(texts: Sequence[str], loaded: dict[str, Embeddings], chunk: int = 32) -> dict[str, float]:
    """Texts per second of each embedder on ``texts``, timed chunk by chunk in turn (a load that
    comes and goes meets them alike, unlike imports one after the other)."""
    spent = dict.fromkeys(loaded, 0.0)
    for start in range(0, len(texts), chunk):
        for name, embeddings in loaded.items():
            began = time.perf_counter()
            embeddings.embed_documents(list(texts[start : start + chunk]))
            spent[name] += time.perf_counter() - began
    return {name: len(texts) / max(seconds, 1e-9) for name, seconds in spent.items()}


def _recall_all(
    memory: Memory, chat: LongChat, user: str, row: SettingResult, counter: CountingEmbeddings
) -> None:
    from langmem_plugin.core.scope import Scope

    config: Any = {"configurable": {"user_id": user, "thread_id": "questions"}}
    scope = Scope(user_id=user, thread_id="questions")
    memory.recall("warm-up query", config)
    counter.query_seconds.clear()
    seen: dict[Any, set[str]] = {}
    for fact in chat.facts:
        started = time.perf_counter()
        recall = memory.recall(fact.question, config)
        row.recall_seconds.append(time.perf_counter() - started)
        ids: set[str] = set()
        for item in recall.items:
            if item.section == "memories":
                ids |= _message_ids(memory, scope, item.compartment, item.id, seen)
        row.found.append(bool(ids & set(fact.message_ids)))
        row.answered.append(fact.value in recall.prompt)
        row.tokens.append(recall.tokens.get("total", 0))
    row.query_seconds = list(counter.query_seconds)


def run_longchat_bench(
    *,
    seed: int = 0,
    sessions: int = 50,
    exchanges: int = 250,
    embedders: Sequence[str] = ("float", "int8"),
    batch_sizes: Sequence[int] = (64,),
    make: Callable[[str], Embeddings] | None = None,
    sample: int = 256,
    progress: Callable[[str], None] | None = None,
) -> LongChatResult:
    """Import one generated chat (:func:`make_long_chat`) per setting into a fresh ``Memory()``;
    recall every fact's question.

    Each of ``embedders`` (names of :data:`SETTINGS`, or what ``make(name)`` gives) imports with
    the first of ``batch_sizes`` and is queried with each of ``embedders`` in turn (a row each);
    the first embedder also imports with every other batch size (a row each, own queries).
    Last, the embedders embed the same ``sample`` texts of the import in turns (throughput).
    """
    from langmem_plugin import Memory

    if make is None:
        unknown = [n for n in embedders if n not in SETTINGS]
        if unknown:
            raise ValueError(f"unknown embedder {unknown[0]!r}; use {', '.join(SETTINGS)}")
        make = _load

    chat = make_long_chat(seed, sessions=sessions, exchanges=exchanges, facts=min(40, exchanges))
    result = LongChatResult(
        chat.exchanges,
        sum(len(s["messages"]) for s in chat.sessions),
        sum(map(len, chat.answers)),
        len(chat.facts),
    )
    loaded = {name: make(name) for name in embedders}
    runs = [(name, size) for name in embedders for size in batch_sizes[:1]]
    runs += [(embedders[0], size) for size in batch_sizes[1:]]
    for name, size in runs:
        counter = CountingEmbeddings(loaded[name])
        user = "longchat"
        with Memory(embeddings=counter) as memory:  # the default store, in a temporary directory
            write: Any = {"configurable": {"user_id": user, "thread_id": "chat"}}
            report = memory.import_history(chat.sessions, write, batch_size=size, progress=False)
            queried = embedders if size == batch_sizes[0] else [name]
            for query in queried:
                counter.queries = loaded[query]
                label = name if query == name else f"{name} passages, {query} queries"
                if len(batch_sizes) > 1:
                    label += f", batch_size {size}"
                row = SettingResult(label, report, list(counter.calls), counter.document_seconds)
                _recall_all(memory, chat, user, row, counter)
                result.rows.append(row)
                if progress is not None:
                    progress(
                        f"{label}: imported in {report.seconds:.1f} s, recall p50 "
                        f"{percentile([s * 1000 for s in row.recall_seconds], 50):.1f} ms "
                        f"(load average {os.getloadavg()[0]:.1f}: other work slows both)"
                    )
    texts = random.Random(seed).sample(counter.texts, min(sample, len(counter.texts)))
    result.throughput, result.sample = _throughput(texts, loaded), len(texts)
    return result
