"""Check kernel-level workload plans on the CPU before a GPU call spends minutes on them.

Each planned launch of a target kernel (`scaled_test_call`, `model_config`) is cut to a few rows
and run once, base and gold, in the Triton interpreter (TRITON_INTERPRET=1).

    python scripts/preflight_plans.py --tasks TASKS [--task ID | --task-file F]
        [--repo-path NAME=PATH ...] [--rows 2] [--timeout 300]

Reads: each task's `workload.json` (plan it first: `eval workload --plan-only`), the task files
and the framework's repository (for the base and gold trees). Writes nothing in the task
directories (the cut plan is run from a copy). Prints a line per task: `ok` (every launch ran
for base and gold; an optimization's outputs compare, a fix's may differ), the launch that
failed and its error, or why the task was passed over (a wrapper-level call: the tests run it
at their own size; trees the local mirror cannot make).

A cut launch keeps every width the plan gave (model sizes, block constexprs, strides); only
the token dimension becomes `--rows`: tensors whose first dimension is the plan's token count,
scalars equal to it, offsets totalling it, and grid dimensions that follow it. So what fails
here fails on the GPU too (Megatron-LM #4460's first model plan: `BLOCK_DIM=3072`, "arange's
range must be a power of 2"); what passes may still fail at full size (memory, grid limits).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.errors import one_line
from core.records import from_args
from curation.model import TaskType
from curation.taskdir import TaskDir, TaskFile
from eval.__main__ import _selection
from eval.errors import EvalError
from eval.session import EvalSettings, select_tasks, stores
from eval.workload_model import ArgSpec, EntryKind, Workload, WorkloadCall
from eval.workload_plan import grid_block, restride
from mining.errors import GitError


def cut(call: WorkloadCall, rows: int) -> WorkloadCall | None:
    """`call` with its token dimension at `rows`, or None when it is not a kernel launch whose
    token count the plan recorded (`dims["tokens"]`)."""
    tokens = call.dims.get("tokens")
    if call.entry.kind is not EntryKind.KERNEL or type(tokens) is not int or tokens < 1:
        return None
    rows = min(rows, tokens)
    args: list[ArgSpec] = []
    for a in call.args:
        if a.tensor and a.shape and a.shape[0] == tokens:
            shape = (rows, *a.shape[1:])
            stride = restride(a.shape, a.stride, shape) if a.stride else None
            a = replace(a, shape=shape, stride=stride)
        elif a.tensor and a.rule == "offsets" and a.params.get("total") == tokens:
            a = replace(a, params={**a.params, "total": rows})
        elif not a.tensor and type(a.value) is int and a.value == tokens and tokens > 1:
            a = replace(a, value=rows)
        args.append(a)
    grid = tuple(math.ceil(rows / b) if (b := grid_block(g, tokens)) else g for g in call.grid)
    return replace(call, args=tuple(args), grid=grid, dims={**call.dims, "tokens": rows})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _selection(ap)  # --tasks, --task, --task-file, --repo-path, --work as the eval commands
    ap.add_argument("--rows", type=int, default=2, help="the token dimension of a cut launch")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per harness process")
    args = ap.parse_args(argv)
    if args.rows < 1:
        ap.error("--rows must be at least 1")
    os.environ["TRITON_INTERPRET"] = "1"  # before any harness process starts
    from eval.workload_run import MeasureSettings, measure_task

    try:
        settings = from_args(EvalSettings, args)
        tdirs = select_tasks(settings)
        repos = stores(settings)
    except EvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    measure = MeasureSettings(rounds=1, cpu_ok=True, trusted_unsandboxed=True,
                              timeout_s=args.timeout)  # fmt: skip
    counts = {"ok": 0, "failed": 0, "passed over": 0}
    with tempfile.TemporaryDirectory(prefix="tpb-preflight-") as tmp:
        for tdir in tdirs:
            plan = tdir.load(TaskFile.WORKLOAD, Workload)
            task = tdir.load_task()
            cuts = [cut(c, args.rows) for c in plan.calls] if plan else []
            kept = [c for c in cuts if c is not None]
            if plan is None or not kept:
                why = "no workload.json" if plan is None else (
                    "no kernel-level launch (its wrapper calls run in the tests)")  # fmt: skip
                print(f"{tdir.id}: passed over: {why}")
                counts["passed over"] += 1
                continue
            if task.framework not in repos:
                print(f"{tdir.id}: passed over: no --repo-path for {task.framework}")
                counts["passed over"] += 1
                continue
            copy = Path(tmp) / "tasks" / tdir.id
            shutil.copytree(tdir.root, copy)
            cdir = TaskDir(copy)
            cdir.store(TaskFile.WORKLOAD, replace(plan, calls=tuple(kept)))
            try:
                result = measure_task(task, cdir, repos[task.framework], Path(tmp) / "scratch",
                                      measure)  # fmt: skip
            except GitError as exc:  # a mirror without the blob (fetch's largest files)
                print(f"{tdir.id}: passed over: its trees cannot be made here: {one_line(exc)}")
                counts["passed over"] += 1
                continue
            except Exception as exc:  # one broken task must not stop the others
                print(f"{tdir.id}: failed: {one_line(exc)}")
                counts["failed"] += 1
                continue
            bad = [f"{c.label}: {c.error}" for c in result.calls if c.error]
            differ = [str(c.label) for c in result.calls if not c.error and c.base_matches is False]
            # an optimization's base must give the gold's outputs; a fix or a feature need not
            optimization = task.task_type.type is TaskType.OPTIMIZATION
            bad += [f"{label}: base and gold outputs differ" for label in differ if optimization]
            if bad:
                print(f"{tdir.id}: failed: {'; '.join(bad)}")
                counts["failed"] += 1
            else:
                sizes = ", ".join(str(c.label) for c in kept)
                note = f"; base and gold outputs differ ({task.task_type.type})" if differ else ""
                print(
                    f"{tdir.id}: ok ({len(kept)} launches cut to {args.rows} rows: {sizes}){note}"
                )
                counts["ok"] += 1
    print(", ".join(f"{n} {k}" for k, n in counts.items()))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
