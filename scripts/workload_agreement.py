"""How well workload measurements reproduce, from the gold's totals of repeated measurements.

Every task measured more than once on one machine kind, on the same sizes (issue 10: two
independent runs on different days agree within 3% on at least 90% of the tasks' gold times).

    python scripts/workload_agreement.py docs/runs [--tolerance 0.03] [--tasks TASKS]

Reads: every `workload_result.json` under the given folders, inside .tar / .tgz archives too
(the GPU calls' archives under docs/runs/*/results); one measurement counted once however many
archives hold it (by task and `measured_at`). Measurements are compared only within one machine
kind (the GPU named by `environment`) and one plan (the calls' labels and bytes moved: a task
planned again is another workload).
Prints: a markdown table, a row per task measured more than once (its runs' dates and gold
totals, the spread max/min - 1, whether it is within the tolerance, and the runs' gold
speed-ups over the base with their spread), then the summary: of the
tasks measured on two or more days, how many agree; and of those repeated on one day only.
Then the measurements timed with a prediction beside base and gold: its total over the base's.
With --tasks, last, issue 10's own count: of the verified optimization tasks there, how many
have a plan (machine kind, metric, sizes) measured on two or more days with every such plan's
gold totals within the tolerance, and each other one with why (apart, or no plan measured on
two days).
An A/A control (call33.sh's control.txt: the task's setup state, the base's own code, scored as
the prediction) must tie the base; a ratio away from 1 is the method's bias.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from merge_device_results import unpacked_roots

from curation.model import TaskType, VerificationStatus
from curation.taskdir import TaskFile, task_dirs
from eval.perf_scores import gpu_name

# measurements by what compares (`workload_key`: task, machine kind, metric, plan)
Groups = dict[tuple[str, str, str, tuple[tuple[str, int], ...]], list[dict[str, Any]]]


def measurements(roots: list[Path]) -> list[dict[str, Any]]:
    """Every timed workload result under `roots`, once each (task, measured_at), with the gold
    total measured: a result whose gold failed says nothing about reproducibility."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for root in roots:
        for f in sorted(root.rglob(TaskFile.WORKLOAD_RESULT.value)):
            try:
                r = json.loads(f.read_text())
            except (OSError, ValueError) as e:
                print(f"skipped {f}: {e}", file=sys.stderr)
                continue
            if not isinstance(r, dict) or not r.get("gold_total_ms") or not r.get("measured_at"):
                continue
            seen.setdefault((str(r.get("task_id")), str(r["measured_at"])), r)
    return list(seen.values())


def workload_key(r: dict[str, Any]) -> tuple[str, str, str, tuple[tuple[str, int], ...]]:
    """Which measurements compare: one task, one machine kind, one metric (a cold wall time
    measured after the harness's warm-up kernel, `runtime_warmed`, is another metric than one
    measured before it), one plan."""
    gpu = gpu_name(str(r.get("environment", ""))) or "unknown machine"
    sizes = tuple((str(c.get("label")), int(c.get("bytes_moved") or 0)) for c in r.get("calls", []))
    metric = str(r.get("metric")) + (" (runtime warmed)" if r.get("runtime_warmed") else "")
    return str(r.get("task_id")), gpu, metric, sizes


def spread(totals: list[float]) -> float:
    """max / min - 1 of the gold's totals."""
    return max(totals) / min(totals) - 1.0


def gold_spread(runs: list[dict[str, Any]]) -> float:
    """`spread` of the runs' gold totals."""
    return spread([float(r["gold_total_ms"]) for r in runs])


def within(s: float, tolerance: float) -> bool:
    """Whether a spread is within the agreement bound (rounded: 2.2 / 2.0 - 1 is
    0.10000000000000009)."""
    return round(s, 6) <= tolerance


def days_of(runs: list[dict[str, Any]]) -> set[str]:
    """The dates the runs were measured on."""
    return {str(r["measured_at"])[:10] for r in runs}


def _speedups(runs: list[dict[str, Any]]) -> str:
    """Each run's gold speed-up over the base and their spread: what the gate judges, and what
    a cold wall time can reproduce across hosts when its totals (compilation: host CPU time) do
    not (Megatron-LM #5608: 1.26x and 1.28x, gold totals 22.5% apart); '-' without one."""
    ups = [float(r["speedup"]) for r in runs if r.get("speedup")]
    if len(ups) < len(runs):
        return "-"
    return f"{', '.join(f'{u:.2f}x' for u in ups)} ({100 * spread(ups):.1f}%)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="folders (or archives) of GPU calls")
    ap.add_argument("--tolerance", type=float, default=0.03, help="agreement bound (0.03: 3%%)")
    ap.add_argument(
        "--tasks", type=Path, help="task directories: count their verified optimizations"
    )
    args = ap.parse_args(argv)
    for p in [*args.runs, *([args.tasks] if args.tasks else [])]:
        if not p.exists():
            ap.error(f"{p}: no such folder or archive")
    groups: Groups = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="tpb-agreement-") as tmp:
        for r in measurements(unpacked_roots(args.runs, Path(tmp))):
            groups[workload_key(r)].append(r)
    print("| task | machine | metric | runs (date: gold total ms) | spread | agree "
          "| speed-ups (spread) |\n|---|---|---|---|---|---|---|")  # fmt: skip
    days_agree = days_all = day_agree = day_all = 0
    for (task, gpu, metric, _), runs in sorted(groups.items()):
        if len(runs) < 2:
            continue
        runs.sort(key=lambda r: str(r["measured_at"]))
        s = gold_spread(runs)
        ok = within(s, args.tolerance)
        if len(days_of(runs)) > 1:
            days_all += 1
            days_agree += ok
        else:
            day_all += 1
            day_agree += ok
        listed = ", ".join(f"{str(r['measured_at'])[:10]}: {float(r['gold_total_ms']):.4g}"
                           for r in runs)  # fmt: skip
        print(f"| {task} | {gpu} | {metric} | {listed} | {100 * s:.1f}% | {'yes' if ok else 'no'} "
              f"| {_speedups(runs)} |")  # fmt: skip
    tol = f"{100 * args.tolerance:g}%"
    print(f"\nmeasured on two or more days (one machine kind, one plan): {days_all} tasks, "
          f"{days_agree} with gold totals within {tol}")  # fmt: skip
    print(f"repeated on one day only: {day_all} tasks, {day_agree} within {tol}")
    _with_predictions([r for runs in groups.values() for r in runs])
    if args.tasks:
        _verified_optimizations(verified_optimizations(args.tasks), groups, args.tolerance)
    return 0


def verified_optimizations(tasks: Path) -> list[str]:
    """The ids of the verified optimization tasks under `tasks`."""
    found = []
    for t in task_dirs(tasks):
        task = t.load_task()
        if (task.verification.status is VerificationStatus.VERIFIED
                and task.task_type.type is TaskType.OPTIMIZATION):  # fmt: skip
            found.append(t.id)
    return sorted(found)


def _verified_optimizations(ids: list[str], groups: Groups, tolerance: float) -> None:
    """Issue 10's agreement count over `ids`: a task agrees when some plan of it (machine kind,
    metric, sizes) was measured on two or more days and every such plan's gold totals are
    within `tolerance`; the others are named with why."""
    agree, short = [], []
    for task in ids:
        mine = [runs for k, runs in groups.items() if k[0] == task]
        days = [runs for runs in mine if len(days_of(runs)) > 1]
        worst = max((gold_spread(runs) for runs in days), default=0.0)
        if days and within(worst, tolerance):
            agree.append(task)
        elif days:
            short.append(f"{task}: {100 * worst:.1f}% apart")
        else:
            short.append(f"{task}: {sum(map(len, mine))} run(s), no plan measured on two days")
    print(f"\nverified optimization tasks: {len(ids)}; measured on two or more days (one machine "
          f"kind, one plan) within {100 * tolerance:g}%: {len(agree)}")  # fmt: skip
    for line in short:
        print(f"  not (yet): {line}")


def _with_predictions(results: list[dict[str, Any]]) -> None:
    """A table of the measurements that timed a prediction: prediction total / base total."""
    timed = [r for r in results if r.get("prediction_total_ms") and r.get("base_total_ms")]
    if not timed:
        return
    print("\n| task | machine | measured | base ms | gold ms | prediction ms | prediction / base "
          "|\n|---|---|---|---|---|---|---|")  # fmt: skip
    for r in sorted(timed, key=lambda r: (str(r.get("task_id")), str(r["measured_at"]))):
        base, pred = float(r["base_total_ms"]), float(r["prediction_total_ms"])
        print(
            f"| {r.get('task_id')} | {workload_key(r)[1]} | {str(r['measured_at'])[:16]} "
            f"| {base:.4g} | {float(r['gold_total_ms']):.4g} | {pred:.4g} | {pred / base:.3f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
