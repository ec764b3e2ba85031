"""Isolated timing of GPU work: warm-up, rotated inputs, L2 flushed, CUDA events, median.

Reads and writes nothing. `bench` needs a CUDA device and refuses without one (callers check
`cuda_available()` first); torch is imported only when a function here runs.

Rules, after KernelBench-style timing rigor:
- the first call (compilation, autotuning, lazy allocation) and a warm-up stay out of the result;
- each repetition works on input set `i % n_inputs`, so a cache cannot serve the same data twice;
- before each repetition a buffer twice the size of the L2 cache (256 MiB at least) is zeroed,
  outside the CUDA events that bracket only the timed call;
- before each repetition the GPU is given a spin (`torch.cuda._sleep`) longer than the host
  takes to enqueue one call, so the call's kernels run back to back: the events time the GPU's
  work, not the gaps of Python, autograd and launch overhead between kernels (without it a
  sub-millisecond module call on the H200 spread over 30% from p25 to p75);
- the result is the median of many repetitions with its interquartile spread, never the best one.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MIN_FLUSH_BYTES = 256 * 2**20
# device memory that no process NVML lists holds, above which another (unlisted) process is on
# the GPU: a CUDA context with torch holds about 0.5 GiB, a context that allocated more has work
UNLISTED_BYTES = 2**30
# one process of `torch.cuda.list_gpu_processes`' listing: "process <pid> uses <MB> MB GPU memory"
_LISTED = re.compile(r"^\s*process\s+\d+\s+uses\s+([\d.]+)\s+MB", re.M)
_ESTIMATE_CALLS = 5  # timed warm-up calls that estimate the per-call time
LONG_CALL_REPS = 3  # repetitions of a call that alone lasts `rep_ms` or more
MAX_BACKLOG_MS = 50.0  # a host slower than this per call is not hidden


class TimingError(RuntimeError):
    """Timing cannot run here: no CUDA device, or arguments that make no measurement."""


@dataclass(frozen=True)
class BenchResult:
    """Repetition times of one call, in milliseconds."""

    median_ms: float
    p25_ms: float
    p75_ms: float
    reps: int
    spread: float  # (p75 - p25) / median


def cuda_available() -> bool:
    """Whether torch is importable and sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def gpu_company(listing: str, used_bytes: int | None = None) -> int | None:
    """How many other processes hold a compute context on the GPU, at least: from what
    `torch.cuda.list_gpu_processes` printed (NVML through nvidia-ml-py; the caller's process is
    one of them) and, where `used_bytes` (the device's used memory, `torch.cuda.mem_get_info`)
    is given, from the memory none of the listed processes holds: more than `UNLISTED_BYTES` of
    it belongs to a process NVML does not list, so at least one. NVML inside a container may
    list the caller alone: on the H100 on 2026-12-06 (call 53) score rows said 0 beside fifteen
    reference streams, and beside four other scores. None where NVML could not tell (no pynvml, or
    no process listed, not even the caller). A time taken beside others measures their load
    as well: on the H200 (2026-12-06, call 51), the two gold runs of flash-linear-attention
    #3cb53c2adf scored while ten references ran beside them timed its kernels 16.4 and 9.4 ms
    (2.6 ms alone)."""
    held = [float(m[1]) for m in _LISTED.finditer(listing)]
    if not held:
        return None
    others = len(held) - 1
    if used_bytes is not None and used_bytes - sum(held) * 2**20 > UNLISTED_BYTES:
        others = max(others, 1)
    return others


def company_now(device: int | None = None) -> int | None:
    """`gpu_company` of the current (or `device`'s) GPU now; None without CUDA or NVML."""
    try:
        import torch

        free, total = torch.cuda.mem_get_info(device)
        return gpu_company(torch.cuda.list_gpu_processes(device), total - free)
    except Exception:  # NVML errors vary by driver: no count rather than no timing
        return None


def flush_bytes(device: int | None = None) -> int:
    """Size of the buffer zeroed between repetitions: 2x the L2 cache, 256 MiB at least."""
    import torch

    index = torch.cuda.current_device() if device is None else device
    l2 = int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0) or 0)
    return max(2 * l2, MIN_FLUSH_BYTES)


def summarize(times_ms: list[float]) -> BenchResult:
    """Median, quartiles and spread of repetition times."""
    if not times_ms:
        raise TimingError("no repetition was timed")
    xs = sorted(times_ms)
    median = statistics.median(xs)
    p25, p75 = _quantile(xs, 0.25), _quantile(xs, 0.75)
    spread = (p75 - p25) / median if median > 0 else (0.0 if p75 == p25 else math.inf)
    return BenchResult(median_ms=median, p25_ms=p25, p75_ms=p75, reps=len(xs), spread=spread)


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks of sorted `xs`."""
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bench(fn: Callable[[int], object], **options: Any) -> BenchResult:
    """Time `fn(i)` (which launches work on input set `i`) on the current CUDA device: the
    median and spread of `bench_times(fn, **options)`."""
    return summarize(bench_times(fn, **options))


def bench_times(
    fn: Callable[[int], object],
    *,
    n_inputs: int = 1,
    warmup_ms: float = 25,
    rep_ms: float = 100,
    min_reps: int = 10,
    max_reps: int = 1000,
    flush_l2: bool = True,
    backlog: bool = True,
) -> list[float]:
    """The repetition times (ms) of `fn(i)` by `bench`'s rules, unsummarized (a caller that
    pools the repetitions of several alternating rounds takes the quantiles itself).
    `backlog`: a GPU spin ahead of each repetition hides the host's enqueueing time."""
    if n_inputs < 1 or min_reps < 1 or max_reps < min_reps:
        raise TimingError(
            f"need n_inputs >= 1 and 1 <= min_reps <= max_reps "
            f"(got n_inputs={n_inputs}, min_reps={min_reps}, max_reps={max_reps})"
        )
    if not cuda_available():
        raise TimingError(
            "eval.timing.bench needs torch with a CUDA device; "
            "check eval.timing.cuda_available() before calling it"
        )
    import torch

    flush = None
    if flush_l2:
        flush = torch.empty(flush_bytes(), dtype=torch.uint8, device=torch.cuda.current_device())
    calls = 0

    def next_input() -> int:
        nonlocal calls
        i = calls % n_inputs
        calls += 1
        return i

    spin: Callable[[], None] | None = None

    def timed(n: int) -> list[float]:
        events = []
        for _ in range(n):
            if flush is not None:
                flush.zero_()
            if spin is not None:
                spin()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(next_input())
            end.record()
            events.append((start, end))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in events]

    torch.cuda.synchronize()
    for _ in range(n_inputs):  # compiles and autotunes (each input set: its own specialization)
        fn(next_input())
    torch.cuda.synchronize()
    once = timed(1)[0]
    if once >= rep_ms:
        # a compute-bound call at a large size (attention at a long sequence) lasts seconds:
        # its own length is the measurement; no backlog to hide, no estimate to make
        times = timed(repetitions(once, rep_ms, min_reps, max_reps))
        torch.cuda.synchronize()
        return times
    if backlog:
        spin = _spinner(torch, _host_ms(fn, next_input, torch))
    estimate = max(statistics.median(timed(_ESTIMATE_CALLS)), 1e-4)
    timed(_clamp(math.ceil(warmup_ms / estimate) - _ESTIMATE_CALLS, 0, max_reps))
    times = timed(repetitions(estimate, rep_ms, min_reps, max_reps))
    torch.cuda.synchronize()
    return times


def repetitions(estimate_ms: float, rep_ms: float, min_reps: int, max_reps: int) -> int:
    """How many times a call of `estimate_ms` is timed: enough for `rep_ms` of work, at least
    `min_reps`; a call that alone lasts `rep_ms` or more, `LONG_CALL_REPS` times (at most
    `min_reps`)."""
    if estimate_ms >= rep_ms:
        return min(min_reps, LONG_CALL_REPS)
    return _clamp(math.ceil(rep_ms / max(estimate_ms, 1e-4)), min_reps, max_reps)


def _host_ms(fn: Callable[[int], object], next_input: Callable[[], int], torch: Any) -> float:
    """The host's time to enqueue one call (the slowest of a few, the GPU idle before each)."""
    worst = 0.0
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(next_input())
        worst = max(worst, (time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return worst


def backlog_ms(host_ms: float) -> float:
    """How long the GPU spins ahead of a repetition: half again the host's enqueueing time, a
    tenth of a millisecond at least, at most MAX_BACKLOG_MS."""
    return min(max(1.5 * host_ms, 0.1), MAX_BACKLOG_MS)


def _spinner(torch: Any, host_ms: float) -> Callable[[], None] | None:
    """A function that enqueues a GPU spin of backlog_ms(host_ms); None where torch has no
    `cuda._sleep` or the spin cannot be calibrated."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    cycles = 1_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    sleep(cycles)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    if ms <= 0:
        return None
    n = int(cycles * backlog_ms(host_ms) / ms)
    return lambda: sleep(n)


def _clamp(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, n))
