"""scripts/workload_agreement.py: whether the gold's workload totals reproduce, from the results
the GPU calls left (folders and archives, a measurement counted once however often it was
packed), compared within one machine kind and one plan."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from workload_agreement import main as agreement

CALLS = [{"label": "small", "bytes_moved": 1000}, {"label": "large", "bytes_moved": 16000}]


def _result(where: Path, task: str, when: str, gold: float, gpu: str = "NVIDIA H200",
            calls: list[dict[str, object]] = CALLS, metric: str = "kernel_time",
            speedup: float | None = None) -> None:  # fmt: skip
    where.mkdir(parents=True)
    r = {"task_id": task, "metric": metric, "measured_at": when, "gold_total_ms": gold,
         "environment": f"{gpu}; torch 2.11.0+cu130; triton 3.6.0", "calls": calls,
         "speedup": speedup}  # fmt: skip
    (where / "workload_result.json").write_text(json.dumps(r))


def test_agreement_across_days_kinds_and_plans(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    # task a: two days on the H200, 2% apart (agrees); the same first result packed again in a
    # later call's archive counts once
    _result(runs / "d1" / "call1" / "a", "fw__1__a", "2026-12-02T10:00:00", 1.00)
    _result(tmp_path / "pack" / "a", "fw__1__a", "2026-12-02T10:00:00", 1.00)
    _result(runs / "d2" / "call2" / "a", "fw__1__a", "2026-12-03T10:00:00", 1.02)
    (runs / "d2" / "call3").mkdir(parents=True)
    with tarfile.open(runs / "d2" / "call3" / "results.tgz", "w:gz") as tar:
        tar.add(tmp_path / "pack", arcname=".")
    # task b: two days 10% apart (disagrees); a third run on an H100 and a replanned run are
    # other workloads, each alone
    _result(runs / "d1" / "call1" / "b", "fw__2__b", "2026-12-02T11:00:00", 2.0)
    _result(runs / "d2" / "call2" / "b", "fw__2__b", "2026-12-03T11:00:00", 2.2)
    _result(runs / "d3" / "b", "fw__2__b", "2026-12-04T11:00:00", 5.0, gpu="NVIDIA H100 80GB HBM3")
    _result(runs / "d4" / "b", "fw__2__b", "2026-12-05T11:00:00", 2.0, calls=CALLS[:1])
    # task c: twice on one day, 1% apart; task d: once; a failed gold says nothing
    _result(runs / "d1" / "c1", "fw__3__c", "2026-12-02T12:00:00", 3.0)
    _result(runs / "d1" / "c2", "fw__3__c", "2026-12-02T13:00:00", 3.03)
    _result(runs / "d1" / "d", "fw__4__d", "2026-12-02T12:00:00", 3.0)
    _result(runs / "d2" / "d", "fw__4__d", "2026-12-03T12:00:00", 0)
    assert agreement([str(runs)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| fw__")]
    head = "| NVIDIA H200 | kernel_time |"
    assert rows == [
        f"| fw__1__a {head} 2026-12-02: 1, 2026-12-03: 1.02 | 2.0% | yes | - |",
        f"| fw__2__b {head} 2026-12-02: 2, 2026-12-03: 2.2 | 10.0% | no | - |",
        f"| fw__3__c {head} 2026-12-02: 3, 2026-12-02: 3.03 | 1.0% | yes | - |",
    ]
    assert (
        "two or more days (one machine kind, one plan): 2 tasks, 1 with gold totals within 3%"
        in out
    )
    assert "repeated on one day only: 1 tasks, 1 within 3%" in out
    # a looser bound
    assert agreement([str(runs), "--tolerance", "0.1"]) == 0
    assert "2 tasks, 2 with gold totals within 10%" in capsys.readouterr().out


def test_a_cold_sequence_shows_its_speedups_beside_its_totals(tmp_path: Path, capsys) -> None:
    # Megatron-LM #5608 on two H100 hosts: the cold totals (compilation) 22.5% apart, the
    # speed-up the gate judges within 2%
    runs = tmp_path / "runs"
    for call, when, gold, up in (("c38", "T10", 1104.0, 1.257), ("c43", "T22", 901.4, 1.283)):
        _result(runs / call / "m", "mlm__5608__k", f"2026-12-05{when}:00:00", gold,
                gpu="NVIDIA H100 80GB HBM3", metric="cold_wall_time", speedup=up)  # fmt: skip
    assert agreement([str(runs)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| mlm")]
    assert row.endswith("| 22.5% | no | 1.26x, 1.28x (2.1%) |")


def test_a_cold_total_after_the_harness_warm_up_compares_only_with_its_kind(
    tmp_path: Path, capsys
) -> None:
    # a cold round that started Triton on the harness's own kernel first (`runtime_warmed`)
    # measures the task's compilation alone: not the same metric as the totals before it
    runs = tmp_path / "runs"
    _result(runs / "c43" / "m", "mlm__5608__k", "2026-12-05T22:00:00", 901.4,
            gpu="NVIDIA H100 80GB HBM3", metric="cold_wall_time", speedup=1.28)  # fmt: skip
    _result(runs / "c70" / "m", "mlm__5608__k", "2026-12-07T10:00:00", 380.0,
            gpu="NVIDIA H100 80GB HBM3", metric="cold_wall_time", speedup=2.1)  # fmt: skip
    f = runs / "c70" / "m" / "workload_result.json"
    f.write_text(json.dumps({**json.loads(f.read_text()), "runtime_warmed": True}))
    assert agreement([str(runs)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| mlm")]
    assert rows == []  # two metrics measured once each: nothing to compare yet
    assert "repeated on one day only: 0 tasks" in out and "two or more days" in out


def test_a_missing_folder_is_one_clear_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        agreement([str(tmp_path / "nowhere")])
    assert "nowhere: no such folder or archive" in capsys.readouterr().err


def test_help(capsys) -> None:
    with pytest.raises(SystemExit):
        agreement(["--help"])
    assert "--tolerance" in capsys.readouterr().out


def test_an_a_a_control_shows_the_prediction_over_the_base(tmp_path: Path, capsys) -> None:
    # flash-linear-attention #1033 on an H100 (call 62): the setup state scored as the
    # prediction tied the base (1.002) while the gold was 1.105x faster
    runs = tmp_path / "runs"
    _result(runs / "c62" / "w", "fla__1033__k", "2026-12-06T11:10:57", 3702.0)
    r = json.loads((runs / "c62" / "w" / "workload_result.json").read_text())
    r.update(base_total_ms=4092.0, prediction_total_ms=4099.0)
    (runs / "c62" / "w" / "workload_result.json").write_text(json.dumps(r))
    _result(runs / "c63" / "w", "fla__2__k", "2026-12-06T11:20:00", 1.0)  # no prediction: no row
    assert agreement([str(runs)]) == 0
    out = capsys.readouterr().out
    assert "| fla__1033__k | NVIDIA H200 | 2026-12-06T11:10 | 4092 | 3702 | 4099 | 1.002 |" in out
    assert "fla__2__k" not in out.split("prediction / base")[1]


def test_the_verified_optimizations_are_counted_on_plans_measured_on_two_days(
    tmp_path: Path, capsys
) -> None:
    """Issue 10's count (`--tasks`): a verified optimization agrees when some plan of it was
    measured on two days and every such plan's gold totals agree; one measured once (Megatron-LM
    #5608's warm-up plan after call 91) or never is named, as is one whose two days disagree. A
    task not verified, or not an optimization, is not counted."""
    from curation.taskdir import TaskFile, task_dirs
    from tests.tinyfw import make_task_env

    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    tid = tdir.id

    def as_(status: str, kind: str) -> None:
        task["verification"] = {"status": status, "reason": "r", "checked_at": "2026-12-07",
                                "environment": "H100"}  # fmt: skip
        task["task_type"] = {"type": kind, "evidence": []}
        tdir.path(TaskFile.TASK).write_text(json.dumps(task))

    def count(runs: Path) -> list[str]:
        assert agreement([str(runs), "--tasks", str(tasks)]) == 0
        out = capsys.readouterr().out
        return out[out.index("verified optimization tasks") :].splitlines()

    runs = tmp_path / "runs"
    _result(runs / "d1" / "other", "fw__9__other", "2026-12-02T10:00:00", 1.0)
    as_("verified", "optimization")
    assert count(runs) == [
        "verified optimization tasks: 1; measured on two or more days (one machine kind, one "
        "plan) within 3%: 0",
        f"  not (yet): {tid}: 0 run(s), no plan measured on two days",
    ]
    _result(runs / "d1" / "t", tid, "2026-12-02T10:00:00", 1.0)
    _result(runs / "d1" / "t2", tid, "2026-12-02T11:00:00", 1.0)  # one day only
    assert count(runs)[1] == f"  not (yet): {tid}: 2 run(s), no plan measured on two days"
    _result(runs / "d2" / "t", tid, "2026-12-03T10:00:00", 1.02)
    assert count(runs)[0].endswith("within 3%: 1") and len(count(runs)) == 1
    # another machine kind measured on two days 10% apart: the task does not agree
    h100 = "NVIDIA H100 80GB HBM3"
    _result(runs / "d3" / "t", tid, "2026-12-04T10:00:00", 2.0, gpu=h100)
    _result(runs / "d4" / "t", tid, "2026-12-05T10:00:00", 2.2, gpu=h100)
    assert count(runs)[1:] == [f"  not (yet): {tid}: 10.0% apart"]
    for status, kind in (("unverified", "optimization"), ("verified", "bug_fix")):
        as_(status, kind)
        assert count(runs)[0].startswith("verified optimization tasks: 0;")
    with pytest.raises(SystemExit):
        agreement([str(runs), "--tasks", str(tmp_path / "nowhere")])
    assert "nowhere: no such folder" in capsys.readouterr().err
