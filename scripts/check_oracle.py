"""Check the gold oracle on CPU: the gold targets, scored as a prediction, must be the gold.

    python scripts/check_oracle.py tasks --repo-path liger-kernel=PATH [--repo-path ...] \\
        [--work work] [--task-file ids.txt] [--jobs 6] [--out report.json]

For each task, `eval.oracle.oracle_record(..., "gold", ...)` is spliced into the setup state
(`prepare(..., Variant.PREDICTION, record)`) and every file the gold patch touches is compared
byte for byte with the gold tree (`prepare(..., Variant.GOLD)`). A file that differs only by
the module-level statements the setup state keeps before a base target and the gold deleted
(`curation.targets.without_kept`, e.g. a constant the base kernel reads) is `carried`: a
prediction may use them, so the splice leaves them. Any other differing file is a mismatch
(named, with the first lines of its diff); an exception while building a tree (an EvalError, a
SpliceError) is an error, with its message. A task whose framework has no `--repo-path` is
skipped. A record that rebuilds the gold but that the scorer's static checks would not credit
(`eval.score.prediction_flags` with the gold targets' own sources, `eval.targets.gold_sources`:
no Triton kernel, a forbidden API, a memoised output) is `flagged`, with the flags. Files
whose blobs the repository lacks (assets a mirror snapshot left out) are left
out of the trees, as `eval bundle` leaves them out, and named in the report.

Reads: task directories and the frameworks' repositories. Writes: scratch trees (deleted as it
goes) and, with --out, a JSON report. Exits 0 only when every selected task was checked and is
identical or carried.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.errors import one_line
from curation.targets import file_targets, module_names, split_patch, without_kept
from curation.taskdir import TaskDir, TaskFile
from eval.errors import EvalError
from eval.model import Variant
from eval.oracle import oracle_record
from eval.score import prediction_flags
from eval.session import EvalSettings, select_tasks
from eval.targets import gold_sources
from eval.workspace import SourceStore, prepare
from mining.git import GitRepo
from mining.store import repo_paths

IDENTICAL, MISMATCH, ERROR, SKIPPED = "identical", "mismatch", "error", "skipped"
# the gold tree but for module-level definitions the setup state keeps for its base targets
# (`curation.targets.keep_base_globals`) and the gold deleted: a prediction may use them, so
# the splice leaves them; they bind nothing the gold binds (flash-linear-attention
# #eeee0ee84d `inv_ln2`, #3cb53c2adf the kernel `chunk_gsa_fwd_kernel_h`)
CARRIED = "carried"
# identical or carried, but the scorer's static checks (`eval.score.prediction_flags` without a
# run: no_triton_kernel, forbidden_api, memoised_output) would not credit it: the gold would
# never complete (2026-12-08: #e582c2883f's wrapper `breakpoint()`, #384's launch of a kernel
# named `..._cache`, both found only after GPU time was spent on them)
FLAGGED = "flagged"
HINT_LINES = 3


_stores: dict[str, SourceStore] = {}  # one per repository and process


def _store(repo: Path) -> SourceStore:
    key = str(repo)
    if key not in _stores:
        _stores[key] = SourceStore(GitRepo(repo))
    return _stores[key]


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def diff_hint(gold: bytes | None, pred: bytes | None, lines: int = HINT_LINES) -> list[str]:
    """The first `lines` changed lines (gold `-`, prediction `+`) after the first hunk's
    header, which names the line."""
    if gold is None or pred is None:
        return ["(missing from the gold tree)" if gold is None else "(missing from the prediction)"]
    a = gold.decode(errors="replace").splitlines()
    b = pred.decode(errors="replace").splitlines()
    body = [line for line in difflib.unified_diff(a, b, "gold", "pred", n=0, lineterm="")][2:]
    return body[: lines + 1]


def carried_names(gold: bytes | None, pred: bytes | None, targets: set[str]) -> list[str] | None:
    """The names the prediction's file binds beyond the gold's when the whole difference is
    what `keep_base_globals` put before the base `targets` (`curation.targets.without_kept`,
    the rule curation's own round-trip check applies); None otherwise."""
    if gold is None or pred is None or without_kept(pred, gold, targets) != gold:
        return None
    return sorted((module_names(pred) or frozenset()) - (module_names(gold) or frozenset()))


def compare(gold: Path, pred: Path, files: list[str]) -> list[str]:
    """Those of `files` whose bytes differ between the two trees (or that one tree lacks)."""
    return [rel for rel in files if _read(gold / rel) != _read(pred / rel)]


def check_task(
    tdir: TaskDir, store: SourceStore, scratch: Path, record: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Build the gold tree and the setup state with `record` (the gold oracle's by default)
    spliced in, under `scratch`, and compare the files of the gold patch; a result row."""
    task = tdir.load_task()
    row: dict[str, Any] = {"task_id": tdir.id, "framework": task.framework}
    store.absent.pop(task.base_commit, None)
    stage = "gold oracle record"
    try:
        if record is None:
            record = oracle_record(tdir, store, "gold", scratch / "oracle")
        stage = "gold tree"
        gold = prepare(task, tdir, store, scratch / "gold", Variant.GOLD)
        stage = "prediction tree"
        pred = prepare(task, tdir, store, scratch / "pred", Variant.PREDICTION, record)
    except Exception as exc:  # every failure to build a tree is a finding
        return {**row, "status": ERROR, "stage": stage, "message": one_line(exc)}
    absent = getattr(store, "absent", {}).get(task.base_commit)
    if absent:
        row["absent_left_out"] = absent
    patch = tdir.read_bytes(TaskFile.GOLD_PATCH) or b""
    files = list(dict.fromkeys(path for path, _ in split_patch(patch)))
    row["files"] = len(files)
    flags = prediction_flags(task, record, None, (), gold_sources(task, tdir))
    if flags:
        row["flags"] = flags
    differing = compare(gold, pred, files)
    if not differing:
        return {**row, "status": FLAGGED if flags else IDENTICAL}
    carried = {
        rel: carried_names(_read(gold / rel), _read(pred / rel), file_targets(task.targets, rel))
        for rel in differing
    }
    if all(names is not None for names in carried.values()):
        return {**row, "status": FLAGGED if flags else CARRIED, "carried": carried}
    differing = [rel for rel in differing if carried[rel] is None]
    rel = differing[0]
    hint = diff_hint(_read(gold / rel), _read(pred / rel))
    return {**row, "status": MISMATCH, "file": rel, "differing": differing, "diff": hint}


def _worker(task_path: str, repo_path: str) -> dict[str, Any]:
    """One task in a pool process, in its own scratch directory (deleted after)."""
    tdir = TaskDir(Path(task_path))
    try:
        with tempfile.TemporaryDirectory(prefix="tpb-check-oracle-") as tmp:
            return check_task(tdir, _store(Path(repo_path)), Path(tmp))
    except Exception as exc:
        return {"task_id": tdir.id, "status": ERROR, "stage": "setup", "message": one_line(exc)}


def _line(r: dict[str, Any]) -> str:
    if r["status"] == MISMATCH:
        more = f" (+{len(r['differing']) - 1} more files)" if len(r["differing"]) > 1 else ""
        hint = "".join(f"\n    {h}" for h in r["diff"])
        return f"{r['task_id']}: mismatch in {r['file']}{more}{hint}"
    if r["status"] == ERROR:
        return f"{r['task_id']}: error ({r.get('stage')}): {r['message']}"
    if r["status"] == SKIPPED:
        return f"{r['task_id']}: skipped: {r['message']}"
    if r["status"] == FLAGGED:
        return f"{r['task_id']}: the gold, but the scorer would flag it: {', '.join(r['flags'])}"
    if r["status"] == CARRIED:
        names = "; ".join(f"{f}: {', '.join(n)}" for f, n in r["carried"].items())
        return f"{r['task_id']}: the gold but for the base's carried {names}"
    return f"{r['task_id']}: identical"


def summarize(results: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """framework -> {checked, identical, carried, mismatch, error, skipped, flagged}; "all"
    sums them."""
    counts: dict[str, Counter[str]] = {}
    for r in results:
        fw = r.get("framework") or "?"
        for key in (fw, "all"):
            c = counts.setdefault(key, Counter())
            c[r["status"]] += 1
            c["checked"] += r["status"] != SKIPPED
    cols = ("checked", IDENTICAL, CARRIED, MISMATCH, ERROR, SKIPPED, FLAGGED)
    order = sorted(counts, key=lambda fw: (fw == "all", fw))
    return {fw: {k: counts[fw][k] for k in cols} for fw in order}


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import Progress

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tasks", type=Path, help="folder of task directories")
    ap.add_argument(
        "--repo-path", action="append", default=[], metavar="NAME=PATH",
        help="repository of the framework NAME (task.json's `framework`; repeatable)",
    )  # fmt: skip
    ap.add_argument("--work", type=Path, default=Path("work"), help="mining work dir (repo paths)")
    ap.add_argument("--task-file", type=Path, help="only the task ids this file lists, one a line")
    ap.add_argument("--jobs", type=int, default=1, help="tasks checked at once (processes)")
    ap.add_argument("--out", type=Path, help="write the results and counts here as JSON")
    args = ap.parse_args(argv)
    try:
        repos = repo_paths(args.work, args.repo_path)
        tdirs = select_tasks(EvalSettings(tasks=args.tasks, task_file=args.task_file))
    except (ValueError, OSError, EvalError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    results: list[dict[str, Any]] = []
    todo: list[tuple[TaskDir, Path]] = []
    for tdir in tdirs:
        try:
            framework = tdir.load_task().framework
        except Exception as exc:
            results.append({"task_id": tdir.id, "status": ERROR, "stage": "task.json",
                            "message": one_line(exc)})  # fmt: skip
            continue
        if framework not in repos:
            results.append({"task_id": tdir.id, "framework": framework, "status": SKIPPED,
                            "message": f"no --repo-path for {framework}"})  # fmt: skip
            continue
        todo.append((tdir, repos[framework]))

    console = Console(stderr=True)
    with Progress(console=console) as bar:
        job = bar.add_task("checking the gold oracle", total=len(todo))

        def done(r: dict[str, Any]) -> None:
            results.append(r)
            if r["status"] not in (IDENTICAL, CARRIED):
                bar.console.print(_line(r), markup=False, highlight=False)
            bar.advance(job)

        if args.jobs <= 1:
            for tdir, repo in todo:
                done(_worker(str(tdir.root), str(repo)))
        else:
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                futures = {pool.submit(_worker, str(t.root), str(r)): t for t, r in todo}
                for fut in as_completed(futures):
                    try:
                        done(fut.result())
                    except Exception as exc:  # a worker that died
                        done({"task_id": futures[fut].id, "status": ERROR, "stage": "pool",
                              "message": one_line(exc)})  # fmt: skip

    results.sort(key=lambda r: r["task_id"])
    counts = summarize(results)
    findings = [r for r in results if r["status"] not in (IDENTICAL, CARRIED, SKIPPED)]
    carried = [r for r in results if r["status"] == CARRIED]
    skipped = [r for r in results if r["status"] == SKIPPED]
    print("framework: checked / identical / carried / mismatch / error / skipped / flagged")
    for fw, c in counts.items():
        print(f"  {fw}: " + " / ".join(str(n) for n in c.values()))
    for r in carried + findings:
        print(_line(r))
    if skipped:
        names = sorted({str(r.get("framework")) for r in skipped})
        print(f"{len(skipped)} skipped (no --repo-path for {', '.join(names)})")
    if args.out is not None:
        args.out.write_text(json.dumps({"counts": counts, "results": results}, indent=1) + "\n")
    return 0 if results and all(r["status"] in (IDENTICAL, CARRIED) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
