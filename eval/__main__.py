"""`python -m eval {reference,score,bundle}`: the eval stage's command line."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import CoreError
from core.records import from_args
from curation.errors import CurationError
from eval.errors import EvalError
from mining.errors import MiningError

if TYPE_CHECKING:
    from curation.model import Verification
    from curation.taskdir import TaskDir


def _selection(p: argparse.ArgumentParser) -> None:
    """Which tasks, and where their frameworks' sources are."""
    p.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    p.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    p.add_argument(
        "--task-file",
        type=Path,
        help="only the task ids this file lists (one a line), run in its order",
    )
    p.add_argument(
        "--repo-path", action="append", default=[], metavar="NAME=PATH",
        help="repository (clone, mirror or `eval bundle` output) of a framework (repeatable)",
    )  # fmt: skip
    p.add_argument("--work", type=Path, default=Path("work"), help="mining work dir (repo paths)")


def _common(p: argparse.ArgumentParser) -> None:
    _selection(p)
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
    _wheelhouse(p, "runs")
    p.add_argument(
        "--sandbox-full-dev", action="store_true",
        help="show the host's whole /dev in the sandbox (default: a minimal /dev + GPU nodes)",
    )  # fmt: skip


def _wheelhouse(p: argparse.ArgumentParser, does: str) -> None:
    p.add_argument(
        "--wheelhouse", type=Path,
        help="per-environment wheels (python -m envbuild.wheelhouse): a task whose pins have one "
        f"{does} in a virtual environment made from it over this machine's torch and Triton",
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
        "--reselect", action="store_true",
        help="choose the test node ids again (a capped gold run with the launch capture)",
    )  # fmt: skip
    ref.add_argument(
        "--all-runs", action="store_true",
        help="make every run even when the first base and gold runs leave no test that could "
        "be fail-to-pass (by default such a task stops there: unverified either way)",
    )  # fmt: skip
    ref.add_argument(
        "--no-resume", action="store_true",
        help="start every task over; by default a task whose reference an earlier command left "
        "unfinished (reference.partial.json, same environment and patches) keeps its selection "
        "and finished runs",
    )  # fmt: skip
    ref.add_argument(
        "--deadline", type=float, metavar="SECONDS",
        help="start no task after this many seconds (running ones finish)",
    )  # fmt: skip
    ref.add_argument(
        "--select-per-test",
        type=int,
        default=2,
        help="selection run: parametrizations of one test function (default 2)",
    )
    ref.add_argument(
        "--select-max",
        type=int,
        default=0,
        help="selection run: tests in all (default: the framework's registry entry, else 24)",
    )
    ref.add_argument(
        "--max-node-ids",
        type=int,
        default=8,
        help="node ids kept for the reference runs (default 8)",
    )
    ref.add_argument(
        "--select-timeout", type=float, metavar="SECONDS",
        help="selection run's time limit (default: a run's); the tests that finished before "
        "it still count",
    )  # fmt: skip
    ref.add_argument(
        "--select-autotune", choices=("first", "all"), default="first",
        help="selection run: each autotuned kernel takes the first of its configs that compiles "
        "(default; the base and gold runs tune as Triton does) or tunes them all",
    )  # fmt: skip
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
    orc = sub.add_parser(
        "oracle",
        help="reference predictions: the gold targets, or the setup state's (do-nothing)",
        description="Write predictions.jsonl holding each task's targets as the gold tree (or "
        "the setup state) has them, in the form a model answers; scoring them checks the "
        "benchmark: the gold completes every verified task, the setup state none.",
    )
    _selection(orc)
    orc.add_argument("--from", dest="oracle", choices=("gold", "setup"), required=True)
    orc.add_argument("--out", type=Path, required=True, help="predictions.jsonl to write")
    wl = sub.add_parser(
        "workload",
        help="plan each task's workload (workload.json) and time base and gold on it",
        description="Plan a workload per task (calls of its wrapper at realistic sizes: the "
        "repository's benchmark scripts, its model configurations, or the captured test call "
        "scaled up; docs/workloads.md) and, unless --plan-only, time base and gold (and "
        "--predictions) on a GPU, alternating, on the same inputs: workload_result.json and "
        "the optimization gate's verdict. Resumable: tasks with a result are skipped.",
    )
    _selection(wl)
    wl.add_argument("--plan-only", action="store_true", help="write workload.json, time nothing")
    wl.add_argument(
        "--count-flops", type=int, nargs="?", const=32, metavar="PROGRAMS",
        help="instead of timing, count the matrix-product FLOPs the gold's kernels execute on "
        "each call, in Triton's interpreter (on CUDA tensors where there is a GPU), running "
        "PROGRAMS (default 32) evenly "
        "spread programs of each launch; written into workload.json (counted tasks are skipped "
        "unless --force, which then counts again and never replans)",
    )  # fmt: skip
    wl.add_argument(
        "--all-types", action="store_true",
        help="plan every task, not only optimizations (their workloads time predictions too)",
    )  # fmt: skip
    wl.add_argument("--out", type=Path, default=Path("runs/workload"), help="run directory")
    wl.add_argument("--triton-cache", type=Path, help="Triton cache of the warm measurements")
    wl.add_argument("--timeout", type=float, default=600.0, help="seconds per harness process")
    wl.add_argument(
        "--deadline", type=float, metavar="SECONDS",
        help="start no task after this many seconds (running ones finish)",
    )  # fmt: skip
    wl.add_argument("--force", action="store_true", help="replan and remeasure done tasks")
    wl.add_argument("--rounds", type=int, default=2, help="alternating rounds (kernel time)")
    wl.add_argument(
        "--memcheck", action="store_true",
        help="also run the gold's smallest call once under compute-sanitizer memcheck (its "
        "verdict goes into workload_result.json)",
    )  # fmt: skip
    wl.add_argument(
        "--predictions", type=Path,
        help="also time these predictions (only the tasks that have one are timed); results "
        "go to OUT/<task_id>/workload_result.json, which `eval score --out OUT` reads",
    )  # fmt: skip
    _wheelhouse(wl, "is timed")
    wl.add_argument(
        "--anchored", action="store_true",
        help="with --predictions: time the gold and the prediction once each and take the "
        "base's times from the task's workload_result.json (the gate's measurement on this "
        "machine) when the gold's total is within 3%% of it; otherwise the full protocol",
    )  # fmt: skip
    wl.add_argument(
        "--no-sandbox", action="store_true",
        help="run the trusted base and gold without bubblewrap (predictions always use it)",
    )  # fmt: skip
    wl.add_argument("--scratch", type=Path, help="where source trees are prepared")
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
    bd.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    bd.add_argument("--task-file", type=Path, help="only the task ids this file lists (one a line)")
    bd.add_argument(
        "--repo-path", required=True, metavar="[NAME=]PATH",
        help="the framework's repository (NAME=PATH as the other commands take it, or PATH)",
    )  # fmt: skip
    bd.add_argument("--out", type=Path, required=True, help="bare repository to create")
    bd.add_argument(
        "--path", action="append", default=[], help="only these top-level paths (repeatable)"
    )
    return p


def cmd_reference(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from eval.session import EvalSettings, kept_selections, run_references

    settings = from_args(EvalSettings, args)
    if not settings.no_sandbox and settings.backend == "local":
        from eval.sandbox import tools

        tools()  # no bwrap: one error line before any progress is drawn
    kept = kept_selections(settings)
    if kept:
        print(f"note: {len(kept)} task(s) run again on the node ids chosen before (first: "
              f"{kept[0]}); --reselect chooses them anew, under --select-per-test and "
              "--max-node-ids", file=sys.stderr)  # fmt: skip
    with Progress(console=Console(stderr=True)) as bar:
        job = bar.add_task("reference runs", total=None)

        def done(tdir: Any, ref: Any, error: str) -> None:
            if ref is None:
                bar.console.print(f"{tdir.id}: not run: {error}", markup=False)
            else:
                bar.console.print(
                    f"{tdir.id}: valid={ref.valid} base {ref.base.passed_runs}/"
                    f"{ref.base.runs} gold {ref.gold.passed_runs}/{ref.gold.runs} "
                    f"({ref.validity_note})",
                    markup=False,
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

    from eval.score import WORKLOAD_NOT_RUN, load_predictions, ran, score_all
    from eval.session import EvalSettings, make_backend, scratch_dir, select_tasks

    settings = from_args(EvalSettings, args)
    tdirs = select_tasks(settings)
    preds = load_predictions(args.predictions)
    unknown = sorted(set(preds) - {t.id for t in tdirs})
    if unknown:
        print(f"note: {len(unknown)} predictions name no selected task: {unknown[:5]}")
    with scratch_dir(args.scratch) as tmp:
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
    untimed = [s.task_id for s in scores if WORKLOAD_NOT_RUN in s.flags]
    if untimed:
        print(f"note: {len(untimed)} optimization task(s) verified on a workload were not timed "
              f"on it ({WORKLOAD_NOT_RUN}, not credited): {untimed[:5]}; run `python -m eval "
              f"workload --predictions {args.predictions} --out {args.out}` and score again",
              file=sys.stderr)  # fmt: skip
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
    from curation.targets import split_patch
    from curation.taskdir import TaskFile
    from eval.session import EvalSettings, select_tasks
    from mining.git import GitRepo, commit_snapshot, gc, init_bare

    path = args.repo_path
    if "=" in path and not Path(path).exists():  # NAME=PATH, as `reference` takes it
        path = path.split("=", 1)[1]
    src = GitRepo(Path(path))
    settings = EvalSettings(tasks=args.tasks, task=args.task, task_file=args.task_file)
    chosen = select_tasks(settings)
    bases = sorted({t.load_task().base_commit for t in chosen})
    # A slim bundle (--path) also holds every top-level entry the tasks' patches touch, so the
    # patches apply, and those of the test files the tasks run (flash-linear-attention #1135's
    # lies under benchmarks/); the tests import from the --path entries.
    touched: dict[str, set[str]] = {}
    for t in chosen:
        task = t.load_task()
        heads = touched.setdefault(task.base_commit, set())
        for name in (TaskFile.SETUP_PATCH, TaskFile.GOLD_PATCH, TaskFile.TEST_PATCH):
            heads |= {p.split("/", 1)[0] for p, _ in split_patch(t.read_bytes(name) or b"")}
        tests = (*task.tests.files, *task.tests.node_ids)
        heads |= {f.split("::", 1)[0].split("/", 1)[0] for f in tests if "/" in f}
    out = init_bare(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        for sha in bases:
            tree = Path(tmp) / sha
            wanted = [*args.path, *sorted(touched[sha] - set(args.path))] if args.path else []
            tops = top_level(src, sha)
            present = [p for p in wanted if p in tops]
            # a base before the package (flash-linear-attention #1c5de1e816's PR adds all of
            # `fla` to a tree of a README) is bundled whole: what the patches add is not there
            if args.path and not present and not (touched[sha] - tops):
                raise EvalError(f"none of {args.path} exists at {sha[:12]}")
            # only the paths asked for are read; files whose blobs a partial clone lacks (large
            # assets) are left out and named
            absent = [p for p in src.absent_paths(sha)
                      if not present or p.split("/", 1)[0] in present]  # fmt: skip
            if absent:
                print(f"{sha[:12]}: {len(absent)} files absent from the clone left out: "
                      f"{', '.join(absent[:3])}")  # fmt: skip
            src.archive(sha, tree, present, absent)
            commit_snapshot(out, tree, f"refs/bases/{sha}", f"base tree of {sha}")
            shutil.rmtree(tree)
    gc(out)
    print(f"{len(bases)} base trees in {args.out}")
    return 0


def top_level(repo: Any, commit: str) -> set[str]:
    """The names at the top of `commit`'s tree."""
    return {p.split("/", 1)[0] for p in repo.list_tree(commit)}


def cmd_oracle(args: argparse.Namespace) -> int:
    from core.files import write_jsonl
    from eval.oracle import oracle_predictions
    from eval.session import EvalSettings, select_tasks, stores

    settings = from_args(EvalSettings, args)
    records = oracle_predictions(select_tasks(settings), stores(settings), args.oracle)
    write_jsonl(args.out, records)
    items = sum(len(r["kernels"]) for r in records)
    print(f"{len(records)} {args.oracle} predictions ({items} targets) in {args.out}")
    return 0


def _restored_verdict(tdir: TaskDir) -> Verification | None:
    """A new verdict for a directory whose verdict came from a release without its reference
    runs (None to keep it): out of scope where its hardware says so; for an optimization with
    a workload result, that result's verdict with the release's tests
    (`eval.gate.released_tests_verdict`) where it differs."""
    from curation.taskdir import TaskFile
    from eval.gate import released_tests_verdict
    from eval.perf_scores import gpu_name
    from eval.reference import hardware_verdict
    from eval.workload_model import WorkloadResult

    task = tdir.load_task()
    hardware = hardware_verdict(task)
    if hardware is not None:
        return hardware
    result = tdir.load(TaskFile.WORKLOAD_RESULT, WorkloadResult)
    if result is None:
        return None
    restored = released_tests_verdict(task, result, gpu_name(result.environment))
    now = task.verification
    if restored is None or (now.status, now.reason) == (restored.status, restored.reason):
        return None
    return restored


def cmd_rejudge(args: argparse.Namespace) -> int:
    from curation.taskdir import TaskFile, task_dirs
    from eval.compat import pinned_triton
    from eval.gate import retype
    from eval.model import Reference
    from eval.reference import launches_seen, rejudge
    from eval.workload_model import WorkloadResult

    n = changed = 0
    for tdir in task_dirs(args.tasks):
        old = tdir.load(TaskFile.REFERENCE, Reference)
        if old is None:  # a verdict without its runs (restored from a release): its hardware
            verdict = _restored_verdict(tdir)  # and, for an optimization, a newer workload
            if verdict is not None:
                tdir.record_verification(verdict)
                changed += 1
                print(f"{tdir.id}: {verdict.status} ({verdict.reason}; no reference.json)")
            continue
        workload = tdir.load(TaskFile.WORKLOAD_RESULT, WorkloadResult)
        task = tdir.load_task()
        new, verdict = rejudge(task, old, workload, pinned_triton(tdir))
        n += 1
        if verdict is not None:
            tdir.record_verification(verdict, old.node_ids, launches_seen(task, old.runs),
                                     retype(task, verdict, new.fail_to_pass, old.runs))  # fmt: skip
        if new != old:
            changed += 1
            tdir.store(TaskFile.REFERENCE, new)
            print(f"{tdir.id}: valid {old.valid} -> {new.valid} ({new.validity_note})")
    print(f"{n} references rejudged, {changed} changed")
    return 0


def cmd_workload(args: argparse.Namespace) -> int:
    from eval.workload_cli import run_workload_command

    return run_workload_command(args)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # a TERM (`timeout`'s default) ends the command as Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    from eval.sandbox import accept_runs

    args = build_parser().parse_args(argv)
    accept_runs()  # an earlier command of this process may have been interrupted
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        commands = {
            "reference": cmd_reference,
            "score": cmd_score,
            "bundle": cmd_bundle,
            "rejudge": cmd_rejudge,
            "oracle": cmd_oracle,
            "workload": cmd_workload,
        }
        return commands[args.cmd](args)
    except (EvalError, CoreError, CurationError, MiningError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # the runs under way were killed (eval.sandbox.interrupt_runs); what finished is written
        print(f"interrupted: {args.cmd} stopped; what finished is kept, run it again to resume",
              file=sys.stderr)  # fmt: skip
        return 130
    finally:
        if on_main:  # a caller's own handler (main called in-process) comes back
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
