"""`python -m eval {reference,score,bundle}`: the eval stage's command line."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from eval.errors import EvalError


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
    p.add_argument(
        "--sandbox-memory", type=float, metavar="GIB",
        help="memory limit per sandboxed process (default: half the RAM, at most 64 GiB)",
    )  # fmt: skip
    p.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE",
        help="set in every test run's environment (repeatable; the sandbox passes no other "
        "variable of yours beyond its allowlist)",
    )  # fmt: skip
    p.add_argument(
        "--triton-cache", type=Path,
        help="Triton caches of the runs (default ~/.cache/triton-pr-bench/sandbox)",
    )  # fmt: skip
    p.add_argument(
        "--sandbox-full-dev", action="store_true",
        help="show the host's whole /dev in the sandbox (default: a minimal /dev + GPU nodes)",
    )  # fmt: skip


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
    ref.add_argument(
        "--no-sandbox", action="store_true",
        help="run the trusted base and gold kernels without bubblewrap (recorded in each run)",
    )  # fmt: skip
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


def _stores(args: argparse.Namespace) -> dict[str, Any]:
    from eval.workspace import SourceStore
    from mining.git import GitRepo
    from mining.store import repo_paths

    try:
        paths = repo_paths(args.work, args.repo_path)
    except ValueError as exc:
        raise EvalError(str(exc)) from None
    return {name: SourceStore(GitRepo(p)) for name, p in paths.items()}


def _tdirs(args: argparse.Namespace) -> list[Any]:
    from curation.model import CurationStatus
    from curation.taskdir import task_dirs

    out = [t for t in task_dirs(args.tasks) if not args.task or t.id in args.task]
    if args.only_approved:
        out = [t for t in out if t.load_curation().status is CurationStatus.APPROVED]
    if not out:
        raise EvalError(f"no task directories under {args.tasks}")
    return out


def _backend(args: argparse.Namespace, scratch: Path) -> Any:
    from eval.backends import DockerBackend, LocalBackend, RunSettings
    from eval.sandbox import GIB, SandboxPolicy

    extra_env = dict(kv.split("=", 1) for kv in args.env if "=" in kv)
    if len(extra_env) != len(args.env):
        raise EvalError("--env takes NAME=VALUE")
    policy = SandboxPolicy(full_dev=args.sandbox_full_dev)
    if args.sandbox_memory:
        policy = replace(policy, memory_bytes=int(args.sandbox_memory * GIB))
    settings = RunSettings(
        timeout_s=args.timeout,
        max_test_files=args.max_test_files,
        isolated_timing=not args.no_isolated_timing,
        extra_env=extra_env,
        sandbox=None if getattr(args, "no_sandbox", False) else policy,
        cache_root=args.triton_cache,
    )
    stores = _stores(args)
    if args.backend == "docker":
        return DockerBackend(stores, scratch, settings)
    return LocalBackend(stores, scratch, settings)


def cmd_reference(args: argparse.Namespace) -> int:
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from rich.console import Console
    from rich.progress import Progress

    from eval.reference import run_reference

    tdirs = [t for t in _tdirs(args) if args.force or not (t.root / "reference.json").exists()]
    rows = []
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        backend = _backend(args, Path(tmp))
        with Progress(console=Console(stderr=True)) as bar:
            job = bar.add_task("reference runs", total=len(tdirs))
            # Tasks run side by side (each run is its own pytest process); the runs of one task
            # stay in order so base and gold alternate.
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                futures = {
                    pool.submit(run_reference, t.load_task(), t, backend, args.out, args.runs): t
                    for t in tdirs
                }
                for fut in as_completed(futures):
                    tdir = futures[fut]
                    try:
                        ref = fut.result()
                    except EvalError as exc:
                        bar.console.print(f"{tdir.id}: not run: {exc}")
                        bar.advance(job)
                        continue
                    rows.append(ref)
                    bar.console.print(
                        f"{tdir.id}: valid={ref.valid} base {ref.base.passed_runs}/"
                        f"{ref.base.runs} gold {ref.gold.passed_runs}/{ref.gold.runs} "
                        f"({ref.validity_note})"
                    )
                    bar.advance(job)
    print(f"{len(rows)} references written; {sum(r.valid for r in rows)} valid")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from eval.score import load_predictions, score_all

    tdirs = _tdirs(args)
    preds = load_predictions(args.predictions)
    unknown = sorted(set(preds) - {t.id for t in tdirs})
    if unknown:
        print(f"note: {len(unknown)} predictions name no selected task: {unknown[:5]}")
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        backend = _backend(args, Path(tmp))
        with Progress(console=Console(stderr=True)) as bar:
            job = bar.add_task("scoring", total=len(tdirs))
            score_all(
                tdirs, preds, backend, args.out,
                runs=args.runs, resume=not args.fresh, progress=lambda: bar.advance(job),
                jobs=args.jobs,
            )  # fmt: skip
    print((args.out / "report.md").read_text())
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
    from curation.taskdir import task_dirs, write_atomic
    from eval.model import Reference
    from eval.reference import rejudge

    n = changed = 0
    for tdir in task_dirs(args.tasks):
        path = tdir.root / "reference.json"
        if not path.exists():
            continue
        old = Reference.from_dict(json.loads(path.read_text()))
        new = rejudge(tdir.load_task(), old)
        n += 1
        if new != old:
            changed += 1
            write_atomic(path, json.dumps(new.to_dict(), indent=1))
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
    except EvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
