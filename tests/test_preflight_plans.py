"""scripts/preflight_plans.py: a kernel-level workload plan cut to a few rows and run, base and
gold, in the Triton interpreter; what fails there (a block that is no power of two) is named
before a GPU call spends minutes on it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from curation.taskdir import TaskFile
from eval.workload_model import (
    ArgSpec,
    Entry,
    EntryKind,
    Metric,
    SizeLabel,
    Source,
    Workload,
    WorkloadCall,
)
from tests.test_workload import _task_repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from preflight_plans import cut
from preflight_plans import main as preflight

os.environ.setdefault("TRITON_INTERPRET", "1")

KERNEL = Entry("pkg.ops.rowscale", "rowscale_kernel", EntryKind.KERNEL)


def _launch(rows: int, cols: int, block: int) -> WorkloadCall:
    """The tiny framework's rowscale kernel at `rows` x `cols`, one program a row."""
    x = ArgSpec("x", True, (rows, cols), "float32")
    return WorkloadCall(
        SizeLabel.SMALL, Source.MODEL_CONFIG, "test", KERNEL,
        (x, ArgSpec("w", True, (cols,), "float32"),
         ArgSpec("out", True, (rows, cols), "float32", rule="zeros"),
         ArgSpec("n_cols", False, value=cols), ArgSpec("BLOCK", False, value=block, keyword=True)),
        {"tokens": rows, "hidden_size": cols}, grid=(rows,))  # fmt: skip


def test_a_cut_launch_keeps_its_widths_and_shrinks_its_rows() -> None:
    call = _launch(4096, 96, 128)
    offsets = ArgSpec("cu", True, (9,), "int32", rule="offsets", params={"total": 4096})
    call = WorkloadCall(call.label, call.source, call.evidence, call.entry,
                        (*call.args, offsets, ArgSpec("rows", False, value=4096)),
                        call.dims, grid=(4096, 256))  # fmt: skip
    small = cut(call, 2)
    assert small is not None
    shapes = {a.name: a.shape for a in small.args if a.tensor}
    assert shapes == {"x": (2, 96), "w": (96,), "out": (2, 96), "cu": (9,)}
    values = {a.name: a.value for a in small.args if not a.tensor}
    assert values == {"n_cols": 96, "BLOCK": 128, "rows": 2}
    assert small.args[5].params == {"total": 2}
    # one program a row follows the rows; 256 = ceil(4096 / 16) follows them in blocks of 16
    assert small.grid == (2, 1) and small.dims["tokens"] == 2
    # a wrapper's call is the tests' business
    wrapper = WorkloadCall(SizeLabel.SMALL, Source.TEST_CALL, "t", Entry("pkg.ops.rowscale",
                           "rowscale"), call.args[:2], {"tokens": 4096})  # fmt: skip
    assert cut(wrapper, 2) is None


def test_preflight_runs_the_cut_plan_and_names_what_fails(tmp_path: Path, capsys) -> None:
    repo, tasks, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    repo_path = ["--repo-path", f"{task.framework}={repo.path}"]
    # a model-sized launch: 65536 rows of 3072 columns, its block 4096 (a power of two)
    good = Workload(task.task_id, Metric.KERNEL_TIME, "default", (_launch(65536, 3072, 4096),))
    tdir.store(TaskFile.WORKLOAD, good)
    assert preflight(["--tasks", str(tasks), *repo_path]) == 0
    out = capsys.readouterr().out
    assert f"{task.task_id}: ok (1 launches cut to 2 rows: small)" in out
    assert "1 ok, 0 failed, 0 passed over" in out
    # the block at the width itself, as a planner that renamed it by value would give it
    bad = Workload(task.task_id, Metric.KERNEL_TIME, "default", (_launch(65536, 3072, 3072),))
    tdir.store(TaskFile.WORKLOAD, bad)
    assert preflight(["--tasks", str(tasks), *repo_path]) == 1
    out = capsys.readouterr().out
    assert "failed: small: base:" in out and "power of 2" in out
    # the task directory keeps its own plan
    kept = tdir.load(TaskFile.WORKLOAD, Workload)
    assert kept is not None and kept.calls[0].args[0].shape == (65536, 3072)


def test_bad_input_gets_one_line(tmp_path: Path, capsys) -> None:
    assert preflight(["--tasks", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: no task directories under")
    with pytest.raises(SystemExit):
        preflight(["--rows", "0"])
    assert "--rows must be at least 1" in capsys.readouterr().err


def test_help(capsys) -> None:
    with pytest.raises(SystemExit):
        preflight(["--help"])
    assert "--rows" in capsys.readouterr().out


def test_outputs_that_differ_fail_an_optimization_only(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    import json

    from eval import workload_run

    repo, tasks, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, Workload(task.task_id, Metric.KERNEL_TIME, "default",
                                           (_launch(64, 32, 32),)))  # fmt: skip
    real = workload_run.measure_task

    def differing(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(*args, **kwargs)
        calls = tuple(dataclasses.replace(c, base_matches=False) for c in result.calls)
        return dataclasses.replace(result, calls=calls)

    monkeypatch.setattr(workload_run, "measure_task", differing)
    argv = ["--tasks", str(tasks), "--repo-path", f"{task.framework}={repo.path}"]
    assert preflight(argv) == 1  # the tiny PR is an optimization: its base must match
    assert "failed: small: base and gold outputs differ" in capsys.readouterr().out
    record = json.loads(tdir.path(TaskFile.TASK).read_text())
    record["task_type"]["type"] = "bug_fix"
    tdir.path(TaskFile.TASK).write_text(json.dumps(record))
    assert preflight(argv) == 0  # a fix changes what the kernel computes
    assert "ok (1 launches cut to 2 rows: small); base and gold outputs differ (bug_fix)" in (
        capsys.readouterr().out
    )
