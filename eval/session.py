"""One eval session's settings and the library entries the CLI and `benchmark regenerate` call:
`run_references` (reference runs of the selected tasks) and `run_scoring` (a predictions file).

Reads: task directories, the repositories named by `--repo-path` or the crawl's summaries.
Writes: what `eval.reference` and `eval.score` write. Refuses (as `EvalError`): no task
directory selected, a framework with no repository, a `--repo-path` that is not NAME=PATH.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
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
    repo_path: list[str] = field(default_factory=list)  # NAME=PATH
    work: Path = Path("work")
    backend: str = "local"
    timeout: float = 900.0
    max_test_files: int = 4
    no_isolated_timing: bool = False
    scratch: Path | None = None
    only_approved: bool = False
    runs: int = 3
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

    out = [t for t in task_dirs(args.tasks) if not args.task or t.id in args.task]
    if args.only_approved:
        out = [t for t in out if t.load_curation().status is CurationStatus.APPROVED]
    if not out:
        raise EvalError(f"no task directories under {args.tasks}")
    return out


def make_backend(args: EvalSettings, scratch: Path) -> Any:
    from eval.backends import DockerBackend, LocalBackend, RunSettings

    settings = RunSettings(
        timeout_s=args.timeout,
        max_test_files=args.max_test_files,
        isolated_timing=not args.no_isolated_timing,
    )
    if args.backend == "docker":
        return DockerBackend(stores(args), scratch, settings)
    return LocalBackend(stores(args), scratch, settings)


def run_references(
    args: EvalSettings,
    on_done: Callable[[TaskDir, Reference | None, str], None] = lambda t, r, e: None,
) -> tuple[list[Reference], dict[str, str]]:
    """Reference runs of the selected tasks (those without reference.json unless `force`),
    `jobs` tasks side by side; the references written and task id -> error for the others."""
    from eval.reference import run_reference

    tdirs = [t for t in select_tasks(args) if args.force or not t.has(TaskFile.REFERENCE)]
    done: list[Reference] = []
    errors: dict[str, str] = {}
    with output_lock(args.out), tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        backend = make_backend(args, Path(tmp))

        # Tasks run side by side (each run is its own pytest process); the runs of one task
        # stay in order so base and gold alternate.
        def one(tdir: TaskDir) -> Reference:
            return run_reference(tdir.load_task(), tdir, backend, args.out, args.runs)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(one, t): t for t in tdirs}
            for fut in as_completed(futures):
                tdir = futures[fut]
                try:
                    ref = fut.result()
                except Exception as exc:  # one broken task must not stop the others
                    log.debug("task %s", tdir.id, exc_info=True)
                    why = str(exc) if isinstance(exc, EvalError) else one_line(exc)
                    errors[tdir.id] = why
                    on_done(tdir, None, why)
                    continue
                done.append(ref)
                on_done(tdir, ref, "")
    return done, errors
