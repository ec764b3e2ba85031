"""Curation on wrong or damaged input: candidates of another repository or framework, a corrupt
task directory under --only-new, and reruns of one framework that keep the others' rejects and
summary. Each refusal is one line, and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from curation.curate import main as curate_main
from curation.taskdir import task_dirs
from mining.crawl import main as crawl
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_REFORMATTED, ADD_KERNEL_SCALED, SCALE_KERNEL


def framework_repo(path: Path) -> TinyRepo:
    repo = TinyRepo(path)
    repo.write("pkg/__init__.py", "")
    repo.write("README.md", f"{path.name}\n")
    repo.commit("Initial commit")
    repo.write("pkg/ops/k.py", ADD_KERNEL)
    repo.commit("Add a kernel (#1)")
    repo.write("pkg/ops/k.py", ADD_KERNEL_REFORMATTED)
    repo.commit("Reformat the kernel (#2)")
    return repo


@pytest.fixture
def two(tmp_path: Path) -> tuple[TinyRepo, TinyRepo, Path]:
    a = framework_repo(tmp_path / "fw")
    a.write("pkg/ops/k.py", ADD_KERNEL_SCALED)
    a.commit("Scale the sum (#3)")
    b = framework_repo(tmp_path / "other")
    b.write("pkg/ops/scale.py", SCALE_KERNEL)
    b.commit("Add a scale kernel (#3)")
    work = tmp_path / "work"
    for repo in (a, b):
        assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    return a, b, work


def curate(work: Path, tasks: Path, *extra: str) -> int:
    return curate_main(["--work", str(work), "--out", str(tasks), "--quiet", *extra])


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def written(tasks: Path) -> list[str]:
    return sorted(p.name for p in tasks.iterdir() if p.name != ".lock") if tasks.exists() else []


def test_curate_refuses_candidates_of_another_repository(
    two, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, b, work = two
    tasks = tmp_path / "tasks"
    capsys.readouterr()
    # fw's candidates, but the repository of `other`
    assert curate(work, tasks, "--framework", "fw", "--repo-path", f"fw={b.path}") == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{b.path} is not the repository crawled into {work / 'fw'}" in line
    assert written(tasks) == []
    # without the crawl's state (no recorded first commit) the commits themselves tell
    (work / "fw" / "state.json").unlink()
    assert curate(work, tasks, "--framework", "fw", "--repo-path", f"fw={b.path}") == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{work / 'fw' / 'candidates.jsonl'}:1: 3 of 3 candidates name commits that" in line
    assert f"{b.path} does not have (first: #1," in line
    assert written(tasks) == []


def test_curate_refuses_candidates_of_another_framework(
    two, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, work = two
    shutil.copy(work / "other" / "candidates.jsonl", work / "fw" / "candidates.jsonl")
    (work / "fw" / "state.json").unlink()
    tasks = tmp_path / "tasks"
    capsys.readouterr()
    assert curate(work, tasks, "--framework", "fw") == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{work / 'fw' / 'candidates.jsonl'}:1: candidate #1 is of framework 'other'" in line
    assert written(tasks) == []


def test_curate_merges_rejected_jsonl_and_keeps_the_summary_of_other_frameworks(
    two, tmp_path: Path
) -> None:
    _, _, work = two
    tasks = tmp_path / "tasks"
    assert curate(work, tasks) == 0
    rejected = (tasks / "rejected.jsonl").read_text().splitlines()
    assert sorted(json.loads(r)["framework"] for r in rejected) == ["fw", "other"]
    summary = json.loads((tasks / "curation_summary.json").read_text())
    assert summary["kept"] == 4 and summary["rejected"] == 2
    assert sorted(summary["frameworks"]) == ["fw", "other"]
    other_section = summary["frameworks"]["other"]
    # curating one framework again rewrites its part only
    assert curate(work, tasks, "--framework", "fw") == 0
    again = (tasks / "rejected.jsonl").read_text().splitlines()
    assert sorted(again) == sorted(rejected)
    summary = json.loads((tasks / "curation_summary.json").read_text())
    assert summary["frameworks"]["other"] == other_section
    assert summary["kept"] == 4 and summary["rejected"] == 2
    assert summary["by_framework"] == {"fw": 2, "other": 2}
    assert summary["stale_task_dirs"] == []  # the other framework's tasks are not stale


def test_curate_only_new_on_a_corrupt_task_directory_is_one_line(
    two, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, work = two
    tasks = tmp_path / "tasks"
    assert curate(work, tasks) == 0
    broken = tasks / "fw__3__add_kernel" / "task.json"
    broken.write_text('{"task_id": "fw__3__add_kernel", ')
    before = {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file() and p.name != ".lock"}
    capsys.readouterr()
    assert curate(work, tasks, "--only-new") == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{broken}:1: not valid JSON" in line and "--only-new" in line
    after = {p: p.read_bytes() for p in tasks.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == before
    # without --only-new the broken directory is rebuilt (curator files are kept)
    assert curate(work, tasks) == 0
    assert [d.id for d in task_dirs(tasks)] == [
        "fw__1__add_kernel", "fw__3__add_kernel", "other__1__add_kernel",
        "other__3__scale_kernel",
    ]  # fmt: skip


def test_curate_refuses_a_dedup_threshold_outside_0_1_before_writing(
    two, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, work = two
    tasks = tmp_path / "tasks"
    capsys.readouterr()
    assert curate(work, tasks, "--dedup-threshold", "0") == 1
    assert "--dedup-threshold must be in (0, 1]" in one_error_line(capsys.readouterr().err)
    assert written(tasks) == []
