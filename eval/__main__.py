"""`python -m eval {reference,score,bundle}`: the eval stage's command line."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from core.errors import CoreError
from core.records import from_args
from curation.errors import CurationError
from eval.errors import EvalError
from mining.errors import MiningError


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    p.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    p.add_argument(
        "--repo-path", action="append", default=[], metavar="NAME=PATH",
        help="repository (clone, mirror or `eval bundle` output) of a framework (repeatable)",
    )  # fmt: skip
    p.add_argument("--work", type=Path, default=Path("work"), help="mining work dir (repo paths)")
    p.add_argument("--backend", choices=("local", "docker"), default="local")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per test run")
    p.add_argument("--max-test-files", type=int, default=4, help="test files per run (PR's first)")
    p.add_argument("--no-isolated-timing", action="store_true", help="skip do_bench replays")
    p.add_argument("--scratch", type=Path, help="where source trees are prepared")
    p.add_argument("--only-approved", action="store_true", help="skip tasks not approved")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m eval", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    ref = sub.add_parser(
        "reference",
        help="run base and gold kernels N times each, write reference.json per task",
        description="Reference runs: the task's tests with the base and the gold kernel, "
        "alternating, --runs times each; fail-to-pass / pass-to-pass, flaky tests, validity, "
        "end-to-end and kernel timings, GPU/driver/CUDA/torch/triton versions.",
    )
    _common(ref)
    ref.add_argument("--runs", type=int, default=3, help="runs per variant (default 3)")
    ref.add_argument("--out", type=Path, default=Path("runs/reference"), help="run logs")
    ref.add_argument("--force", action="store_true", help="rerun tasks that have reference.json")
    ref.add_argument(
        "--jobs", type=int, default=1, help="tasks run side by side (default 1: clean timings)"
    )
    sc = sub.add_parser(
        "score",
        help="score predictions.jsonl",
        description="Run every task with its predicted kernel (and the gold kernel, alternating, "
        "for timing); task completion rate, performance match ratio, end-to-end speedup, call "
        "and execution accuracy. Resumable: finished tasks are not rerun.",
    )
    _common(sc)
    sc.add_argument("predictions", type=Path, help="predictions.jsonl")
    sc.add_argument("--runs", type=int, default=1, help="runs per task (default 1)")
    sc.add_argument("--out", type=Path, required=True, help="run directory (results, logs)")
    sc.add_argument("--fresh", action="store_true", help="ignore results of an earlier run")
    sc.add_argument("--jobs", type=int, default=1, help="tasks scored side by side")
    rj = sub.add_parser(
        "rejudge",
        help="recompute fail-to-pass / pass-to-pass / validity of reference.json from its runs",
    )
    rj.add_argument("--tasks", type=Path, default=Path("tasks"))
    bd = sub.add_parser(
        "bundle",
        help="a slim git repo holding only the tasks' base trees (to carry to a GPU machine)",
    )
    bd.add_argument("--tasks", type=Path, default=Path("tasks"))
    bd.add_argument("--task", action="append", default=[])
    bd.add_argument("--repo-path", type=Path, required=True, help="the framework's repository")
    bd.add_argument("--out", type=Path, required=True, help="bare repository to create")
    bd.add_argument(
        "--path", action="append", default=[], help="only these top-level paths (repeatable)"
    )
    return p


def cmd_reference(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from eval.session import EvalSettings, run_references

    settings = from_args(EvalSettings, args)
    with Progress(console=Console(stderr=True)) as bar:
        job = bar.add_task("reference runs", total=None)

        def done(tdir: Any, ref: Any, error: str) -> None:
            if ref is None:
                bar.console.print(f"{tdir.id}: not run: {error}")
            else:
                bar.console.print(
                    f"{tdir.id}: valid={ref.valid} base {ref.base.passed_runs}/"
                    f"{ref.base.runs} gold {ref.gold.passed_runs}/{ref.gold.runs} "
                    f"({ref.validity_note})"
                )
            bar.advance(job)

        rows, errors = run_references(settings, done)
    print(f"{len(rows)} references written; {sum(r.valid for r in rows)} valid")
    if errors:
        print(f"{len(errors)} tasks not run (see above)", file=sys.stderr)
    return 1 if errors and not rows else 0


def cmd_score(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from eval.score import load_predictions, ran, score_all
    from eval.session import EvalSettings, make_backend, select_tasks

    settings = from_args(EvalSettings, args)
    tdirs = select_tasks(settings)
    preds = load_predictions(args.predictions)
    unknown = sorted(set(preds) - {t.id for t in tdirs})
    if unknown:
        print(f"note: {len(unknown)} predictions name no selected task: {unknown[:5]}")
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        backend = make_backend(settings, Path(tmp))
        with Progress(console=Console(stderr=True)) as bar:
            job = bar.add_task("scoring", total=len(tdirs))
            scores, _ = score_all(
                tdirs, preds, backend, args.out,
                runs=args.runs, resume=not args.fresh, progress=lambda: bar.advance(job),
                jobs=args.jobs,
            )  # fmt: skip
    print((args.out / "report.md").read_text())
    for s in scores:
        if s.has_prediction and not ran(s):
            print(f"{s.task_id}: not run: {s.detail}", file=sys.stderr)
    if not any(ran(s) for s in scores):
        tried = [s for s in scores if s.has_prediction]
        why = (
            f"none of the {len(tried)} predictions for selected tasks could be run "
            f"(first: {tried[0].task_id}: {tried[0].detail})"
            if tried
            else f"no prediction in {args.predictions} names one of the {len(scores)} selected "
            "tasks"
        )
        print(f"error: nothing ran: {why}", file=sys.stderr)
        return 1
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from curation.taskdir import task_dirs
    from mining.git import GitRepo, commit_snapshot, gc, init_bare

    src = GitRepo(args.repo_path)
    bases = sorted({t.load_task().base_commit for t in task_dirs(args.tasks)
                    if not args.task or t.id in args.task})  # fmt: skip
    out = init_bare(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        for sha in bases:
            tree = Path(tmp) / sha
            src.archive(sha, tree)
            for child in tree.iterdir():
                if args.path and child.name not in args.path:
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            commit_snapshot(out, tree, f"refs/bases/{sha}", f"base tree of {sha}")
            shutil.rmtree(tree)
    gc(out)
    print(f"{len(bases)} base trees in {args.out}")
    return 0


def cmd_rejudge(args: argparse.Namespace) -> int:
    from curation.taskdir import TaskFile, task_dirs
    from eval.model import Reference
    from eval.reference import rejudge

    n = changed = 0
    for tdir in task_dirs(args.tasks):
        old = tdir.load(TaskFile.REFERENCE, Reference)
        if old is None:
            continue
        new = rejudge(tdir.load_task(), old)
        n += 1
        if new != old:
            changed += 1
            tdir.store(TaskFile.REFERENCE, new)
            print(f"{tdir.id}: valid {old.valid} -> {new.valid} ({new.validity_note})")
    print(f"{n} references rejudged, {changed} changed")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        commands = {
            "reference": cmd_reference,
            "score": cmd_score,
            "bundle": cmd_bundle,
            "rejudge": cmd_rejudge,
        }
        return commands[args.cmd](args)
    except (EvalError, CoreError, CurationError, MiningError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
