"""`benchmark build` on bad input: no tasks folder, no usable task, no new task, a truncated
manifest, a task whose row cannot be built. Each is one line, and no version is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("datasets")

from benchmark.__main__ import main as bench
from curation.curate import main as curate
from mining.crawl import main as crawl
from tests.test_benchmark import make_repo

CUTOFF = "2023-11-15T01:00:00+00:00"


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path)
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    return tasks


def build(tasks: Path, out: Path, version: str, *extra: str) -> int:
    return bench(["build", "--tasks", str(tasks), "--out", str(out), "--version", version,
                  "--cutoff", CUTOFF, *extra])  # fmt: skip


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != ".lock"  # the lock names its latest holder
    }


def test_build_refuses_a_missing_or_empty_tasks_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    assert build(tmp_path / "nope", out, "1.0.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert line == f"error: tasks folder {tmp_path / 'nope'} does not exist (--tasks)"
    (tmp_path / "empty").mkdir()
    assert build(tmp_path / "empty", out, "1.0.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert line == f"error: no task directories under {tmp_path / 'empty'} (--tasks)"
    assert not out.exists()  # the version number is not used up


def test_build_records_no_version_without_new_tasks_unless_allowed(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    assert build(tasks, out, "1.0.0") == 0
    before = snapshot(out)
    capsys.readouterr()
    assert build(tasks, out, "1.1.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert "version 1.1.0 would add no task: the 2 usable tasks" in line
    assert "--allow-empty" in line
    assert snapshot(out) == before
    assert build(tasks, out, "1.1.0", "--allow-empty") == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert [r["version"] for r in manifest["releases"]] == ["1.0.0", "1.1.0"]
    assert manifest["releases"][1]["added"] == []


def test_build_with_tasks_missing_fields_records_no_release(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in tasks.glob("*/task.json"):
        data = json.loads(path.read_text())
        del data["merged_at"]
        path.write_text(json.dumps(data))
    out = tmp_path / "dist"
    capsys.readouterr()
    assert build(tasks, out, "1.0.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert "version 1.0.0 would add no task: 2 of the task directories" in line
    assert "fw__1__add_kernel: check: task.json unreadable:" in line
    assert "merged_at: missing" in line
    assert not (out / "manifest.json").exists()


def test_build_refuses_a_truncated_manifest_in_one_line(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    assert build(tasks, out, "1.0.0") == 0
    manifest = out / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:100])
    before = snapshot(out)
    capsys.readouterr()
    assert build(tasks, out, "1.1.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"error: {manifest}:") and "not valid JSON" in line
    assert snapshot(out) == before
    manifest.write_text(json.dumps({"releases": [{"version": "1.0.0", "splits": []}]}))
    assert build(tasks, out, "1.1.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{manifest}: releases[0]" in line


def test_build_reports_a_task_whose_row_cannot_be_built_in_one_line(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # readable JSON (the check passes it) that is not a reference record
    (tasks / "fw__2__add_kernel" / "reference.json").write_text('{"valid": "yes"}')
    out = tmp_path / "dist"
    capsys.readouterr()
    assert build(tasks, out, "1.0.0") == 1
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("error: task fw__2__add_kernel: its row cannot be built:")
    assert "reference.json" in line
    assert not (out / "manifest.json").exists()
