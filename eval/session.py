"""One eval session's settings and the library entries the CLI and `benchmark regenerate` call:
`run_references` (reference runs of the selected tasks) and `run_scoring` (a predictions file).

Reads: task directories, the repositories named by `--repo-path` or the crawl's summaries.
Writes: what `eval.reference` and `eval.score` write. Refuses (as `EvalError`): no task
directory selected, a framework with no repository, a `--repo-path` that is not NAME=PATH.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import one_line
from core.files import output_lock
from curation.taskdir import TaskDir, TaskFile
from eval.errors import EvalError
from eval.model import Reference

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalSettings:
    """What to run and how: the command line's options, with its defaults."""

    tasks: Path = Path("tasks")
    task: list[str] = field(default_factory=list)  # only these task ids
    task_file: Path | None = None  # only the task ids it lists, one a line, run in its order
    deadline: float | None = None  # seconds: start no task after this (running ones finish)
    repo_path: list[str] = field(default_factory=list)  # NAME=PATH
    work: Path = Path("work")
    backend: str = "local"
    timeout: float = 900.0
    max_test_files: int = 4
    no_isolated_timing: bool = False
    scratch: Path | None = None
    only_approved: bool = False
    runs: int = 3
    reselect: bool = False  # choose the node ids again even when the task has them
    all_runs: bool = False  # every run even when the first pair rules out a fail-to-pass test
    no_resume: bool = False  # start over even where reference.partial.json could be resumed
    select_per_test: int = 2  # selection run: parametrizations of one test function
    select_max: int = 0  # selection run: tests in all (0: the framework's, else 24)
    max_node_ids: int = 8  # node ids kept for the reference runs
    select_timeout: float | None = None  # selection run's limit (None: a run's)
    select_autotune: str = "first"  # selection run: first config that compiles, or all
    env: list[str] = field(default_factory=list)  # NAME=VALUE set in every test run
    sandbox_memory: float | None = None  # GiB per sandboxed process
    sandbox_full_dev: bool = False
    no_sandbox: bool = False  # trusted base/gold reference runs only; recorded in each run
    triton_cache: Path | None = None
    wheelhouse: Path | None = None  # per-environment wheels (envbuild.wheelhouse)
    out: Path = Path("runs/reference")
    force: bool = False  # rerun tasks that have a reference already
    jobs: int = 1


def stores(args: EvalSettings) -> dict[str, Any]:
    from eval.workspace import SourceStore
    from mining.git import GitRepo
    from mining.store import repo_paths

    try:
        paths = repo_paths(args.work, args.repo_path)
    except ValueError as exc:
        raise EvalError(str(exc)) from None
    return {name: SourceStore(GitRepo(p)) for name, p in paths.items()}


def select_tasks(args: EvalSettings) -> list[TaskDir]:
    from curation.model import CurationStatus
    from curation.taskdir import task_dirs

    wanted = list(args.task)
    if args.task_file is not None:
        try:
            wanted += [x.strip() for x in args.task_file.read_text().splitlines() if x.strip()]
        except OSError as exc:
            raise EvalError(
                f"{args.task_file}: cannot read the task list ({exc.strerror})"
            ) from None
    out = [t for t in task_dirs(args.tasks) if not wanted or t.id in wanted]
    if wanted:  # run in the order asked for (the runs are handed out first come, first served)
        rank = {tid: i for i, tid in enumerate(dict.fromkeys(wanted))}
        out.sort(key=lambda t: rank[t.id])
    if args.only_approved:
        out = [t for t in out if t.load_curation().status is CurationStatus.APPROVED]
    if not out:
        raise EvalError(f"no task directories under {args.tasks}")
    return out


def scratch_dir(parent: Path | None) -> tempfile.TemporaryDirectory[str]:
    """A private scratch directory for one command's source trees, under `parent` (made when
    missing: `--scratch /tmp/new` on a fresh machine) or the system's temporary directory."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=parent)


def make_backend(args: EvalSettings, scratch: Path) -> Any:
    from dataclasses import replace

    from eval.backends import DockerBackend, LocalBackend, RunSettings
    from eval.parallel_compile import WORKERS_ENV, default_workers
    from eval.sandbox import GIB, SandboxPolicy

    extra_env = dict(kv.split("=", 1) for kv in args.env if "=" in kv)
    if len(extra_env) != len(args.env):
        raise EvalError("--env takes NAME=VALUE")
    # the test runs' autotuning compiles its configs on threads, the CPUs shared among the
    # `jobs` tasks run side by side (eval.parallel_compile; `--env TPB_COMPILE_WORKERS=1`:
    # Triton's serial path)
    extra_env = {WORKERS_ENV: str(default_workers(args.jobs)), **extra_env}
    policy = SandboxPolicy(full_dev=args.sandbox_full_dev)
    if args.sandbox_memory:
        policy = replace(policy, memory_bytes=int(args.sandbox_memory * GIB))
    settings = RunSettings(
        timeout_s=args.timeout,
        max_test_files=args.max_test_files,
        isolated_timing=not args.no_isolated_timing,
        extra_env=extra_env,
        sandbox=None if args.no_sandbox else policy,
        cache_root=args.triton_cache,
        wheelhouse=args.wheelhouse,
    )
    if args.backend == "docker":
        return DockerBackend(stores(args), scratch, settings)
    return LocalBackend(stores(args), scratch, settings)


def gpus_here() -> int:
    """CUDA devices this process sees; 1 without CUDA (Triton's interpreter runs a task's
    kernels on the host, as one device)."""
    try:
        import torch

        return max(1, torch.cuda.device_count()) if torch.cuda.is_available() else 1
    except ImportError:
        return 1


def kept_selections(args: EvalSettings) -> list[str]:
    """The tasks that `--force` runs again on the node ids chosen before: a judged task keeps
    them unless `--reselect`, so the selection's caps (`--select-per-test`, `--max-node-ids`)
    and rules do not reach it (call 87, 2026-12-07: 19 tasks meant for a new selection rule ran
    on their old node ids, and nothing said so)."""
    if not args.force or args.reselect:
        return []
    return [t.id for t in select_tasks(args)
            if t.has(TaskFile.REFERENCE) and t.load_task().tests.node_ids]  # fmt: skip


def run_references(
    args: EvalSettings,
    on_done: Callable[[TaskDir, Reference | None, str], None] = lambda t, r, e: None,
) -> tuple[list[Reference], dict[str, str]]:
    """Reference runs of the selected tasks (those without reference.json unless `force`),
    `jobs` tasks side by side; the references written and task id -> why for the others
    (an error, or the hardware the task needs and this machine lacks)."""
    from functools import partial

    from eval.reference import SelectionCaps, run_reference
    from eval.sandbox import stopping_runs_on_interrupt

    gpus = gpus_here()
    caps = SelectionCaps(args.select_per_test, args.select_max, args.max_node_ids,
                         args.select_timeout, args.select_autotune)  # fmt: skip

    tdirs = [t for t in select_tasks(args) if args.force or not t.has(TaskFile.REFERENCE)]
    done: list[Reference] = []
    errors: dict[str, str] = {}
    with output_lock(args.out), scratch_dir(args.scratch) as tmp:
        backend = make_backend(args, Path(tmp))
        run = partial(run_reference, reselect=args.reselect, gpus_here=gpus, caps=caps,
                      all_runs=args.all_runs, resume=not args.no_resume)  # fmt: skip

        def one(tdir: TaskDir) -> Reference | None:
            return run(tdir.load_task(), tdir, backend, args.out, args.runs)

        end = time.monotonic() + args.deadline if args.deadline else None
        queue = list(tdirs)
        # Tasks run side by side (each run is its own pytest process); the runs of one task
        # stay in order so base and gold alternate. Tasks are started in the order given, and
        # none after the deadline.
        pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
        with pool, stopping_runs_on_interrupt():
            running: dict[Future[Reference | None], TaskDir] = {}
            while queue or running:
                while queue and len(running) < max(1, args.jobs):
                    if end is not None and time.monotonic() > end:
                        for tdir in queue:
                            errors[tdir.id] = "not started: the deadline passed"
                            on_done(tdir, None, errors[tdir.id])
                        queue = []
                        break
                    tdir = queue.pop(0)
                    running[pool.submit(one, tdir)] = tdir
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    tdir = running.pop(fut)
                    try:
                        ref = fut.result()
                    except Exception as exc:  # one broken task must not stop the others
                        log.debug("task %s", tdir.id, exc_info=True)
                        why = str(exc) if isinstance(exc, EvalError) else one_line(exc)
                        errors[tdir.id] = why
                        on_done(tdir, None, why)
                        continue
                    if ref is None:
                        why = f"out of scope: {tdir.load_task().verification.reason}"
                        errors[tdir.id] = why
                        on_done(tdir, None, why)
                        continue
                    done.append(ref)
                    on_done(tdir, ref, "")
    return done, errors
