"""Every command line on bad input: one line naming the file (and line), exit 1 or 2, no
traceback. The task directories come from a tiny real framework, crawled and curated once."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from curation.check import main as check
from curation.curate import main as curate
from envbuild.__main__ import main as envbuild
from eval.__main__ import main as eval_main
from mining.crawl import main as crawl
from tests.gitrepo import add_kernel_history


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("cli")
    repo = add_kernel_history(root / "fw")
    work, tasks = root / "work", root / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    return work, tasks


@pytest.fixture
def tasks(made: tuple[Path, Path], tmp_path: Path) -> Path:
    copy = tmp_path / "tasks"
    shutil.copytree(made[1], copy)
    return copy


def error_line(main: Callable[[list[str]], int], argv: list[str], capsys) -> str:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    assert main(argv) in (1, 2)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_check_reports_a_requirement_that_is_not_utf8_as_that_tasks_error(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tasks / "fw__1__add_kernel" / "requirement.md"
    bad.write_bytes(b"\xff\xfe not text")
    assert check(["--tasks", str(tasks)]) == 1
    out = capsys.readouterr()
    assert f"ERROR fw__1__add_kernel: {bad}: not UTF-8 text" in out.out
    assert "2 tasks checked: 1 ok, 1 with errors" in out.out and "Traceback" not in out.err


def test_check_reports_a_merge_date_and_a_torn_reference_that_do_not_read(
    tasks: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tasks / "fw__2__add_kernel" / "task.json"
    data = json.loads(path.read_text())
    data["merged_at"] = "yesterday"
    path.write_text(json.dumps(data))
    (tasks / "fw__1__add_kernel" / "reference.json").write_text('{"valid": tr')
    assert check(["--tasks", str(tasks)]) == 1
    out = capsys.readouterr().out
    assert "ERROR fw__2__add_kernel: merged_at 'yesterday' is not an ISO 8601 date" in out
    assert "ERROR fw__1__add_kernel: reference.json unreadable:" in out


def test_check_of_a_folder_with_no_task_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = error_line(check, ["--tasks", str(tmp_path / "none")], capsys)
    assert line == f"error: no task directories under {tmp_path / 'none'}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot read"),
        ("[filters\n", "not valid TOML"),
        ("[filters]\nmax_files = 'many'\n", "[filters]: max_files: expected int, got str"),
        ("[filters]\nmax_file = 3\n", "unknown [filters] keys ['max_file']"),
    ],
)
def test_curate_config_that_does_not_read_is_one_line(
    made: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str | None,
    message: str,
) -> None:
    config = tmp_path / "filters.toml"
    if text is not None:
        config.write_text(text)
    argv = ["--work", str(made[0]), "--out", str(tmp_path / "t"), "--config", str(config), "-q"]
    line = error_line(curate, argv, capsys)
    assert line.startswith(f"error: {config}") and message in line


def test_envbuild_with_a_repository_path_that_is_no_repository_is_one_line(
    made: tuple[Path, Path], tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--tasks", str(tasks), "--work", str(made[0]), "--repo-path",
            f"fw={tmp_path / 'nope'}", "--no-lint"]  # fmt: skip
    assert error_line(envbuild, argv, capsys) == f"error: not a git repository: {tmp_path / 'nope'}"


def test_eval_bundle_of_no_repository_and_rejudge_of_a_torn_reference_are_one_line(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bundle", "--tasks", str(tasks), "--repo-path", str(tmp_path / "nope"),
            "--out", str(tmp_path / "b.git")]  # fmt: skip
    line = error_line(eval_main, argv, capsys)
    assert line == f"error: not a git repository: {tmp_path / 'nope'}"
    ref = tasks / "fw__1__add_kernel" / "reference.json"
    ref.write_text('{"valid": tr')
    line = error_line(eval_main, ["rejudge", "--tasks", str(tasks)], capsys)
    assert line.startswith(f"error: {ref}:1: not valid JSON")
