"""`python -m eval workload`: plan workloads, time them, record the optimization gate's verdict.

Reads: task directories, the frameworks' repositories (`--repo-path`), predictions.jsonl
(`--predictions`). Writes: `workload.json` per planned task, `workload_result.json` per
measured task (in the task directory; under `--out/<task_id>/` with predictions), the verdict
in task.json when the task has a reference run, `--out/workload_summary.json`.
Resumable: a task with a result is skipped unless `--force`; without CUDA the measurement is
skipped with one line (the plan is still written). `--count-flops` times nothing: it counts the
gold's matrix-product FLOPs per call in Triton's interpreter (`eval.flop_count`) into
`workload.json`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import one_line
from core.files import output_lock, write_json, write_record
from core.records import from_args
from curation.model import Task, TaskType
from curation.taskdir import TaskDir, TaskFile
from eval.errors import EvalError
from eval.workload_model import Workload, WorkloadResult

if TYPE_CHECKING:
    from eval.workload_run import MeasureSettings


def _scope(tdir: TaskDir, all_types: bool) -> str:
    """Why a task gets no workload ("" when it gets one)."""
    task = tdir.load_task()
    if not all_types and task.task_type.type is not TaskType.OPTIMIZATION:
        return "not an optimization"
    if not task.requires.single_nvidia_gpu:
        return f"out of scope ({task.requires.vendor}, {task.requires.gpus} GPUs)"
    return ""


def plan_all(args: argparse.Namespace, tdirs: list[TaskDir], console: Any) -> dict[str, Workload]:
    """workload.json for every selected task (kept when present, unless --force without
    --count-flops)."""
    from rich.progress import Progress

    from eval.session import EvalSettings, stores
    from eval.workload_run import GitTreeView, plan_task

    repos = stores(from_args(EvalSettings, args))
    plans: dict[str, Workload] = {}
    with Progress(console=console) as bar:
        job = bar.add_task("planning workloads", total=len(tdirs))
        for tdir in tdirs:
            bar.advance(job)
            existing = tdir.load(TaskFile.WORKLOAD, Workload)
            # a count reads the plans there are: with it, --force counts again, never replans
            # (a new plan would no longer be the one the task's result was measured on)
            if existing is not None and (not args.force or args.count_flops):
                plans[tdir.id] = existing
                continue
            task = tdir.load_task()
            store = repos.get(task.framework)
            if store is None:
                bar.console.print(
                    f"{tdir.id}: no repository for {task.framework} (--repo-path)", markup=False
                )
                continue
            try:
                plan = plan_task(task, tdir, GitTreeView(store, task.base_commit))
            except (EvalError, OSError, ValueError) as exc:
                bar.console.print(f"{tdir.id}: not planned: {one_line(exc)}", markup=False)
                continue
            tdir.store(TaskFile.WORKLOAD, plan)
            plans[tdir.id] = plan
    return plans


def summary_table(plans: dict[str, Workload]) -> Any:
    """Per framework: tasks, the source of each planned workload, none, cold wall time."""
    from rich.table import Table

    from eval.workload_model import Source

    table = Table(title=f"workloads of {len(plans)} tasks")
    short = {Source.BENCHMARK_SCRIPT: "bench", Source.MODEL_CONFIG: "model",
             Source.TEST_CALL: "test", Source.SCALED_TEST_CALL: "captured"}  # fmt: skip
    columns = {str(s): short.get(s, str(s)) for s in Source}
    for col in ("framework", "tasks", *columns.values(), "none", "cold"):
        table.add_column(col, no_wrap=col == "framework")
    by_fw: dict[str, Counter[str]] = {}
    for tid, plan in plans.items():
        c = by_fw.setdefault(tid.split("__", 1)[0], Counter())
        c["tasks"] += 1
        c[str(plan.calls[0].source) if plan.calls else "none"] += 1
        c["cold_wall_time"] += plan.metric == "cold_wall_time"
    for fw, c in sorted(by_fw.items()):
        keys = ("tasks", *columns, "none", "cold_wall_time")
        table.add_row(fw, *(str(c[k]) for k in keys))
    return table


def why_none(plans: dict[str, Workload]) -> Counter[str]:
    """The reasons of the tasks that got no call, by the last source's note."""
    out: Counter[str] = Counter()
    for plan in plans.values():
        if not plan.calls:
            last = plan.tried[-1] if plan.tried else plan.why
            out[last.split(":", 1)[0] + ":" + last.split(":", 1)[-1].split("(")[0][:70]] += 1
    return out


def run_workload_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from eval.session import EvalSettings, select_tasks

    console = Console(stderr=True)
    if args.anchored and not args.predictions:
        raise EvalError("--anchored times predictions against the gate's measurement: it "
                        "needs --predictions")  # fmt: skip
    settings = from_args(EvalSettings, args)
    skipped: dict[str, str] = {}
    tdirs = []
    for t in select_tasks(settings):
        why = _scope(t, args.all_types)
        if why:
            skipped[t.id] = why
        else:
            tdirs.append(t)
    if not tdirs:
        raise EvalError(
            f"no task to plan under {args.tasks} ({len(skipped)} skipped: "
            f"{Counter(skipped.values()).most_common(2)})"
        )
    plans = plan_all(args, tdirs, console)
    Console().print(summary_table(plans))
    for reason, n in why_none(plans).most_common():
        print(f"  no workload ({n}): {reason}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(
        args.out / "workload_summary.json",
        {
            "planned": {tid: [str(c.source) for c in p.calls] for tid, p in plans.items()},
            "none": {tid: p.why for tid, p in plans.items() if not p.calls},
            "skipped": skipped,
        },
    )
    if args.plan_only:
        return 0
    if args.count_flops:
        return count_all(args, [t for t in tdirs if t.id in plans and plans[t.id].calls], console)
    from eval.timing import cuda_available

    if not cuda_available():
        print(
            "workload timing skipped: no CUDA device here (the plans are written; run "
            "without --plan-only on a GPU machine)",
            file=sys.stderr,
        )
        return 0
    return measure_all(args, [t for t in tdirs if t.id in plans and plans[t.id].calls], console)


def on_wheelhouse(
    settings: MeasureSettings, wheelhouse: Path | None, tdir: TaskDir
) -> MeasureSettings:
    """`settings` with the Python of the task's wheelhouse venv (Megatron-LM #4460 imports
    omegaconf, which the H200's image lacks), as its tests run on, and the venv shown to the
    sandbox (call 18 on the H200: without it every harness process failed with "prlimit: failed
    to execute .../venvs/.../bin/python"); unchanged without one."""
    from dataclasses import replace

    from eval.backends import RunSettings, interpreter_for

    python, venv = interpreter_for(RunSettings(wheelhouse=wheelhouse), tdir)
    return settings if venv is None else replace(settings, python=python, venv=venv)


def count_all(args: argparse.Namespace, tdirs: list[TaskDir], console: Any) -> int:
    """`--count-flops`: each workload's calls get the FLOPs the gold executes on them."""
    from rich.progress import Progress

    from eval.session import EvalSettings, scratch_dir, stores
    from eval.workload_run import MeasureSettings, count_task_flops

    if args.count_flops < 1:
        raise EvalError(f"--count-flops: at least 1 program a launch, not {args.count_flops}")
    repos = stores(from_args(EvalSettings, args))
    settings = MeasureSettings(timeout_s=args.timeout, trusted_unsandboxed=args.no_sandbox)
    done = failed = kept = 0
    with scratch_dir(args.scratch) as tmp, Progress(console=console) as bar:
        job = bar.add_task("counting FLOPs", total=len(tdirs))
        for tdir in tdirs:
            bar.advance(job)
            plan = tdir.load(TaskFile.WORKLOAD, Workload)
            if plan is not None and plan.flops_counted and not args.force:
                kept += 1
                continue
            task = tdir.load_task()
            t0 = time.perf_counter()
            try:
                counted = count_task_flops(task, tdir, repos[task.framework], Path(tmp),
                                           on_wheelhouse(settings, args.wheelhouse, tdir),
                                           args.count_flops)  # fmt: skip
            except Exception as exc:  # one broken task must not stop the others
                failed += 1
                bar.console.print(f"{tdir.id}: not counted: {one_line(exc)}", markup=False)
                continue
            done += 1
            per_call = ", ".join(f"{c.label} {c.flops / 1e9:.4g} GFLOP (~{c.estimate_us:.0f} µs)"
                                 for c in counted.calls)  # fmt: skip
            bar.console.print(f"{tdir.id}: {per_call} ({time.perf_counter() - t0:.0f} s)",
                              markup=False)  # fmt: skip
    print(f"FLOPs counted on {done} workloads, {failed} failed, {kept} counted before")
    return 1 if failed and not done else 0


def measure_all(args: argparse.Namespace, tdirs: list[TaskDir], console: Any) -> int:
    from rich.progress import Progress

    from eval.reference import environment
    from eval.score import load_predictions
    from eval.session import EvalSettings, scratch_dir, stores
    from eval.workload_run import MeasureSettings, measure_task

    preds = load_predictions(args.predictions) if args.predictions else {}
    repos = stores(from_args(EvalSettings, args))
    env = environment()
    label = f"{env.gpu}; torch {env.torch}; triton {env.triton}"
    settings = MeasureSettings(
        rounds=args.rounds,
        timeout_s=args.timeout,
        trusted_unsandboxed=args.no_sandbox,
        triton_cache=args.triton_cache,
        memcheck=args.memcheck,
    )
    end = time.monotonic() + args.deadline if args.deadline else None
    done = failed = 0
    with output_lock(args.out), scratch_dir(args.scratch) as tmp, Progress(console=console) as bar:
        job = bar.add_task("timing workloads", total=len(tdirs))
        for tdir in tdirs:
            bar.advance(job)
            out = (
                args.out / tdir.id / TaskFile.WORKLOAD_RESULT
                if preds
                else tdir.path(TaskFile.WORKLOAD_RESULT)
            )
            if preds and tdir.id not in preds:
                continue
            if out.exists() and not args.force:
                continue
            if end is not None and time.monotonic() > end:
                bar.console.print("deadline passed: the remaining tasks are not started")
                break
            task = tdir.load_task()
            try:
                result = measure_task(
                    task,
                    tdir,
                    repos[task.framework],
                    Path(tmp),
                    on_wheelhouse(settings, args.wheelhouse, tdir),
                    preds.get(tdir.id),
                    label,
                    tdir.load(TaskFile.WORKLOAD_RESULT, WorkloadResult) if args.anchored else None,
                    partial(_say, bar.console, tdir.id),
                )
            except Exception as exc:  # one broken task must not stop the others
                failed += 1
                bar.console.print(f"{tdir.id}: not measured: {one_line(exc)}", markup=False)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            write_record(out, result)
            done += 1
            line = (
                f"{tdir.id}: base {result.base_total_ms} ms, gold {result.gold_total_ms} ms, "
                f"speedup {result.speedup} ({sum(result.seconds.values()):.0f} s: "
                + ", ".join(f"{k} {v:.0f}" for k, v in result.seconds.items())
                + ")"
                + (f"; memcheck: {result.memcheck}" if result.memcheck else "")
                + (f"; {result.anchor}" if result.anchor else "")
                + _phases(result)
            )
            if not preds:
                line += _record_verdict(tdir, task, result)
            bar.console.print(line, markup=False)
    print(f"{done} workloads measured, {failed} failed")
    return 1 if failed and not done else 0


def _say(console: Any, task_id: str, line: str) -> None:
    """One harness process's end, as it happens (a call cut short still says where it was)."""
    console.print(f"{task_id}: {line}", markup=False)


def _phases(result: WorkloadResult) -> str:
    """Inside the harness processes, summed over them: `; inside: imports 21, ...`, then the
    import profile's packages (`import transformers 40`: part of imports and entry)."""
    totals: dict[str, float] = {}
    for key, spent in result.phases.items():
        phase = key.partition(" ")[2]  # "base-0 entry", "gold-1 import torch"
        totals[phase] = totals.get(phase, 0.0) + spent
    return "; inside: " + ", ".join(f"{k} {v:.0f}" for k, v in totals.items()) if totals else ""


def _record_verdict(tdir: TaskDir, task: Task, result: WorkloadResult) -> str:
    """The gate's verdict with the new workload: rejudged with the task's reference runs; for
    a verdict restored from a release without its runs, by the workload with the release's
    tests (`released_tests_verdict`); before its tests have had any, unverified with the
    measured ratio as the reason."""
    from curation.model import Verification, VerificationStatus
    from eval.compat import pinned_triton
    from eval.gate import optimization_verdict, released_tests_verdict, retype
    from eval.model import Reference
    from eval.perf_scores import gpu_name
    from eval.reference import rejudge

    ref = tdir.load(TaskFile.REFERENCE, Reference)
    gpu = gpu_name(result.environment)
    restored = released_tests_verdict(task, result, gpu) if ref is None else None
    if restored is not None:  # its tests' runs are the release's
        tdir.record_verification(restored)
        return f"; {restored.status}: {restored.reason} (tests: the released reference)"
    if ref is None or not ref.node_ids:
        status, why = optimization_verdict(task, result, gpu)
        ok = status is VerificationStatus.VERIFIED
        reason = f"{why}; its tests have no reference run yet" if ok else why
        if ok:  # verified only with its tests' reference runs
            status = VerificationStatus.UNVERIFIED
        tdir.record_verification(Verification(status, reason, result.measured_at,
                                              result.environment))  # fmt: skip
        return f"; workload {'passes' if ok else 'fails'} the gate ({why}); no reference run"
    new, verdict = rejudge(task, ref, result, pinned_triton(tdir))
    tdir.store(TaskFile.REFERENCE, new)
    if verdict is not None:
        retyped = retype(task, verdict, new.fail_to_pass, ref.runs)
        tdir.record_verification(verdict, ref.node_ids, task_type=retyped)
        return f"; {verdict.status}: {verdict.reason}"
    return ""
