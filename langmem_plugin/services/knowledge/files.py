"""The files ``add_documents`` reads, read so that a file cannot make it read something else.

- **A folder never leads out of itself.** Its files are found by walking it from open directory
  handles (``os.fwalk``), never through a symbolic link: a link (to a file or a folder) whose
  target lies outside the folder, or leads nowhere, is not read and comes back in the report as an
  error naming it and its target; a link whose target is inside the folder is skipped silently,
  because the walk reads its target where it lies. A file is opened with ``O_NOFOLLOW`` from its
  directory's handle, so a file swapped for a link between the walk and the read is not followed
  either. (A hard link cannot be told from the file itself: it is read like any file.)
- **Only regular files.** A pipe, a device or a socket named ``x.md`` is refused, and never
  blocks the read (``O_NONBLOCK``).
- **Sizes are checked before memory is spent.** A file over the cap is not read. A ``.docx`` (a zip
  archive) whose parts inflate past the cap is refused from the archive's central directory before
  anything is inflated, and its parts are then inflated as a stream that stops at the cap, so an
  archive whose headers understate its sizes is stopped too. A PDF's streams are decoded with
  pypdf's decoding limits set to the cap, and its text is counted page by page.

The cap is :data:`~langmem_plugin.services.knowledge.sources.MAX_SOURCE_BYTES` (64 MiB), passed in.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from langmem_plugin.errors import MemoryLimitError

__all__ = ["FolderFile", "Unreadable", "check_archive", "folder_files", "read_regular_file"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_STREAM = 1024 * 1024


class Unreadable(Exception):
    """A source that cannot be read: reported for that source, the others still added."""


@dataclass(frozen=True)
class FolderFile:
    """A file of a folder: its path as named under the folder given, and its bytes or the reason
    it was not read."""

    path: Path
    data: bytes | None
    error: str | None = None


def _too_big(shown: str, size: int, cap: int) -> Unreadable:
    return Unreadable(
        f"{shown!r} is {size:,} bytes, more than {cap:,}. "
        "Fix: split it, or load it with a LangChain loader and pass the pages you need."
    )


def _read_fd(fd: int, shown: str, cap: int) -> bytes:
    """The bytes of the open file ``fd`` (closed here): a regular file of at most ``cap`` bytes."""
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise Unreadable(
                f"{shown!r} is not a regular file (a pipe, a device, a socket or a folder). "
                "Fix: pass regular files only."
            )
        if status.st_size > cap:
            raise _too_big(shown, status.st_size, cap)
        blocks: list[bytes] = []
        total = 0
        with os.fdopen(os.dup(fd), "rb") as file:
            while block := file.read(min(_STREAM, cap + 1 - total)):  # it may grow: never past the cap
                blocks.append(block)
                total += len(block)
                if total > cap:
                    raise _too_big(shown, total, cap)
    finally:
        os.close(fd)
    return b"".join(blocks)


def read_regular_file(path: Path, cap: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``cap`` bytes (a link the caller named is
    followed: the caller chose it)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        raise Unreadable(f"the document path {str(path)!r} does not exist. Fix: check the path.") from None
    except OSError as exc:
        raise Unreadable(f"{str(path)!r} could not be opened ({exc.strerror}). Fix: check it.") from None
    return _read_fd(fd, str(path), cap)


def _inside(target: str, root: str) -> bool:
    try:
        return os.path.commonpath([target, root]) == root
    except ValueError:  # another drive (Windows)
        return False


def _link_error(shown: Path, link: str, target: str, root: str) -> FolderFile | None:
    """The report of a link met in a folder, or ``None`` when its target lies inside the folder."""
    if os.path.exists(target) and _inside(target, root):
        return None  # the walk reads the target where it lies
    where = "leads nowhere" if not os.path.exists(target) else "points outside the folder"
    return FolderFile(
        shown,
        None,
        f"{str(shown)!r} is a symbolic link to {link!r}, which {where}; a folder add never follows "
        "a link out of the folder, so it was not read. Fix: pass the file it points to by its own "
        "path if you mean to add it.",
    )


def folder_files(folder: Path, suffixes: tuple[str, ...], cap: int) -> list[FolderFile]:
    """The files of ``folder`` and its subfolders whose suffix is in ``suffixes``, read, by path.

    Nothing is read through a symbolic link (see the module docstring); each file is read from
    its directory's open handle, a regular file of at most ``cap`` bytes, or reported.
    """
    root = os.path.realpath(folder)
    walk = _fwalk if hasattr(os, "fwalk") else _walk
    return sorted(walk(folder, root, suffixes, cap), key=lambda f: f.path)


def _fwalk(folder: Path, root: str, suffixes: tuple[str, ...], cap: int) -> Iterator[FolderFile]:
    for dirpath, dirnames, filenames, dirfd in os.fwalk(root, follow_symlinks=False):
        relative = os.path.relpath(dirpath, root)
        here = folder if relative == os.curdir else folder / relative
        for name in [*dirnames, *filenames]:
            shown = here / name
            is_dir = name in dirnames
            try:
                status = os.lstat(name, dir_fd=dirfd)
            except OSError:
                continue  # gone since the listing
            if stat.S_ISLNK(status.st_mode):
                if is_dir or name.lower().endswith(suffixes):
                    link = os.readlink(name, dir_fd=dirfd)
                    target = os.path.realpath(os.path.join(dirpath, link))
                    if (error := _link_error(shown, link, target, root)) is not None:
                        yield error
                continue
            if is_dir or not name.lower().endswith(suffixes):
                continue
            try:
                fd = os.open(name, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _BINARY, dir_fd=dirfd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # swapped for a link since the lstat: not followed
                    yield FolderFile(shown, None, f"{str(shown)!r} became a symbolic link; not read.")
                else:
                    yield FolderFile(shown, None, f"{str(shown)!r} could not be opened ({exc.strerror}).")
                continue
            yield _read_entry(shown, fd, cap)


def _walk(folder: Path, root: str, suffixes: tuple[str, ...], cap: int) -> Iterator[FolderFile]:
    """Where ``os.fwalk`` is missing (Windows): paths checked against the folder after the open."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        relative = os.path.relpath(dirpath, root)
        here = folder if relative == os.curdir else folder / relative
        for name in [*dirnames, *filenames]:
            full, shown = os.path.join(dirpath, name), here / name
            if os.path.islink(full):
                if name in dirnames or name.lower().endswith(suffixes):
                    target = os.path.realpath(full)
                    if (error := _link_error(shown, os.readlink(full), target, root)) is not None:
                        yield error
                continue
            if name in dirnames or not name.lower().endswith(suffixes):
                continue
            try:
                fd = os.open(full, os.O_RDONLY | _BINARY)
            except OSError as exc:
                yield FolderFile(shown, None, f"{str(shown)!r} could not be opened ({exc.strerror}).")
                continue
            if not _inside(os.path.realpath(full), root):
                os.close(fd)
                yield FolderFile(shown, None, f"{str(shown)!r} leads outside the folder; not read.")
                continue
            yield _read_entry(shown, fd, cap)


def _read_entry(shown: Path, fd: int, cap: int) -> FolderFile:
    try:
        return FolderFile(shown, _read_fd(fd, str(shown), cap))
    except Unreadable as exc:
        return FolderFile(shown, None, str(exc))


def _bomb(shown: str, size: int, cap: int, how: str) -> MemoryLimitError:
    return MemoryLimitError(
        f"{shown!r} inflates to {how} {size:,} bytes, more than the {cap:,} a document may be: a "
        ".docx is a zip archive, and one whose parts inflate past the limit is refused before it is "
        "inflated (nothing was added). Fix: check where the file came from; a real document this "
        "large can be split, or loaded with a LangChain loader and passed as Documents."
    )


def check_archive(data: bytes, shown: str, cap: int) -> None:
    """Refuse the zip archive ``data`` (a ``.docx``) when its parts inflate past ``cap`` bytes.

    First from the sizes its central directory declares, before anything is inflated; then by
    inflating every part as a stream that stops at ``cap``, so sizes that lie are caught too.
    Bytes that are no zip archive pass (the reader then reports them).

    Raises:
        MemoryLimitError: the parts inflate past ``cap`` (declared or actual).
        Unreadable: a part cannot be inflated (corrupt, encrypted).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    with archive:
        parts = archive.infolist()
        declared = sum(info.file_size for info in parts)
        if declared > cap:
            raise _bomb(shown, declared, cap, "a declared")
        total = 0
        for info in parts:
            try:
                with archive.open(info) as part:
                    while block := part.read(_STREAM):
                        total += len(block)
                        if total > cap:
                            raise _bomb(shown, total, cap, "at least")
            except MemoryLimitError:
                raise
            except Exception as exc:  # zipfile raises BadZipFile, RuntimeError, zlib and lzma errors
                raise Unreadable(
                    f"{shown!r} could not be read as a .docx file ({type(exc).__name__}). "
                    "Fix: save it again as .docx, or load it with a LangChain Word loader."
                ) from None
