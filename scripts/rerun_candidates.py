"""Verdicts a rerun may change: the unverified tasks whose GPU verdict came from something the
pipeline has fixed since, listed per reason so that each list feeds `eval reference
--task-file` on a GPU machine.

    python scripts/rerun_candidates.py tasks [--repo-path NAME=PATH ...] [--work work] \\
        [--out lists/]

Reasons (the first that holds decides):
- `timeout`: "the selection run failed (timeout)". The selection now tunes each kernel with its
  first config (`--select-autotune first`); on the H200 (2026-12-03) eleven such selections
  took 36-83 s instead of hitting 180 s, and five of the seven tasks that finished verified.
- `environment`: the framework did not import with the host's packages ("does not import with
  the installed ...", "installed package version differs from the task's pins"): run it on
  the wheelhouse of its pins (`python -m envbuild`, `python -m envbuild.wheelhouse`,
  `--wheelhouse`).
- `pr_tests_not_kept`: "no test fails at the setup state and passes with the gold", yet the
  PR adds or changes test functions and none of them is among the kept node ids. The selection
  now runs those first (`--reselect`); flash-linear-attention #712 was such a case. Needs the
  framework's repository (`--repo-path`, or `--work`) to read the test files at the merge
  commit; without it the reason is not checked and the task is counted as skipped.

- `same_name_kernel`: "no fail-to-pass" for a task one of whose PR kernels has a name that
  another non-test file of the merge commit defines. The watch matched launches by name, so the
  kept tests may be ones that launch the other file's kernel (flash-linear-attention
  #f93ae3e83e kept a GLA test for retention's `_fwd_recurrence`); it matches `name@path` now.
  Needs the repository, as `pr_tests_not_kept` does.

- `unlaunched_retry`: "no test launches a target kernel" from a selection whose tests passed
  without launching a target and that was never retried. A selection now runs once more in
  that case, on each test function's parametrizations least like those that ran
  (flash-linear-attention #702: its gate kernel runs only in `test_chunk`'s gate=True cases,
  the first run took a gate=False one). Read from the task's reference.json.

- `nearest_tests`: no node id kept ("no test launches a target kernel", or the selection run
  failed) for a PR that changes no test. The selection took the framework's tests in
  collection order after the PR's; it now takes those nearest the target module first
  (flash-linear-attention #688, #689, #664, #653 on the H200, 2026-12-03: the model tests ran,
  never the op's).

And `never_run`: the tasks for one NVIDIA GPU that never had a GPU verdict (optimizations left
out: they need a workload too), new_op first, then those whose PR changes tests, then the rest.

Reads: task directories, the frameworks' repositories. Writes, with --out, `<reason>.txt` (task
ids, newest merge first; `never_run.txt` in the order above). Verified and out-of-scope tasks
are not listed.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from curation.filters import is_kernel_source_path
from curation.model import Task, TaskType, VerificationStatus
from curation.targets import new_side_lines
from curation.taskdir import TaskDir, TaskFile, task_dirs
from eval.gate import HOST_REJECTS, NO_FAIL_TO_PASS, NO_LAUNCH, PINS_DIFFER, SELECTION_FAILED
from eval.model import FailureClass, Reference
from eval.reference import RETRIED
from mining.git import GitRepo
from mining.store import repo_paths

TIMEOUT, ENVIRONMENT, PR_TESTS = "timeout", "environment", "pr_tests_not_kept"
UNLAUNCHED, NEAREST, NEVER_RUN = "unlaunched_retry", "nearest_tests", "never_run"
SAME_NAME = "same_name_kernel"
REASONS = (TIMEOUT, ENVIRONMENT, PR_TESTS, SAME_NAME, UNLAUNCHED, NEAREST, NEVER_RUN)
# beside tests, benchmarks and docs (`is_kernel_source_path`), where a kernel of the same name
# does not count: flash-linear-attention's retired code
_LEGACY = "legacy/"
_ENVIRONMENT = (HOST_REJECTS, PINS_DIFFER)


def touched_tests(source: str, spans: list[tuple[int, int]]) -> set[str]:
    """The test functions (`test*`, decorators included in their span) of a Python file that
    overlap the line ranges `spans`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if any(a <= last and first <= b for a, b in spans):
                names.add(node.name)
    return names


def node_function(node_id: str) -> str:
    """`tests/t.py::Class::test_x[a-b]` -> `test_x`."""
    return node_id.split("::")[-1].split("[", 1)[0]


def pr_test_functions(task: Task, tdir: TaskDir, repo: GitRepo) -> set[str]:
    """The test functions the PR adds or changes (test.patch's new side, read at the merge
    commit)."""
    spans = new_side_lines(tdir.read_bytes(TaskFile.TEST_PATCH) or b"")
    files = {p: s for p, s in spans.items() if p.endswith(".py")}
    if not files:
        return set()
    texts = repo.read_files(task.merge_commit, files)
    return {
        name
        for path, data in texts.items()
        for name in touched_tests(data.decode(errors="replace"), files[path])
    }


def reason_of(task: Task, tdir: TaskDir, repo: GitRepo | None) -> str | None:
    """Which fixed cause a rerun would now avoid (REASONS), or None; `skipped` when the
    answer needs the repository and there is none."""
    v = task.verification
    if v.status is not VerificationStatus.UNVERIFIED:
        return None
    if v.checked_at is None:
        runnable = task.requires.single_nvidia_gpu
        return NEVER_RUN if runnable and task.task_type.type is not TaskType.OPTIMIZATION else None
    if v.reason.startswith(f"{SELECTION_FAILED} ({FailureClass.TIMEOUT})"):
        return TIMEOUT
    if any(s in v.reason for s in _ENVIRONMENT):
        return ENVIRONMENT
    if v.reason.startswith(NO_LAUNCH) and never_retried(tdir):
        return UNLAUNCHED
    no_launch = v.reason.startswith((NO_LAUNCH, SELECTION_FAILED))
    if no_launch and not task.tests.node_ids and not tdir.read_bytes(TaskFile.TEST_PATCH):
        return NEAREST
    if NO_FAIL_TO_PASS in v.reason:
        if repo is None:
            return "skipped"
        changed = pr_test_functions(task, tdir, repo)
        kept = {node_function(n) for n in task.tests.node_ids}
        if changed and not changed & kept:
            return PR_TESTS
        if same_name_elsewhere(task, repo):
            return SAME_NAME
    return None


def same_name_elsewhere(task: Task, repo: GitRepo) -> dict[str, list[str]]:
    """The PR's kernels whose name another library file of the merge commit defines (`def
    name(`), each with those files."""
    found = {}
    for k in task.kernels:
        files = repo.files_containing(task.merge_commit, f"def {k.name}(")
        others = [
            f
            for f in files
            if f != k.file and is_kernel_source_path(f) and not f.startswith(_LEGACY)
        ]
        if others:
            found[k.name] = others
    return found


def never_retried(tdir: TaskDir) -> bool:
    """Whether the task's selection passed tests without launching a target and ran once only
    (its record names no retry: `eval.reference.RETRIED`)."""
    ref = tdir.load(TaskFile.REFERENCE, Reference)
    sel = ref.selection if ref is not None else None
    if sel is None or sel.failure is not FailureClass.NONE or RETRIED in sel.detail:
        return False
    return any(t.outcome == "passed" for t in sel.tests)


def priority(task: Task, tdir: TaskDir) -> int:
    """Where a never-run task goes in its list: new_op first (a stub at the setup state fails
    any test that launches it), then tasks whose PR changes tests, then the rest (on the H200
    Liger-Kernel's new_op and feature tasks with PR tests verified at 92% and 88%, its bug fixes
    without a test change at 2 of 17)."""
    if task.task_type.type is TaskType.NEW_OP:
        return 0
    return 1 if tdir.read_bytes(TaskFile.TEST_PATCH) else 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", type=Path)
    ap.add_argument("--repo-path", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--work", type=Path, default=Path("work"), help="mining work dir")
    ap.add_argument("--out", type=Path, help="write <reason>.txt task lists here")
    args = ap.parse_args(argv)
    try:
        paths = repo_paths(args.work, args.repo_path)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    repos = {name: GitRepo(path) for name, path in paths.items()}
    found: dict[str, list[tuple[int, str, str]]] = {r: [] for r in (*REASONS, "skipped")}
    per: Counter[tuple[str, str]] = Counter()
    for tdir in task_dirs(args.tasks):
        task = tdir.load_task()
        why = reason_of(task, tdir, repos.get(task.framework))
        if why is None:
            continue
        rank = priority(task, tdir) if why == NEVER_RUN else 0
        found[why].append((rank, task.merged_at or "", tdir.id))
        per[(task.framework, why)] += 1
    table = Table(title="verdicts a rerun may change, and tasks never run")
    for col in ("framework", *REASONS, "skipped (no repository)"):
        table.add_column(col)
    for fw in sorted({f for f, _ in per}):
        table.add_row(fw, *(str(per[(fw, r)]) for r in (*REASONS, "skipped")))
    Console().print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for why in REASONS:
            newest = sorted(found[why], key=lambda x: x[1], reverse=True)
            ids = [tid for _, _, tid in sorted(newest, key=lambda x: x[0])]
            (args.out / f"{why}.txt").write_text("".join(f"{t}\n" for t in ids))
        print(f"wrote {', '.join(f'{r}.txt' for r in REASONS)} under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
