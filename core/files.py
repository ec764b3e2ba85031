"""The file rules of every stage: atomic writes, JSON and JSONL reading, output-directory locks.

Writes: whatever path it is given, always through a uniquely named temporary file in the same
directory, fsynced and renamed over the target, so a reader sees the old or the new file, never
a torn one, and two writers never share a temporary file. JSON is written with `indent=1` and
UTF-8 text (not `\\u` escapes); a JSONL line is compact JSON and a newline.
Refuses: a JSON or JSONL file that cannot be read or does not parse, a JSONL line that is not
an object, and a duplicated id in a JSONL file, each with one line naming the file and the line.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from core.errors import LockedError, RecordError
from core.records import from_json, to_json

T = TypeVar("T")

LOCK_NAME = ".lock"
_UMASK = os.umask(0)
os.umask(_UMASK)


def line_starts(data: bytes) -> list[int]:
    """The byte offset of each line of `data` (line n starts at index n - 1)."""
    starts = [0]
    at = data.find(b"\n")
    while at != -1:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


def write_atomic(path: Path, data: bytes | str) -> None:
    """Replace `path` with `data` atomically (unique temp file, fsync, rename)."""
    if isinstance(data, str):
        data = data.encode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would create it; mkstemp's is 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def dumps(data: Any, *, sort_keys: bool = False) -> str:
    """The project's JSON text for a file of its own."""
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=sort_keys)


def write_json(path: Path, data: Any, *, sort_keys: bool = False) -> None:
    write_atomic(path, dumps(data, sort_keys=sort_keys))


def write_record(path: Path, record: Any) -> None:
    """A record dataclass as a JSON file (`core.records.to_json`)."""
    write_json(path, to_json(record))


def jsonl_line(data: Any) -> bytes:
    """One JSONL line (compact, UTF-8, newline-terminated)."""
    return json.dumps(data, ensure_ascii=False).encode() + b"\n"


def write_jsonl(path: Path, rows: list[Any]) -> None:
    write_atomic(path, b"".join(jsonl_line(r) for r in rows))


def read_json(path: Path) -> Any:
    """A JSON file's data; a file that does not parse is a one-line `RecordError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def read_record(cls: type[T], path: Path) -> T:
    """A JSON file read as a record dataclass, errors naming the file."""
    return from_json(cls, read_json(path), where=str(path))


def read_jsonl(
    path: Path, *, id_key: str | None = None, skip_torn_tail: bool = False
) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every line of a JSONL file; blank lines are skipped.

    A line that is not a JSON object, or (with `id_key`) an id seen on an earlier line, is a
    one-line `RecordError` naming the file and both lines: nothing is adopted silently.
    `skip_torn_tail`: a last line with no newline is a record still being appended (a writer
    writes each line whole, newline included) and is left out instead of refused.
    """
    rows: list[tuple[int, dict[str, Any]]] = []
    seen: dict[Any, int] = {}
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise RecordError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip() or (skip_torn_tail and not raw.endswith(b"\n")):
                continue
            try:
                data = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                raise RecordError(f"{path}:{number}: not valid JSON ({why})") from None
            if not isinstance(data, dict):
                raise RecordError(f"{path}:{number}: expected a JSON object per line")
            if id_key is not None:
                key = data.get(id_key)
                if key is None:
                    raise RecordError(f"{path}:{number}: no {id_key!r}")
                if key in seen:
                    raise RecordError(
                        f"{path}:{number}: duplicate {id_key} {key!r} (first on line {seen[key]})"
                    )
                seen[key] = number
            rows.append((number, data))
    return rows


def cut_torn_tail(path: Path) -> int:
    """Cut a last line with no newline (a record torn by a killed writer) off a JSONL file that
    is about to be appended to; the number of bytes cut."""
    if not path.exists():
        return 0
    with path.open("r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        pos = size
        while pos > 0:
            step = min(pos, 1 << 16)
            fh.seek(pos - step)
            chunk = fh.read(step)
            at = chunk.rfind(b"\n")
            if at != -1:
                pos = pos - step + at + 1
                break
            pos -= step
        if pos < size:
            fh.truncate(pos)
            fh.flush()
            os.fsync(fh.fileno())
    return size - pos


@contextlib.contextmanager
def output_lock(directory: Path, what: str = "") -> Iterator[None]:
    """Hold `directory/.lock` for the duration; a second holder gets a one-line `LockedError`.

    The lock is an advisory `flock`: the kernel drops it when the holder dies, so a killed run
    never leaves a stale lock behind. The file names the holder for the error message.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            raise LockedError(
                f"{directory} is in use by {holder}; wait for it to finish or use another "
                "output directory"
            ) from None
        started = datetime.now(UTC).isoformat(timespec="seconds")
        command = what or " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200]
        info = f"pid {os.getpid()} on {socket.gethostname()} ({command}, since {started})"
        os.ftruncate(fd, 0)
        os.pwrite(fd, info.encode(), 0)
        yield
    finally:
        os.close(fd)
