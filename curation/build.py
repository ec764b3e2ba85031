"""Turn one kept candidate into a task directory (facts, patches, sources, draft requirement).

Reads: a `Candidate`, its repository through the git gateway. Writes: `tasks/<task_id>/` via
`TaskDir` (task.json, requirement.md unless a curator edited it, before/, after/, gold.patch,
test.patch, setup.patch). A curator's decision and edited requirement are merged in, never
overwritten.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from curation.classify import classify, pr_title
from curation.context import ContextBuilder
from curation.difficulty import grade
from curation.filters import changed_kernel_lines, substantive_changes
from curation.hardware import detect
from curation.imports import import_gaps, modules_to_read
from curation.model import FileStat, TargetKernel, Task
from curation.requirement import LlmDrafter, write_requirement
from curation.targets import Elsewhere, elsewhere_modules, find_targets, setup_files, setup_patch
from curation.taskdir import AFTER_DIR, BEFORE_DIR, TaskDir, TaskFile
from curation.testsel import TestSelector
from mining.git import GitRepo
from mining.model import Candidate, ChangeKind, KernelChange, KernelRole
from mining.paths import is_test_path

log = logging.getLogger(__name__)

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def target_kernel(kc: KernelChange) -> TargetKernel:
    b, a = kc.before, kc.after
    k = a or b
    assert k is not None
    return TargetKernel(
        file=kc.file,
        name=kc.name,
        change=str(kc.change),
        kind=str(k.kind),
        role=str(k.role),
        old_file=kc.old_file,
        before_src=b.source if b else None,
        after_src=a.source if a else None,
        signature_before=b.signature if b else None,
        signature_after=a.signature if a else None,
        constexpr_params=k.constexpr_params,
        autotune_configs_before=b.autotune_configs if b else None,
        autotune_configs_after=a.autotune_configs if a else None,
        wrappers=tuple(dict.fromkeys((*(b.wrappers if b else ()), *(a.wrappers if a else ())))),
        span_before=(b.span.start_line, b.span.end_line) if b else None,
        span_after=(a.span.start_line, a.span.end_line) if a else None,
    )


def primary(targets: Sequence[KernelChange]) -> KernelChange:
    """The kernel the task is named after: the most-changed non-helper kernel."""
    ranked = sorted(
        targets,
        key=lambda kc: (
            kc.kernel.role is not KernelRole.KERNEL,
            -len(changed_kernel_lines(kc)),
            kc.file,
            kc.name,
        ),
    )
    return ranked[0]


def task_id_prefix(framework: str) -> str:
    """What the ids of a framework's tasks start with (before `__`)."""
    return _ID_UNSAFE.sub("_", framework)


def task_id(cand: Candidate, targets: Sequence[KernelChange]) -> str:
    if cand.pr.number is not None:
        pr = f"mr{cand.pr.number}" if cand.pr.source == "gitlab" else str(cand.pr.number)
    else:
        pr = cand.commit[:10]
    if "@" in cand.id:  # a second commit carrying the same PR id
        pr += "-" + cand.commit[:7]
    name = primary(targets).name
    return _ID_UNSAFE.sub("_", f"{cand.framework}__{pr}__{name}")


def _lines(text: str) -> str:
    """`text` without blank lines and trailing spaces, to compare sources by."""
    return "\n".join(ln.rstrip() for ln in text.splitlines() if ln.strip())


class TaskBuilder:
    """Builds task directories for the candidates of one repository."""

    def __init__(self, repo: GitRepo, drafter: LlmDrafter | None = None):
        self.repo = repo
        self.context = ContextBuilder(repo)
        self.tests = TestSelector(repo, cache=self.context.cache)
        self.drafter = drafter

    def build(self, cand: Candidate, tdir: TaskDir) -> Task:
        targets = substantive_changes(cand)
        copies = self.copies(cand, targets)
        if copies and len(copies) < len(targets):  # what is left is what the model writes
            log.info("%s: %d added kernels copy code of the base, left to the setup state: %s",
                     cand.id, len(copies), ", ".join(kc.name for kc in copies[:4]))  # fmt: skip
            targets = [kc for kc in targets if kc not in copies]
        base = cand.parent
        if base is None:
            raise ValueError(f"{cand.id}: a root commit has no base to start a task from")
        kernels = tuple(target_kernel(kc) for kc in targets)
        context = self.context.build(base, kernels)
        tests = self.tests.select(
            base, cand.commit, [(f.path, f.status) for f in cand.files], kernels
        )
        files = tuple(
            FileStat(f.path, f.status, f.additions, f.deletions, f.is_test) for f in cand.files
        )
        title = pr_title(cand)
        body = cand.github.body if cand.github else cand.body
        task = Task(
            task_id=tdir.id,
            framework=cand.framework,
            repo=cand.repo,
            pr_id=cand.pr.id,
            pr_number=cand.pr.number,
            pr_url=cand.pr.url,
            title=title,
            body=body,
            merged_at=(cand.github.merged_at if cand.github else None) or cand.committed_at,
            base_commit=base,
            merge_commit=cand.commit,
            base_tag=self.repo.describe_tag(base),
            task_type=classify(cand, targets),
            difficulty=grade(cand, targets),
            kernels=kernels,
            files_changed=files,
            context=context,
            tests=tests,
            requirement="",
            requirement_origin="template",
            labels=cand.github.labels if cand.github else (),
        )
        task = self._write_sources(cand, task, tdir)
        return with_requirement(task, tdir, self.drafter)

    def copies(self, cand: Candidate, targets: Sequence[KernelChange]) -> list[KernelChange]:
        """The added kernels whose source is, line for line, a function the base already has
        in another file: the PR copied them (flash-linear-attention #a6272f5475 makes
        fla/ops/utils/ a package and copies 9 kernels of fla/ops/utils.py into it). Like a
        move, a copy belongs to the setup state, not to what the model writes."""
        added = [kc for kc in targets if kc.change is ChangeKind.ADDED and kc.after is not None]
        if cand.parent is None or not added:
            return []
        # the base files that define each added name, read in one batch (one tree listing)
        where = {
            kc.name: self.repo.files_containing(cand.parent, f"def {kc.name}(") for kc in added
        }
        paths = {p for ps in where.values() for p in ps}
        if not paths:
            return []
        texts = {p: _lines(t.decode("utf-8", "replace"))
                 for p, t in self.repo.read_files(cand.parent, paths).items()}  # fmt: skip
        found = []
        for kc in added:
            assert kc.after is not None
            src = _lines(kc.after.source)
            if any(src in texts.get(p, "") for p in where[kc.name] if p != kc.file):
                found.append(kc)
        return found

    def _write_sources(self, cand: Candidate, task: Task, tdir: TaskDir) -> Task:
        """before/, after/, the patches and the setup state; the task with its targets and
        hardware needs."""
        assert cand.parent is not None
        paths = sorted(
            {k.old_file or k.file for k in task.kernels} | {k.file for k in task.kernels}
        )
        files: dict[str, dict[str, bytes]] = {}
        for side, commit in ((BEFORE_DIR, cand.parent), (AFTER_DIR, cand.commit)):
            files[side] = self.repo.read_files(commit, paths)
            for path, data in files[side].items():
                tdir.write_source(side, path, data)
        # A binary file (a plot, a PDF) is left out of both patches: no kernel or test is one,
        # `git diff` shows it without content, and a bundle or partial clone may lack its blob.
        text_files = [f for f in cand.files if f.additions is not None]
        test_paths = [f.path for f in text_files if is_test_path(f.path)]
        other = [f.path for f in text_files if not is_test_path(f.path)]
        for old in (f.old_path for f in text_files if f.old_path):
            (test_paths if is_test_path(old) else other).append(old)
        gold = self.repo.diff(cand.parent, cand.commit, other) if other else b""
        test = self.repo.diff(cand.parent, cand.commit, test_paths) if test_paths else b""
        tdir.write(TaskFile.GOLD_PATCH, gold)
        tdir.write(TaskFile.TEST_PATCH, test)
        base_files, gold_files = files[BEFORE_DIR], files[AFTER_DIR]
        targets = find_targets(task.kernels, gold_files, base_files)
        tree = list(self.repo.list_tree(cand.commit, (".py",)))
        setup = setup_files(targets, task.kernels, gold_files, base_files,
                            self._elsewhere(cand, other, paths, tree))  # fmt: skip
        old_paths = {k.file: k.old_file for k in task.kernels if k.old_file}
        tdir.write(TaskFile.SETUP_PATCH, setup_patch(gold, setup, base_files, old_paths))
        tests = self.repo.read_files(cand.commit, list(task.tests.files))
        target_paths = {t.file for t in targets}
        requires = detect({p: gold_files[p] for p in target_paths}, tests,
                          {p: base_files[p] for p in target_paths if p in base_files})  # fmt: skip
        own = {p: tests[p] for p in task.tests.changed_in_pr if p in tests}
        modules = self.repo.read_files(cand.commit, modules_to_read(own, tree))
        lost, upstream = import_gaps(own, modules, setup, tree)
        return replace(
            task,
            targets=targets,
            requires=requires,
            tests=replace(task.tests, unresolved_imports=lost, undefined_upstream=upstream),
        )

    def _elsewhere(
        self, cand: Candidate, changed: Sequence[str], read: Sequence[str], tree: Sequence[str]
    ) -> dict[str, Elsewhere]:
        """The PR's other changed modules (not the kernels' files, already `read`) whose gold
        deletes names their base bound: a restored base target may import one of those."""
        assert cand.parent is not None
        paths = sorted({p for p in changed if p.endswith(".py")} - set(read))
        if not paths:
            return {}
        present = set(tree)
        base = self.repo.read_files(cand.parent, paths)
        gold = self.repo.read_files(cand.commit, paths)
        return elsewhere_modules(base, gold, [p for p in paths if p not in present])


def with_requirement(task: Task, tdir: TaskDir, drafter: LlmDrafter | None) -> Task:
    """The task with its requirement (drafted, and written as requirement.md, unless a curator
    edited it) and the curator's decision. Also `curate --requirements-only`: a requirement
    drafted again once the GPU recorded what it shows (the gold's launches)."""
    rec = tdir.load_curation()
    if rec.requirement_edited:
        text, origin = tdir.read_requirement(), "curator"
    else:
        text, origin = write_requirement(task, drafter)
        tdir.write_draft(text)
    return replace(
        task,
        requirement=text,
        requirement_origin=origin,
        curation_status=rec.status,
        curator_reason=rec.reason,
    )
