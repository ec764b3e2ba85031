"""Measure a task's workload: base, gold (and a prediction) on the same inputs, alternating.

Reads: the task directory (`workload.json`, the patches), the framework's sources through a
`SourceStore`. Writes: `workload.json` (plan), `workload_result.json` (the task directory for
base and gold; a run directory for a prediction), scratch trees under `scratch`.
Each round runs every variant once, in a fresh process (`eval/workload_harness.py`, through
`eval.sandbox.run_script`: a prediction always sandboxed, base and gold unsandboxed only when
the caller says they are trusted), in alternating order; `kernel_time` rounds pool their
repetitions, `cold_wall_time` rounds each start from an emptied Triton cache. The outputs of the
first round are compared with the gold's here, in the trusted process
(`eval.workload_inputs.compare`, tolerances by dtype).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from core.records import to_json
from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from eval.backends import default_cache
from eval.compat import task_compat_env
from eval.errors import EvalError, ExtensionError
from eval.extensions import install_extensions
from eval.memcheck import CHECKED_ENV, NOT_FOUND, find_sanitizer, memcheck_command, read_log
from eval.model import Variant
from eval.parallel_compile import default_workers
from eval.perf_scores import efficiency, h200_us, peaks_key
from eval.sandbox import SandboxPolicy, ScriptRun, read_back, run_script
from eval.timing import summarize
from eval.workload_model import (
    CallResult,
    EntryKind,
    Metric,
    Mode,
    Timing,
    Workload,
    WorkloadCall,
    WorkloadResult,
    spread_total,
    totals_separated,
)
from eval.workload_plan import Captured, TreeView, captured_launch, plan_workload, tensor_bytes

log = logging.getLogger(__name__)

HARNESS = Path(__file__).resolve().parent / "workload_harness.py"
# Python's import profile (`-X importtime`) in every timing process's log: where a process's
# "imports" and "entry" phases go, by top-level package (#1187 on an H100, call 91: 10-13 s of
# framework import a process, 0.5 s for the same import on a CPU host)
IMPORT_PROFILE_ENV = {"PYTHONPROFILEIMPORTTIME": "1"}
IMPORT_TOP = 5  # the packages a process's phases name, by their own import time
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+\d+ \|\s*([\w.]+)\s*$")
JOB = ".tpb_workload_job.json"
RESULT = ".tpb_workload_result.json"
SEED = 20261201
# programs of each launch a FLOP count runs in the interpreter (`eval.flop_count`): on
# flash-linear-attention #1033's parallel attention at 2x4096x4x64 (256 programs, causal), 32
# gave the full grid's count exactly in 8 s where the full grid took 63 s, 8 gave +3% (CPU,
# Triton 3.6, 2026-12-06)
FLOP_PROGRAMS = 32


@dataclass(frozen=True)
class MeasureSettings:
    rounds: int = 2  # kernel_time: alternating rounds whose repetitions are pooled
    cold_rounds: int = 3  # cold_wall_time: measurements per variant, each from an empty cache
    timeout_s: float = 600.0  # per harness process
    rep_ms: float = 100.0  # measured work per call and round
    trusted_unsandboxed: bool = False  # base and gold without the sandbox (--no-sandbox)
    policy: SandboxPolicy | None = None
    triton_cache: Path | None = None  # a warm cache for kernel_time (cold runs use their own)
    cpu_ok: bool = False  # tests: time on the host (TRITON_INTERPRET=1)
    python: str | None = None
    venv: Path | None = None  # the wheelhouse venv `python` lives in: shown to the sandbox
    memcheck: bool = False  # also run the gold once on the smallest size under memcheck
    sanitizer: str | None = None  # the compute-sanitizer to use (default: found on the host)
    cache_root: Path | None = None  # compiled extensions' builds; eval.backends.default_cache()
    # threads that compile an autotuner's configs before it benchmarks them (one harness
    # process at a time: all the CPUs; eval.parallel_compile)
    compile_workers: int = field(default_factory=default_workers)
    # the harness processes' environment besides the cache's: Triton's switches for the
    # Triton the task pins (`eval.compat`, set per task by `measure_task`)
    extra_env: Mapping[str, str] = field(default_factory=dict)


# what a plan reads of a tree: Python modules, and the examples' launch scripts and YAML
TREE_SUFFIXES = (".py", ".sh", ".yaml", ".yml")


class GitTreeView:
    """A commit's files read from a `SourceStore`'s repository, without a checkout."""

    def __init__(self, store: Any, commit: str):
        self.repo = store.repo
        self.commit = store.resolve(commit)
        self._paths: list[str] | None = None

    def paths(self) -> list[str]:
        if self._paths is None:
            self._paths = sorted(self.repo.list_tree(self.commit, TREE_SUFFIXES))
        return self._paths

    def read(self, paths: Sequence[str]) -> dict[str, str]:
        known = set(self.paths())
        wanted = [p for p in paths if p in known]
        blobs = self.repo.read_files(self.commit, wanted)
        return {p: b.decode(errors="replace") for p, b in blobs.items()}


def plan_task(task: Task, tdir: TaskDir, view: TreeView) -> Workload:
    """Plan the task's workload from its tree and its reference's captured launches."""
    from eval.model import Reference

    captured: Captured | None = None
    ref = tdir.load(TaskFile.REFERENCE, Reference)
    if ref is not None:
        runs = [r for r in ref.runs if r.variant is Variant.GOLD]
        if ref.selection is not None:
            runs.append(ref.selection)
        captured = captured_launch(task, [k for r in runs for k in r.kernels])
    return plan_workload(task, view, captured)


def _job(
    workload: Workload, tree: Path, metric: Metric, settings: MeasureSettings, save: bool = True
) -> dict:
    syspath = [str(tree)] + ([str(tree / "src")] if (tree / "src").is_dir() else [])
    return {
        "calls": [to_json(c) for c in workload.calls],
        "metric": str(metric),
        "seed": SEED,
        "syspath": syspath,
        "save_outputs": save,
        "outputs_dir": str(tree),
        "result": str(tree / RESULT),
        "rep_ms": settings.rep_ms,
        "cpu_ok": settings.cpu_ok,
        # since 2026-12-06 (seventh session): a cold round starts Triton on a kernel of the
        # harness's own before the timed calls (eval.triton_warmup; `runtime_warmed`)
        "warm_runtime": metric is Metric.COLD_WALL_TIME,
        # since 2026-12-07 (third session): autotuning compiles its configs on threads
        # (eval.parallel_compile) where kernel times are measured; a cold round measures the
        # compilation itself, so it compiles as a user's first call does
        "compile_workers": settings.compile_workers if metric is Metric.KERNEL_TIME else 0,
    }


def _run_once(
    tree: Path,
    workload: Workload,
    settings: MeasureSettings,
    trusted: bool,
    cache: Path,
    save: bool = True,
    prefix: Sequence[str] = (),
    count_programs: int = 0,
) -> tuple[dict[str, Any], ScriptRun]:
    """One harness process on `tree`; `save`: it also writes each call's outputs (and the
    kernels each call launched) for the comparison, which only a variant's first run needs
    (a large call's outputs and gradients are gigabytes to copy and write). With `prefix` (a
    checker's command) the process runs only the first call, once, untimed, under it. With
    `count_programs`, each call runs once in Triton's interpreter (on CUDA tensors where there
    is a GPU), that many programs of each launch, and its matrix-product FLOPs are counted
    (`eval.flop_count`)."""
    job = _job(workload, tree, workload.metric, settings, save)
    if prefix:
        job = {**job, "calls": job["calls"][:1], "check_only": True, "save_outputs": False,
               "compile_workers": 0}  # fmt: skip
    if count_programs:
        job = {**job, "count_flops": count_programs, "save_outputs": False, "warm_runtime": False,
               "compile_workers": 0}  # fmt: skip
    (tree / JOB).write_text(json.dumps(job))
    # warm rounds reuse the first round's autotuning as they reuse its compiled kernels (Triton
    # keys both by the kernel's source); a cold round compiles and autotunes as a user's first
    # call would
    cold = workload.metric is Metric.COLD_WALL_TIME
    env = {**settings.extra_env, "TRITON_CACHE_DIR": str(cache),
           "TRITON_CACHE_AUTOTUNING": "0" if cold else "1"}  # fmt: skip
    if count_programs:
        env["TRITON_INTERPRET"] = "1"
    if prefix:
        env.update(CHECKED_ENV)
    else:
        env.update(IMPORT_PROFILE_ENV)
    sandboxed = not (trusted and settings.trusted_unsandboxed)

    run = run_script(
        HARNESS,
        tree,
        RESULT,
        timeout_s=settings.timeout_s,
        policy=settings.policy,
        python=settings.python or sys.executable,
        extra_env=env,
        readonly=(settings.venv,) if settings.venv is not None else (),
        writable=(cache,),
        sandboxed=sandboxed,
        prefix=prefix,
    )
    imported, log = import_profile(run.log)
    run = replace(run, log=log)
    if run.output is None:
        why = "timed out" if run.timed_out else f"exit {run.exit_code}: {run.last_words()}"
        return {"error": why}, run
    try:
        result = json.loads(run.output)
    except json.JSONDecodeError:
        return {"error": "the harness wrote no JSON"}, run
    if isinstance(result, dict) and isinstance(result.get("phases"), dict):
        result["phases"].update({f"import {name}": s for name, s in imported.items()})
    return result, run


def import_profile(log: str, top: int = IMPORT_TOP) -> tuple[dict[str, float], str]:
    """A harness log's `-X importtime` report summed by top-level package (each module's own
    import time, seconds; the `top` largest, rounded to 10 ms), and the log without the report
    (whose lines would otherwise be a crash's "last words")."""
    spent: dict[str, float] = {}
    kept: list[str] = []
    for line in log.splitlines():
        m = _IMPORT_LINE.match(line)
        if m is None:
            if not line.startswith("import time:"):  # the report's header
                kept.append(line)
            continue
        package = m[2].split(".")[0]
        spent[package] = spent.get(package, 0.0) + int(m[1]) / 1e6
    largest = sorted(spent.items(), key=lambda kv: -kv[1])[:top]
    return {name: round(s, 2) for name, s in largest}, "\n".join(kept) + ("\n" if kept else "")


def _load_outputs(path: Path) -> dict[str, Any] | None:
    import io

    import torch

    data = read_back(path, limit=8 << 30)
    if data is None:
        return None
    return dict(torch.load(io.BytesIO(data), weights_only=True, map_location="cpu"))


def measure(
    task: Task,
    workload: Workload,
    trees: Mapping[Variant, Path],
    settings: MeasureSettings,
    scratch: Path,
    environment: str = "",
    progress: Callable[[str], None] | None = None,
) -> WorkloadResult:
    """Run every variant of `trees` on the workload, `rounds` times in alternating order;
    `progress` hears of each harness process as it ends. A variant's first process compiles
    and autotunes every kernel the workload reaches from a cold cache (a realistic
    flash-linear-attention op at three sizes: minutes); when it is cut by its time limit it runs
    once more on what it compiled, and only the second attempt counts (2026-12-04, H200: ten
    FLA optimization workloads, 200 s a process, measured nothing in a 500 s call)."""
    import torch

    from eval.workload_inputs import compare

    order = [v for v in (Variant.BASE, Variant.GOLD, Variant.PREDICTION) if v in trees]
    cold = workload.metric is Metric.COLD_WALL_TIME
    rounds = settings.cold_rounds if cold else settings.rounds
    times: dict[Variant, list[list[float]]] = {v: [[] for _ in workload.calls] for v in order}
    errors: list[str] = ["" for _ in workload.calls]
    outputs: dict[Variant, list[dict[str, Any] | None]] = {}
    launched: list[tuple[str, ...] | None] = []
    seconds: dict[str, float] = {}
    phases: dict[str, float] = {}
    for r in range(rounds):
        for v in order if r % 2 == 0 else order[::-1]:
            cache = warm_cache(settings, scratch, v, task.task_id)
            if cold:
                cache = scratch / f"cold-cache-{v}"
                shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir(parents=True, exist_ok=True)
            if not cold and v is not Variant.BASE:
                base_cache = warm_cache(settings, scratch, Variant.BASE, task.task_id)
                seeded = seed_cache(cache, base_cache)
                if seeded and progress is not None:
                    progress(f"{v}-{r}: {seeded} entries of the base's Triton cache copied in")
            result, run = _run_once(trees[v], workload, settings, v is not Variant.PREDICTION,
                                    cache, save=v not in outputs)  # fmt: skip
            if run.timed_out and r == 0 and not cold:
                seconds[f"{v}-{r} cut"] = round(run.wall_s, 2)
                if progress is not None:
                    progress(f"{v}-{r}: cut at its limit after {run.wall_s:.0f} s; once more")
                result, run = _run_once(trees[v], workload, settings,
                                        v is not Variant.PREDICTION, cache,
                                        save=v not in outputs)  # fmt: skip
            seconds[f"{v}-{r}"] = round(run.wall_s, 2)
            if progress is not None:
                progress(f"{v}-{r}: {run.wall_s:.0f} s, {result.get('error') or 'timed'}")
            inside = result.get("phases")  # a prediction's process may write anything here
            for name, spent in inside.items() if isinstance(inside, dict) else ():
                if isinstance(spent, int | float) and not isinstance(spent, bool):
                    phases[f"{v}-{r} {name}"] = float(spent)
            if "error" in result:
                errors = [e or f"{v}: {result['error']}" for e in errors]
                continue
            for i, row in enumerate(result.get("calls", [])):
                if row.get("error"):
                    errors[i] = errors[i] or f"{v}: {row['error']}"
                times[v][i] += [float(t) for t in row.get("times_ms", [])]
            if v is Variant.GOLD and not launched:
                launched = [
                    tuple(row["launched"]) if "launched" in row else None
                    for row in result.get("calls", [])
                ]
            if v not in outputs:
                outputs[v] = [
                    _load_outputs(trees[v] / row["outputs"]) if row.get("outputs") else None
                    for row in result.get("calls", [])
                ]
    t0 = time.perf_counter()
    calls = []
    for i, call in enumerate(workload.calls):
        timing = {v: _timing(times[v][i]) for v in order}
        matches: dict[Variant, bool | None] = {}
        mismatch = ""
        # a run that stopped early (a crash, a replaced timer) has fewer rows than calls
        gold_out = _nth(outputs.get(Variant.GOLD), i)
        for v in (Variant.BASE, Variant.PREDICTION):
            other = _nth(outputs.get(v), i) if v in trees else None
            if v not in trees or gold_out is None or other is None:
                matches[v] = None
                continue
            ok, why = compare(torch, gold_out, other)
            matches[v] = ok
            if not ok and not mismatch:
                mismatch = f"{v}: {why}"
        gold = timing.get(Variant.GOLD)
        moved = _moved(call, gold_out)
        calls.append(
            CallResult(
                label=call.label,
                base=timing.get(Variant.BASE),
                gold=gold,
                prediction=timing.get(Variant.PREDICTION),
                base_matches=matches.get(Variant.BASE),
                prediction_matches=matches.get(Variant.PREDICTION),
                mismatch=mismatch,
                bytes_moved=call.bytes_moved,
                flops=call.flops,
                # none for a cold sequence: its calls' times hold compilation, and without saved
                # outputs its bytes are the plan's estimate (#5608: 1.8x what it moves)
                gold_efficiency=None
                if cold
                else efficiency(moved, call.flops, gold.median_ms if gold else None, environment),
                peaks=peaks_key(environment),
                error=errors[i],
                gold_launched=launched[i] if i < len(launched) else None,
            )
        )
    seconds["compare"] = round(time.perf_counter() - t0, 2)
    summary = summarize_result(task.task_id, workload.metric, calls, environment)
    return replace(summary, seconds=seconds, phases=phases, runtime_warmed=cold)


def _moved(call: WorkloadCall, gold_out: Mapping[str, Any] | None) -> int:
    """The bytes a call moves, for its efficiency: a forward wrapper call's tensor arguments
    read once and the outputs the gold gave back written once. The plan's estimate (every
    tensor read, the largest written once more) is all there is before the call runs, and it
    is wrong where the largest tensor is a weight the call only reads: Megatron-LM #4603's
    fused MoE reads 3.2 GB of experts and writes 0.5 MB, and the estimate gave an efficiency
    above 1 on the H100. A bare kernel's outputs are all its tensor arguments, and with a
    backward the outputs hold gradients: those, and a call without saved outputs (cold wall
    time), keep the estimate."""
    if gold_out is None or call.entry.kind is EntryKind.KERNEL or call.mode is not Mode.FORWARD:
        return call.bytes_moved
    written = sum(t.numel() * t.element_size() for t in gold_out.values()
                  if hasattr(t, "element_size"))  # fmt: skip
    return sum(tensor_bytes(a) for a in call.args if a.tensor) + written


def warm_cache(settings: MeasureSettings, scratch: Path, variant: Variant, task_id: str) -> Path:
    """A variant's Triton cache for warm (kernel_time) rounds, per task, under the caller's
    cache, else the scratch's: `trusted/<task>/base` and `.../gold`, and `predictions/<task>`.
    Only the base's seeds the others (`seed_cache`): it holds the setup state's kernels, which
    every variant's tree shares, and nothing of the gold's."""
    root = settings.triton_cache or scratch / "triton-cache"
    if variant is Variant.PREDICTION:
        return root / "predictions" / task_id
    return root / "trusted" / task_id / str(variant)


def seed_cache(cache: Path, base: Path) -> int:
    """Copy into a gold's or a prediction's warm cache the entries of the base's cache it
    lacks; the number copied. Triton keys a compiled kernel and its autotuning by the kernel's
    source and its dependencies', so the kernels the PR (or the prediction) left alone are
    found there and only the changed ones compile and autotune: flash-linear-attention #643 on
    an H100 (2026-12-07), two caches apart: base 128 s, gold 139 s cold, seven of the op's
    eight kernels the same. The base's cache is the only source: the gold's holds the gold's
    compiled kernels (their PTX and cubins, and those of any kernel that inlines a changed
    helper), which a prediction must never find, and copies, not links, keep a prediction
    from writing into a file a trusted run reads. What an interrupted write left (Triton's
    `tmp.pid_*` folders, in an entry or beside it) is not copied."""
    if not base.is_dir():
        return 0
    copied = 0
    for entry in sorted(base.iterdir()):
        if entry.name.startswith("tmp.") or (cache / entry.name).exists():
            continue
        if entry.is_dir():
            shutil.copytree(entry, cache / entry.name, ignore=shutil.ignore_patterns("tmp.*"))
        else:
            shutil.copy2(entry, cache / entry.name)
        copied += 1
    return copied


def _nth(rows: list[dict[str, Any] | None] | None, i: int) -> dict[str, Any] | None:
    return rows[i] if rows is not None and i < len(rows) else None


def _timing(xs: list[float]) -> Timing | None:
    if not xs:
        return None
    s = summarize(xs)
    return Timing(round(s.median_ms, 6), round(s.p25_ms, 6), round(s.p75_ms, 6), s.reps)


def summarize_result(
    task_id: str, metric: Metric, calls: Sequence[CallResult], environment: str = ""
) -> WorkloadResult:
    """Totals, the gold's speedup and whether the totals' spreads are apart."""
    base, gold = spread_total(calls, "base"), spread_total(calls, "gold")
    pred = spread_total(calls, "prediction")
    return WorkloadResult(
        task_id=task_id,
        metric=metric,
        calls=tuple(calls),
        environment=environment,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        base_total_ms=base,
        gold_total_ms=gold,
        prediction_total_ms=pred,
        speedup=round(base / gold, 4) if base and gold else None,
        separated=totals_separated(calls),
    )


def memcheck_verdict(run: ScriptRun, result: Mapping[str, Any], label: str) -> str:
    """What compute-sanitizer memcheck said about one run of the gold at size `label`:
    "clean on <size>", "<n> errors on <size>: <first finding>", or why it did not tell."""
    if run.timed_out:
        return f"not run: timed out on {label}"
    found = read_log(run.log)
    if found.errors is None:
        return f"not run: no memcheck summary (exit {run.exit_code}: {run.last_words(200)})"
    if found.errors:
        return f"{found.errors} errors on {label}: {found.first or '?'}"
    if "error" in result:
        return f"not run: the harness failed on {label}: {result['error']}"
    rows = result.get("calls") or [{}]
    if rows[0].get("error"):
        return f"not run: the call failed on {label}: {rows[0]['error']}"
    return f"clean on {label}"


def memcheck(workload: Workload, tree: Path, settings: MeasureSettings, cache: Path) -> str:
    """Run the first (smallest) call of `workload` once on `tree` under compute-sanitizer
    memcheck (an out-of-bounds or misaligned access of a kernel on the workload's inputs)."""
    sanitizer = settings.sanitizer or find_sanitizer()
    if sanitizer is None:
        return f"not run: {NOT_FOUND}"
    prefix = memcheck_command(sanitizer)
    label = workload.calls[0].label
    result, run = _run_once(tree, workload, settings, True, cache, save=False, prefix=prefix)
    return memcheck_verdict(run, result, label)


# How far the gold's total may be from the reference's for that reference's base times to
# stand in for timing the base again (`--anchored`): on the H200 the gold totals of two days
# agreed within 1.3% on all four verified optimizations (2026-12-02 / 2026-12-03).
ANCHOR_DRIFT = 0.03


def anchor_problem(anchor: WorkloadResult, workload: Workload, environment: str) -> str | None:
    """Why the task's reference measurement cannot give a prediction's base times; None when it
    can: kernel time (cold wall time is measured whole), the same machine, the same sizes, and
    a base and gold time for every size."""
    if workload.metric is not Metric.KERNEL_TIME or anchor.metric is not Metric.KERNEL_TIME:
        return f"the metric is {workload.metric}"
    if environment and anchor.environment != environment:
        return f"the reference ran on {anchor.environment or 'an unnamed machine'}"
    if [c.label for c in anchor.calls] != [c.label for c in workload.calls]:
        return "the reference measured other sizes"
    if any(c.base is None or c.gold is None for c in anchor.calls) or not anchor.gold_total_ms:
        return "the reference lacks a base or gold time"
    return None


def anchored(result: WorkloadResult, anchor: WorkloadResult) -> WorkloadResult | str:
    """The measurement with the reference's base times when the gold's total is within
    ANCHOR_DRIFT of the reference's (the machine times as it did then), else why not."""
    if not result.gold_total_ms or not anchor.gold_total_ms:
        return "the gold has no total"
    drift = result.gold_total_ms / anchor.gold_total_ms - 1.0
    if abs(drift) > ANCHOR_DRIFT:
        return f"the gold's total is {drift:+.1%} off the reference's"
    calls = [replace(c, base=a.base, base_matches=a.base_matches)
             for c, a in zip(result.calls, anchor.calls, strict=True)]  # fmt: skip
    summary = summarize_result(result.task_id, result.metric, calls, result.environment)
    note = (f"base from the reference measured {anchor.measured_at}; the gold's total "
            f"{drift:+.1%} off its {anchor.gold_total_ms} ms")  # fmt: skip
    return replace(summary, seconds=result.seconds, phases=result.phases, anchor=note,
                   runtime_warmed=result.runtime_warmed)  # fmt: skip


def _extensions(
    task: Task,
    tree: Path,
    settings: MeasureSettings,
    doing: str,
    setup_state: Callable[[], Path] | None = None,
) -> None:
    """The framework's compiled extensions in `tree` (eval/extensions.py; a prediction's tree
    builds a miss in `setup_state`'s); without them a call that needs them fails naming the
    module, and the log says the task was `doing` without them."""
    try:
        install_extensions(tree, settings.python or sys.executable,
                           settings.cache_root or default_cache(), setup_state)  # fmt: skip
    except ExtensionError as exc:
        log.warning("%s: %s; %s without them", task.task_id, exc, doing)


def with_compat(settings: MeasureSettings, tdir: TaskDir) -> MeasureSettings:
    """`settings` with Triton's switches for the Triton the task pins (`eval.compat`)."""
    return replace(settings, extra_env={**settings.extra_env, **task_compat_env(tdir)})


def count_task_flops(
    task: Task,
    tdir: TaskDir,
    store: Any,
    scratch: Path,
    settings: MeasureSettings,
    programs: int = FLOP_PROGRAMS,
) -> Workload:
    """The task's workload with each call's `flops`: the matrix-product FLOPs the gold's
    kernels execute on it, counted in Triton's interpreter (`eval.flop_count`: at most
    `programs` programs of each launch run, the count scaled to the grid). A call whose count
    failed, or that the harness left out, keeps its `flops` (0) and its error is raised after
    the others are counted."""
    from eval.workspace import prepare

    workload = tdir.load(TaskFile.WORKLOAD, Workload)
    if workload is None or not workload.calls:
        raise EvalError("no workload call to count", task_id=task.task_id)
    root = scratch / task.task_id
    settings = with_compat(settings, tdir)
    tree = prepare(task, tdir, store, root / "gold", Variant.GOLD)
    try:
        _extensions(task, tree, settings, "counted")
        result, _ = _run_once(tree, workload, settings, True, root / "cache", save=False,
                              count_programs=programs)  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = result.get("calls") or []
    errors = [result["error"]] if "error" in result else []
    calls = list(workload.calls)
    for i in range(len(calls)):
        row = rows[i] if i < len(rows) else {}  # a harness that stopped early left it out
        if row.get("error") or "flops" not in row:
            errors.append(f"{calls[i].label}: {row.get('error') or 'not counted'}")
            continue
        flops = int(row["flops"])
        # the estimate takes the FLOPs where they take longer than the bytes (#1033's small
        # call: 125 µs by its bytes, 4.2 ms by its 3350 GFLOP)
        us = round(h200_us(calls[i].bytes_moved, flops), 2)
        calls[i] = replace(calls[i], flops=flops, estimate_us=us)
    how = (f"Triton {_first(rows, 'triton')} interpreter, at most {programs} programs a "
           f"launch, {datetime.now(UTC).strftime('%Y-%m-%d')}")  # fmt: skip
    counted = replace(workload, calls=tuple(calls), flops_counted=how)
    if errors:
        tdir.store(TaskFile.WORKLOAD, replace(counted, flops_counted=""))
        raise EvalError(f"FLOPs not counted: {errors[0]}", task_id=task.task_id)
    tdir.store(TaskFile.WORKLOAD, counted)
    return counted


def _first(rows: Sequence[Mapping[str, Any]], key: str) -> str:
    return next((str(r[key]) for r in rows if r.get(key)), "?")


def measure_task(
    task: Task,
    tdir: TaskDir,
    store: Any,
    scratch: Path,
    settings: MeasureSettings,
    prediction: Mapping[str, Any] | None = None,
    environment: str = "",
    anchor: WorkloadResult | None = None,
    progress: Callable[[str], None] | None = None,
) -> WorkloadResult:
    """Prepare the trees (base, gold, and the prediction when given) and measure. With an
    `anchor` (the task's reference measurement) and a prediction, gold and prediction run once
    each and the base's times come from the anchor when the gold's total agrees with it
    (`anchored`): two harness processes instead of six; otherwise the full protocol runs."""
    from eval.workspace import prepare

    workload = tdir.load(TaskFile.WORKLOAD, Workload)
    if workload is None:
        raise EvalError(
            "no workload.json (run `eval workload --plan-only` first)", task_id=task.task_id
        )
    if not workload.calls:
        raise EvalError(f"the workload has no call: {workload.why}", task_id=task.task_id)
    root = scratch / task.task_id
    settings = with_compat(settings, tdir)
    t0 = time.perf_counter()
    trees: dict[Variant, Path] = {}
    for v in (Variant.BASE, Variant.GOLD) + ((Variant.PREDICTION,) if prediction else ()):
        trees[v] = prepare(
            task, tdir, store, root / str(v), v, prediction if v is Variant.PREDICTION else None
        )
    setup_state = partial(trees.__getitem__, Variant.BASE)  # never build a prediction's tree
    for v, tree in trees.items():
        _extensions(task, tree, settings, "measured",
                    setup_state if v is Variant.PREDICTION else None)  # fmt: skip
    prepared = round(time.perf_counter() - t0, 2)
    try:
        why = "" if anchor is None else anchor_problem(anchor, workload, environment) or ""
        result, tried = None, {}
        if anchor is not None and prediction and not why:
            pair = {v: trees[v] for v in (Variant.GOLD, Variant.PREDICTION)}
            quick = measure(task, workload, pair, replace(settings, rounds=1), root, environment,
                            progress)  # fmt: skip
            got = anchored(quick, anchor)
            result, why = (got, "") if isinstance(got, WorkloadResult) else (None, got)
            if why and progress is not None:  # 2026-12-04: a call cut here never said why
                progress(f"not anchored: {why}; the full protocol runs")
            tried = {f"anchor {k}": v for k, v in quick.seconds.items()}
        if result is None:
            result = measure(task, workload, trees, settings, root, environment, progress)
            if why:  # the anchored attempt's processes count in the cost too
                seconds = {**tried, **result.seconds}
                result = replace(result, anchor=f"not anchored: {why}", seconds=seconds)
        if settings.memcheck:
            t1 = time.perf_counter()
            cache = warm_cache(settings, root, Variant.GOLD, task.task_id)
            verdict = memcheck(workload, trees[Variant.GOLD], settings, cache)
            seconds = {**result.seconds, "memcheck": round(time.perf_counter() - t1, 2)}
            result = replace(result, memcheck=verdict, seconds=seconds)
    finally:
        for t in trees.values():
            shutil.rmtree(t, ignore_errors=True)
    return replace(result, seconds={"prepare": prepared, **result.seconds})
