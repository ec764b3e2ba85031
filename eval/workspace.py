"""Scratch source trees for one run: the framework at the base commit plus a kernel variant.

Reads: the framework's repository (a clone, a bare mirror, or a slim bundle from
`python -m eval bundle`), a task directory (test.patch, gold.patch, task.json).
Writes: a fresh tree under the scratch directory, without `.git`, so no history past the base
commit is reachable from the tests.
Rules: the PR's tests (test.patch) are always applied. `base` is the setup state (setup.patch:
the PR's whole change with every target at its base version or a stub), `gold` applies
gold.patch (the setup state plus the gold targets), `prediction` splices the model's targets
into the setup state by tree-sitter span (or applies its patch there), changing nothing but the
task's targets (`eval.targets`). A task without targets (a record of schema 1) has no setup
state: its base is the base commit.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from eval.errors import EvalError, SpliceError
from eval.model import Variant
from mining.errors import GitError
from mining.git import GitRepo, apply_patch

log = logging.getLogger(__name__)

BUNDLE_REF = "refs/bases/"


class SourceStore:
    """Base trees of one framework, from its repository or a slim bundle of it."""

    def __init__(self, repo: GitRepo):
        self.repo = repo
        # per commit, the files left out of its checkouts: their blobs are not in the clone
        # (large assets a partial clone or a mirror snapshot lacks; Liger-Kernel's
        # test/resources/tiny_shakespeare_tokenized arrow file, 2026-12-06), as `eval bundle`
        # leaves them out
        self.absent: dict[str, list[str]] = {}

    def resolve(self, commit: str) -> str:
        if self.repo.has_commit(commit):
            return commit
        ref = f"{BUNDLE_REF}{commit}"
        try:
            return self.repo.resolve(ref)
        except GitError:
            raise EvalError(f"commit {commit[:12]} is not in {self.repo.path}") from None

    def checkout(self, commit: str, dest: Path) -> None:
        if dest.exists():
            shutil.rmtree(dest)
        sha = self.resolve(commit)
        if self.absent.get(commit):  # known from an earlier checkout: not tried whole again
            self.repo.archive(sha, dest, (), self.absent[commit])
            return
        try:
            self.repo.archive(sha, dest)
        except GitError:
            self.absent[commit] = self.repo.absent_paths(sha)
            if not self.absent[commit]:
                raise
            shutil.rmtree(dest, ignore_errors=True)
            log.warning("%s: %d files whose blobs the clone lacks left out: %s", sha[:12],
                        len(self.absent[commit]), ", ".join(self.absent[commit][:3]))  # fmt: skip
            self.repo.archive(sha, dest, (), self.absent[commit])


def prepare(
    task: Task,
    tdir: TaskDir,
    store: SourceStore,
    dest: Path,
    variant: Variant,
    prediction: Mapping[str, Any] | None = None,
) -> Path:
    """Build the tree for `variant` at `dest` and return it."""
    store.checkout(task.base_commit, dest)
    _apply(dest, tdir, TaskFile.TEST_PATCH, task)
    if variant is Variant.GOLD:
        _apply(dest, tdir, TaskFile.GOLD_PATCH, task)
        return dest
    if task.targets:
        _apply(dest, tdir, TaskFile.SETUP_PATCH, task)
    if variant is Variant.PREDICTION:
        if prediction is None:
            raise EvalError("a prediction run needs a prediction", task_id=task.task_id)
        _apply_prediction(dest, task, prediction)
    return dest


def _apply(dest: Path, tdir: TaskDir, name: TaskFile, task: Task) -> None:
    patch = tdir.read_bytes(name)
    if patch is None:
        raise EvalError(f"{name} is missing from the task directory", task_id=task.task_id)
    try:
        apply_patch(dest, patch)
    except GitError as exc:
        raise EvalError(
            f"{name} does not apply at the base commit: {exc}", task_id=task.task_id
        ) from None


def _apply_prediction(dest: Path, task: Task, prediction: Mapping[str, Any]) -> None:
    """Splice or patch the prediction in; `eval.targets` refuses any change beyond the task's
    targets (as a SpliceError: the prediction's failure, not the harness's)."""
    from eval.protected import snapshot
    from eval.splice import items_from_prediction, splice_prediction
    from eval.targets import check_items, check_patch_text, check_patched_tree, target_files

    if prediction.get("patch"):
        patch = str(prediction["patch"])
        check_patch_text(patch, task)
        files = sorted(target_files(task))
        old = {f: _text(dest / f) for f in files}
        before = snapshot(dest, everything=True)
        try:
            apply_patch(dest, patch)
        except GitError as exc:
            raise SpliceError(f"the prediction's patch does not apply: {exc}") from None
        after = snapshot(dest, everything=True)
        sources = {f: (old[f], _text(dest / f)) for f in files if before.get(f) != after.get(f)}
        check_patched_tree(before, after, sources, task)
    if prediction.get("kernels"):
        items = items_from_prediction(prediction, task)
        check_items(items, task)
        splice_prediction(dest, items)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError):
        return ""


def test_files(task: Task, max_files: int = 4, tree: Path | None = None) -> list[str]:
    """The tests a run executes, at most `max_files`: the PR's own test files first, then
    existing ones that import the kernel. With the prepared `tree`, files that name the
    kernel's module, its wrappers or the kernel itself go first (a PR often touches tests of
    unrelated features too)."""
    files: list[str] = list(
        dict.fromkeys((*task.tests.changed_in_pr, *task.tests.selected_existing))
    )
    if tree is not None:
        stems = {Path(k.file).stem for k in task.kernels}
        names = {k.name for k in task.kernels} | {w.rsplit(".", 1)[-1] for k in task.kernels
                                                   for w in k.wrappers}  # fmt: skip

        def rank(path: str) -> int:
            try:
                text = (tree / path).read_text(errors="replace")
            except OSError:
                return 0
            return 2 * any(s in text for s in stems) + any(n in text for n in names)

        # sorted() is stable: the PR's files keep their lead among equals
        files = sorted(files, key=rank, reverse=True)
    return files[:max_files]


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
