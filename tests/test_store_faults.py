"""Storage faults of the embedded QdrantStore are typed errors, never a dead process or a traceback.

- a damaged, empty, truncated or foreign ``store.json``, a missing or garbled ``shard/``:
  :class:`StoreFileError` from the API, one line and exit 2 from the command line;
- a full disk: :class:`StoreFullError` before the engine writes (it would die of SIGBUS inside a
  mapped file), the store reopenable with every acknowledged write (on a small tmpfs, in a child
  process, so a SIGBUS shows as a failed test);
- a write the engine applied is never reported as failed by what follows it (fsync, bookkeeping,
  an index build);
- processes racing to create one store: the losers get :class:`StoreLockedError`, the store is
  whole.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_plugin.cli import main
from langmem_plugin.errors import (
    StoreConfigMismatchError,
    StoreError,
    StoreFileError,
    StoreFormatError,
    StoreFullError,
    StoreLockedError,
)
from langmem_plugin.stores import QdrantStore
from langmem_plugin.stores.qdrant import _edge
from langmem_plugin.stores.qdrant._space import RESERVE, WRITE_FACTOR
from langmem_plugin.surfaces import memory_index
from langmem_plugin.testing import FakeEmbeddings

ROOT = Path(__file__).resolve().parent.parent
NS = ("users", "u1")


def _index() -> Any:
    return {"dims": 16, "embed": FakeEmbeddings(16), "fields": ["text"]}


def _make(path: Path, index: Any = None) -> None:
    with QdrantStore(path, index=index or _index()) as store:
        store.put(NS, "a", {"text": "green tea"})


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store as ``Memory(path=...)`` writes it (what the command line opens), made once."""
    path = tmp_path_factory.mktemp("cli") / "memory"
    _make(path, memory_index())
    return path


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock"))
    return target


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


# --------------------------------------------------------------------------- store.json


def _meta(drop: str = "", **changed: Any) -> str:
    """A format-2 store.json of :func:`_index` with these keys changed, and ``drop`` left out."""
    meta = {"format": 2, "dims": 16, "fields": ["text"], "lexical_fields": None, "pending": 0, **changed}
    meta.pop(drop, None)
    return json.dumps(meta)


BROKEN_META = {
    "empty": "",
    "blank": "  \n",
    "garbage": "garbage \x00\xff",
    "truncated": '{"format": 2, "dims": 16, "fie',
    "array": "[1, 2]",
    "null": "null",
    "string": '"store"',
    "number": "2",
    "another program's": '{"name": "my-app", "version": "1.0.0"}',
    "format as text": _meta(format="2"),
    "format as bool": _meta(format=True),
    "format 0": _meta(format=0),
    "missing dims": _meta(dims=None, drop="dims"),
    "missing pending": _meta(drop="pending"),
    "dims as text": _meta(dims="16"),
    "dims negative": _meta(dims=-1),
    "fields as text": _meta(fields="text"),
    "pending as text": _meta(pending="a"),
    "embedder as number": _meta(embedder=5),
    "deep": "[" * 100_000,
}


@pytest.mark.parametrize("content", BROKEN_META.values(), ids=BROKEN_META.keys())
def test_a_broken_store_json_is_a_store_file_error_naming_it_and_the_fix(
    tmp_path: Path, content: str
) -> None:
    path = tmp_path / "s"
    _make(path)
    meta = path / "store.json"
    meta.write_bytes(content.encode("utf-8", "surrogateescape"))
    for _ in range(2):  # the lock is released: the second open fails the same way
        with pytest.raises(StoreFileError) as caught:
            QdrantStore(path, index=_index())
        assert isinstance(caught.value, StoreError)
        assert str(meta) in str(caught.value)
        assert "Fix:" in str(caught.value)
        assert caught.value.path == str(meta)
    assert meta.read_bytes() == content.encode("utf-8", "surrogateescape")  # left as it was


@pytest.mark.parametrize("found", [1, 3, 99])
def test_another_format_is_a_store_format_error(tmp_path: Path, found: int) -> None:
    path = tmp_path / "s"
    _make(path)
    meta = json.loads((path / "store.json").read_text())
    (path / "store.json").write_text(json.dumps({**meta, "format": found}))
    with pytest.raises(StoreFormatError, match=f"format {found}") as caught:
        QdrantStore(path, index=_index())
    assert isinstance(caught.value, StoreError)
    assert isinstance(caught.value, StoreConfigMismatchError)  # what it was before
    assert "export_jsonl" in str(caught.value)


def test_the_fix_of_a_broken_store_json_is_a_file_that_opens_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    (path / "store.json").write_text("{")
    with pytest.raises(StoreFileError) as caught:
        QdrantStore(path, index=_index())
    shown = str(caught.value).split("write this into ")[1].split(": ", 1)[1].split(" (nothing else")[0]
    (path / "store.json").write_text(shown)
    with QdrantStore(path, index=_index()) as store:
        item = store.get(NS, "a")
    assert item is not None
    assert item.value == {"text": "green tea"}


# --------------------------------------------------------------------------- shard/


def _replaced(shard: Path, *, by_file: bool) -> None:
    shutil.rmtree(shard)
    if by_file:
        shard.write_text("x")
    else:
        shard.mkdir()


SHARD_FAULTS = {
    "missing": lambda shard: shutil.rmtree(shard),
    "a file": lambda shard: _replaced(shard, by_file=True),
    "empty": lambda shard: _replaced(shard, by_file=False),
    "garbage config": lambda shard: (shard / "edge_config.json").write_text("garbage"),
    "empty config": lambda shard: (shard / "edge_config.json").write_text(""),
    "zeroed wal": lambda shard: [
        p.write_bytes(b"\0" * p.stat().st_size) for p in (shard / "wal").glob("open-*")
    ],
    "garbage segment": lambda shard: [p.write_text("{") for p in shard.glob("segments/*/segment.json")],
}


@pytest.mark.parametrize("garble", SHARD_FAULTS.values(), ids=SHARD_FAULTS.keys())
def test_a_missing_or_garbled_shard_is_a_store_file_error_naming_it(tmp_path: Path, garble: Any) -> None:
    path = tmp_path / "s"
    _make(path)
    garble(path / "shard")
    for _ in range(2):
        with pytest.raises(StoreFileError) as caught:
            QdrantStore(path, index=_index())
        assert str(path / "shard") in str(caught.value)
        assert "Fix:" in str(caught.value)


def test_a_shard_without_store_json_is_refused_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _make(path)
    (path / "store.json").unlink()
    with pytest.raises(StoreFileError, match=r"store\.json is missing"):
        QdrantStore(path, index=_index())
    assert (path / "shard" / "edge_config.json").is_file()  # nothing removed


def test_a_creation_cut_short_is_started_again(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with QdrantStore(path, index=_index()):
        pass
    (path / ".creating").touch()  # what a process killed while creating leaves
    (path / "store.json").write_text("{")
    with QdrantStore(path, index=_index()) as store:
        store.put(NS, "b", {"text": "black tea"})
    assert not (path / ".creating").exists()
    with QdrantStore(path, index=_index()) as store:
        assert store.get(NS, "b") is not None


# --------------------------------------------------------------------------- the command line

CLI_FAULTS = {
    "garbage store.json": lambda p: (p / "store.json").write_text("garbage"),
    "empty store.json": lambda p: (p / "store.json").write_text(""),
    "foreign store.json": lambda p: (p / "store.json").write_text('{"name": "x"}'),
    "array store.json": lambda p: (p / "store.json").write_text("[]"),
    "format 99": lambda p: (p / "store.json").write_text('{"format": 99}'),
    "missing shard": lambda p: shutil.rmtree(p / "shard"),
    "garbled shard": lambda p: (p / "shard" / "edge_config.json").write_text("x"),
}


@pytest.mark.parametrize("garble", CLI_FAULTS.values(), ids=CLI_FAULTS.keys())
@pytest.mark.parametrize("command", ["list", "show", "inspect"])
def test_the_command_line_reports_a_damaged_store_in_one_line_exit_2(
    tmp_path: Path, cli_store: Path, garble: Any, command: str
) -> None:
    path = _copy(cli_store, tmp_path / "memory")
    garble(path)
    argv = {
        "list": ["memories", "list", "--store", str(path)],
        "show": ["memories", "show", "m1", "--user", "u1", "--store", str(path)],
        "inspect": ["inspect", str(path), "--port", "1"],
    }[command]
    code, err = _cli(*argv)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("langmem-plugin ")
    assert "Traceback" not in err
    assert str(path) in err


def test_the_command_itself_exits_2_without_a_traceback(tmp_path: Path, cli_store: Path) -> None:
    path = _copy(cli_store, tmp_path / "memory")
    (path / "store.json").write_text('{"format": 2, "dims": 384')
    for argv in (["inspect", str(path)], ["memories", "list", "--store", str(path)]):
        done = subprocess.run(
            [sys.executable, "-m", "langmem_plugin", *argv], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1
        assert "Traceback" not in done.stderr
        assert "store.json" in done.stderr


def test_the_command_line_reports_an_os_error_in_one_line(
    monkeypatch: pytest.MonkeyPatch, cli_store: Path
) -> None:
    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(cli_store))

    monkeypatch.setattr("langmem_plugin.inspector.opening.open_store", unreadable)
    code, err = _cli("memories", "list", "--store", str(cli_store))
    assert code == 2
    assert err.count("\n") == 1
    assert "Permission denied" in err


# --------------------------------------------------------------------------- a full disk


def _mount_tmpfs(target: Path, size: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("a full disk is made with a small tmpfs: needs root on Linux")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 MiB tmpfs (a store's files are sparse: a fresh store takes about 13 MiB of it)."""
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "256M")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int) -> int:
    """Fill the file system of ``disk`` until about ``leave`` bytes are free; the bytes free after."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    fd = os.open(disk / "fill", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        todo = free - leave
        while todo > 0:
            try:
                todo -= os.write(fd, b"\0" * min(todo, 1 << 20))
            except OSError:
                break
    finally:
        os.close(fd)
    return os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize


def _child(function: str, *args: str) -> dict[str, Any]:
    """Run ``function(*args)`` of this module in a child process; what it printed last, as JSON."""
    code = f"import sys; from tests.test_store_faults import {function}; {function}(*sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, f"the child died ({done.returncode}; -7 is SIGBUS): {done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def write_until_full(disk: str) -> None:
    """In a child: a store on ``disk``, the disk filled, writes until refused, then what follows."""
    path = Path(disk) / "store"
    store = QdrantStore(path, index=_index(), options={"optimize_every": 3})
    store.put(NS, "k0", {"text": "before the disk filled"})
    acked = ["k0"]
    fill(Path(disk), RESERVE + 3 * 1024 * 1024)
    error: StoreFullError | None = None
    for n in range(1, 10_000):
        try:  # 100 kB each: refused once the room left is under the reserve plus a write's need
            store.put(NS, f"k{n}", {"text": f"item {n} " + "y" * 100_000})
        except StoreFullError as exc:
            error = exc
            break
        acked.append(f"k{n}")
    assert error is not None
    result: dict[str, Any] = {
        "acked": acked,
        "errno": error.errno,
        "free": error.free,
        "needed": error.needed,
        "message": str(error),
        "is_os_error": isinstance(error, OSError),
    }
    try:
        store.optimize()
        result["optimize"] = "ran"
    except StoreFullError:
        result["optimize"] = "refused"
    result["readable"] = store.get(NS, "k1") is not None
    with pytest.raises(StoreFullError):  # still refused, still alive
        store.put(NS, "again", {"text": "y" * 100_000})
    store.close()
    try:
        QdrantStore(path, index=_index()).close()
        result["reopen_full"] = "opened"
    except StoreFullError as exc:
        result["reopen_full"] = str(exc)
    print(json.dumps(result))


def test_a_full_disk_refuses_writes_with_a_typed_error_and_keeps_every_acknowledged_one(
    small_disk: Path,
) -> None:
    result = _child("write_until_full", str(small_disk))
    assert result["errno"] == 28
    assert result["is_os_error"]
    assert result["free"] < result["needed"] <= RESERVE + WRITE_FACTOR * 200_000
    assert str(small_disk / "store") in result["message"]
    assert "Fix:" in result["message"]
    assert len(result["acked"]) > 3  # writes went on while there was room (index builds put off)
    assert result["optimize"] == "refused"
    assert result["readable"]
    assert result["reopen_full"] == "opened" or "open the shard" in result["reopen_full"]
    (small_disk / "fill").unlink()
    with QdrantStore(small_disk / "store", index=_index()) as store:
        for key in result["acked"]:
            assert store.get(NS, key) is not None, key
        assert store.get(NS, "again") is None
        store.put(NS, "after", {"text": "room again"})  # and it writes again


def create_on_full_disk(disk: str) -> None:
    """In a child: creating a store on a disk with less than the reserve free."""
    fill(Path(disk), RESERVE // 2)
    try:
        QdrantStore(Path(disk) / "new", index=_index())
    except StoreFullError as exc:
        print(json.dumps({"error": str(exc), "left": sorted(p.name for p in (Path(disk) / "new").iterdir())}))


def test_creating_a_store_on_a_full_disk_is_refused_and_leaves_no_half_store(small_disk: Path) -> None:
    result = _child("create_on_full_disk", str(small_disk))
    assert "create the store" in result["error"]
    assert "store.json" not in result["left"]
    assert "shard" not in result["left"]
    (small_disk / "fill").unlink()
    _make(small_disk / "new")  # with room, it is created
    with QdrantStore(small_disk / "new", index=_index()) as store:
        assert store.get(NS, "a") is not None


# --------------------------------------------------------------------------- after a write


class _FailingFlush:
    """The engine's shard, whose flush fails (a disk error after the WAL took the write)."""

    def __init__(self, shard: Any) -> None:
        self._shard = shard

    def flush(self) -> None:
        raise Exception("Service runtime error: flush failed")  # the engine raises plain Exception

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)


def test_a_failed_fsync_after_an_applied_write_does_not_fail_the_write(tmp_path: Path) -> None:
    store = QdrantStore(tmp_path / "s", index=_index(), options={"durable": True})
    engine = store._engine
    assert isinstance(engine, _edge.EdgeEngine)
    real = engine._shard
    engine._shard = _FailingFlush(real)  # type: ignore[assignment]
    store.put(NS, "b", {"text": "kept"})  # no error: the write is applied
    assert store.get(NS, "b") is not None
    engine._shard = real
    store.close()
    with QdrantStore(tmp_path / "s", index=_index()) as again:
        assert again.get(NS, "b") is not None


def test_a_failed_index_build_after_a_write_does_not_fail_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def failing(self: _edge.EdgeEngine, shard: Any) -> bool:
        calls.append(self._pending)
        raise StoreError("Qdrant Edge failed to build the index: boom")

    monkeypatch.setattr(_edge.EdgeEngine, "_optimizers", failing)
    with QdrantStore(tmp_path / "s", index=_index(), options={"optimize_every": 2}) as store:
        for n in range(5):
            store.put(NS, f"k{n}", {"text": f"item {n}"})
        assert calls  # a build was tried, failed, and the writes stood
        assert [store.get(NS, f"k{n}") is not None for n in range(5)] == [True] * 5


def test_a_failed_store_json_write_after_a_write_does_not_fail_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s"
    with QdrantStore(
        path, index={"dims": 16, "embed": lambda texts: [[0.5] * 16 for _ in texts], "fields": ["text"]}
    ):
        pass  # an embedder with no identity: nothing recorded
    meta = json.loads((path / "store.json").read_text())
    assert meta["embedder"] is None

    def no_room(self: _edge.EdgeEngine, directory: Path | None = None) -> None:
        raise StoreFullError("no room", path=str(self.path))

    with QdrantStore(path, index=_index()) as store:  # a known embedder: its first write records it
        monkeypatch.setattr(_edge.EdgeEngine, "_write_meta", no_room)
        store.put(NS, "b", {"text": "kept"})
        assert store.get(NS, "b") is not None
        monkeypatch.undo()
    assert json.loads((path / "store.json").read_text())["embedder"] is not None  # written at close


# --------------------------------------------------------------------------- racing creators


def race_to_create(path: str, go: str, ready: str) -> None:
    """In a child: wait for ``go``, open (create) the store, write, hold it a moment, close."""
    Path(ready).touch()
    while not Path(go).exists():
        time.sleep(0.001)
    try:
        with QdrantStore(Path(path), index=_index()) as store:
            store.put(NS, f"p{os.getpid()}", {"text": "created"})
            time.sleep(0.3)
        print(json.dumps({"outcome": "ok", "key": f"p{os.getpid()}"}))
    except StoreLockedError as exc:
        print(json.dumps({"outcome": "locked", "message": str(exc)}))


@pytest.mark.parametrize("round_", range(3))
def test_processes_racing_to_create_a_store_get_it_or_a_locked_error(tmp_path: Path, round_: int) -> None:
    path, go = tmp_path / "new" / "store", tmp_path / "go"
    code = "import sys; from tests.test_store_faults import race_to_create; race_to_create(*sys.argv[1:])"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(go), str(tmp_path / f"ready-{n}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in range(5)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < len(children) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert {r["outcome"] for r in results} <= {"ok", "locked"}
    winners = {r["key"] for r in results if r["outcome"] == "ok"}
    assert winners
    meta = json.loads((path / "store.json").read_text())
    assert meta["format"] == 2
    assert meta["dims"] == 16
    assert not (path / ".creating").exists()
    with QdrantStore(path, index=_index()) as store:
        assert {i.key for i in store.search(NS, limit=100)} == winners
