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


# The H200 as measured on the lent machine (docs/workloads.md): copy bandwidth and bf16 dense
# matrix throughput. Workload estimates and efficiencies are fractions of these.
H200_BYTES_PER_S = 4.3e12
H200_BF16_FLOPS = 790e12


def efficiency(bytes_moved: int, flops: int, ms: float | None) -> float | None:
    """Achieved fraction of the H200's measured peak: bytes/s over 4.3 TB/s or FLOP/s over
    790 TFLOP/s (bf16), whichever is larger; None without a time or a size."""
    if not ms or ms <= 0 or not (bytes_moved or flops):
        return None
    s = ms / 1e3
    return max(bytes_moved / s / H200_BYTES_PER_S, flops / s / H200_BF16_FLOPS)


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
