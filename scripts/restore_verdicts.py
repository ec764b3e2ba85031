"""Carry the GPU's verdicts of a built dataset back into freshly curated task directories.

A regenerated checkout (or a new machine) re-curates the tasks from git history, but the gate's
verdicts (the node ids chosen on the GPU, fail-to-pass / pass-to-pass, `verification`) live in
the released dataset. This puts them back into each task.json whose gold, test and setup
patches are byte-identical to the released row (a verdict is the setup state's), so the next GPU
session resumes (scores, reruns) instead of starting over. A task's workload and its
measurement (the release's newest `workloads` file) come back with its verdict, as
workload.json and workload_result.json, where the directory has none: without them `eval
rejudge` took Liger-Kernel #1187's verified optimization back to "no workload measured yet".

    python scripts/restore_verdicts.py release/triton-pr-bench --tasks tasks

Reads: the dataset folder's rows and workloads as it shows them now
(`benchmark.build.current_rows`: a task verified after its release carries that verdict) and
`tasks/<id>/`. Writes: task.json of the matched tasks (through `TaskDir.record_verification`),
and their workload files where missing. A row whose task
directory is missing, or whose patches differ (the curation changed since), is named and
skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from benchmark.schema import split_setup
from core.files import write_json
from core.records import from_json
from curation.model import TestSelection, Verification
from curation.taskdir import TaskDir, TaskFile


def rows(folder: Path) -> list[dict]:
    """The rows as the folder shows them now: a built folder's released rows with the verdicts
    its default-config files gave since (an older verdict must not come back over a newer
    one); a folder without a manifest, every parquet file under data/."""
    if (folder / "manifest.json").is_file():
        from benchmark.build import current_rows

        return list(current_rows(folder).values())
    import pyarrow.parquet as pq

    out: list[dict] = []
    for f in sorted((folder / "data").glob("*.parquet")):
        out += pq.read_table(f).to_pylist()
    return out


def workloads(folder: Path) -> dict[str, dict]:
    """The newest `workloads` file's rows by task id (none in a folder without one)."""
    if not (folder / "manifest.json").is_file():
        return {}
    import pyarrow.parquet as pq

    from benchmark.card import latest_side

    entry = latest_side(json.loads((folder / "manifest.json").read_text()), "workloads")
    if entry is None:
        return {}
    return {r["task_id"]: r for r in pq.read_table(folder / "data" / entry["file"]).to_pylist()}


def restore_workload(tdir: TaskDir, row: dict) -> list[str]:
    """workload.json (the plan as released) and workload_result.json (its measurement), each
    where the directory has none; the files written."""
    plan = {"task_id": tdir.id, "metric": row["metric"], "metric_evidence": row["metric_evidence"],
            "calls": json.loads(row["calls"])}  # fmt: skip
    result = json.loads(row["result"]) if row.get("result") else None
    written = []
    for name, body in ((TaskFile.WORKLOAD, plan), (TaskFile.WORKLOAD_RESULT, result)):
        if body and not tdir.has(name):
            write_json(tdir.path(name), body, sort_keys=True)
            written.append(str(name))
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, help="a folder `python -m benchmark build` wrote")
    ap.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    args = ap.parse_args(argv)
    restored = skipped = with_workload = 0
    plans = workloads(args.dataset)
    for row in rows(args.dataset):
        if not row.get("verification"):
            continue
        tdir = TaskDir(args.tasks / row["task_id"])
        if not tdir.path(TaskFile.TASK).is_file():
            print(f"{row['task_id']}: no task directory under {args.tasks}, skipped")
            skipped += 1
            continue
        same = all(
            (tdir.read_bytes(name) or b"").decode() == (row.get(col) or "")
            for name, col in (
                (TaskFile.GOLD_PATCH, "gold_patch"),
                (TaskFile.TEST_PATCH, "test_patch"),
                (TaskFile.SETUP_PATCH, "setup_patch"),  # the verdict is the setup state's
            )
        )
        if not same:
            print(f"{row['task_id']}: its patches differ from the released row, skipped")
            skipped += 1
            continue
        task = tdir.load_task()
        tests = from_json(TestSelection, row["tests"], f"{args.dataset}:{row['task_id']}")
        verdict = from_json(Verification, row["verification"], f"{args.dataset}:{row['task_id']}")
        here = task.verification.checked_at
        if here is not None and (verdict.checked_at is None or here > verdict.checked_at):
            # a GPU call merged since the release (restoring twice on 2026-12-04 took
            # flash-linear-attention #1148 back from 2026-12-02's verdict to 2026-12-01's)
            print(f"{row['task_id']}: the directory has a newer verdict ({here}), skipped")
            skipped += 1
            continue
        # the row names the setup patch's hash in its environment; the patches are identical
        env, _ = split_setup(verdict.environment)
        verdict = replace(verdict, environment=env, setup=tdir.setup_digest())
        tdir.store(TaskFile.TASK, replace(task, tests=tests, verification=verdict))
        restored += 1
        if row["task_id"] in plans and restore_workload(tdir, plans[row["task_id"]]):
            with_workload += 1
    print(
        f"{restored} verdicts restored ({with_workload} with their workload), "
        f"{skipped} rows skipped"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
