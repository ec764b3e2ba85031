"""Run a task's kept tests under compute-sanitizer memcheck, at the setup state and with the
gold: does memcheck tell them apart where the tests' asserts do not?

    python scripts/memcheck_probe.py --tasks TASKS --repo-path NAME=PATH [--repo-path ...] \\
        [--task ID ... | --task-file ids.txt] [--wheelhouse W] [--max-node-ids 2] \\
        [--timeout 600] [--no-sandbox] [--out probe.jsonl] [--logs DIR]

A measurement, not a verdict: 36 bug fixes are unverified for "no test fails at the setup state
and passes with the gold", several of them fixes of an out-of-bounds access that an assert
cannot see (an unmasked load reads past the tensor and the lanes it fills are dropped:
flash-linear-attention #1135, #795, #bd32e7b54b, #794, #907). Whether memcheck separates the
setup state from the gold on their own tests decides whether it becomes a gate rule
(docs/runs/2026-12-06/next_calls.md). Each task's first `--max-node-ids` kept node ids
(reference.json) run once per variant through the local backend (sandboxed unless
`--no-sandbox`), under `eval.memcheck.memcheck_command`, with PyTorch's caching allocator off
(`eval.memcheck.CHECKED_ENV`) and the plugin's profiler and isolated timing off (the
profiler's CUPTI and the sanitizer do not share a process).

Reads: task directories (task.json, reference.json, the patches), the frameworks' repositories.
Writes: scratch trees and run logs under a temporary directory (`--scratch`); with --out one
JSON line per task and variant, appended as each task ends; with --logs each checked run's log
(the sanitizer's findings in full). Prints a table: per task and variant, the tests' outcome
and memcheck's errors, the first finding and the function it names, then how many tasks
memcheck separates (the setup state has errors in a target kernel, the gold none, and the
gold's tests pass). A task without a reference or kept node ids is skipped and said so. Exits
1 when compute-sanitizer is not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from core.errors import one_line
from curation.taskdir import TaskFile
from eval.errors import EvalError
from eval.memcheck import (
    CHECKED_ENV,
    NOT_FOUND,
    PADDING,
    find_sanitizer,
    memcheck_command,
    read_log,
)
from eval.model import Reference, Variant
from eval.reference import target_kernel_names
from eval.session import EvalSettings, make_backend, scratch_dir, select_tasks

# the plugin's CUDA profiler (CUPTI) and isolated re-timing stay off under the sanitizer
QUIET = {"TPB_PROFILE": "0", "TPB_ISOLATED": "0"}


@dataclass(frozen=True)
class Probe:
    """One variant's checked run of a task."""

    task_id: str
    variant: str
    node_ids: tuple[str, ...]
    passed: bool  # the tests passed (the sanitizer's own exit status aside)
    failure: str
    errors: int | None  # memcheck's error count; None: no summary (the tool did not finish)
    first: str  # the first finding
    where: str  # the function it names
    in_target: bool  # that function is one of the task's target kernels


def separates(base: Probe, gold: Probe) -> bool:
    """memcheck tells the setup state from the gold: errors in a target kernel at the setup
    state, none with the gold, whose tests pass."""
    return bool(base.errors) and base.in_target and gold.errors == 0 and gold.passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run tasks' kept tests under compute-sanitizer memcheck, setup state and "
        "gold (a measurement for the bug fixes whose tests pass at both)."
    )
    ap.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    ap.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    ap.add_argument("--task-file", type=Path, help="only the task ids it lists, one a line")
    ap.add_argument("--repo-path", action="append", default=[], metavar="NAME=PATH",
                    help="a framework's repository (repeatable)")  # fmt: skip
    ap.add_argument("--work", type=Path, default=Path("work"), help="mining work dir (repo paths)")
    ap.add_argument("--wheelhouse", type=Path, help="per-environment wheels (envbuild.wheelhouse)")
    ap.add_argument("--max-node-ids", type=int, default=2, help="kept node ids run per task")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per checked run")
    ap.add_argument("--no-sandbox", action="store_true", help="run unsandboxed (base and gold)")
    ap.add_argument("--scratch", type=Path, help="parent of the scratch trees")
    ap.add_argument("--sanitizer", help="compute-sanitizer to use (default: found on the host)")
    ap.add_argument(
        "--padding",
        type=int,
        default=PADDING,
        help="compute-sanitizer --padding: guard bytes after each allocation "
        "(default %(default)s, eval.memcheck.PADDING; 0: none)",
    )
    ap.add_argument("--out", type=Path, help="write one JSON line per task and variant")
    ap.add_argument("--logs", type=Path, help="keep each checked run's log here (TASK/VARIANT.log)")
    args = ap.parse_args(argv)

    sanitizer = args.sanitizer or find_sanitizer()
    if sanitizer is None:
        print(f"error: {NOT_FOUND}", file=sys.stderr)
        return 1
    settings = EvalSettings(tasks=args.tasks, task=args.task, task_file=args.task_file,
                            repo_path=args.repo_path, work=args.work, timeout=args.timeout,
                            no_sandbox=args.no_sandbox, wheelhouse=args.wheelhouse,
                            no_isolated_timing=True)  # fmt: skip
    console = Console(stderr=True)
    probes: list[Probe] = []
    if args.out is not None:
        args.out.write_text("")  # a row a task as it ends: a cut run keeps what finished
    try:
        tdirs = select_tasks(settings)
        with scratch_dir(args.scratch) as tmp:
            backend = make_backend(settings, Path(tmp))
            for tdir in tdirs:
                ref = tdir.load(TaskFile.REFERENCE, Reference)
                node_ids = ref.node_ids[: args.max_node_ids] if ref is not None else ()
                if not node_ids:
                    console.print(f"skipped {tdir.id}: no reference with kept node ids")
                    continue
                task = tdir.load_task()
                task = replace(task, tests=replace(task.tests, node_ids=node_ids))
                targets = target_kernel_names(task)
                pair = {}
                checker = memcheck_command(sanitizer, padding=args.padding)
                for variant in (Variant.BASE, Variant.GOLD):
                    run_dir = Path(tmp) / "runs" / tdir.id / f"memcheck-{variant}"
                    console.print(f"{tdir.id}: {variant} under memcheck ...")
                    run = backend.run(task, tdir, variant, run_dir, 0,
                                      extra_env={**CHECKED_ENV, **QUIET},
                                      checker=checker)  # fmt: skip
                    log = Path(run.log) if run.log else None  # none: the tree was not made
                    text = log.read_text(errors="replace") if log and log.is_file() else ""
                    found = read_log(text)
                    if args.logs is not None:
                        (args.logs / tdir.id).mkdir(parents=True, exist_ok=True)
                        (args.logs / tdir.id / f"{variant}.log").write_text(text)
                    passed = all(run.outcome_of(n) == "passed" for n in node_ids)
                    pair[variant] = Probe(tdir.id, str(variant), node_ids, passed,
                                          str(run.failure),
                                          found.errors, found.first, found.where,
                                          found.where in targets)  # fmt: skip
                probes += [pair[Variant.BASE], pair[Variant.GOLD]]
                if args.out is not None:
                    with args.out.open("a") as fh:
                        fh.writelines(json.dumps(asdict(pair[v])) + "\n" for v in pair)
    except EvalError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    report(probes, Console())
    return 0


def report(probes: list[Probe], console: Console) -> None:
    table = Table(title="memcheck on the kept tests")
    for col in ("task", "variant", "tests", "errors", "first finding", "in"):
        table.add_column(col)
    for p in probes:
        errors = "no summary" if p.errors is None else str(p.errors)
        table.add_row(p.task_id, p.variant, "pass" if p.passed else p.failure, errors,
                      p.first[:80], p.where + (" (target)" if p.in_target else ""))  # fmt: skip
    console.print(table)
    by_task: dict[str, dict[str, Probe]] = {p.task_id: {} for p in probes}
    for p in probes:
        by_task[p.task_id][p.variant] = p
    n = sum(separates(v[str(Variant.BASE)], v[str(Variant.GOLD)]) for v in by_task.values())
    console.print(f"memcheck separates the setup state from the gold on {n} of {len(by_task)} "
                  "tasks")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
