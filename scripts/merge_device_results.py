"""Put what a GPU call brought back into the task directories it was carried from.

A call runs the gate (or the workloads) on copies of task directories carried to the GPU
machine and returns each task's task.json with its reference.json or workload_result.json, in
an archive (at most eight files come back from a call). This merges them:

    python scripts/merge_device_results.py results.tgz [more folders or archives] --tasks tasks

Reads: folders holding `<task_id>/task.json` (and `reference.json`, `workload_result.json`,
`env.json` when the call ran the task on its pinned packages), or
`<task_id>/reference.partial.json` (a reference the call's end cut: its selection and finished
runs, for the next call to resume), or .tar / .tgz archives of them (archives inside an archive
are opened too). Writes, per task:
the verdict and the node ids (through `TaskDir.record_verification`) and the run files, only
when the run was made on this directory's task: the same targets and setup patch (a curation
that changed since makes the run another task's). A task directory with a newer verdict than
the run's keeps it and takes nothing from the run (a verdict restored from a release has no
reference.json: an older run's would bring back a verdict it replaced), and one with the run's
own verdict (perhaps rejudged since) keeps that and only gains the run files it lacks. Calls
are merged oldest first (`scripts/rebuild_state.sh` sorts their folders). A partial reference
replaces the directory's (the call resumed from it); a merged verdict removes it, and a partial
older than the directory's verdict is skipped. What is skipped is named, with why; a verified
task a run leaves unverified or out of scope says "no longer verified", and the summary counts
them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.errors import one_line
from core.records import from_json
from curation.model import TestSelection, Verification, VerificationStatus
from curation.taskdir import TaskDir, TaskFile

# env.json: the pins a run's wheelhouse came from (a call that ran a task on its pinned
# packages carries the env.json envbuild wrote; the reference records the package set it saw)
RUN_FILES = (TaskFile.REFERENCE, TaskFile.WORKLOAD_RESULT, TaskFile.ENV)
PARTIAL = TaskFile.REFERENCE_PARTIAL
ARCHIVES = (".tar", ".tgz", ".tar.gz")


def _unpack(archive: Path, into: Path) -> None:
    """An archive's members under `into` (no links, nothing outside it), then the members of
    the archives it held, each where it lay."""
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    while inner := next((f for f in sorted(into.rglob("*")) if f.is_file() and
                         f.name.endswith(ARCHIVES)), None):  # fmt: skip
        with tarfile.open(inner) as tar:
            tar.extractall(inner.parent, filter="data")
        inner.unlink()


def unpacked_roots(sources: list[Path], scratch: Path) -> list[Path]:
    """The folders to read for `sources`: each folder itself, and each archive (given, or in a
    given folder: a call's folder as committed, docs/runs/*/results/callN with the results.tgz
    that came back) unpacked into `scratch`."""
    roots: list[Path] = []
    for i, src in enumerate(sources):
        archives = [src] if src.is_file() else sorted(
            f for f in src.rglob("*") if f.is_file() and f.name.endswith(ARCHIVES))  # fmt: skip
        roots += [] if src.is_file() else [src]
        for j, archive in enumerate(archives):
            roots.append(scratch / f"{i}-{j}")
            roots[-1].mkdir(parents=True)
            _unpack(archive, roots[-1])
    return roots


def run_dirs(sources: list[Path], scratch: Path) -> Iterator[Path]:
    """Every folder under `sources` (archives unpacked into `scratch`) that holds a task.json
    or a partial reference, source by source."""
    for i, src in enumerate(sources):
        found: set[Path] = set()
        for root in unpacked_roots([src], scratch / str(i)):
            found |= {p.parent for p in root.rglob("task.json")}
            found |= {p.parent for p in root.rglob(PARTIAL.value)}
        yield from sorted(found)


def _run_files(run: Path) -> list[TaskFile]:
    """The run files a run folder holds (`RUN_FILES`), with the workload plan when it holds a
    workload result: the plan the result was measured on (a dataset row needs both)."""
    files = [f for f in RUN_FILES if (run / f).is_file()]
    if TaskFile.WORKLOAD_RESULT in files and (run / TaskFile.WORKLOAD).is_file():
        files.append(TaskFile.WORKLOAD)
    return files


def _measured_at(path: Path) -> str:
    """A workload result's `measured_at` ("" when it has none or is unreadable)."""
    try:
        return str(json.loads(path.read_text()).get("measured_at") or "")
    except (OSError, ValueError):
        return ""


def _remeasured(run: Path, tdir: TaskDir) -> list[TaskFile]:
    """The workload files of a run that timed the task again after the directory's result (a
    workload run keeps the reference's verdict, so its date is the result's own): the result
    and the plan it was measured on."""
    theirs, ours = run / TaskFile.WORKLOAD_RESULT, tdir.path(TaskFile.WORKLOAD_RESULT)
    if not theirs.is_file() or not ours.is_file():
        return []
    if _measured_at(theirs) <= _measured_at(ours):
        return []
    return [f for f in (TaskFile.WORKLOAD_RESULT, TaskFile.WORKLOAD) if (run / f).is_file()]


def _stale_partial(partial: dict[str, Any], tdir: TaskDir) -> str:
    """Why a partial reference (its JSON) is older than the directory's finished reference (""
    when it is not): written before the verdict was checked, or undated (before 2026-12-06's
    fourth session) beside a reference.json."""
    if not tdir.path(TaskFile.REFERENCE).is_file():
        return ""
    checked = tdir.load_task().verification.checked_at or ""
    saved = str(partial.get("saved_at") or "")
    if saved and saved > checked:
        return ""  # a rerun (--force) under way since the verdict
    return f"a partial reference ({saved or 'undated'}) older than the verdict ({checked}), skipped"


# what a target's record says of it besides which function it is: text read for the requirement,
# redrawn by a curation that finds the same targets (2026-12-06: signatures lost the comments
# after a `def` line's colon, in 84 tasks)
_DESCRIPTIVE = ("signature", "docstring")


def _identity(targets: Any) -> list[dict[str, Any]]:
    """The targets as the functions a run ran on: file, name, role, status."""
    return [{k: v for k, v in t.items() if k not in _DESCRIPTIVE} for t in targets or ()]


def merge_one(run: Path, tasks: Path) -> str:
    """Merge one run folder into `tasks/<its name>`; what was done, or why it was skipped."""
    tdir = TaskDir(tasks / run.name)
    if not tdir.path(TaskFile.TASK).is_file():
        return f"no task directory under {tasks}, skipped"
    if (run / PARTIAL).is_file() and not (run / TaskFile.REFERENCE).is_file():
        # the reference `eval reference` resumes only on the environment and patches it was
        # made on (`eval.reference.resume_key`), so a stale one is never mixed in; one older
        # than the directory's verdict (a call merged again after a later one that finished
        # the task) would list a judged task among the partials to run again
        partial = json.loads((run / PARTIAL).read_text())
        stale = _stale_partial(partial, tdir)
        if stale:
            return stale
        shutil.copyfile(run / PARTIAL, tdir.path(PARTIAL))
        runs = len(partial.get("runs") or ())
        return f"partial: the selection and {runs} finished run(s) kept for the next call"
    ran = json.loads((run / "task.json").read_text())
    here = json.loads(tdir.path(TaskFile.TASK).read_text())
    if _identity(ran.get("targets")) != _identity(here.get("targets")):
        return "its targets differ from the task directory's (the curation changed), skipped"
    verdict = from_json(Verification, ran["verification"], str(run / "task.json"))
    if not tdir.on_current_setup(verdict):
        here_setup = tdir.setup_digest()
        return f"run on setup state {verdict.setup}, the directory's is {here_setup}, skipped"
    if verdict.checked_at is None:
        return "the run made no verdict, skipped"
    current = tdir.load_task().verification
    if current.checked_at is not None and current.checked_at > verdict.checked_at:
        return f"the directory has a newer verdict ({current.checked_at}), skipped"
    if current.checked_at == verdict.checked_at:
        # the run the directory's verdict came from, which `eval rejudge` (a workload, a new
        # reason) may have revised since: the verdict stays, missing run files are added
        # (Liger-Kernel #1187 went back to "no workload measured yet" before this check)
        added = [f for f in _run_files(run) if not tdir.path(f).exists()]
        added += [f for f in _remeasured(run, tdir) if f not in added]
        for f in added:
            shutil.copyfile(run / f, tdir.path(f))
        if tdir.path(TaskFile.REFERENCE).is_file():
            tdir.path(PARTIAL).unlink(missing_ok=True)  # an earlier call's, merged after
        files = "; ".join(str(f) for f in added) or "nothing"
        return f"kept: the directory has this run's verdict ({current.status}), added {files}"
    tests = from_json(TestSelection, ran["tests"], str(run / "task.json"))
    tdir.record_verification(verdict, tests.node_ids)
    copied = _run_files(run)
    for f in copied:
        shutil.copyfile(run / f, tdir.path(f))
    if TaskFile.REFERENCE in copied:
        tdir.path(PARTIAL).unlink(missing_ok=True)  # finished: nothing to resume
    files = "".join(f"; {f}" for f in copied)
    # a verified task this run takes out of the default configuration is said so, and counted
    # (call 88, 2026-12-07: #1033's gain did not reproduce, and #1112's recorder lost its
    # restored tests; both read as any other "merged" line)
    lost = f" ({DEMOTED})" if _demoted(current, verdict) else ""
    return f"merged: {verdict.status}{lost} ({verdict.reason}){files}"


DEMOTED = "no longer verified"


def _demoted(before: Verification, after: Verification) -> bool:
    return (before.status is VerificationStatus.VERIFIED
            and after.status is not VerificationStatus.VERIFIED)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+", help="folders or .tar/.tgz archives")
    ap.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    args = ap.parse_args(argv)
    merged = kept = partial = skipped = demoted = 0
    with tempfile.TemporaryDirectory() as scratch:
        try:
            runs = list(run_dirs(args.results, Path(scratch)))
        except (OSError, tarfile.TarError) as exc:
            print(f"error: {one_line(exc)}", file=sys.stderr)
            return 1
        for run in runs:
            try:
                what = merge_one(run, args.tasks)
            except (OSError, ValueError, KeyError) as exc:
                what = f"unreadable ({one_line(exc)}), skipped"
            print(f"{run.name}: {what}")
            merged += what.startswith("merged")
            demoted += what.startswith("merged: ") and f" ({DEMOTED}) " in what
            kept += what.startswith("kept")
            partial += what.startswith("partial")
            skipped += not what.startswith(("merged", "kept", "partial"))
    lost = f"; {demoted} {DEMOTED}: read their reasons after `eval rejudge`" if demoted else ""
    print(f"{merged} merged, {kept} kept, {partial} partial, {skipped} skipped{lost}")
    return 0 if merged or kept or partial or not skipped else 1


if __name__ == "__main__":
    sys.exit(main())
