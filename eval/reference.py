"""Reference runs: base and gold, several times each in alternating order, on one machine.

Reads: task directories through a `Backend`. Writes: `reference.json` into each task directory
and the run logs under the run directory.
A task is valid when the gold kernel passes its tests in every run and, for new ops and bug
fixes, some test fails with the base kernel and passes with the gold (fail-to-pass). Tests whose
outcome changes between runs of one variant are flaky and kept out of both lists.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

from curation.model import Task, TaskType
from curation.taskdir import TaskDir, write_atomic
from eval.backends import Backend
from eval.model import Environment, FailureClass, Reference, RunResult, Variant, VariantSummary


def environment() -> Environment:
    """GPU, driver, CUDA, torch and triton of this process's machine."""
    gpu = driver = cuda = torch_v = triton_v = "unavailable"
    try:
        import torch

        torch_v = torch.__version__
        cuda = str(torch.version.cuda)
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        import triton

        triton_v = triton.__version__
    except ImportError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
        driver = out.stdout.strip().splitlines()[0] if out.stdout.strip() else driver
    except (OSError, subprocess.TimeoutExpired):
        pass
    return Environment(gpu, driver, cuda, torch_v, triton_v, platform.python_version(),
                       platform.node())  # fmt: skip


def summarize(runs: Sequence[RunResult]) -> VariantSummary:
    walls = [r.wall_s for r in runs]
    med = statistics.median(walls) if walls else 0.0
    # 0.0 means the profiler did not run (no CUDA): unknown, not free
    in_test = [t for r in runs if (t := sum(k.total_ms for k in r.kernels)) > 0]
    isolated = [
        sum(k.isolated_ms for k in r.kernels if k.isolated_ms is not None)
        for r in runs
        if any(k.isolated_ms is not None for k in r.kernels)
    ]
    kmed = statistics.median(in_test) if in_test else None
    failures: dict[str, int] = {}
    for r in runs:
        if r.failure is not FailureClass.NONE:
            failures[str(r.failure)] = failures.get(str(r.failure), 0) + 1
    return VariantSummary(
        passed_runs=sum(r.passed for r in runs),
        runs=len(runs),
        e2e_s=round(med, 3),
        e2e_spread=round((max(walls) - min(walls)) / med, 4) if med else 0.0,
        kernel_ms=round(kmed, 6) if kmed is not None else None,
        kernel_spread=(round((max(in_test) - min(in_test)) / kmed, 4) if kmed else None),
        isolated_ms=round(statistics.median(isolated), 6) if isolated else None,
        failures=failures,
    )


def _outcomes(runs: Sequence[RunResult]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for r in runs:
        for t in r.tests:
            seen.setdefault(t.nodeid, set()).add(t.outcome)
    return seen


def judge(task: Task, base: Sequence[RunResult], gold: Sequence[RunResult]) -> tuple[
    tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, str
]:  # fmt: skip
    """(fail_to_pass, pass_to_pass, flaky, valid, note).

    As in SWE-bench, the task is judged on the tests that pass with the gold kernel in every
    run: those that also pass with the base are pass-to-pass, those that fail (or do not exist)
    with the base are fail-to-pass. Tests that fail with the gold in every run (a feature this
    machine lacks, a broken test) are left out and counted in the note.
    """
    b, g = _outcomes(base), _outcomes(gold)
    flaky = sorted({n for n, o in (*b.items(), *g.items()) if len(o) > 1})
    ok = {"passed"}
    # failing, erroring, skipped or absent with the base kernel all mean "not passing"
    f2p = sorted(n for n, o in g.items() if o == ok and n not in flaky and b.get(n) != ok)
    p2p = sorted(n for n, o in g.items() if o == ok and b.get(n) == ok and n not in flaky)
    gold_failing = sorted(n for n, o in g.items() if o <= {"failed", "error"})
    # a gold run that timed out, crashed, or whose verdict cannot be trusted (tampered, a
    # channel problem: on a trusted kernel, a harness or framework problem to look at)
    broken = [r for r in gold if r.flags or r.failure in (FailureClass.TIMEOUT, FailureClass.CRASH,
                                                          FailureClass.CUDA_ERROR)]  # fmt: skip
    lists = tuple(f2p), tuple(p2p), tuple(flaky)
    if not gold or broken or not (f2p or p2p):
        classes = sorted({str(r.failure) for r in gold if not r.passed})
        details = "; ".join(sorted({r.detail for r in gold if r.detail}))[:300]
        return (*lists, False,
                f"no test passes with the gold kernel in every run ({', '.join(classes)}): "
                f"{details}")  # fmt: skip
    if task.task_type.type in (TaskType.NEW_OP, TaskType.BUG_FIX) and not f2p:
        return (*lists, False,
                f"{task.task_type.type}: no test fails with the base kernel and passes with "
                "the gold")  # fmt: skip
    note = f"{len(f2p)} fail-to-pass, {len(p2p)} pass-to-pass"
    if gold_failing:
        note += f"; {len(gold_failing)} tests fail with the gold too and are left out"
    if flaky:
        note += f"; {len(flaky)} flaky"
    return (*lists, True, note)


def run_reference(
    task: Task, tdir: TaskDir, backend: Backend, run_root: Path, runs: int = 3
) -> Reference:
    """Base and gold `runs` times each, alternating which goes first; writes reference.json."""
    results: list[RunResult] = []
    for i in range(runs):
        order = (Variant.BASE, Variant.GOLD) if i % 2 == 0 else (Variant.GOLD, Variant.BASE)
        for variant in order:
            run_dir = run_root / task.task_id / f"{variant}-{i}"
            results.append(backend.run(task, tdir, variant, run_dir, i))
    base = [r for r in results if r.variant is Variant.BASE]
    gold = [r for r in results if r.variant is Variant.GOLD]
    f2p, p2p, flaky, valid, note = judge(task, base, gold)
    ref = Reference(
        task_id=task.task_id,
        environment=environment(),
        tests=tuple(sorted({t.nodeid.split("::")[0] for r in results for t in r.tests})),
        base=summarize(base),
        gold=summarize(gold),
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        valid=valid,
        validity_note=note,
        flaky=flaky,
        runs=tuple(results),
    )
    write_atomic(tdir.root / "reference.json", json.dumps(ref.to_dict(), indent=1))
    return ref


def rejudge(task: Task, ref: Reference) -> Reference:
    """Recompute the lists and validity from the stored runs (no rerun: judging rules may
    change after an expensive GPU session)."""
    from dataclasses import replace

    base = [r for r in ref.runs if r.variant is Variant.BASE]
    gold = [r for r in ref.runs if r.variant is Variant.GOLD]
    f2p, p2p, flaky, valid, note = judge(task, base, gold)
    return replace(ref, fail_to_pass=f2p, pass_to_pass=p2p, flaky=flaky, valid=valid,
                   validity_note=note)  # fmt: skip
