"""scripts/rerun_candidates.py: which unverified verdicts a rerun may change, on a tiny
framework whose PR fixes a kernel and adds a regression test after an existing one."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from curation.model import TaskType, TypeDecision
from curation.taskdir import TaskFile, task_dirs
from tests.tinyfw import mine_sign_fix

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from rerun_candidates import main, node_function, priority, touched_tests

NO_F2P = "bug_fix: no test fails at the setup state and passes with the gold"


def _task(tmp_path: Path) -> tuple[Path, Path, Path]:
    # the PR appends its regression test to the file of an existing one
    work, tasks = mine_sign_fix(tmp_path, same_file=True)
    [path] = list(tasks.glob("*/task.json"))
    return work, tasks, path


def _judge(path: Path, reason: str, node_ids: list[str]) -> None:
    data = json.loads(path.read_text())
    data["verification"] = {"status": "unverified", "reason": reason,
                            "checked_at": "2026-12-01T06:00:00+00:00"}  # fmt: skip
    data["tests"]["node_ids"] = node_ids
    path.write_text(json.dumps(data))


def test_a_no_fail_to_pass_verdict_that_never_ran_the_prs_test_is_listed(tmp_path: Path) -> None:
    """flash-linear-attention #712 (H200, 2026-12-03): the selection had kept the file's
    existing tests and never ran the one its PR adds; "no fail-to-pass" was the old selection's,
    not the task's. Such a verdict is listed for `--reselect`; one whose kept node ids hold the
    PR's test is not, nor is a verified task."""
    work, tasks, path = _task(tmp_path)
    out = tmp_path / "lists"
    tid = path.parent.name
    # before any GPU verdict it is a never-run task, unless another vendor's
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "never_run.txt").read_text() == f"{tid}\n"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "requires": {**data["requires"], "vendor": "ascend"}}))
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "never_run.txt").read_text() == ""
    path.write_text(json.dumps(data))
    # its place in the list: new_op first, then a PR that changes tests (this one), then the rest
    [tdir] = task_dirs(tasks)
    task = tdir.load_task()
    assert priority(task, tdir) == 1
    assert priority(replace(task, task_type=TypeDecision(TaskType.NEW_OP, ())), tdir) == 0
    _judge(path, NO_F2P, ["tests/test_add.py::test_positive"])
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "pr_tests_not_kept.txt").read_text() == f"{tid}\n"
    assert (out / "never_run.txt").read_text() == ""
    _judge(path, NO_F2P, ["tests/test_add.py::test_positive", "tests/test_add.py::test_negative"])
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "pr_tests_not_kept.txt").read_text() == ""
    # the other reasons: a selection timeout, a host package that broke the import
    _judge(path, "the selection run failed (timeout): killed at the time limit", [])
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "timeout.txt").read_text() == f"{tid}\n"
    _judge(path, "the framework does not import with the installed transformers (ValueError)", [])
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "environment.txt").read_text() == f"{tid}\n"
    assert (out / "timeout.txt").read_text() == ""
    # no node id kept for a PR that changes no test: the selection now takes the nearest tests
    # first (flash-linear-attention #688); with the PR's test it is not this reason
    _judge(path, "the selection run failed (test_failure): a/models/bitnet/modeling.py:115", [])
    assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
    assert (out / "nearest_tests.txt").read_text() == ""
    [tdir] = task_dirs(tasks)
    tdir.path(TaskFile.TEST_PATCH).write_bytes(b"")
    for reason in (
        "the selection run failed (test_failure): x",
        "no test launches a target kernel",
    ):
        _judge(path, reason, [])
        assert main([str(tasks), "--work", str(work), "--out", str(out)]) == 0
        assert (out / "nearest_tests.txt").read_text() == f"{tid}\n"


def test_test_functions_and_node_ids() -> None:
    source = (
        "import pytest\n\n\n@pytest.mark.parametrize('n', [1])\ndef test_a(n):\n    pass\n\n\n"
        "def helper():\n    pass\n\n\nclass TestB:\n    def test_b(self):\n        pass\n"
    )
    assert touched_tests(source, [(4, 4)]) == {"test_a"}  # its decorator's line
    assert touched_tests(source, [(9, 10)]) == set()  # not a test
    assert touched_tests(source, [(15, 15)]) == {"test_b"}
    assert touched_tests("def test_(:\n", [(1, 1)]) == set()  # unparsable: nothing
    assert node_function("tests/t.py::TestB::test_b[x-1]") == "test_b"


def test_a_no_launch_verdict_whose_selection_was_never_retried_is_listed(tmp_path: Path) -> None:
    """flash-linear-attention #702 (H200, 2026-12-06): the selection's tests passed and none
    launched the gate kernel, and nothing ran again. Such a selection now runs once more on
    the parametrizations least like those that ran; a verdict from before that is listed for
    `--reselect` (read from reference.json), one whose selection was retried is not."""
    from core.files import write_record
    from eval.__main__ import main as eval_main

    work, tasks, path = _task(tmp_path)
    [tdir] = task_dirs(tasks)
    task = tdir.load_task()
    targets = tuple(replace(t, name="other_kernel") if t.role == "kernel" else t
                    for t in task.targets)  # fmt: skip
    write_record(path, replace(task, targets=targets))
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing"]  # fmt: skip
    assert eval_main(argv) == 0
    assert tdir.load_task().verification.reason == "no test launches a target kernel"
    ref = json.loads(tdir.path(TaskFile.REFERENCE).read_text())
    # the tiny framework's tests all ran the first time: the retry found nothing more to run
    assert ref["selection"]["detail"].endswith("(again without them: no other parametrization)")
    out, lists = tmp_path / "lists", ["--work", str(work), "--out", str(tmp_path / "lists")]
    assert main([str(tasks), *lists]) == 0
    assert (out / "unlaunched_retry.txt").read_text() == ""
    ref["selection"]["detail"] = ""  # as a selection of before the retry wrote it
    tdir.path(TaskFile.REFERENCE).write_text(json.dumps(ref))
    assert main([str(tasks), *lists]) == 0
    assert (out / "unlaunched_retry.txt").read_text() == f"{tdir.id}\n"


def test_a_no_fail_to_pass_verdict_of_a_kernel_whose_name_another_file_defines_is_listed(
    tmp_path: Path,
) -> None:
    """flash-linear-attention #f93ae3e83e: retention's `_fwd_recurrence` shares its name with
    GLA's, and the name-only watch kept a GLA test ("no fail-to-pass"). Such a verdict is
    listed for a rerun under the `name@path` watch; another file's kernel in the tests or
    benchmarks does not count, nor does the kernel's own file."""
    from types import SimpleNamespace as NS

    from rerun_candidates import same_name_elsewhere

    from mining.git import GitRepo
    from tests.gitrepo import TinyRepo

    repo = TinyRepo(tmp_path / "fw")
    kernel = "@triton.jit\ndef _fwd_recurrence(x):\n    pass\n"
    repo.write("pkg/retention/chunk.py", kernel)
    repo.write("tests/test_x.py", kernel)
    repo.write("benchmarks/bench.py", kernel)
    alone = repo.commit("retention")
    repo.write("pkg/gla/chunk.py", kernel)
    both = repo.commit("gla")
    git = GitRepo(tmp_path / "fw")
    task = NS(kernels=(NS(name="_fwd_recurrence", file="pkg/retention/chunk.py"),),
              merge_commit=alone)  # fmt: skip
    assert same_name_elsewhere(task, git) == {}  # type: ignore[arg-type]
    task.merge_commit = both
    assert same_name_elsewhere(task, git) == {"_fwd_recurrence": ["pkg/gla/chunk.py"]}  # type: ignore[arg-type]
    # as a "no fail-to-pass" verdict's reason (a PR without a test change)
    from rerun_candidates import reason_of

    from curation.model import VerificationStatus

    task.verification = NS(status=VerificationStatus.UNVERIFIED, checked_at="2026-12-06",
                           reason=NO_F2P)  # fmt: skip
    task.tests = NS(node_ids=("tests/test_gla.py::test_gla[1]",))
    tdir = NS(read_bytes=lambda name: b"")
    assert reason_of(task, tdir, git) == "same_name_kernel"  # type: ignore[arg-type]
    task.merge_commit = alone
    assert reason_of(task, tdir, git) is None  # type: ignore[arg-type]
