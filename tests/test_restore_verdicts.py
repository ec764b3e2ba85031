"""scripts/restore_verdicts.py: a released verdict goes back into a freshly curated task only
when the task is the one the verdict was made on (gold, test and setup patches identical)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from curation.taskdir import TaskFile, task_dirs
from tests.tinyfw import make_task_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from restore_verdicts import main as restore

VERDICT = {"status": "verified", "reason": "1 fail-to-pass, 0 pass-to-pass",
           "checked_at": "2026-12-02T17:00:00+00:00",
           "environment": "NVIDIA H200; setup 0123456789abcdef"}  # fmt: skip


def _release(folder: Path, rows: list[dict]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "dev-00000-of-00001.parquet")
    return folder


def test_a_verdict_returns_only_to_the_same_setup_state(tmp_path: Path, capsys) -> None:
    _repo, _work, tasks = make_task_env(tmp_path)
    [tdir] = task_dirs(tasks)
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    row = {
        "task_id": tdir.id,
        "gold_patch": (tdir.read_bytes(TaskFile.GOLD_PATCH) or b"").decode(),
        "test_patch": (tdir.read_bytes(TaskFile.TEST_PATCH) or b"").decode(),
        "setup_patch": (tdir.read_bytes(TaskFile.SETUP_PATCH) or b"").decode(),
        "tests": task["tests"],
        "verification": VERDICT,
    }
    changed = {**row, "setup_patch": row["setup_patch"] + "# the setup state it was made on\n"}
    assert restore([str(_release(tmp_path / "old", [changed])), "--tasks", str(tasks)]) == 0
    assert "its patches differ from the released row, skipped" in capsys.readouterr().out
    assert tdir.load_task().verification.status != "verified"
    assert restore([str(_release(tmp_path / "same", [row])), "--tasks", str(tasks)]) == 0
    verdict = tdir.load_task().verification
    assert verdict.status == "verified" and verdict.environment == "NVIDIA H200"
    assert verdict.setup == tdir.setup_digest()  # the patches are identical: this setup state
    # a verdict merged from a GPU call after the release is newer: restoring again keeps it
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    task["verification"] = {**VERDICT, "status": "out_of_scope", "reason": "needs 2 GPUs",
                            "checked_at": "2026-12-03T09:00:00+00:00"}  # fmt: skip
    tdir.path(TaskFile.TASK).write_text(json.dumps(task))
    assert restore([str(tmp_path / "same"), "--tasks", str(tasks)]) == 0
    assert "the directory has a newer verdict" in capsys.readouterr().out
    assert tdir.load_task().verification.status == "out_of_scope"


def test_a_released_workload_and_its_measurement_come_back_with_the_verdict(
    tmp_path: Path, capsys
) -> None:
    """2026-12-04, a new machine: restored without its workload, Liger-Kernel #1187's verified
    optimization went back to "no workload measured yet" at the next `eval rejudge`."""
    from benchmark.__main__ import main as bench
    from eval.workload_model import Workload

    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    calls = [{"label": "large", "source": "benchmark_script", "evidence": "bench.py:3",
              "entry": {"module": "pkg.ops", "name": "add"}, "args": []}]  # fmt: skip
    plan = {"task_id": tdir.id, "metric": "kernel_time", "metric_evidence": "", "calls": calls}
    tdir.path(TaskFile.WORKLOAD).write_text(json.dumps(plan))
    measured = {"task_id": tdir.id, "metric": "kernel_time", "calls": [], "speedup": 2.0,
                "environment": "NVIDIA H200", "measured_at": "2026-12-03"}  # fmt: skip
    tdir.path(TaskFile.WORKLOAD_RESULT).write_text(json.dumps(measured))
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    task["verification"] = {**VERDICT, "environment": "NVIDIA H200"}
    tdir.path(TaskFile.TASK).write_text(json.dumps(task))
    assert bench(["build", "--tasks", str(tasks), "--out", str(tmp_path / "release"),
                  "--version", "1.0.0", "--cutoff", "2020-01-01"]) == 0  # fmt: skip
    for name in (TaskFile.WORKLOAD, TaskFile.WORKLOAD_RESULT):
        tdir.path(name).unlink()
    assert restore([str(tmp_path / "release"), "--tasks", str(tasks)]) == 0
    assert "(1 with their workload)" in capsys.readouterr().out
    workload = tdir.load(TaskFile.WORKLOAD, Workload)
    assert workload is not None and workload.calls[0].entry.name == "add"
    assert json.loads(tdir.path(TaskFile.WORKLOAD_RESULT).read_text())["speedup"] == 2.0
    # a directory's own files are never overwritten
    tdir.path(TaskFile.WORKLOAD_RESULT).write_text('{"mine": 1}')
    restore([str(tmp_path / "release"), "--tasks", str(tasks)])
    assert tdir.path(TaskFile.WORKLOAD_RESULT).read_text() == '{"mine": 1}'
