"""The harness's end of the verdict channel: check the frames a test run streams and turn them
into per-test outcomes and kernel timings.

Reads: frame lines from `tpb_verdict` (eval/verdict_plugin), from the pipe of a local run while it
runs (`PipeReader`) or from the engine's log of a docker run. Writes nothing.
Refuses: to take anything from a line that is not a frame signed with the run's key, from a
frame out of sequence, or from one after the session's end; each is a problem, and a run with a
problem cannot pass. So are a second report of one test phase, a report of a test that was not
collected and, once the session ended, a collected test without a report (`Verdict.problems`).
Files the run writes (junit XML, a kernels JSON) are never read.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.model import KernelTiming, TestOutcome
from eval.pytest_plugin import timings_from_report
from eval.verdict_plugin.tpb_verdict import KEY_BYTES, decode_frame

log = logging.getLogger(__name__)

MAX_BYTES = 256 << 20  # what one run may send; the rest is drained and dropped
MAX_LINE = 64 << 20
MAX_PROBLEMS = 20

__all__ = ["KEY_BYTES", "FrameReader", "PipeReader", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """What a run's frames say."""

    tests: tuple[TestOutcome, ...]  # one per collected test (phases combined), then collectors
    kernels: tuple[KernelTiming, ...]
    collected: tuple[str, ...]
    ended: bool  # the session's `end` frame arrived
    exitstatus: int | None  # pytest's exit status from that frame
    problems: tuple[str, ...]  # the channel's: forged, out of order, duplicate, extra, missing
    tampered: tuple[str, ...]  # what the plugin saw replaced in the test process
    frames: int
    # when (time.perf_counter) the first `hello`, `collected`, `kernels`, `end` frame and the
    # last `report` frame arrived: where a run's time went (`run_phases`)
    arrivals: Mapping[str, float] = field(default_factory=dict)


@dataclass
class FrameReader:
    """Collects frames fed in arbitrary chunks; `verdict()` judges them."""

    key: bytes
    _buf: bytearray = field(default_factory=bytearray)
    _seen: int = 0
    _next: int = 0
    _ended: bool = False
    _exitstatus: int | None = None
    _collected: list[str] | None = None
    _phases: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    _collectors: list[TestOutcome] = field(default_factory=list)
    _kernels: tuple[KernelTiming, ...] = ()
    _tampered: list[str] = field(default_factory=list)
    _problems: list[str] = field(default_factory=list)
    _frames: int = 0
    _arrivals: dict[str, float] = field(default_factory=dict)

    def problem(self, text: str) -> None:
        if len(self._problems) < MAX_PROBLEMS:
            self._problems.append(text)
        elif len(self._problems) == MAX_PROBLEMS:
            self._problems.append("... more problems")

    def feed(self, data: bytes) -> None:
        self._seen += len(data)
        if self._seen > MAX_BYTES:
            if self._seen - len(data) <= MAX_BYTES:
                self.problem(f"the run sent more than {MAX_BYTES >> 20} MiB on the channel")
            return
        self._buf += data
        while (end := self._buf.find(b"\n")) != -1:
            line = bytes(self._buf[:end])
            del self._buf[: end + 1]
            self._line(line)
        if len(self._buf) > MAX_LINE:
            self.problem("a line longer than any frame")
            self._buf.clear()

    def close(self) -> None:
        if self._buf.strip():
            self.problem("the channel ended inside a line")
        self._buf.clear()

    def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            seq, payload = decode_frame(self.key, line)
        except (ValueError, UnicodeDecodeError) as exc:
            self.problem(f"not a frame of this run ({exc})")
            return
        if seq != self._next:
            self.problem(f"frame {seq} out of sequence (expected {self._next})")
            return
        self._next += 1
        if self._ended:
            self.problem(f"frame {seq} after the session's end")
            return
        self._frames += 1
        self._take(payload)

    def _take(self, f: Mapping[str, Any]) -> None:
        kind = f["kind"]
        if kind == "report" or kind not in self._arrivals:
            self._arrivals[kind] = time.perf_counter()
        if kind == "collected":
            if self._collected is not None:
                self.problem("a second list of collected tests")
                return
            self._collected = [str(n) for n in f.get("nodeids", ())]
        elif kind == "collect":
            outcome = "skipped" if f.get("outcome") == "skipped" else "error"
            self._collectors.append(
                TestOutcome(str(f.get("nodeid", "")), outcome, 0.0, str(f.get("message", "")))
            )
        elif kind == "report":
            self._report(f)
        elif kind == "tampered":
            self._tampered += [str(c) for c in f.get("changes", ())]
        elif kind == "kernels":
            report = f.get("report")
            if isinstance(report, Mapping):
                self._kernels = tuple(timings_from_report(report).values())
        elif kind == "end":
            self._ended = True
            self._exitstatus = int(f.get("exitstatus", -1))

    def _report(self, f: Mapping[str, Any]) -> None:
        nodeid, when = str(f.get("nodeid", "")), str(f.get("when", ""))
        if self._collected is None or nodeid not in self._collected:
            self.problem(f"a report of {nodeid!r}, which was not collected")
            return
        phases = self._phases.setdefault(nodeid, {})
        if when in phases:
            self.problem(f"a second {when} report of {nodeid!r}")
            return
        phases[when] = dict(f)

    def verdict(self, expected: Sequence[str] = ()) -> Verdict:
        """The judged frames; `expected` node ids (the reference's) are flagged when the session
        ended without reporting them."""
        collected = tuple(self._collected or ())
        tests = [_combine(n, self._phases[n]) for n in collected if n in self._phases]
        if self._ended:
            missing = [n for n in collected if n not in self._phases]
            if missing:
                self.problem(f"{len(missing)} collected tests were never reported: {missing[0]}")
        return Verdict(
            tests=(*tests, *self._collectors),
            kernels=self._kernels,
            collected=collected,
            ended=self._ended,
            exitstatus=self._exitstatus,
            problems=tuple(self._problems),
            tampered=tuple(dict.fromkeys(self._tampered)),
            frames=self._frames,
            arrivals=dict(self._arrivals),
        )


PHASES = ("startup", "collect", "tests", "finish", "exit", "unfinished")


def run_phases(arrivals: Mapping[str, float], start: float, stop: float) -> dict[str, float]:
    """Seconds of a test process by phase, from when its frames arrived: `startup` (the
    interpreter and pytest, up to the verdict plugin's hello), `collect` (conftests and test
    modules, hence the framework's import), `tests` (to the last test report), `finish` (the
    kernel watch's isolated timing and report, to pytest's end), `exit` (the interpreter's
    teardown). A run that never sent its end (killed, or crashed while collecting) has
    `unfinished` instead: from its last frame to the process's end. On the H200 a
    flash-linear-attention base or gold run took 21-35 s for about 1 s of tests (2026-12-03);
    these say which phase to shorten."""
    marks = [("startup", "hello"), ("collect", "collected"), ("tests", "report"),
             ("finish", "end")]  # fmt: skip
    out: dict[str, float] = {}
    last = start
    for phase, kind in marks:
        at = arrivals.get(kind)
        if at is None:
            continue  # no test ran (no report), or the process ended before this frame
        out[phase] = round(max(0.0, at - last), 3)
        last = at
    out["exit" if "end" in arrivals else "unfinished"] = round(max(0.0, stop - last), 3)
    return out


def _combine(nodeid: str, phases: Mapping[str, Mapping[str, Any]]) -> TestOutcome:
    """One test's outcome from its phases, as junit reports it: a failing setup or teardown is
    an error, a failing call a failure, a skipped setup or call (xfail included) a skip."""
    seconds = round(sum(float(p.get("seconds", 0.0)) for p in phases.values()), 6)
    for when, bad in (("setup", "error"), ("call", "failed"), ("teardown", "error")):
        p = phases.get(when)
        if p is not None and p.get("outcome") == "failed":
            return TestOutcome(nodeid, bad, seconds, str(p.get("message", ""))[:4000])
    for when in ("setup", "call"):
        p = phases.get(when)
        if p is not None and p.get("outcome") == "skipped":
            return TestOutcome(nodeid, "skipped", seconds, str(p.get("message", ""))[:4000])
    call = phases.get("call")
    if call is None or call.get("outcome") != "passed":
        return TestOutcome(nodeid, "error", seconds, "the test process stopped inside this test")
    if "teardown" not in phases:
        return TestOutcome(nodeid, "error", seconds, "the test process stopped in teardown")
    launched = tuple(str(n) for n in phases["teardown"].get("launched", ()))
    return TestOutcome(nodeid, "passed", seconds, launched=launched)


class PipeReader(threading.Thread):
    """Reads the read end of the channel's pipe until every writer has closed it (the sandbox
    is gone) or `stop()` is called; owns and closes the fd."""

    def __init__(self, fd: int, key: bytes):
        super().__init__(daemon=True, name="verdict-channel")
        self.fd = fd
        self.reader = FrameReader(key)
        self._halt = threading.Event()

    def run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP)
        try:
            while not self._halt.is_set():
                if not poller.poll(200):
                    continue
                data = os.read(self.fd, 1 << 16)
                if not data:
                    break
                self.reader.feed(data)
        finally:
            os.close(self.fd)
            self.reader.close()

    def stop(self) -> None:
        self._halt.set()

    def finish(self, grace_s: float = 30.0) -> FrameReader:
        """Wait for the end of the stream (a writer that outlives its run is cut off)."""
        self.join(grace_s)
        if self.is_alive():
            self.reader.problem("the channel stayed open after the test process ended")
            self.stop()
            self.join()
        return self.reader
