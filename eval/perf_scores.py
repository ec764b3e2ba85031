"""Performance scores of one prediction, and their aggregates: pure arithmetic on timings.

Reads: the prediction's correctness and the times of the base (the setup state), the gold and
the prediction, measured in one session on the same inputs. Writes nothing.

Per task:
- speedup over the base, T_base / T_pred; performance match ratio, T_gold / T_pred;
- fast_1: correct and not slower than the base; fast_gold: correct and at least as fast as the
  gold (both within `NOISE`, the run-to-run agreement measured for isolated timings, 3%);
- the optimization rule: an optimization task is completed only when the prediction is correct
  and faster than the base by at least half of the gold's gain,
  T_base / T_pred >= 1 + (T_base / T_gold - 1) / 2. A do-nothing prediction (the setup state
  itself) has a speedup near 1 and never meets it while the gold's gain is real.
Aggregates keep every task in the denominator of the rates (fast_1, fast_gold); geometric
means are taken over the tasks that are correct and timed, and say how many those are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

NOISE = 0.03  # relative: isolated kernel times of one task agreed within 3% across days


@dataclass(frozen=True)
class PerfScore:
    speedup: float | None  # T_base / T_pred
    pmr: float | None  # T_gold / T_pred
    fast_1: bool  # correct and not slower than the base
    fast_gold: bool  # correct and at least as fast as the gold
    gain_met: bool  # correct and at least half of the gold's gain over the base


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b and a > 0 and b > 0 else None


def perf_score(
    correct: bool, t_base: float | None, t_gold: float | None, t_pred: float | None
) -> PerfScore:
    """The scores of one prediction from the three times (any unit, the same for all)."""
    speedup = _ratio(t_base, t_pred)
    pmr = _ratio(t_gold, t_pred)
    gold_gain = _ratio(t_base, t_gold)
    fast_1 = correct and speedup is not None and speedup >= 1 - NOISE
    fast_gold = correct and pmr is not None and pmr >= 1 - NOISE
    gain_met = (
        correct
        and speedup is not None
        and gold_gain is not None
        and speedup >= 1 + (gold_gain - 1) / 2
    )
    return PerfScore(speedup, pmr, fast_1, fast_gold, gain_met)


@dataclass(frozen=True)
class Peaks:
    """A GPU's measured copy bandwidth (bytes read plus written, per second) and bf16 dense
    matrix throughput (FLOP/s): what `scripts/measure_peaks.py` measured on the lent machine."""

    bytes_per_s: float
    bf16_flops: float


# The lent machines as measured (docs/workloads.md "Peaks"), by the GPU's name as torch reports
# it (the whole name: an H100 PCIe is not an H100 80GB HBM3); a workload's efficiency is a
# fraction of the peaks of the GPU it ran on. Workload plans size their calls by the H200's
# (`H200_BYTES_PER_S`), whatever runs them.
PEAKS: dict[str, Peaks] = {
    "NVIDIA H200": Peaks(bytes_per_s=4.3e12, bf16_flops=790e12),
    # 2026-12-05, call 41 (docs/runs/2026-12-05/results/call41/peaks.json)
    "NVIDIA H100 80GB HBM3": Peaks(bytes_per_s=3.047e12, bf16_flops=680e12),
}
H200_BYTES_PER_S = PEAKS["NVIDIA H200"].bytes_per_s


def h200_us(bytes_moved: int, flops: int = 0) -> float:
    """A call's time at the H200's measured peaks, in µs: its bytes at the copy bandwidth or its
    matrix-product FLOPs at the bf16 throughput, whichever takes longer (a workload call's
    `estimate_us`; its FLOPs are known once `eval workload --count-flops` counted them)."""
    h200 = PEAKS["NVIDIA H200"]
    return max(bytes_moved / h200.bytes_per_s, flops / h200.bf16_flops) * 1e6


def gpu_name(environment: str) -> str:
    """The GPU an environment label names ("NVIDIA H200; torch 2.11.0; triton 3.6.0": its
    first part), "" for none."""
    return environment.split(";", 1)[0].strip()


def peaks_key(environment: str) -> str:
    """The `PEAKS` row of the GPU an environment label names, "" for a GPU never measured."""
    gpu = gpu_name(environment)
    return gpu if gpu in PEAKS else ""


def peaks_for(environment: str) -> Peaks | None:
    return PEAKS.get(peaks_key(environment))


def rebased(value: float | None, flops: int, of: str, environment: str) -> float | None:
    """A bytes-bound efficiency stored as a fraction of `of`'s peaks, as a fraction of the
    peaks of the GPU `environment` names (results measured on an H100 before the peaks were
    per GPU hold fractions of the H200's); None where either GPU was never measured or the
    call counted FLOPs (the larger of two fractions does not rescale)."""
    own = peaks_for(environment)
    if value is None or own is None or of not in PEAKS or (flops and of != peaks_key(environment)):
        return None
    return value * PEAKS[of].bytes_per_s / own.bytes_per_s


def efficiency(bytes_moved: int, flops: int, ms: float | None, environment: str) -> float | None:
    """Achieved fraction of the peak of the GPU `environment` names: bytes/s over its copy
    bandwidth or FLOP/s over its bf16 throughput, whichever is larger; None without a time, a
    size or measured peaks (a fraction of another GPU's peak would mislead)."""
    peaks = peaks_for(environment)
    if peaks is None or not ms or ms <= 0 or not (bytes_moved or flops):
        return None
    s = ms / 1e3
    return max(bytes_moved / s / peaks.bytes_per_s, flops / s / peaks.bf16_flops)


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


@dataclass(frozen=True)
class PerfSummary:
    tasks: int
    timed: int  # correct predictions with all three times
    fast_1: float  # fraction of all tasks
    fast_gold: float  # fraction of all tasks
    speedup_geomean: float | None  # over the timed tasks
    pmr_geomean: float | None  # over the timed tasks


def summarize(scores: Sequence[PerfScore], correct: Sequence[bool]) -> PerfSummary:
    n = len(scores)
    timed = [s for s, ok in zip(scores, correct, strict=True)
             if ok and s.speedup is not None and s.pmr is not None]  # fmt: skip
    return PerfSummary(
        tasks=n,
        timed=len(timed),
        fast_1=sum(s.fast_1 for s in scores) / n if n else 0.0,
        fast_gold=sum(s.fast_gold for s in scores) / n if n else 0.0,
        speedup_geomean=geomean([s.speedup for s in timed if s.speedup is not None]),
        pmr_geomean=geomean([s.pmr for s in timed if s.pmr is not None]),
    )
