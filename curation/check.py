"""`python -m curation.check`: validate every task directory before anything is built from it.

Reads: `<tasks>/<task_id>/`. Writes nothing. Exits 1 when any task has an error.
Errors make a task unusable (unreadable record, a merge date that is not ISO 8601, missing
sources or patch, a requirement that is not UTF-8 or leaks the gold kernel, an env.json or
reference.json that is not JSON); warnings flag what a curator should look at (no tests
selected). A task whose check itself fails is reported as an error of that task, one line; the
others are still checked.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from core.errors import CoreError, RecordError, one_line
from core.files import read_json
from curation.model import TASK_SCHEMA_VERSION, Task
from curation.taskdir import AFTER_DIR, BEFORE_DIR, TaskDir, TaskFile, task_dirs


@dataclass
class CheckResult:
    task_id: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


log = logging.getLogger(__name__)


def check_task(tdir: TaskDir) -> CheckResult:
    """The errors and warnings of one task directory."""
    try:
        return _check(tdir)
    except Exception as exc:  # one broken task must not stop the check of the others
        log.debug("checking %s", tdir.id, exc_info=True)
        return CheckResult(tdir.id, errors=[f"check failed: {one_line(exc)}"])


def _check(tdir: TaskDir) -> CheckResult:
    from curation.imports import UNDEFINED_UPSTREAM
    from curation.requirement import leaks_gold

    res = CheckResult(tdir.id)
    try:
        task = tdir.load_task()
    except (OSError, RecordError) as exc:
        res.errors.append(f"task.json unreadable: {exc}")
        return res
    if task.schema_version != TASK_SCHEMA_VERSION:
        res.errors.append(f"schema_version {task.schema_version} != {TASK_SCHEMA_VERSION}")
    if task.task_id != tdir.id:
        res.errors.append(f"task_id {task.task_id!r} differs from the directory name")
    if not task.kernels:
        res.errors.append("no target kernels")
    if not 1 <= task.difficulty.level <= 5:
        res.errors.append(f"difficulty {task.difficulty.level} outside 1..5")
    try:
        datetime.fromisoformat(task.merged_at)
    except ValueError:
        res.errors.append(f"merged_at {task.merged_at[:40]!r} is not an ISO 8601 date")
    for k in task.kernels:
        if k.after_src is None:
            res.errors.append(f"kernel {k.name}: no gold source")
        if not tdir.source_path(AFTER_DIR, k.file).is_file():
            res.errors.append(f"{AFTER_DIR}/{k.file} missing")
        before = k.old_file or k.file
        if k.before_src is not None and not tdir.source_path(BEFORE_DIR, before).is_file():
            res.errors.append(f"{BEFORE_DIR}/{before} missing")
    gold = tdir.read_text(TaskFile.GOLD_PATCH)
    if not gold.strip():
        res.errors.append("gold.patch missing or empty")
    else:
        for k in task.kernels:
            if f"b/{k.file}" not in gold:
                res.errors.append(f"gold.patch does not touch {k.file}")
    if not tdir.has(TaskFile.TEST_PATCH):
        res.errors.append("test.patch missing")
    if task.targets:
        res.errors.extend(_setup_errors(tdir, task))
    else:
        res.warnings.append("no targets (task.json of schema 1, or template kernels only)")
    try:
        requirement = tdir.read_requirement()
    except RecordError as exc:
        res.errors.append(str(exc))
    else:
        if not requirement.strip():
            res.errors.append("requirement.md missing or empty")
        elif leaks_gold(requirement, task):
            res.errors.append("requirement.md contains lines of the gold kernel")
        unnamed = [
            n for n in task.tests.unresolved_imports if n.rsplit(".", 1)[-1] not in requirement
        ]
        if unnamed:
            res.errors.append(
                "the PR's tests import names that neither the setup state defines nor the "
                "requirement names: " + ", ".join(unnamed)
            )
    if task.tests.undefined_upstream:
        res.warnings.append(
            f"{UNDEFINED_UPSTREAM} either (broken upstream: the tests importing them fail "
            "with the gold and are not kept): " + ", ".join(task.tests.undefined_upstream)
        )
    try:
        tdir.load_curation()
    except (OSError, RecordError) as exc:
        res.errors.append(f"curation.json unreadable: {exc}")
    # later stages' records: their fields are theirs to check, but a torn file is an error here
    for later in (TaskFile.ENV, TaskFile.REFERENCE, TaskFile.WORKLOAD, TaskFile.WORKLOAD_RESULT):
        if tdir.has(later):
            try:
                read_json(tdir.path(later))
            except CoreError as exc:
                res.errors.append(f"{later.value} unreadable: {exc}")
    if not task.tests.command:
        res.warnings.append("no tests selected")
    return res


def _setup_errors(tdir: TaskDir, task: Task) -> list[str]:
    from curation.targets import roundtrip_errors

    patch = tdir.read_bytes(TaskFile.SETUP_PATCH)
    if patch is None:
        return ["setup.patch missing"]
    base: dict[str, bytes] = {}
    gold: dict[str, bytes] = {}
    for k in task.kernels:
        for side, rel, store in (
            (BEFORE_DIR, k.old_file or k.file, base),
            (BEFORE_DIR, k.file, base),  # a kernel moved into a file the base already has
            (AFTER_DIR, k.file, gold),
        ):
            path = tdir.source_path(side, rel)
            if path.is_file():
                store[rel] = path.read_bytes()
    return roundtrip_errors(task.targets, task.kernels, patch, base, gold)


def check_all(root: Path) -> list[CheckResult]:
    return [check_task(t) for t in task_dirs(root)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m curation.check", description=__doc__.splitlines()[0]
    )
    p.add_argument(
        "--tasks", type=Path, default=Path("tasks"), help="task directories (default: %(default)s)"
    )
    args = p.parse_args(argv)
    try:
        results = check_all(args.tasks)
    except (CoreError, OSError) as exc:  # the folder itself cannot be listed
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not results:
        print(f"error: no task directories under {args.tasks}", file=sys.stderr)
        return 1
    bad = 0
    for r in results:
        for e in r.errors:
            print(f"ERROR {r.task_id}: {e}")
        for w in r.warnings:
            print(f"warn  {r.task_id}: {w}")
        bad += bool(r.errors)
    print(f"{len(results)} tasks checked: {len(results) - bad} ok, {bad} with errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
