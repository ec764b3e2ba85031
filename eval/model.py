"""Value objects of the eval stage: test outcomes, kernel timings, runs, references, scores.

`reference.json` in a task directory is `to_json(Reference)` (`core.records`); `TaskScore` is one
line of a scoring report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

REFERENCE_SCHEMA_VERSION = 1


class Variant(StrEnum):
    BASE = "base"  # the framework at the base commit: the kernel before the PR
    GOLD = "gold"  # the PR's kernel (gold.patch applied)
    PREDICTION = "prediction"  # a model's kernel spliced in


class FailureClass(StrEnum):
    """Why a run did not pass; infrastructure problems are kept apart from the kernel's."""

    NONE = "none"
    TEST_FAILURE = "test_failure"  # an assertion or wrong output
    COMPILE_ERROR = "compile_error"  # Triton could not compile the kernel
    CUDA_ERROR = "cuda_error"  # illegal address, out of memory, launch failure
    TIMEOUT = "timeout"  # killed after the time limit (whole process group)
    CRASH = "crash"  # the test process died (signal) without a report
    INFRA = "infra"  # missing dependency, no GPU, collection error unrelated to the kernel
    SPLICE_ERROR = "splice_error"  # the prediction could not be put into the file


# A failure of the machine's load, not of the code under test: a test or run that ran out of
# GPU memory (on the H200, twelve memory-heavy cross-entropy runs side by side left each 0.4 GiB).
OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory")
PYTEST_NO_TESTS = 5  # pytest's exit status when it collected no test


@dataclass(frozen=True)
class TestOutcome:
    """One test case as pytest's junit XML reports it."""

    __test__ = False  # not a pytest class

    nodeid: str  # file::Class::name
    outcome: str  # passed | failed | error | skipped
    seconds: float
    message: str = ""  # first line of the failure or skip message
    # the watched kernels this test launched (the verdict channel's teardown report says so as
    # the test ends, so a run killed at its time limit still tells which finished tests count)
    launched: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelTiming:
    """GPU time of one of the task's kernels in one run."""

    kernel: str
    calls: int  # launches seen inside the test run (profiler events matched by name)
    total_ms: float  # their summed GPU time
    isolated_ms: float | None = None  # median of do_bench-style reruns on the captured launch
    isolated_spread: float | None = None  # (p75 - p25) / median of those reruns
    # other processes on the GPU just before or after those reruns (NVML; None: not known)
    isolated_company: int | None = None
    shapes: str = ""  # the captured launch: shapes, dtypes and constexprs
    written: tuple[str, ...] = ()  # tensor arguments whose contents a launch changed
    nodes: tuple[str, ...] = ()  # the test node ids that launched it
    # the largest captured launch (`eval.launch_capture`: grid, params, args with shapes,
    # dtypes, strides and integer statistics, constexprs): the workload's scaled test call
    launch: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunResult:
    """One run of the task's tests with one variant of its kernel."""

    task_id: str
    variant: Variant
    run: int  # 0-based repetition
    exit_code: int | None  # None when killed
    failure: FailureClass
    passed: bool  # every selected test passed (skips allowed) and at least one ran
    tests: tuple[TestOutcome, ...]
    wall_s: float
    kernels: tuple[KernelTiming, ...] = ()
    log: str = ""  # path of the run's log, relative to the run directory
    detail: str = ""  # the message that decided `failure`
    # why the run cannot count whatever its tests say: tampered, verdict_channel,
    # unreported_tests (eval.runner; the detail says what)
    flags: tuple[str, ...] = ()
    sandbox: str = ""  # bwrap | docker | none (trusted runs, --no-sandbox); "" in older records
    # seconds of the test process by phase (eval.verdict.run_phases); {} in older records and
    # where the frames arrive only at the end (the docker backend reads them from the log)
    phases: dict[str, float] = field(default_factory=dict)

    def outcome_of(self, nodeid: str) -> str | None:
        return next((t.outcome for t in self.tests if t.nodeid == nodeid), None)


@dataclass(frozen=True)
class PartialReference:
    """`reference.partial.json`: what an unfinished reference has so far (its selection and
    the runs that ended), so that the next command resumes it instead of starting over (on the
    H200 a flash-linear-attention task that compiles its kernels runs 500-650 s, longer than a
    device call; call 18 lost nine such tasks at its end). Only a command on the same
    environment (`key`: GPU, torch, Triton, package set) and the same patches resumes it."""

    task_id: str
    key: str  # environment label and the patches' digest (`eval.reference.resume_key`)
    node_ids: tuple[str, ...]
    selection: RunResult | None
    runs: tuple[RunResult, ...] = ()
    schema_version: int = REFERENCE_SCHEMA_VERSION
    # Triton's autotuning results in the task's cache (path under it -> the JSON it holds):
    # a resumed run on another machine compiles the chosen configs instead of tuning them all
    # again (a kda kernel's first tuning run: up to 400 s on the H200)
    autotune: dict[str, str] = field(default_factory=dict)
    # the same, as the first base run left them, before any gold run (`Reference.autotune_base`)
    autotune_base: dict[str, str] = field(default_factory=dict)
    # when it was last written (ISO 8601, UTC; "" in partials before 2026-12-06's fourth
    # session): a partial older than its directory's verdict is stale, not merged back over it
    saved_at: str = ""


@dataclass(frozen=True)
class VariantSummary:
    """Several runs of one variant: medians and spreads."""

    passed_runs: int
    runs: int
    e2e_s: float  # median wall time
    e2e_spread: float  # (max - min) / median
    kernel_ms: float | None  # median over runs of the summed in-test GPU time of the task kernels
    kernel_spread: float | None
    isolated_ms: float | None  # median isolated time (sum over the task's kernels)
    failures: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Environment:
    """What the reference was measured on."""

    gpu: str
    driver: str
    cuda: str
    torch: str
    triton: str
    python: str
    host: str
    # the exact package set the tests saw (`name==version`, sorted) and its sha256: results of
    # different package sets are never mixed in one verdict
    packages: tuple[str, ...] = ()
    packages_sha: str = ""


@dataclass(frozen=True)
class Reference:
    """`reference.json`: the task's verified reference run."""

    task_id: str
    environment: Environment
    tests: tuple[str, ...]  # the test files that ran
    base: VariantSummary
    gold: VariantSummary
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    valid: bool  # gold passes in every run (and for new ops / bug fixes, fail-to-pass exists)
    validity_note: str
    flaky: tuple[str, ...]  # tests whose outcome changed between runs of one variant
    runs: tuple[RunResult, ...]
    schema_version: int = REFERENCE_SCHEMA_VERSION
    node_ids: tuple[str, ...] = ()  # the tests the runs executed (chosen by the selection run)
    selection: RunResult | None = None  # the gold run that chose them, when one ran
    verification: str = ""  # the gate's status (task.json holds the verdict with its reason)
    # Triton's autotuning results in the task's trusted cache when the runs ended (path under
    # it -> its JSON): `eval score` puts them back on the same GPU and Triton, so its gold and
    # base runs compile the chosen configs instead of tuning them all again (eval.tuning)
    autotune: dict[str, str] = field(default_factory=dict)
    # those the first base run left, before any gold run: the only ones a model's prediction
    # gets (in its own cache), for the kernels it leaves as they were; the gold's tuning of the
    # kernels it changed (for a PR that retunes, the solution) never reaches a prediction
    # ({} in references before 2026-12-07's fourth session)
    autotune_base: dict[str, str] = field(default_factory=dict)
