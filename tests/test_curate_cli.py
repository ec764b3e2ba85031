"""`python -m curation.curate` and `curation.check` end to end on a tiny real framework repo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curation.check import check_all
from curation.check import main as check_main
from curation.curate import main as curate_main
from curation.model import CurationStatus
from curation.taskdir import AFTER_DIR, BEFORE_DIR, TaskDir, TaskFile, task_dirs
from mining.crawl import main as crawl
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_REFORMATTED, ADD_KERNEL_SCALED, PLAIN_MODULE

TEST_ADD = """from pkg.ops.add import add


def test_add():
    assert add is not None
"""


@pytest.fixture
def work(tmp_path: Path) -> tuple[TinyRepo, Path]:
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/plain.py", PLAIN_MODULE)
    repo.write("README.md", "fw\n")
    repo.commit("Initial commit")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.write("tests/test_add.py", TEST_ADD)
    repo.commit("Add a Triton add kernel (#1)")
    repo.write("pkg/ops/add.py", ADD_KERNEL_REFORMATTED)
    repo.commit("Reformat the add kernel (#2)")
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.write("tests/test_add_scaled.py", TEST_ADD.replace("test_add", "test_scaled"))
    repo.commit("Fix the add kernel: scale the sum (#3)")
    out = tmp_path / "work"
    assert crawl([str(repo.path), "--out", str(out), "--quiet", "--no-github"]) == 0
    return repo, out


def curate(work: Path, tasks: Path, *extra: str) -> int:
    return curate_main(["--work", str(work), "--out", str(tasks), "--quiet", *extra])


def test_curate_writes_task_directories_and_summary(work, tmp_path: Path) -> None:
    _, out = work
    tasks = tmp_path / "tasks"
    assert curate(out, tasks) == 0
    ids = [d.id for d in task_dirs(tasks)]
    assert ids == ["fw__1__add_kernel", "fw__3__add_kernel"]
    summary = json.loads((tasks / "curation_summary.json").read_text())
    assert summary["kept"] == 2
    assert summary["rejected_by_reason"] == {"no_substantive_kernel_change": 1}
    rejected = [json.loads(x) for x in (tasks / "rejected.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rejected] == ["#2"]

    t3 = TaskDir(tasks / "fw__3__add_kernel")
    task = t3.load_task()
    assert task.task_type.type == "bug_fix"
    assert task.base_commit != task.merge_commit
    [k] = task.kernels
    assert (k.change, k.file) == ("modified", "pkg/ops/add.py")
    assert "* 2.0" in t3.source_path(AFTER_DIR, "pkg/ops/add.py").read_text()
    assert "* 2.0" not in t3.source_path(BEFORE_DIR, "pkg/ops/add.py").read_text()
    assert "pkg/ops/add.py" in t3.read_text(TaskFile.GOLD_PATCH)
    assert "tests/test_add_scaled.py" in t3.read_text(TaskFile.TEST_PATCH)
    assert "tests/test_add_scaled.py" not in t3.read_text(TaskFile.GOLD_PATCH)
    assert "tests/test_add_scaled.py" in task.tests.changed_in_pr
    assert "tests/test_add.py" in task.tests.selected_existing
    assert "add" in {f.name for ctx in task.context.values() for f in ctx.functions}
    requirement = t3.read_requirement()
    assert "add_kernel" in requirement and "pkg/ops/add.py" in requirement
    assert "(x + y) * 2.0" not in requirement
    assert all(not r.errors for r in check_all(tasks))


def test_curator_edits_and_decisions_survive_a_rerun(work, tmp_path: Path) -> None:
    _, out = work
    tasks = tmp_path / "tasks"
    curate(out, tasks)
    t1, t3 = TaskDir(tasks / "fw__1__add_kernel"), TaskDir(tasks / "fw__3__add_kernel")
    t1.edit_requirement("Write an elementwise add kernel. (curated)", curator="ana")
    t1.decide(CurationStatus.APPROVED, None, curator="ana")
    t3.decide(CurationStatus.REJECTED, "the scale factor is arbitrary", curator="ana")
    assert curate(out, tasks) == 0
    assert t1.read_requirement() == "Write an elementwise add kernel. (curated)"
    task1 = t1.load_task()
    assert (task1.curation_status, task1.requirement_origin) == (CurationStatus.APPROVED, "curator")
    assert task1.requirement == "Write an elementwise add kernel. (curated)"
    task3 = t3.load_task()
    assert task3.curation_status is CurationStatus.REJECTED
    assert task3.curator_reason == "the scale factor is arbitrary"
    assert t3.read_requirement() != ""  # not edited: the draft is refreshed
    summary = json.loads((tasks / "curation_summary.json").read_text())
    assert summary["by_status"] == {"approved": 1, "rejected": 1}


def test_requirements_drafted_again_show_what_the_gpu_recorded(
    work, tmp_path: Path, capsys
) -> None:
    """`--requirements-only`: once `eval reference` recorded the gold's launches in task.json,
    the requirements are drafted again from it, without mining or a repository (the work
    folder may be gone); a curator's edit is kept; a task.json that does not read is one line
    naming it, before any write."""
    from dataclasses import replace

    from core.files import write_record

    _, out = work
    tasks = tmp_path / "tasks"
    curate(out, tasks)
    t1, t3 = TaskDir(tasks / "fw__1__add_kernel"), TaskDir(tasks / "fw__3__add_kernel")
    t1.edit_requirement("Write an elementwise add kernel. (curated)", curator="ana")
    launch = "add_kernel(x_ptr=float32[1000], y_ptr=float32[1000], out_ptr=float32[1000])"
    task3 = t3.load_task()
    recorded = replace(task3, tests=replace(task3.tests, launches=(launch,)))
    write_record(t3.path(TaskFile.TASK), recorded)
    assert launch not in t3.read_requirement()
    argv = ["--work", str(tmp_path / "gone"), "--out", str(tasks), "--requirements-only"]
    assert curate_main(argv) == 0
    assert "2 requirements drafted again (1 curator, 1 template)" in capsys.readouterr().out
    assert f"The tests launch it (the gold, on the GPU) with: `{launch}`" in t3.read_requirement()
    assert launch in t3.load_task().requirement and t3.load_task().tests.launches == (launch,)
    assert t1.read_requirement() == "Write an elementwise add kernel. (curated)"
    # a task.json that does not read: one line, nothing written
    t1.path(TaskFile.TASK).write_text("{not json")
    before = t3.read_requirement()
    assert curate_main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "fw__1__add_kernel/task.json" in err and "\n" not in err
    assert t3.read_requirement() == before


def test_check_reports_broken_task_dirs(work, tmp_path: Path, capsys) -> None:
    _, out = work
    tasks = tmp_path / "tasks"
    curate(out, tasks)
    t3 = TaskDir(tasks / "fw__3__add_kernel")
    t3.source_path(AFTER_DIR, "pkg/ops/add.py").unlink()
    t3.path(TaskFile.REQUIREMENT).write_text(
        t3.path(TaskFile.REQUIREMENT).read_text() + "\n" + t3.load_task().kernels[0].after_src
    )
    assert check_main(["--tasks", str(tasks)]) == 1
    text = capsys.readouterr().out
    assert "after/pkg/ops/add.py missing" in text
    assert "contains lines of the gold kernel" in text
    assert "1 ok, 1 with errors" in text


def test_missing_work_dir_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert curate(tmp_path / "nothing", tmp_path / "tasks") == 1
    assert "python -m mining.crawl" in capsys.readouterr().err


def test_help_of_every_command(capsys) -> None:
    from curation.review import main as review_main

    for fn in (curate_main, check_main, review_main):
        with pytest.raises(SystemExit) as exc:
            fn(["--help"])
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--codebert-model" in out and "--requirements-only" in out


def test_binary_files_of_a_pr_stay_out_of_its_patches(tmp_path: Path) -> None:
    """Liger-Kernel #43 and flash-linear-attention #730 changed a plot or a PDF beside the
    kernel: `Binary files differ` in gold.patch made the patch refuse to apply at the base."""
    from mining.git import GitRepo, apply_patch

    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.write("tests/test_add.py", TEST_ADD)
    repo.write("docs/plot.png", b"\x89PNG\r\n\x1a\n\x00\x01old")
    repo.commit("Add a Triton add kernel (#1)")
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.write("docs/plot.png", b"\x89PNG\r\n\x1a\n\x00\x02new")
    repo.write("tests/data/ref.bin", b"\x00\x01\x02")
    repo.write("tests/test_add_scaled.py", TEST_ADD.replace("test_add", "test_scaled"))
    repo.commit("Fix the add kernel: scale the sum (#3)")
    out, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(out), "--quiet", "--no-github"]) == 0
    assert curate(out, tasks) == 0
    tdir = TaskDir(tasks / "fw__3__add_kernel")
    gold, test = tdir.read_text(TaskFile.GOLD_PATCH), tdir.read_text(TaskFile.TEST_PATCH)
    assert "pkg/ops/add.py" in gold and "tests/test_add_scaled.py" in test
    assert "plot.png" not in gold and "ref.bin" not in test
    tree = tmp_path / "tree"
    GitRepo(repo.path).archive(tdir.load_task().base_commit, tree)
    apply_patch(tree, test)
    apply_patch(tree, gold)
    assert "* 2.0" in (tree / "pkg/ops/add.py").read_text()
