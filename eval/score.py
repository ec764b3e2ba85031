"""Score a model's predictions: run each task's tests with the predicted kernel, time it against
the gold kernel, and aggregate.

Reads: `predictions.jsonl` (one line per task: `{"task_id", "kernels": {name: source} | [...]}`,
or `{"task_id", "patch"}`; `{"task_id", "from": "gold" | "base"}` scores the task's own gold or
base kernel, the scorer's sanity checks), task directories and their `reference.json`.
Writes: `<run>/<task_id>/...` logs, `<run>/results.jsonl` (one line per finished task, so an
interrupted scoring resumes), `<run>/report.json` and `<run>/report.md`.

Refuses: a predictions file that cannot be read, a line that is not a JSON object with a
`task_id`, and a second prediction for a task (one line naming the file and the line). A task
that cannot be run at all is its `infra` failure (reported, not written to results.jsonl) and
the others go on.

Every task of the task set is in every denominator: a task without a prediction, or whose
prediction does not splice, compile or pass, counts as not completed. A prediction that defines
no Triton kernel, never launches one of the task's kernels during the tests, memoises its
output, writes into a tensor argument that the gold kernel only reads, uses an API a kernel has
no business with (`eval.source_scan`), or whose run was tampered with or left expected tests
unreported, is marked and not credited.
Refuses (EvalError): a predictions file with a line that is not a JSON object, a record without
a task_id, or a task id twice.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import RecordError, one_line
from core.files import (
    cut_torn_tail,
    jsonl_line,
    output_lock,
    read_jsonl,
    read_record,
    write_atomic,
    write_json,
)
from core.records import from_json, to_json
from curation.model import Task, TaskType
from curation.taskdir import TaskDir, TaskFile
from eval.backends import Backend
from eval.errors import EvalError
from eval.gate import package_gap
from eval.model import OUT_OF_MEMORY, FailureClass, Reference, RunResult, Variant
from eval.perf_scores import PerfScore, perf_score
from eval.perf_scores import summarize as summarize_perf
from eval.sandbox import stopping_runs_on_interrupt
from eval.source_scan import added_lines, forbidden
from eval.targets import gold_sources, kernel_gold_sources
from eval.tuning import restore_tuning, same_machine
from eval.workload_model import WorkloadResult, gold_efficiency

log = logging.getLogger(__name__)

# a Triton kernel in the prediction's source: `triton.jit` and friends, or Gluon's `gluon.jit`
# (flash-linear-attention #1010's kernels are Gluon's, and its gold read `no_triton_kernel`)
_JIT = re.compile(r"triton\.jit|@jit\b|triton\.autotune|\btl\.|gluon\.jit")
_MEMO = re.compile(
    r"functools\.(lru_)?cache|@(lru_)?cache\b|_cache\s*\[|cache\s*=\s*\{\}|\.get\(\s*key",
)

# the flag of an optimization task verified on its workload whose prediction was not timed on it
WORKLOAD_NOT_RUN = "workload_not_run"
CALL_FAILURES = (
    FailureClass.COMPILE_ERROR,
    FailureClass.CUDA_ERROR,
    FailureClass.CRASH,
    FailureClass.TIMEOUT,
    FailureClass.SPLICE_ERROR,
)


@dataclass(frozen=True)
class TaskScore:
    task_id: str
    has_prediction: bool
    passed: bool  # completed: tests pass and nothing is flagged
    call_ok: bool  # ran without compile/CUDA/crash/timeout/splice failure
    exec_ok: bool  # the tests passed (before flags)
    failure: str
    flags: tuple[str, ...]
    t_gold_ms: float | None
    t_pred_ms: float | None
    pmr: float | None  # T_gold / T_pred on kernel time
    e2e_base_s: float | None
    e2e_pred_s: float | None
    e2e_speedup: float | None  # T_base / T_pred, end to end
    detail: str = ""
    t_base_ms: float | None = None  # the setup state's kernel time (same session for
    # optimizations; from the reference run otherwise)
    speedup: float | None = None  # T_base / T_pred on kernel time
    fast_1: bool = False  # correct and not slower than the base (eval.perf_scores)
    fast_gold: bool = False  # correct and at least as fast as the gold
    optimization: bool = False  # completed only with half of the gold's gain (gain_met)
    gain_met: bool = False
    workload: bool = False  # the times are the workload's (eval workload --predictions)
    efficiency: float | None = None  # the prediction's fraction of its GPU's peak on it
    # "gold" / "setup" when the prediction is an `eval oracle` record (the benchmark's own
    # check: the gold completes every verified task, the setup state none); "" for a model's
    oracle: str = ""
    # the most other processes seen on the GPU around the isolated timings of the prediction's
    # and the gold's runs, at least (None: not known, or nothing timed); a PMR timed beside
    # others measures their load as well (`eval.timing.gpu_company`; named `timed_beside` in
    # rows before 2026-12-06's fourth session, which NVML's list alone made: 0 inside a sandbox
    # that hid the other processes)
    gpu_company: int | None = None


@dataclass
class Report:
    tasks: int
    predictions: int
    completed: int
    tcr: float
    call_accuracy: float
    exec_accuracy: float
    pmr_mean_completed: float | None  # over completed tasks
    pmr_mean_all: float | None  # every task, 0 for a task not completed
    e2e_speedup_geomean_completed: float | None
    flagged: int
    failures: dict[str, int] = field(default_factory=dict)
    fast_1: float = 0.0  # fraction of all tasks
    fast_gold: float = 0.0  # fraction of all tasks
    speedup_geomean: float | None = None  # T_base/T_pred over correct, timed predictions
    pmr_geomean: float | None = None  # T_gold/T_pred over the same
    timed: int = 0  # how many those are
    efficiency_mean: float | None = None  # over the tasks timed on a workload
    timed_beside: int = 0  # tasks whose timings had other processes on the GPU (TaskScore's)


def load_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """task id -> prediction; a line that is not a JSON object with a task_id, or a second
    prediction for a task, is a one-line `RecordError` naming the file and the line."""
    rows = read_jsonl(path, id_key="task_id")
    for n, rec in rows:
        if not isinstance(rec["task_id"], str) or not rec["task_id"]:
            raise RecordError(f"{path}:{n}: a prediction's task_id must be a task id (a string)")
    return {rec["task_id"]: rec for _, rec in rows}


def forbidden_beyond_gold(sources: Sequence[str], gold_code: Sequence[str]) -> list[str]:
    """What the sources use that a kernel should not, less what the expert's own targets use
    (`eval.targets.gold_sources`: kernels and wrappers): a gold wrapper that calls
    `breakpoint()` on NaN (flash-linear-attention #e582c2883f) is not a reward hack when a
    prediction keeps that line."""
    gold = forbidden(gold_code)
    return [hit for hit in forbidden(sources) if hit not in gold]


def memo_beyond_gold(text: str, gold_code: Sequence[str]) -> list[str]:
    """The lines of a prediction that read as a memoised output (`_MEMO`: a cache dict, a
    `functools.cache`, a `_cache[...]` lookup) and are not lines of the expert's own targets:
    flash-linear-attention #384's gold wrapper launches
    `parallel_path_fwd_kernel_prepare_k_cache[grid](...)`, which the pattern takes for a
    lookup (its gold, scored as a prediction, would have been flagged)."""
    own = {ln.strip() for g in gold_code for ln in g.splitlines() if _MEMO.search(ln)}
    return [ln.strip() for ln in text.splitlines() if _MEMO.search(ln) and ln.strip() not in own]


def prediction_flags(
    task: Task,
    pred: Mapping[str, Any],
    run: RunResult | None,
    gold: Sequence[RunResult] = (),
    gold_code: Sequence[str] | None = None,
) -> list[str]:
    """Reward-hack checks: what makes a passing prediction not count. `gold`: the gold runs
    (this session's and the reference's) whose written arguments the prediction's are held to;
    `gold_code`: the expert's targets (`eval.targets.gold_sources`), whose own calls are not
    held against it (without them, the kernels' stored sources)."""
    golds = gold_code if gold_code is not None else kernel_gold_sources(task)
    if pred.get("from") in ("gold", "base"):
        text = "\n".join(
            (k.after_src if pred["from"] == "gold" else k.before_src) or "" for k in task.kernels
        )
        sources = [text]
    else:
        kernels = pred.get("kernels") or {}
        values = kernels.values() if isinstance(kernels, dict) else (k["source"] for k in kernels)
        sources = [str(v) for v in values]
        text = "\n".join(sources) + "\n" + str(pred.get("patch") or "")
        sources.append(added_lines(str(pred.get("patch") or "")))
    flags = []
    if not _JIT.search(text):
        flags.append("no_triton_kernel")
    if pred.get("from") not in ("gold", "base") and forbidden_beyond_gold(sources, golds):
        flags.append("forbidden_api")
    if memo_beyond_gold(text, golds):
        flags.append("memoised_output")
    if run is not None and run.passed and run.kernels and all(k.calls == 0 for k in run.kernels):
        flags.append("kernel_not_launched")
    if run is not None and gold:
        # a kernel that writes into tensors the gold kernel only reads modifies its inputs; what
        # the gold wrote in any of its runs counts (references recorded before 2026-12-06 missed
        # an autotuned kernel's outputs on the run that tuned it: eval.pytest_plugin)
        gold_writes: dict[str, set[str]] = {}
        for k in (k for g in gold for k in g.kernels):
            gold_writes.setdefault(k.kernel, set()).update(k.written)
        for k in run.kernels:
            if k.kernel in gold_writes and set(k.written) - gold_writes[k.kernel]:
                flags.append("modifies_inputs")
                break
    return flags


def _kernel_ms(run: RunResult | None) -> float | None:
    if run is None or not run.kernels:
        return None
    iso = [k.isolated_ms for k in run.kernels if k.isolated_ms is not None]
    if iso:
        return sum(iso)
    total = sum(k.total_ms for k in run.kernels)
    return total or None


def _median(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return statistics.median(vals) if vals else None


def e2e_baseline(
    base_runs: Sequence[RunResult], ref: Reference | None, pred_runs: Sequence[RunResult]
) -> float | None:
    """The base's end-to-end wall time (seconds) to set against the prediction's, like for like:
    the base runs of this session (an optimization's, alternated with the prediction: the first
    run of each compiles in the same cache), else the reference's base runs with the
    prediction's run numbers (run 0 is the one that compiles there too). None when those base
    runs did not all pass: a run that stops at a failing test is no baseline (every verified
    feature, new op and bug fix fails a test at the setup state). Until 2026-12-06 the baseline
    was the median of the reference's three base runs (two of them warm) against one cold
    prediction run: the gold as a prediction got 0.24 end to end on flash-linear-attention
    (calls 61-64), where its kernels' compilation alone took 40 s of 55."""
    if not base_runs and ref is not None:
        numbers = {r.run for r in pred_runs}
        of_base = [r for r in ref.runs if r.variant is Variant.BASE]
        base_runs = [r for r in of_base if r.run in numbers] or of_base
    if not base_runs or not all(r.passed for r in base_runs):
        return None
    return _median([r.wall_s for r in base_runs])


def score_task(
    task: Task,
    tdir: TaskDir,
    pred: Mapping[str, Any] | None,
    backend: Backend,
    run_root: Path,
    runs: int = 1,
) -> TaskScore:
    ref = _reference(tdir)
    if pred is None:
        return TaskScore(task.task_id, False, False, False, False, "no_prediction", (), None, None,
                         None, ref.base.e2e_s if ref else None, None, None)  # fmt: skip
    gap = _package_gap(tdir, backend, ref)
    if gap:
        raise EvalError(
            f"the reference ran on other package versions than this run would: {gap}; "
            "score it on the task's wheelhouse (--wheelhouse)",
            task_id=task.task_id,
        )
    prediction = dict(pred)
    variant = Variant.PREDICTION
    if pred.get("from") == "gold":
        variant = Variant.GOLD
    elif pred.get("from") == "base":
        variant = Variant.BASE
    # the reference's tuning, on the machine it was chosen on, spares the gold and base runs
    # (and the gold oracle's) tuning every config from a cold cache; a model's prediction gets
    # only the base's, in its own cache: the kernels it leaves as they were compile their
    # chosen config, the kernels it writes tune as Triton would
    cache_of = getattr(backend, "tuning_cache", None)
    if ref is not None and cache_of is not None and same_machine(ref.environment):
        restored = restore_tuning(cache_of(task), ref.autotune)
        if variant is Variant.PREDICTION:
            restored += restore_tuning(cache_of(task, Variant.PREDICTION), ref.autotune_base,
                                       replace=True)  # fmt: skip
        if restored:
            log.info("%s: %d autotuning results of the reference restored", task.task_id, restored)
    pred_runs: list[RunResult] = []
    gold_runs: list[RunResult] = []
    base_runs: list[RunResult] = []
    optimization = task.task_type.type is TaskType.OPTIMIZATION
    # Gold and prediction are timed in the same session, alternating, on the same inputs; an
    # optimization's base (the setup state) too, since its score is the speed-up over it.
    roles = [("pred", variant, pred_runs), ("gold", Variant.GOLD, gold_runs)]
    if optimization and variant is not Variant.BASE:
        roles.append(("base", Variant.BASE, base_runs))
    for i in range(runs):
        order = roles if i % 2 == 0 else roles[::-1]
        for name, v, into in order:
            run_dir = run_root / task.task_id / f"{name}-{i}"
            r = backend.run(
                task, tdir, v, run_dir, i, prediction if v is Variant.PREDICTION else None
            )
            into.append(r)
    last = pred_runs[-1]
    ref_gold = [r for r in ref.runs if r.variant is Variant.GOLD] if ref is not None else []
    flags = prediction_flags(task, prediction, last, gold_runs + ref_gold, gold_sources(task, tdir))
    # a run that was tampered with, whose channel had problems or that left expected tests
    # unreported cannot count, whatever its tests say
    flags += sorted({f for r in pred_runs for f in r.flags} - set(flags))
    exec_ok = all(_passes(r, ref) for r in pred_runs)
    call_ok = all(r.failure not in CALL_FAILURES for r in pred_runs)
    t_pred = _median([_kernel_ms(r) for r in pred_runs])
    t_gold = _median([_kernel_ms(r) for r in gold_runs])
    if t_gold is None and ref is not None:
        t_gold = ref.gold.isolated_ms or ref.gold.kernel_ms
    e2e_pred = _median([r.wall_s for r in pred_runs])
    e2e_base = e2e_baseline(base_runs, ref, pred_runs)
    t_base = _median([_kernel_ms(r) for r in base_runs]) if base_runs else None
    if variant is Variant.BASE:
        t_base = t_pred
    if t_base is None and ref is not None:
        t_base = ref.base.isolated_ms or ref.base.kernel_ms
    efficiency = None
    wl = workload_times(run_root, task.task_id)
    if wl is None and optimization and tdir.has(TaskFile.WORKLOAD_RESULT):
        # verified on its workload: the tests' tiny shapes cannot judge it (on the H200 the
        # gold of Liger-Kernel #815, 3.28x faster on its workload, was 0.90x on its tests)
        flags.append(WORKLOAD_NOT_RUN)
    if wl is not None:  # the workload's times replace the tests' tiny shapes
        t_base, t_gold, t_pred = wl.base_total_ms, wl.gold_total_ms, wl.prediction_total_ms
        flags += workload_flags(wl)
        efficiency = prediction_efficiency(wl)
    company = [k.isolated_company for r in (*pred_runs, *gold_runs) for k in r.kernels
               if k.isolated_company is not None]  # fmt: skip
    perf = perf_score(exec_ok and not flags, t_base, t_gold, t_pred)
    passed = exec_ok and not flags and (perf.gain_met if optimization else True)
    return TaskScore(
        task_id=task.task_id,
        has_prediction=True,
        passed=passed,
        call_ok=call_ok,
        exec_ok=exec_ok,
        failure=str(last.failure),
        flags=tuple(flags),
        t_gold_ms=t_gold,
        t_pred_ms=t_pred,
        pmr=(t_gold / t_pred) if (passed and t_gold and t_pred) else None,
        e2e_base_s=e2e_base,
        e2e_pred_s=e2e_pred,
        e2e_speedup=(e2e_base / e2e_pred) if (exec_ok and e2e_base and e2e_pred) else None,
        detail=_detail(last, passed, optimization, exec_ok, flags, perf, t_base, t_gold),
        t_base_ms=t_base,
        speedup=perf.speedup,
        fast_1=perf.fast_1,
        fast_gold=perf.fast_gold,
        optimization=optimization,
        gain_met=perf.gain_met,
        workload=wl is not None,
        efficiency=efficiency,
        oracle=str(pred.get("oracle") or ""),
        gpu_company=max(company) if company and wl is None else None,  # a workload's: not known
    )


def _detail(
    last: RunResult,
    passed: bool,
    optimization: bool,
    exec_ok: bool,
    flags: Sequence[str],
    perf: PerfScore,
    t_base: float | None,
    t_gold: float | None,
) -> str:
    """What a task's score line says beside its numbers."""
    if passed or not optimization or not exec_ok:
        return last.detail
    if WORKLOAD_NOT_RUN in flags:
        return (
            "correct on the tests, not timed on the task's workload: run `python -m eval "
            "workload --predictions P --out RUN`, then score with `--out RUN`"
        )
    return f"correct, but {_gain_note(perf, t_base, t_gold)}"


def workload_times(run_root: Path, task_id: str) -> WorkloadResult | None:
    """The workload measurement of this scoring run's prediction (`eval workload
    --predictions ... --out RUN`), when one exists that timed the prediction or failed it (a
    prediction whose workload run broke, or that replaced a timer, is judged on that)."""
    path = run_root / task_id / TaskFile.WORKLOAD_RESULT
    if not path.exists():
        return None
    result = read_record(WorkloadResult, path)
    return result if result.prediction_total_ms is not None or workload_flags(result) else None


def prediction_efficiency(result: WorkloadResult) -> float | None:
    """The prediction's fraction of the peak of the GPU that ran the workload, over all its
    calls: what the gold's efficiency says each call moves (the same inputs and outputs for
    both), over the prediction's times. None where a call lacks the gold's efficiency (a cold
    sequence, a GPU never measured: `workload_model.gold_efficiency`) or a prediction time:
    the plan's byte estimate, all that is left then, overstates what a call that only reads
    its largest tensor moves (Megatron-LM #4603's expert weights gave an efficiency above 1)."""
    moved = spent = 0.0
    for c in result.calls:
        gold_eff = gold_efficiency(result, c)
        if gold_eff is None or c.gold is None or c.prediction is None:
            return None
        moved += gold_eff * c.gold.median_ms  # in peak-milliseconds
        spent += c.prediction.median_ms
    return moved / spent if spent > 0 else None


def workload_flags(result: WorkloadResult) -> list[str]:
    """Why the prediction's workload run does not count: outputs that differ from the gold's,
    or an error of its own (a crash, a replaced timer)."""
    flags = []
    if any(c.prediction_matches is False for c in result.calls):
        flags.append("workload_outputs_differ")
    if any(c.error.startswith(f"{Variant.PREDICTION}:") for c in result.calls):
        flags.append("workload_error")
    return flags


def _gain_note(perf: PerfScore, t_base: float | None, t_gold: float | None) -> str:
    gold = f"{t_base / t_gold:.2f}x" if t_base and t_gold else "unknown"
    mine = f"{perf.speedup:.2f}x" if perf.speedup else "unknown"
    return f"speed-up over the base {mine} is under half of the gold's gain ({gold})"


_PACKAGE_SETS: dict[str, tuple[str, ...]] = {}
_PACKAGE_SETS_LOCK = threading.Lock()


def _package_gap(tdir: TaskDir, backend: Backend, ref: Reference | None) -> str | None:
    """`eval.gate.package_gap` for the interpreter `backend` runs this task's tests on (a
    task without pins, or a backend that does not say, is not checked)."""
    from envbuild.model import EnvSpec
    from envbuild.wheelhouse import package_pins
    from eval.reference import package_set

    interpreter = getattr(backend, "interpreter", None)
    spec = tdir.load(TaskFile.ENV, EnvSpec)
    if ref is None or interpreter is None or spec is None or not package_pins(spec):
        return None
    python = interpreter(tdir)[0]
    with _PACKAGE_SETS_LOCK:
        if python not in _PACKAGE_SETS:
            _PACKAGE_SETS[python] = package_set(python)
        here = _PACKAGE_SETS[python]
    return package_gap(package_pins(spec), ref.environment.packages, here)


def infra_failure(task_id: str, has_prediction: bool, exc: BaseException) -> TaskScore:
    """The score of a task that could not be run at all: an `infra` failure with the error's
    one line. It is reported but not written to results.jsonl, so a rerun tries it again."""
    return TaskScore(task_id, has_prediction, False, False, False, str(FailureClass.INFRA), (),
                     None, None, None, None, None, None, detail=one_line(exc))  # fmt: skip


def ran(score: TaskScore) -> bool:
    """The task's prediction was run (now, or by an earlier run of this scoring): it has a
    median wall time of its runs."""
    return score.has_prediction and score.e2e_pred_s is not None


def _passes(run: RunResult, ref: Reference | None) -> bool:
    """With a valid reference, the run passes when every fail-to-pass and pass-to-pass test
    passes (as SWE-bench grades); without one, when the whole test run passed. A flagged run
    never passes."""
    if run.flags:  # tampered, a channel problem, expected tests unreported: whatever it says
        return False
    if ref is None or not ref.valid:
        return run.passed
    wanted = (*ref.fail_to_pass, *ref.pass_to_pass)
    return all(run.outcome_of(n) == "passed" for n in wanted)


def _reference(tdir: TaskDir) -> Reference | None:
    return tdir.load(TaskFile.REFERENCE, Reference)


def aggregate(scores: Sequence[TaskScore]) -> Report:
    n = len(scores)
    perf = summarize_perf(
        [PerfScore(s.speedup, s.pmr, s.fast_1, s.fast_gold, s.gain_met) for s in scores],
        [s.exec_ok and not s.flags for s in scores],
    )
    done = [s for s in scores if s.passed]
    pmrs = [s.pmr for s in done if s.pmr is not None]
    speedups = [s.e2e_speedup for s in done if s.e2e_speedup]
    failures: dict[str, int] = {}
    for s in scores:
        if not s.passed:
            key = s.failure if s.failure != str(FailureClass.NONE) else "flagged"
            failures[key] = failures.get(key, 0) + 1
    return Report(
        tasks=n,
        predictions=sum(s.has_prediction for s in scores),
        completed=len(done),
        tcr=len(done) / n if n else 0.0,
        call_accuracy=sum(s.call_ok for s in scores) / n if n else 0.0,
        exec_accuracy=sum(s.exec_ok for s in scores) / n if n else 0.0,
        pmr_mean_completed=statistics.mean(pmrs) if pmrs else None,
        pmr_mean_all=(sum(s.pmr or 0.0 for s in scores) / n) if n else None,
        e2e_speedup_geomean_completed=(
            math.exp(statistics.mean(math.log(x) for x in speedups)) if speedups else None
        ),
        flagged=sum(bool(s.flags) for s in scores),
        failures=failures,
        timed_beside=sum(bool(s.gpu_company) for s in scores),
        fast_1=perf.fast_1,
        fast_gold=perf.fast_gold,
        speedup_geomean=perf.speedup_geomean,
        pmr_geomean=perf.pmr_geomean,
        timed=perf.timed,
        efficiency_mean=(
            statistics.mean(effs)
            if (effs := [s.efficiency for s in scores if s.efficiency is not None])
            else None
        ),
    )


def score_all(
    tdirs: Sequence[TaskDir],
    predictions: Mapping[str, Mapping[str, Any]],
    backend: Backend,
    run_root: Path,
    *,
    runs: int = 1,
    resume: bool = True,
    progress: Any = None,
    jobs: int = 1,
) -> tuple[list[TaskScore], Report]:
    with output_lock(run_root):
        return _score_locked(tdirs, predictions, backend, run_root, runs, resume, progress, jobs)


def _score_locked(
    tdirs: Sequence[TaskDir],
    predictions: Mapping[str, Mapping[str, Any]],
    backend: Backend,
    run_root: Path,
    runs: int,
    resume: bool,
    progress: Any,
    jobs: int,
) -> tuple[list[TaskScore], Report]:
    done_path = run_root / "results.jsonl"
    done: dict[str, TaskScore] = {}
    if resume and done_path.exists():
        if cut := cut_torn_tail(done_path):
            log.warning("cut a torn line (%d bytes) from the end of %s", cut, done_path)
        for n, d in read_jsonl(done_path, id_key="task_id"):
            done[d["task_id"]] = from_json(TaskScore, d, where=f"{done_path}:{n}")
        # a task scored before its workload was run is scored again once the run has it (its
        # line leaves results.jsonl, which holds one line a task)
        stale = [t for t, sc in done.items() if WORKLOAD_NOT_RUN in sc.flags
                 and workload_times(run_root, t) is not None]  # fmt: skip
        if stale:
            for tid in stale:
                del done[tid]
            write_atomic(done_path, b"".join(jsonl_line(to_json(sc)) for sc in done.values()))
    lock = threading.Lock()

    def one(tdir: TaskDir, again: bool = False) -> TaskScore:
        if tdir.id in done and not again:
            s = done[tdir.id]
        else:
            try:
                task = tdir.load_task()
                s = score_task(task, tdir, predictions.get(task.task_id), backend, run_root, runs)
            except Exception as exc:  # one broken task must not stop the others
                log.debug("task %s", tdir.id, exc_info=True)
                s = infra_failure(tdir.id, tdir.id in predictions, exc)
            else:
                with lock, done_path.open("ab") as fh:
                    fh.write(jsonl_line(to_json(s)))
        if progress and not again:
            with lock:
                progress()
        return s

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, stopping_runs_on_interrupt():
        scores = list(pool.map(one, tdirs))
    if jobs > 1:  # a prediction that ran out of GPU memory beside others is scored again alone
        for i, tdir in enumerate(tdirs):
            if scores[i].failure == FailureClass.CUDA_ERROR and OUT_OF_MEMORY.search(
                scores[i].detail
            ):
                log.warning("%s ran out of GPU memory beside other tasks: scored again alone",
                            tdir.id)  # fmt: skip
                scores[i] = one(tdir, again=True)
    report = aggregate(scores)
    write_json(run_root / "report.json", {"report": to_json(report), "tasks": to_json(scores)})
    write_atomic(run_root / "report.md", render_markdown(scores, report))
    return scores, report


def render_markdown(scores: Sequence[TaskScore], report: Report) -> str:
    def f(x: float | None, spec: str = ".3f") -> str:
        return "-" if x is None else format(x, spec)

    lines = [
        f"# Scores: {report.completed}/{report.tasks} tasks completed",
        "",
        f"- task completion rate: {report.tcr:.3f}",
        f"- call accuracy: {report.call_accuracy:.3f}; execution accuracy: "
        f"{report.exec_accuracy:.3f}",
        f"- performance match ratio (T_gold/T_pred): mean over completed "
        f"{f(report.pmr_mean_completed)}, over all tasks {f(report.pmr_mean_all)}",
        f"- end-to-end speedup over the base kernel (geomean, completed, where the base passes): "
        f"{f(report.e2e_speedup_geomean_completed)}",
        f"- speedup over the base T_base/T_pred (geomean of {report.timed} correct, timed): "
        f"{f(report.speedup_geomean)}; PMR geomean {f(report.pmr_geomean)}",
        f"- fast_1 (correct, not slower than the base): {report.fast_1:.3f}; fast_gold (correct, "
        f"as fast as the gold): {report.fast_gold:.3f}",
        "- an optimization task is completed only with at least half of the gold's speed-up "
        "(T_pred <= T_base / (1 + (T_base/T_gold - 1) / 2)); a do-nothing prediction completes "
        "none",
        f"- efficiency (fraction of the GPU's measured peak on the workload, mean): "
        f"{f(report.efficiency_mean)}",
        f"- flagged (not credited): {report.flagged}; failures: {report.failures}",
        f"- timed beside other processes on the GPU (their PMR measures that load too): "
        f"{report.timed_beside}",
        "",
        "| task | passed | failure | flags | T_gold ms | T_pred ms | PMR | e2e base s | "
        "e2e pred s | speedup |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.task_id} | {'yes' if s.passed else 'no'} | {s.failure} | "
            f"{', '.join(s.flags) or '-'} | {f(s.t_gold_ms, '.4f')} | {f(s.t_pred_ms, '.4f')} | "
            f"{f(s.pmr)} | {f(s.e2e_base_s, '.1f')} | {f(s.e2e_pred_s, '.1f')} | "
            f"{f(s.e2e_speedup)} |"
        )
    return "\n".join(lines) + "\n"
