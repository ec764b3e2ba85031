"""Tables of the verification gate's verdicts over task directories (for docs/verification.md).

Usage: python scripts/verification_report.py TASKS_DIR [--only-run]
Reads every task.json (and reference.json when present) under TASKS_DIR; prints markdown:
verdicts by repository and status, by task type, the reasons of the unverified tasks grouped by
kind, the verified tasks with their fail-to-pass / pass-to-pass counts, and the wall time of
the runs. `--only-run` keeps the tasks that have a reference run (reference.json).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curation.taskdir import TaskFile, task_dirs
from eval.gate import reason_kind
from eval.model import Reference
from eval.verdict import PHASES

STATUSES = ("verified", "unverified", "out_of_scope")


def short_kind(reason: str) -> str:
    head = reason_kind(reason)
    return head if len(head) < 70 else head[:67] + "..."


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", type=Path)
    p.add_argument("--only-run", action="store_true")
    args = p.parse_args(argv)
    rows = []
    for tdir in task_dirs(args.tasks):
        task = tdir.load_task()
        # a verdict reached on another setup state than setup.patch holds counts as unverified
        task = replace(task, verification=tdir.current_verification(task))
        ref = tdir.load(TaskFile.REFERENCE, Reference)
        if args.only_run and ref is None:
            continue
        rows.append((task, ref))
    by_repo: dict[str, Counter[str]] = defaultdict(Counter)
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: Counter[tuple[str, str]] = Counter()
    for task, _ in rows:
        status = str(task.verification.status)
        by_repo[task.repo or task.framework][status] += 1
        by_type[str(task.task_type.type)][status] += 1
        if status != "verified":
            reasons[(task.framework, short_kind(task.verification.reason))] += 1
    for title, table in (("repository", by_repo), ("task type", by_type)):
        print(f"| {title} | " + " | ".join(STATUSES) + " | total |")
        print("|---|" + "---|" * (len(STATUSES) + 1))
        for key, c in sorted(table.items()):
            print(f"| {key} | " + " | ".join(str(c[s]) for s in STATUSES) + f" | {c.total()} |")
        total = Counter[str]()
        for c in table.values():
            total.update(c)
        print("| all | " + " | ".join(str(total[s]) for s in STATUSES) + f" | {total.total()} |")
        print()
    print("| framework | why not verified | tasks |\n|---|---|---|")
    for (fw, why), n in sorted(reasons.items(), key=lambda kv: (kv[0][0], -kv[1])):
        print(f"| {fw} | {why} | {n} |")
    print()
    print("| verified task | type | node ids | fail-to-pass | pass-to-pass | median run (s) |")
    print("|---|---|---|---|---|---|")
    walls = []
    phased: list[dict[str, float]] = []
    for task, ref in rows:
        if ref is not None:
            walls += [r.wall_s for r in ref.runs]
            phased += [r.phases for r in ref.runs if r.phases]
        if str(task.verification.status) != "verified" or ref is None:
            continue
        med = statistics.median(r.wall_s for r in ref.runs) if ref.runs else 0.0
        print(f"| `{task.task_id}` | {task.task_type.type} | {len(ref.node_ids)} | "
              f"{len(ref.fail_to_pass)} | {len(ref.pass_to_pass)} | {med:.1f} |")  # fmt: skip
    if walls:
        print(f"\n{len(walls)} base/gold runs, median {statistics.median(walls):.1f} s per run.")
    if phased:
        # where a run's time goes (eval.verdict.run_phases; recorded since 2026-12-03)
        # each phase over the runs that have it (a run has `exit` or `unfinished`, not both)
        print(f"\nMedian seconds per phase over the {len(phased)} runs that recorded them:\n")
        print("| phase | runs | median (s) |\n|---|---|---|")
        for k in PHASES:
            spent = [p[k] for p in phased if k in p]
            if spent:
                print(f"| {k} | {len(spent)} | {statistics.median(spent):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
