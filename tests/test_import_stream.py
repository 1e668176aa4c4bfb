"""Many conversations imported as a stream (issue 39 item 1): bounded, resumable, with progress.

The store is the default of ``Memory(path=...)`` (embedded Qdrant); the kill is a real SIGKILL of
a real process that imports, and the run after it finishes the import without duplicates.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin import Memory
from langmem_plugin.core.scope import Scope
from langmem_plugin.errors import ConfigurationError
from langmem_plugin.services.remember import ImportProgress
from langmem_plugin.services.remember.episodes import episode_text_steps, passage_key
from langmem_plugin.testing import FakeEmbeddings

USER = "u-stream"
SENTENCE = "The tide in the harbour of {town} turns twice a day, and boats wait for it at the quay."


def chat(n: int, exchanges: int = 3, long_every: int = 2) -> list[dict[str, Any]]:
    """A chat of ``exchanges`` exchanges; every ``long_every``-th answer is long (passages)."""
    messages: list[dict[str, Any]] = []
    for m in range(exchanges):
        answer = " ".join([SENTENCE.format(town=f"Town{n}x{m}")] * (60 if m % long_every == 0 else 1))
        messages.append({"role": "user", "content": f"Chat {n}, question {m}: tell me about tides?"})
        messages.append({"role": "assistant", "content": answer})
    return [{"date": f"2024-01-{1 + n % 28:02d}T10:00", "messages": messages}]


def _episodes(memory: Memory) -> dict[str, dict[str, Any]]:
    namespace = memory.layout.namespace("user", Scope(user_id=USER))
    items = memory.store.search(namespace, limit=100_000)
    return {i.key: i.value for i in items}


def _check_whole(memory: Memory, conversations: int, exchanges: int) -> None:
    """Every exchange stored once, with all its passages, and its text rebuilt whole."""
    from langmem_plugin.services.store_steps import execute

    items = _episodes(memory)
    heads = {k: v for k, v in items.items() if not v["metadata"].get("episode")}
    assert len(heads) == conversations * exchanges
    threads = {v["metadata"]["thread_id"] for v in heads.values()}
    assert threads == {f"chat-{n}" for n in range(conversations)}
    namespace = memory.layout.namespace("user", Scope(user_id=USER))
    passages = 0
    for key, value in heads.items():
        count = int(value["metadata"].get("passages") or 0)
        passages += count
        assert all(passage_key(key, p) in items for p in range(count))
        text = execute(memory.store, episode_text_steps(namespace, key))
        assert text is not None
        assert text.startswith("User: Chat ")
    assert len(items) == len(heads) + passages  # nothing else, nothing twice


def test_many_conversations_stream_with_progress_and_replay_writes_nothing(tmp_path: Path) -> None:
    produced: list[int] = []
    seen: list[ImportProgress] = []

    def conversations() -> Iterator[tuple[str, list[dict[str, Any]]]]:
        for n in range(6):
            produced.append(n)
            yield f"chat-{n}", chat(n)

    def on_progress(progress: ImportProgress) -> None:
        # read lazily: while chat-k is written, the generator has made k + 1 conversations, no more
        assert len(produced) == int(progress.thread_id.removeprefix("chat-")) + 1
        seen.append(progress)

    config: Any = {"configurable": {"user_id": USER}}
    with Memory(path=tmp_path / "m", embeddings=FakeEmbeddings(dims=64)) as memory:
        report = memory.import_histories(conversations(), config, batch_size=2, on_progress=on_progress)
        assert (report.conversations, report.turns, report.written, report.skipped) == (6, 18, 18, 0)
        assert report.passages > 0
        assert report.failed == 0
        _check_whole(memory, 6, 3)
        # progress after every batch: 2 batches per conversation, counts only grow
        assert len(seen) == 12
        assert [p.conversations for p in seen[1::2]] == [1, 2, 3, 4, 5, 6]
        assert [p.turns for p in seen] == sorted(p.turns for p in seen)
        assert seen[-1].turns == 18
        assert seen[-1].written == 18
        assert "6 conversations, 18 turns" in str(seen[-1])
        again = memory.import_histories([(f"chat-{n}", chat(n)) for n in range(6)], config)
        assert (again.conversations, again.written, again.skipped, again.passages) == (6, 0, 18, 0)
        _check_whole(memory, 6, 3)


def test_an_episode_cut_short_by_a_crash_is_written_again(tmp_path: Path) -> None:
    config: Any = {"configurable": {"user_id": USER}}
    with Memory(path=tmp_path / "m", embeddings=FakeEmbeddings(dims=64)) as memory:
        memory.import_histories([("chat-0", chat(0))], config)
        namespace = memory.layout.namespace("user", Scope(user_id=USER))
        long_head = next(
            (k, int(v["metadata"]["passages"]))
            for k, v in _episodes(memory).items()
            if "passages" in v["metadata"]
        )
        memory.store.delete(namespace, passage_key(long_head[0], long_head[1] - 1))  # the crash
        report = memory.import_histories([("chat-0", chat(0))], config)
        assert (report.written, report.skipped) == (1, 2)
        _check_whole(memory, 1, 3)


def test_a_bad_conversation_names_its_place_and_the_ones_before_it_stay(tmp_path: Path) -> None:
    config: Any = {"configurable": {"user_id": USER}}
    with Memory(path=tmp_path / "m", embeddings=FakeEmbeddings(dims=64)) as memory:
        with pytest.raises(ConfigurationError, match=r"conversation 2 must be a \(thread_id, history\) pair"):
            memory.import_histories(iter([("chat-0", chat(0)), chat(1)]), config)  # type: ignore[list-item]
        assert len({v["metadata"]["thread_id"] for v in _episodes(memory).values()}) == 1
        with pytest.raises(ConfigurationError, match="conversations must be an iterable"):
            memory.import_histories({"chat-0": chat(0)}, config)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="on_progress must be a function"):
            memory.import_histories([], config, on_progress="print")  # type: ignore[arg-type]


async def test_the_async_stream_writes_what_the_sync_one_does(tmp_path: Path) -> None:
    config: Any = {"configurable": {"user_id": USER}}
    with Memory(path=tmp_path / "m", embeddings=FakeEmbeddings(dims=64)) as memory:
        report = await memory.aimport_histories(((f"chat-{n}", chat(n)) for n in range(3)), config)
        assert (report.conversations, report.written) == (3, 9)
        _check_whole(memory, 3, 3)


_IMPORTER = textwrap.dedent(
    """
    import sys
    from langmem_plugin import Memory
    from langmem_plugin.testing import FakeEmbeddings
    sys.path.insert(0, {tests!r})
    from test_import_stream import USER, chat

    def progress(p):
        print(p.conversations, p.turns, flush=True)

    with Memory(path={path!r}, embeddings=FakeEmbeddings(dims=64)) as memory:
        report = memory.import_histories(
            ((f"chat-{{n}}", chat(n, exchanges=6)) for n in range({count})),
            {{"configurable": {{"user_id": USER}}}},
            batch_size=2,
            on_progress=progress,
        )
    print("done", report.written, report.skipped, flush=True)
    """
)


def test_a_sigkill_mid_import_then_the_same_import_finishes_without_duplicates(tmp_path: Path) -> None:
    count = 8
    script = tmp_path / "importer.py"
    script.write_text(
        _IMPORTER.format(tests=str(Path(__file__).parent), path=str(tmp_path / "m"), count=count)
    )
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env) as first:
        assert first.stdout is not None
        lines = []
        for line in first.stdout:  # kill it inside the third conversation, mid-import
            lines.append(line.split())
            if int(lines[-1][0]) >= 2 and int(lines[-1][1]) % 6 != 0:
                break
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    assert first.returncode == -signal.SIGKILL
    done_before = int(lines[-1][1])
    assert 12 < done_before < count * 6

    second = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600, check=True
    )
    last = second.stdout.split("\n")[-2].split()
    assert last[0] == "done"
    written, skipped = int(last[1]), int(last[2])
    assert written + skipped == count * 6
    assert skipped >= done_before  # what was acknowledged before the kill is not written again
    with Memory(path=tmp_path / "m", embeddings=FakeEmbeddings(dims=64)) as memory:
        _check_whole(memory, count, 6)
