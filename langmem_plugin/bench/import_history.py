"""How fast a conversation history is imported.

- :func:`measure_import`: LoCoMo conversations (one episode per message, as
  :meth:`~langmem_plugin.Memory.import_history` with ``per="message"`` writes them) into a fresh
  embedded :class:`~langmem_plugin.stores.QdrantStore` with the offline MiniLM embedder, once with
  ``batch_size`` episodes per store round and once with one (what remembering each turn live
  costs), in turns per second::

      python -m langmem_plugin.bench.import_history --data data/locomo/locomo10.json

- :func:`measure_longchat_import` (``--longchat``): one generated long chat
  (:func:`~langmem_plugin.bench.longchat.make_long_chat`) imported through ``Memory()`` defaults
  with each embedder, beside the time float MiniLM-L6 alone takes to embed every word of the
  chat once in 200-token pieces, in the same process (before and after the imports: the mean
  is the reference); and the facts recall finds after each import;
- :func:`measure_stream` (``--stream N``): N generated chats streamed through
  :meth:`~langmem_plugin.Memory.import_histories`, one progress line per chat with the
  process's resident memory (RSS), to see that it stays flat; then ``--recalls`` recalls (a
  question of a random chat, from that chat's thread), timed, to see what the store's bounded
  payload cache costs the reads.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.embeddings import Embeddings

from langmem_plugin.bench.datasets import locomo_path
from langmem_plugin.core.scope import Scope
from langmem_plugin.services.remember import ImportReport, import_history

__all__ = [
    "ChatSeen",
    "ImportRun",
    "StreamRun",
    "locomo_history",
    "main",
    "measure_import",
    "measure_longchat_import",
    "measure_stream",
    "word_pieces",
]


@dataclass(frozen=True)
class ImportRun:
    """One measured import."""

    label: str
    batch_size: int
    report: ImportReport

    def line(self) -> str:
        """One line of the report table."""
        r = self.report
        return (
            f"{self.label:<22} batch {self.batch_size:>4}  {r.turns:>5} turns  {r.passages:>4} passages  "
            f"{r.seconds:7.2f} s  {r.turns_per_second:8.1f} turns/s"
        )


def locomo_history(
    path: str | Path, conversation: int = 0, *, max_turns: int | None = None
) -> list[dict[str, Any]]:
    """LoCoMo conversation ``conversation`` as a history of dated sessions (one message per turn)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    conv = raw[conversation]["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
    sessions: list[dict[str, Any]] = []
    left = max_turns
    for n in numbers:
        messages = []
        for turn in conv[f"session_{n}"]:
            if left is not None and left <= 0:
                break
            caption = f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else ""
            messages.append(
                {
                    "role": "user",
                    "name": turn["speaker"],
                    "content": turn["text"] + caption,
                    "id": turn["dia_id"],
                }
            )
            left = None if left is None else left - 1
        if messages:
            sessions.append({"date": conv.get(f"session_{n}_date_time", ""), "messages": messages})
    return sessions


def measure_import(
    history: Sequence[dict[str, Any]],
    embeddings: Embeddings,
    *,
    batch_sizes: Sequence[int] = (64, 1),
    workdir: str | Path | None = None,
) -> list[ImportRun]:
    """Import ``history`` into a fresh embedded QdrantStore once per batch size."""
    from langmem_plugin.stores import QdrantStore

    index: Any = {
        "dims": getattr(embeddings, "dims", None) or 384,
        "embed": embeddings,
        "fields": ["content"],
    }
    runs: list[ImportRun] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for size in batch_sizes:
            with QdrantStore(path=Path(tmp) / f"batch-{size}", index=index) as store:
                report = import_history(
                    store,
                    history,
                    Scope(user_id="bench", thread_id="locomo-0"),
                    per="message",
                    batch_size=size,
                    progress=False,
                )
            label = "one turn at a time" if size == 1 else "batched"
            runs.append(ImportRun(label, size, report))
    return runs


def word_pieces(text: str, tokens: int = 200) -> list[str]:
    """``text`` cut into consecutive pieces of ``tokens`` MiniLM tokens (every word once)."""
    from tokenizers import Tokenizer

    from langmem_plugin.core.onnx_session import default_tokenizer_path

    tokenizer = Tokenizer.from_file(str(default_tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    return [
        text[offsets[i][0] : offsets[min(i + tokens, len(offsets)) - 1][1]]
        for i in range(0, len(offsets), tokens)
    ]


@dataclass
class LongChatImport:
    """One import of the long chat: seconds, texts the store embedded, what recall found."""

    embedder: str
    seconds: float
    texts: int
    passages: int
    found: float
    answered: float


def measure_longchat_import(
    *,
    exchanges: int = 250,
    sessions: int = 50,
    embedders: Sequence[str] = ("float", "int8"),
    progress: Callable[[str], None] | None = None,
) -> tuple[float, int, list[LongChatImport]]:
    """The long chat imported through ``Memory()`` with each embedder, and the reference.

    Returns the reference seconds (float MiniLM-L6 embedding every word of the chat once in
    200-token pieces, 32 pieces a call, one ONNX call at a time: the mean of a run before and one
    after the imports), the
    number of pieces, and one :class:`LongChatImport` per embedder.
    """
    from langmem_plugin import Memory
    from langmem_plugin.bench.longchat import (
        CountingEmbeddings,
        SettingResult,
        _load,
        _recall_all,
        make_long_chat,
    )
    from langmem_plugin.core.embeddings import MiniLMEmbeddings

    chat = make_long_chat(0, sessions=sessions, exchanges=exchanges, facts=min(40, exchanges))
    words = "\n".join(m["content"] for s in chat.sessions for m in s["messages"])
    pieces = word_pieces(words)
    loaded = {name: _load(name) for name in dict.fromkeys(["float", *embedders])}
    # the model alone: one ONNX call at a time on the machine's threads (what MiniLMEmbeddings
    # did before it ran an import's batches side by side), the same session as the imports'
    plain = MiniLMEmbeddings(parallel_calls=1)

    def reference() -> float:
        started = time.perf_counter()
        for start in range(0, len(pieces), 32):
            plain.embed_documents(pieces[start : start + 32])
        return time.perf_counter() - started

    spent = [reference()]
    runs: list[LongChatImport] = []
    for name in embedders:
        counter = CountingEmbeddings(loaded[name])
        with Memory(embeddings=counter) as memory:
            config: Any = {"configurable": {"user_id": "longchat", "thread_id": "chat"}}
            report = memory.import_history(chat.sessions, config, progress=False)
            row = SettingResult(name, report, list(counter.calls), counter.document_seconds)
            _recall_all(memory, chat, "longchat", row, counter)
        n = max(len(row.found), 1)
        runs.append(
            LongChatImport(
                name,
                report.seconds,
                sum(counter.calls),
                report.passages,
                100 * sum(row.found) / n,
                100 * sum(row.answered) / n,
            )
        )
        if progress is not None:
            progress(f"{name}: imported in {report.seconds:.1f} s (load {os.getloadavg()[0]:.1f})")
    spent.append(reference())
    return sum(spent) / len(spent), len(pieces), runs


def _rss_mb() -> tuple[float, float | None]:
    """The process's resident memory now, in MB, and the anonymous part of it (Linux: None
    elsewhere, where the first is the peak): the rest is pages of mapped files (the store's
    segments), which the kernel takes back when memory is short."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1e3, int(fields["RssAnon"].split()[0]) / 1e3
    except (OSError, KeyError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, None


class ChatSeen(NamedTuple):
    """The import as it stood after one chat."""

    turns: int
    seconds: float
    rss: float
    #: The anonymous part of ``rss`` (None where the system does not say).
    anonymous: float | None

    def line(self, chats: int) -> str:
        anonymous = f" (anonymous {self.anonymous:.0f})" if self.anonymous is not None else ""
        return f"{chats} chats, {self.turns} turns, {self.seconds:.1f} s: RSS {self.rss:.0f} MB{anonymous}"


@dataclass
class StreamRun:
    """What :func:`measure_stream` saw: the import after each chat, and the recalls."""

    chats: list[ChatSeen]
    #: Each timed recall's milliseconds, in the order made.
    recall_ms: list[float]
    #: RSS after the recalls, in MB.
    rss_after_recalls: float

    def recall_line(self) -> str:
        """p50 / p95 of the recalls, and RSS after them."""
        if not self.recall_ms:
            return "no recalls"
        ms = sorted(self.recall_ms)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        return (
            f"{len(ms)} recalls: p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms; "
            f"RSS after them {self.rss_after_recalls:.0f} MB"
        )


def measure_stream(
    chats: int = 100,
    *,
    exchanges: int = 20,
    users: int = 1,
    recalls: int = 0,
    embeddings: Any = None,
    workdir: str | Path | None = None,
    progress: Callable[[str], None] | None = print,
    postgres_url: str | None = None,
) -> StreamRun:
    """``chats`` generated chats streamed through ``Memory(path=...).import_histories``, then recalls.

    With ``postgres_url``, into a ``PostgresMemoryStore`` there (``memory_index()``) instead of
    the default embedded store: the RSS is then this process's alone, the memories another's.

    The chats are split into ``users`` blocks in order, one ``import_histories`` call per user
    (one user's memories stop growing at the user compartment's ``max_items``; more users
    keep the store growing). ``embeddings`` default: ``FakeEmbeddings(384)`` (hashing, no
    model), so the run measures the import's pipeline and the store, not the embedder. Each
    chat's first question is kept; after the import, ``recalls`` of them (chats drawn at
    random, seeded) are recalled from their chat's thread through ``Memory.recall``, each timed.
    """
    from langmem_plugin import Memory
    from langmem_plugin.bench.longchat import make_long_chat
    from langmem_plugin.services.remember import ImportProgress
    from langmem_plugin.testing import FakeEmbeddings

    sessions = max(1, exchanges // 5)
    per_user = -(-chats // users)
    questions: list[str] = []

    def conversations(numbers: range) -> Any:
        for n in numbers:
            chat = make_long_chat(n, sessions=sessions, exchanges=exchanges, facts=0)
            questions.append(chat.sessions[0]["messages"][0]["content"])
            yield f"chat-{n}", chat.sessions

    seen: list[ChatSeen] = []
    before, before_chats = ChatSeen(0, 0.0, 0.0, None), 0  # where the users before this one left off

    def on_progress(p: ImportProgress) -> None:
        if len(seen) < before_chats + p.conversations:
            seen.append(ChatSeen(before.turns + p.turns, before.seconds + p.seconds, *_rss_mb()))
            if progress is not None:
                progress(seen[-1].line(len(seen)))

    embedder = embeddings or FakeEmbeddings(384)
    spent: list[float] = []
    with contextlib.ExitStack() as stack:
        if postgres_url is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(dir=workdir))
            memory = stack.enter_context(Memory(path=Path(tmp) / "m", embeddings=embedder))
        else:
            from langmem_plugin import memory_index
            from langmem_plugin.stores import PostgresMemoryStore

            index: Any = memory_index(embedder)
            pg = stack.enter_context(
                PostgresMemoryStore.from_conn_string(postgres_url, index=index, setup=True)
            )
            memory = stack.enter_context(Memory(store=pg))
        for user in range(users):
            before, before_chats = (seen[-1] if seen else before), len(seen)
            numbers = range(user * per_user, min(chats, (user + 1) * per_user))
            memory.import_histories(
                conversations(numbers), {"configurable": {"user_id": f"u{user}"}}, on_progress=on_progress
            )
        rng = random.Random(0)
        for _ in range(recalls):
            n = rng.randrange(chats)
            config: Any = {"configurable": {"user_id": f"u{n // per_user}", "thread_id": f"chat-{n}"}}
            started = time.perf_counter()
            memory.recall(questions[n], config)
            spent.append(1000 * (time.perf_counter() - started))
        run = StreamRun(seen, spent, _rss_mb()[0])
    return run


def main(argv: Sequence[str] | None = None) -> list[ImportRun]:
    """Print the import throughput of a LoCoMo conversation, batched and not."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", default=str(locomo_path()))
    parser.add_argument("--conversation", type=int, default=0)
    parser.add_argument("--turns", type=int, default=None, help="at most this many turns")
    parser.add_argument("--batch-sizes", default="64,1")
    parser.add_argument("--longchat", type=int, default=None, metavar="EXCHANGES", help="the long chat")
    parser.add_argument("--embedders", default="float,int8", help="with --longchat")
    parser.add_argument("--stream", type=int, default=None, metavar="CHATS", help="stream CHATS chats")
    parser.add_argument("--recalls", type=int, default=200, help="with --stream: recalls timed after it")
    parser.add_argument("--users", type=int, default=1, help="with --stream: the chats' users")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="with --stream: into PostgresMemoryStore ($POSTGRES_URL, else a temporary server: dev extra)",
    )
    args = parser.parse_args(argv)
    if args.longchat:
        sessions = max(1, min(50, args.longchat // 5))
        embedders = args.embedders.split(",")
        ref, pieces, imports = measure_longchat_import(
            exchanges=args.longchat, sessions=sessions, embedders=embedders, progress=print
        )
        print(f"reference: float MiniLM-L6, {pieces} pieces of 200 tokens: {ref:.1f} s")
        for r in imports:
            print(
                f"{r.embedder}: import {r.seconds:.1f} s = {r.seconds / ref:.2f}x the reference, "
                f"{r.texts} texts ({r.passages} passages), fact exchange injected {r.found:.1f}%, "
                f"value in prompt {r.answered:.1f}%"
            )
        return []
    if args.stream:
        with contextlib.ExitStack() as stack:
            url = None
            if args.postgres:
                from langmem_plugin.bench.postgres import _fresh_database, temporary_server

                url = os.environ.get("POSTGRES_URL") or stack.enter_context(temporary_server())
                url = _fresh_database(url)
            stream = measure_stream(args.stream, users=args.users, recalls=args.recalls, postgres_url=url)
        marks = {1, 10, 25, 50, 100, 150, 200, 300, 400, len(stream.chats)}
        for n in sorted(marks & set(range(1, len(stream.chats) + 1))):
            print(stream.chats[n - 1].line(n))
        print(stream.recall_line())
        return []
    from langmem_plugin.core.embeddings import MiniLMEmbeddings

    embeddings = MiniLMEmbeddings().load()
    embeddings.embed_documents(["warm up"])
    history = locomo_history(args.data, args.conversation, max_turns=args.turns)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    runs = measure_import(history, embeddings, batch_sizes=sizes)
    for run in runs:
        print(run.line())
    return runs


if __name__ == "__main__":  # pragma: no cover
    main()
