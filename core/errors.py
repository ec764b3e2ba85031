"""Errors of the shared layer: one base class; each message is one line naming the file."""

from __future__ import annotations


class CoreError(Exception):
    """Base of every real error raised by `core`."""


class RecordError(CoreError, ValueError):
    """Data that does not fit its record type, or a file that is not what it should be."""


class LockedError(CoreError):
    """An output directory is in use by another run."""


class FrameworkError(CoreError):
    """An unknown framework, or a registry entry that does not fit its schema."""


def one_line(exc: BaseException) -> str:
    """An error as one line for a report: its class and the first line of its message."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
