"""The table issue 10 asks for: per verified optimization task, its workload's source, sizes,
base and gold times with their spread, the speedup and the gold's efficiency (a fraction of the
measured peaks of the GPU that ran it: bytes over its copy bandwidth or, where the workload's
matrix-product FLOPs were counted (`eval workload --count-flops`), FLOP/s over its bf16 peak,
whichever is larger, with the TFLOP/s achieved; "-" for a GPU never measured).

    python scripts/workload_report.py TASKS [--all]

Reads: each task directory's task.json (its verdict, as `TaskDir.current_verification` gives it),
workload.json (sources and named sizes, when the directory has it) and workload_result.json.
`--all`: every task with a measured workload, verified or not.
Prints: a markdown table, a row per size of each task (median ms and p25-p75 of base and gold),
the task's totals on its first row, then a line: how many tasks, how many with a gold faster by
at least 1.10x whose spreads are apart, and on which machines.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.files import read_record
from curation.model import VerificationStatus
from curation.taskdir import TaskDir, TaskFile, task_dirs
from eval.gate import MIN_SPEEDUP
from eval.perf_scores import gpu_name
from eval.workload_model import (
    Timing,
    Workload,
    WorkloadResult,
    gold_efficiency,
    totals_separated,
)


def _ms(t: Timing | None) -> str:
    """`median (p25-p75)` of a timing, in ms; '-' without one."""
    return "-" if t is None else f"{t.median_ms:.4g} ({t.p25_ms:.4g}-{t.p75_ms:.4g})"


def _sizes(plan: Workload | None) -> list[str]:
    """Each planned call's named sizes (`dims`, the sweep's own `x` left out), in order."""
    calls = plan.calls if plan is not None else ()
    return [", ".join(f"{k}={v}" for k, v in c.dims.items() if k != "x") or "-" for c in calls]


def rows(tdir: TaskDir, every: bool) -> tuple[list[str], WorkloadResult] | None:
    """The table rows of one task and its measurement (None: not reported)."""
    task = tdir.load_task()
    verdict = tdir.current_verification(task)
    verified = verdict.status is VerificationStatus.VERIFIED
    if not tdir.has(TaskFile.WORKLOAD_RESULT) or not (
        every or (verified and task.task_type.type.value == "optimization")
    ):
        return None
    result = read_record(WorkloadResult, tdir.path(TaskFile.WORKLOAD_RESULT))
    plan = (
        read_record(Workload, tdir.path(TaskFile.WORKLOAD)) if tdir.has(TaskFile.WORKLOAD) else None
    )
    sources = sorted({str(c.source) for c in plan.calls}) if plan is not None else ["-"]
    sizes = _sizes(plan)
    machine = gpu_name(result.environment).replace("NVIDIA ", "")
    apart = "apart" if totals_separated(result.calls) else "overlap"
    head = f"{task.framework} #{task.pr_number or task.task_id.split('__')[1]} ({verdict.status})"
    total = ""  # no speed-up where a variant failed or went untimed
    if result.speedup and result.base_total_ms and result.gold_total_ms:
        total = (f"**{result.speedup:.2f}x** ({result.base_total_ms:.4g} / "
                 f"{result.gold_total_ms:.4g} ms, {apart})")  # fmt: skip
    out = []
    for i, call in enumerate(result.calls):
        counted = plan.calls[i].flops if plan is not None and i < len(plan.calls) else 0
        eff = gold_efficiency(result, call, counted)
        flops = call.flops or counted
        rate = (f" ({flops / call.gold.median_ms / 1e9:.0f} TFLOP/s)"
                if eff is not None and flops and call.gold else "")  # fmt: skip
        first = i == 0
        out.append("| " + " | ".join([
            head if first else "",
            f"{machine}, {result.measured_at[:10]}" if first else "",
            f"{result.metric}, {'/'.join(sources)}" if first else "",
            f"{call.label}: {sizes[i] if i < len(sizes) else '-'}",
            _ms(call.base),
            _ms(call.gold),
            total if first else "",
            f"{eff:.2f}{rate}" if eff is not None else "-",
        ]) + " |")  # fmt: skip
    return out, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", type=Path, help="task directories")
    ap.add_argument("--all", action="store_true", help="every measured task, not only verified "
                    "optimizations")  # fmt: skip
    args = ap.parse_args(argv)
    if not args.tasks.is_dir():
        ap.error(f"{args.tasks}: no such folder")
    print("| task | machine, date | metric, source | size | base ms (p25-p75) | gold ms (p25-p75) "
          "| speedup (totals) | gold efficiency |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    shown = fast = 0
    machines: set[str] = set()
    for tdir in task_dirs(args.tasks):
        got = rows(tdir, args.all)
        if got is None:
            continue
        lines, result = got
        print("\n".join(lines))
        shown += 1
        fast += bool((result.speedup or 0) >= MIN_SPEEDUP and totals_separated(result.calls))
        machines.add(gpu_name(result.environment))
    print(
        f"\n{shown} tasks; {fast} with the gold at least {MIN_SPEEDUP}x faster, spreads apart; "
        f"measured on {', '.join(sorted(machines)) or 'no machine'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
