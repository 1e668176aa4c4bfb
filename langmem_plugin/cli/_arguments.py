"""Argument types and the parser of ``langmem-plugin``: a bad value is one line with the fix, exit 2."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from langmem_plugin.errors import one_line


class _Parser(argparse.ArgumentParser):
    """An argument parser whose error is one line on stderr, with the fix, and exit status 2."""

    def error(self, message: str) -> NoReturn:
        # One line whatever was typed: a line break inside an argument is shown escaped.
        self.exit(2, f"{self.prog}: {one_line(message)} (see: {self.prog} --help)\n")


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least {minimum}, got {text!r}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def _directory(text: str) -> str:
    """An argparse type: a directory the demo can write in, or make; checked, not made, here.

    The nearest existing folder on the path must be a directory in which a file can be created
    (a temporary one, gone at once): permissions, read-only file systems and a file in the way
    all show up before any work starts.
    """
    try:
        if not text.strip():
            raise FileNotFoundError(0, "an empty path")
        path = Path(text).expanduser().absolute()
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not existing.is_dir():
            raise NotADirectoryError(0, f"{str(existing)!r} is a file")
        with tempfile.TemporaryFile(dir=existing):
            pass
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL in the path; ~nosuchuser
        reason = getattr(exc, "strerror", None) or str(exc)
        raise argparse.ArgumentTypeError(
            f"cannot write in {text!r} ({reason}): pass a directory you can write in, or leave --dir out "
            "for a temporary one"
        ) from None
    return text


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be integers separated by commas, got {text!r}"
        ) from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535, got {text!r}")
    return value


def _names(valid: Sequence[str], what: str) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: comma-separated names, each one of ``valid`` (an error lists them)."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
        unknown = [name for name in names if name not in valid]
        if unknown or not names:
            given = ", ".join(repr(n) for n in unknown) if unknown else "none"
            raise argparse.ArgumentTypeError(f"unknown {what} {given}; choose from: {', '.join(valid)}")
        return names

    return parse
