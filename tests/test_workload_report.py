"""scripts/workload_report.py: the table of verified optimization tasks (issue 10): source,
sizes, base and gold times with their spread, the speedup on the totals and the efficiency."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from core.files import write_record
from curation.taskdir import TaskFile, task_dirs
from eval.workload_model import (
    ArgSpec,
    CallResult,
    Entry,
    Metric,
    SizeLabel,
    Source,
    Timing,
    Workload,
    WorkloadCall,
    WorkloadResult,
)
from tests.tinyfw import make_task_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from workload_report import main as report


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p25_ms=ms * 0.99, p75_ms=ms * 1.01, reps=10)


def _measured(tasks: Path, kind: str, status: str, base: tuple[float, float]) -> str:
    [tdir] = task_dirs(tasks)
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    task["task_type"]["type"] = kind
    task["verification"] = {"status": status, "reason": "workload", "checked_at": "2026-12-05",
                            "environment": "H100"}  # fmt: skip
    tdir.path(TaskFile.TASK).write_text(json.dumps(task))
    entry = Entry("pkg.ops", "add")
    calls = tuple(
        WorkloadCall(label, Source.BENCHMARK_SCRIPT, "bench.py:3", entry,
                     (ArgSpec("x", True, (n,), "float32"),), dims={"N": n, "x": n})
        for label, n in ((SizeLabel.SMALL, 4096), (SizeLabel.LARGE, 65536))
    )  # fmt: skip
    write_record(
        tdir.path(TaskFile.WORKLOAD), Workload(tdir.id, Metric.KERNEL_TIME, "default", calls)
    )
    rows = tuple(
        CallResult(c.label, _timing(b), _timing(g), gold_efficiency=0.5)
        for c, b, g in zip(calls, base, (0.1, 0.4), strict=True)
    )
    write_record(tdir.path(TaskFile.WORKLOAD_RESULT), WorkloadResult(
        tdir.id, Metric.KERNEL_TIME, rows, "NVIDIA H100 80GB HBM3; torch 2.11.0; triton 3.6.0",
        "2026-12-05T19:19:03+00:00", sum(base), 0.5, speedup=sum(base) / 0.5))  # fmt: skip
    return tdir.id


def test_a_verified_optimization_gets_a_row_per_size(tmp_path: Path, capsys) -> None:
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    _measured(tasks, "optimization", "verified", (0.2, 0.8))
    assert report([str(tasks)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == (
        "| fw #7 (verified) | H100 80GB HBM3, 2026-12-05 | kernel_time, benchmark_script "
        "| small: N=4096 | 0.2 (0.198-0.202) | 0.1 (0.099-0.101) "
        "| **2.00x** (1 / 0.5 ms, apart) | 0.71 |"
    )  # stored as 0.5 of the H200's 4.3 TB/s: 0.71 of the H100's measured 3.047 TB/s
    assert out[3].startswith("|  |  |  | large: N=65536 | 0.8 (0.792-0.808) | 0.4 (0.396-0.404) |")
    assert out[-1] == ("1 tasks; 1 with the gold at least 1.1x faster, spreads apart; "
                       "measured on NVIDIA H100 80GB HBM3")  # fmt: skip


def test_only_verified_optimizations_unless_all(tmp_path: Path, capsys) -> None:
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    _measured(tasks, "optimization", "unverified", (0.1, 0.4))  # a tie: spreads overlap
    assert report([str(tasks)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 tasks;")
    assert report([str(tasks), "--all"]) == 0
    out = capsys.readouterr().out
    assert "| fw #7 (unverified) |" in out and "**1.00x** (0.5 / 0.5 ms, overlap)" in out
    assert out.splitlines()[-1].startswith("1 tasks; 0 with the gold")


def test_a_result_without_totals_is_shown_without_a_speedup(tmp_path: Path, capsys) -> None:
    # a variant that failed on every call leaves no totals (flash-linear-attention workloads cut
    # at their limit); the report crashed formatting them
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    tid = _measured(tasks, "optimization", "unverified", (0.1, 0.4))
    path = tasks / tid / TaskFile.WORKLOAD_RESULT
    data = json.loads(path.read_text())
    data.update(base_total_ms=None, speedup=None)
    path.write_text(json.dumps(data))
    assert report([str(tasks), "--all"]) == 0
    out = capsys.readouterr().out
    assert "| fw #7 (unverified) |" in out and "x** (" not in out


def test_a_cold_sequence_shows_no_efficiency(tmp_path: Path, capsys) -> None:
    # its times hold compilation and its bytes are the plan's estimate (Megatron-LM #5608)
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    tid = _measured(tasks, "optimization", "verified", (0.2, 0.8))
    path = tasks / tid / TaskFile.WORKLOAD_RESULT
    path.write_text(path.read_text().replace('"kernel_time"', '"cold_wall_time"'))
    assert report([str(tasks)]) == 0
    rows = capsys.readouterr().out.splitlines()[2:4]
    assert all(r.startswith("|") and r.endswith("| - |") for r in rows), rows


def test_help_and_a_missing_folder(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        report(["--help"])
    assert e.value.code == 0 and "verified optimization task" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        report([str(tmp_path / "nope")])
    assert e.value.code == 2 and "no such folder" in capsys.readouterr().err
