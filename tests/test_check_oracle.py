"""scripts/check_oracle.py: the gold oracle of a tiny task, spliced into the setup state, gives
back the gold tree (exit 0); a record whose target is not the gold's is reported as a mismatch
naming the file, one that does not splice as an error, and a framework without a repository as
skipped (exit 1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from curation.taskdir import task_dirs
from eval.oracle import oracle_record
from eval.workspace import SourceStore
from mining.git import GitRepo
from tests.tinyfw import make_task_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from check_oracle import CARRIED, ERROR, FLAGGED, IDENTICAL, MISMATCH, check_task, main


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    repo, _work, tasks = make_task_env(tmp_path_factory.mktemp("check-oracle"))
    [tdir] = task_dirs(tasks)
    return repo, tasks, tdir.load_task().framework


def test_the_gold_oracle_of_a_task_is_its_gold(
    env: tuple[Path, Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, tasks, framework = env
    out = tmp_path / "report.json"
    argv = [str(tasks), "--repo-path", f"{framework}={repo}", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert report["counts"]["all"] == {
        "checked": 1, IDENTICAL: 1, CARRIED: 0, MISMATCH: 0, ERROR: 0, "skipped": 0, FLAGGED: 0
    }  # fmt: skip
    [row] = report["results"]
    assert row["status"] == IDENTICAL and row["files"] >= 1
    assert f"{framework}: 1 / 1 / 0 / 0 / 0 / 0 / 0" in capsys.readouterr().out


def test_a_record_that_is_not_the_gold_is_a_mismatch_and_a_broken_one_an_error(
    env: tuple[Path, Path, str], tmp_path: Path
) -> None:
    repo, tasks, _ = env
    [tdir] = task_dirs(tasks)
    store = SourceStore(GitRepo(repo))
    record = oracle_record(tdir, store, "gold", tmp_path / "oracle")
    assert check_task(tdir, store, tmp_path / "ok", record)["status"] == IDENTICAL

    [kernel] = [k for k in record["kernels"] if k["name"] == "add_kernel"]
    assert "x + y" in kernel["source"]
    kernel["source"] = kernel["source"].replace("x + y", "x - y")
    row = check_task(tdir, store, tmp_path / "bad", record)
    assert row["status"] == MISMATCH and row["file"] == "pkg/ops.py"
    assert any(line.startswith("-") and "x + y" in line for line in row["diff"])
    assert any(line.startswith("+") and "x - y" in line for line in row["diff"])

    kernel["source"] = "def add_kernel(:\n"
    row = check_task(tdir, store, tmp_path / "broken", record)
    assert row["status"] == ERROR and row["stage"] == "prediction tree" and row["message"]


def test_a_framework_without_a_repository_is_skipped_and_fails_the_check(
    env: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, tasks, _ = env
    assert main([str(tasks), "--repo-path", f"other={repo}"]) == 1
    assert "1 skipped (no --repo-path for" in capsys.readouterr().out


def test_a_constant_the_setup_state_keeps_for_the_base_kernel_is_carried_not_a_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """flash-linear-attention #eeee0ee84d (2026-12-06): the base kernels read `inv_ln2`, which
    the PR deleted from `fla/ops/gla/chunk_util.py`; the setup state keeps it before them, and
    the gold spliced into the setup state keeps it too (a prediction may use it). That is the
    gold but for the carried constant, as curation's round-trip check says, not a mismatch; a
    kernel that differs still is one."""
    from tests.tinyfw import OPS, mine_ops_fix

    base = OPS.replace("@triton.jit", "SCALE = tl.constexpr(0.0)\n\n\n@triton.jit", 1)
    base = base.replace("x + y * 0.0", "x + y * SCALE")
    gold = OPS.replace("x + y * 0.0", "x + y")
    repo, _work, tasks = mine_ops_fix(tmp_path, base, gold, "Fix the sum of the add kernel (#9)")
    [tdir] = task_dirs(tasks)
    store = SourceStore(GitRepo(repo))
    row = check_task(tdir, store, tmp_path / "ok")
    assert row["status"] == CARRIED and row["carried"] == {"pkg/ops.py": ["SCALE"]}, row
    framework = tdir.load_task().framework
    assert main([str(tasks), "--repo-path", f"{framework}={repo}"]) == 0
    assert "the gold but for the base's carried pkg/ops.py: SCALE" in capsys.readouterr().out
    record = oracle_record(tdir, store, "gold", tmp_path / "oracle")
    [kernel] = [k for k in record["kernels"] if k["name"] == "add_kernel"]
    kernel["source"] = kernel["source"].replace("x + y", "x - y")
    assert check_task(tdir, store, tmp_path / "bad", record)["status"] == MISMATCH


def test_a_gold_the_scorer_would_flag_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """flash-linear-attention #e582c2883f (2026-12-08): its gold wrapper calls `breakpoint()`
    on NaN, and the scorer, which spared only what the gold's *kernels* do, flagged the gold
    scored as a prediction: a task whose gold never completes, found only after GPU time. The
    check runs the scorer's static flags on the record: with the gold targets' own sources the
    wrapper's call is spared (identical); with the kernels' alone (the old rule, put back here)
    the gold is `flagged` and the check fails."""
    import check_oracle

    from tests.tinyfw import OPS, mine_ops_fix

    base = OPS.replace(
        "    return out\n", "    if out.isnan().any():\n        breakpoint()\n    return out\n"
    )
    gold = base.replace("x + y * 0.0", "x + y")
    repo, _work, tasks = mine_ops_fix(tmp_path, base, gold, "Fix the sum of the add kernel (#9)")
    [tdir] = task_dirs(tasks)
    store = SourceStore(GitRepo(repo))
    assert check_task(tdir, store, tmp_path / "ok")["status"] == IDENTICAL
    kernels_only = lambda task, _tdir: [k.after_src for k in task.kernels if k.after_src]  # noqa: E731
    monkeypatch.setattr(check_oracle, "gold_sources", kernels_only)
    row = check_task(tdir, store, tmp_path / "old")
    assert row["status"] == FLAGGED and row["flags"] == ["forbidden_api"], row
    framework = tdir.load_task().framework
    assert main([str(tasks), "--repo-path", f"{framework}={repo}"]) == 1
    assert "the gold, but the scorer would flag it: forbidden_api" in capsys.readouterr().out
