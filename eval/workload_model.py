"""Value objects of a task's workload (`workload.json`) and of its measurement
(`workload_result.json`), with the hardware peaks that turn sizes into time estimates.

A workload is a list of calls of the task's launch wrapper (or its kernel, when it has none) at
realistic sizes. Each call says where its sizes come from (`Source`), which size it stands for
(`SizeLabel`), how each argument is built (`ArgSpec`: shape, dtype, strides and the input rule
of `eval.workload_inputs`), and how its outputs are compared with the gold's. The workload says
which metric it measures (`Metric`): the kernel time, or, for PRs about compilation, autotuning
and launch overhead, the cold wall time of the whole call sequence with an empty Triton cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from eval.perf_scores import efficiency, rebased

WORKLOAD_SCHEMA_VERSION = 1

MIN_GOLD_US = 100.0  # below this a kernel's time is mostly launch overhead
# a gold call's bytes (or FLOPs) per second over the GPU's measured peak above this cannot be
# the work its sizes say: the bytes are an estimate at most 3x off (forward and backward count
# three times the tensors, `eval.workload_plan.estimate`), so more is a call that skipped it
MAX_EFFICIENCY = 3.0


class Source(StrEnum):
    """Where a call's sizes come from, in the order the planner tries them."""

    BENCHMARK_SCRIPT = "benchmark_script"  # the repository's own benchmark of the wrapper
    MODEL_CONFIG = "model_config"  # a model configuration of the repository
    TEST_CALL = "test_call"  # a test's own call of the wrapper (read from its source), scaled up
    SCALED_TEST_CALL = "scaled_test_call"  # the captured test launch, scaled up


class SizeLabel(StrEnum):
    SMALL = "small"
    TYPICAL = "typical"
    LARGE = "large"
    # a cold_wall_time sequence's other batch sizes, between those three (`SERVICE_STEPS`)
    STEP = "step"


class Metric(StrEnum):
    KERNEL_TIME = "kernel_time"  # CUDA-event time of one call, warm, L2 flushed
    COLD_WALL_TIME = "cold_wall_time"  # wall time of the call sequence, Triton cache emptied


class EntryKind(StrEnum):
    FUNCTION = "function"  # `module.name(*args)` (a wrapper, or `Cls.apply` with method)
    MODULE = "module"  # `module.name(**init)` constructed once, then called with the args
    KERNEL = "kernel"  # `module.name[grid](*args, **constexprs)`: a kernel without a wrapper


class Mode(StrEnum):
    FORWARD = "forward"  # the call only
    FULL = "full"  # the call, then backward of its output (the PR changes forward and backward)
    # backward of the call's output alone: the forward runs once, untimed, and its graph is
    # kept (the PR changes only backward kernels)
    BACKWARD = "backward"


@dataclass(frozen=True)
class Entry:
    """What the harness calls: `name` imported from `module` of the variant's tree."""

    module: str
    name: str
    kind: EntryKind = EntryKind.FUNCTION
    method: str = ""  # e.g. "apply" for an autograd Function
    init: dict[str, Any] = field(default_factory=dict)  # constructor keywords (MODULE)
    dtype: str = ""  # the dtype a MODULE is cast to once built (`.to(dtype)`, `.bfloat16()`)


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a call: a tensor built by `rule`, or a plain value."""

    name: str
    tensor: bool
    shape: tuple[int, ...] = ()
    dtype: str = ""  # torch dtype name without the prefix: bfloat16, int64, ...
    stride: tuple[int, ...] | None = None  # None: contiguous
    rule: str = "normal"  # eval.workload_inputs.RULES
    params: dict[str, Any] = field(default_factory=dict)  # the rule's parameters (high, ...)
    value: Any = None  # the value of a non-tensor argument
    keyword: bool = False  # passed by name
    grad: bool = False  # requires_grad (FULL, BACKWARD: a float input whose gradient is compared)


@dataclass(frozen=True)
class WorkloadCall:
    label: SizeLabel
    source: Source
    evidence: str  # file:line (or the capture) the sizes come from
    entry: Entry
    args: tuple[ArgSpec, ...]
    dims: dict[str, int] = field(default_factory=dict)  # the named sizes of this call
    mode: Mode = Mode.FORWARD
    grid: tuple[int, ...] = ()  # KERNEL entries only
    bytes_moved: int = 0  # tensor bytes read and written once (estimate)
    flops: int = 0  # matrix-product FLOPs the gold executes (eval.flop_count); 0: none/not counted
    # µs at the H200's peaks: the bytes at its copy bandwidth, or the counted FLOPs at its bf16
    # throughput where longer (`eval.perf_scores.h200_us`; planned by bytes, then counted)
    estimate_us: float = 0.0


@dataclass(frozen=True)
class Workload:
    """`workload.json`: the task's calls at realistic sizes (empty, with `why`, when none)."""

    task_id: str
    metric: Metric
    metric_evidence: str  # the words of the PR that chose the metric
    calls: tuple[WorkloadCall, ...]
    why: str = ""  # why no source gave a call
    tried: tuple[str, ...] = ()  # each source and what it found
    # how the calls' `flops` were counted (`eval workload --count-flops`); "" while not counted
    flops_counted: str = ""
    schema_version: int = WORKLOAD_SCHEMA_VERSION


@dataclass(frozen=True)
class Timing:
    """Times of one variant on one call (ms); cold wall times for COLD_WALL_TIME."""

    median_ms: float
    p25_ms: float
    p75_ms: float
    reps: int


@dataclass(frozen=True)
class CallResult:
    """Base, gold (and a prediction) on one workload call."""

    label: SizeLabel
    base: Timing | None
    gold: Timing | None
    prediction: Timing | None = None
    base_matches: bool | None = None  # outputs within the dtype tolerance of the gold's
    prediction_matches: bool | None = None
    mismatch: str = ""  # the first output that differs, and by how much
    bytes_moved: int = 0  # the plan's estimate (what `workload_agreement` tells plans by)
    flops: int = 0
    # achieved fraction of the peak (bytes or FLOPs) of the GPU `peaks` names (eval/perf_scores
    # PEAKS); a forward wrapper call's bytes are what it read and gave back
    # (`workload_run._moved`), not the estimate
    gold_efficiency: float | None = None
    # results before the peaks were per GPU (2026-12-05) are fractions of the H200's, whatever
    # ran them: `perf_scores.rebased` gives them as fractions of their own GPU's
    peaks: str = "NVIDIA H200"
    error: str = ""  # a variant that failed on this call: which, and its last line
    # the Triton kernels the gold's call launched (its untimed outputs call); None: not recorded
    gold_launched: tuple[str, ...] | None = None


def gold_efficiency(result: WorkloadResult, call: CallResult, flops: int = 0) -> float | None:
    """A stored call's gold efficiency as a fraction of the peaks of the GPU that ran it
    (`perf_scores.rebased`); none for a cold sequence, whose times hold compilation and whose
    bytes are the plan's estimate (`workload_run.measure` stores none since 2026-12-05; older
    results kept one). `flops`: the call's matrix-product FLOPs counted after it was measured
    (`workload.json`, `eval workload --count-flops`), whose fraction of the bf16 peak counts
    when it is the larger."""
    if result.metric is Metric.COLD_WALL_TIME:
        return None
    stored = rebased(call.gold_efficiency, call.flops, call.peaks, result.environment)
    if call.flops or not flops or call.gold is None:
        return stored
    dots = efficiency(0, flops, call.gold.median_ms, result.environment)
    return max((e for e in (stored, dots) if e is not None), default=None)


def spread_total(
    calls: Sequence[CallResult], variant: str, stat: str = "median_ms"
) -> float | None:
    """A variant's statistic (`median_ms`, `p25_ms`, `p75_ms`) summed over the workload's
    calls; None when a call did not time it."""
    ts = [getattr(c, variant) for c in calls]
    if not ts or any(t is None for t in ts):
        return None
    return round(sum(getattr(t, stat) for t in ts), 6)


def totals_separated(calls: Sequence[CallResult]) -> bool:
    """Whether the totals' spreads are apart: the gold's p75 summed over the sizes below the
    base's p25 summed (the workload's metric is the total; a size where the gold is slower is
    named by the gate, not hidden: Liger-Kernel #815 is 1.6x slower at its small size, 4.3x
    faster at its large one on the H200). Computed from the calls, so a result measured when
    the rule was per size is judged by today's rule."""
    gold_p75, base_p25 = (
        spread_total(calls, "gold", "p75_ms"),
        spread_total(calls, "base", "p25_ms"),
    )
    return gold_p75 is not None and base_p25 is not None and gold_p75 < base_p25


@dataclass(frozen=True)
class WorkloadResult:
    """`workload_result.json`: one measurement of the workload."""

    task_id: str
    metric: Metric
    calls: tuple[CallResult, ...]
    environment: str  # GPU, torch, triton
    measured_at: str
    base_total_ms: float | None = None  # sum over calls of the medians
    gold_total_ms: float | None = None
    prediction_total_ms: float | None = None
    speedup: float | None = None  # base / gold on the totals
    separated: bool = False  # `totals_separated` when measured (the gate recomputes it)
    # where the measurement's time went: "<variant>-<round>" per harness process (import,
    # compilation, autotuning, saving outputs, timing), "prepare" (the trees), "compare"
    seconds: dict[str, float] = field(default_factory=dict)
    # inside each harness process ("<variant>-<round> <phase>"): imports, inputs, outputs (the
    # first call, which compiles and autotunes), timing; the rest of its `seconds` is the
    # process's start and the sandbox
    phases: dict[str, float] = field(default_factory=dict)
    # compute-sanitizer memcheck of the gold's first (smallest) call (`--memcheck`): "clean on
    # small", "<n> errors on small: <first finding>", "not run: <why>"; "" when not asked
    memcheck: str = ""
    # `eval workload --anchored`: where the base's times come from when this measurement took
    # them from the task's reference (the gate's) instead of timing the base again; "" else
    anchor: str = ""
    # a cold_wall_time measurement whose rounds started Triton on a kernel of the harness's own
    # before the timed calls (eval.triton_warmup, since 2026-12-06): its totals hold the task's
    # compilation alone and do not compare with those measured before
    runtime_warmed: bool = False
    schema_version: int = WORKLOAD_SCHEMA_VERSION
