"""Scoring rules on a tiny framework whose pass-to-pass test a prediction can break alone: the
base kernel drops the sign of x (the PR fixes it), so a test on negative inputs is fail-to-pass
and one on positive inputs pass-to-pass. Run on the CPU with TRITON_INTERPRET=1."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from core.files import write_record
from curation.taskdir import task_dirs
from eval.__main__ import main as eval_main
from tests.tinyfw import mine_sign_fix

HEAD = (
    "@triton.jit\ndef add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    y = tl.load(y_ptr + offs, mask=mask)\n"
)
# right for negative x (the fail-to-pass test), wrong for positive x (the pass-to-pass test)
BREAKS_P2P = HEAD + "    tl.store(out_ptr + offs, tl.where(x < 0, x + y, x - y), mask=mask)\n"
CORRECT = HEAD + "    tl.store(out_ptr + offs, x + y, mask=mask)\n"
SKIPS = "def add(x, y, _skip=__import__('pytest').skip('no', allow_module_level=True)):\n    pass\n"


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The reference of the task, then one scoring of three predictions, row by name."""
    root = tmp_path_factory.mktemp("scoring")
    work, tasks = mine_sign_fix(root, same_file=False)
    common = ["--tasks", str(tasks), "--work", str(work), "--no-isolated-timing",
              "--timeout", "120", "--triton-cache", str(root / "cache")]  # fmt: skip
    assert eval_main(["reference", *common, "--runs", "1", "--out", str(root / "ref")]) == 0
    [tdir] = task_dirs(tasks)
    ref = json.loads((tdir.root / "reference.json").read_text())
    assert ref["valid"], ref["validity_note"]
    assert ref["fail_to_pass"] == ["tests/test_negative.py::test_negative"]
    assert ref["pass_to_pass"] == ["tests/test_positive.py::test_positive"]
    rows = {}
    for name, kernels in (("breaks_p2p", {"add_kernel": BREAKS_P2P}),
                          ("correct", {"add_kernel": CORRECT}),
                          ("skips", {"add_kernel": CORRECT, "add": SKIPS})):  # fmt: skip
        preds = root / f"{name}.jsonl"
        preds.write_text(json.dumps({"task_id": tdir.id, "kernels": kernels}) + "\n")
        out = root / name
        assert eval_main(["score", str(preds), *common, "--out", str(out)]) == 0
        [rows[name]] = json.loads((out / "report.json").read_text())["tasks"]
    for oracle in ("gold", "setup"):  # the benchmark's own check: gold completes, setup does not
        preds = root / f"oracle_{oracle}.jsonl"
        assert eval_main(["oracle", "--tasks", str(tasks), "--work", str(work),
                          "--from", oracle, "--out", str(preds)]) == 0  # fmt: skip
        [record] = [json.loads(line) for line in preds.read_text().splitlines()]
        rows[f"oracle_{oracle}_record"] = record
        out = root / f"oracle_{oracle}"
        assert eval_main(["score", str(preds), *common, "--out", str(out)]) == 0
        [rows[f"oracle_{oracle}"]] = json.loads((out / "report.json").read_text())["tasks"]
    rows["_paths"] = {
        "root": root,
        "tasks": tasks,
        "common": common,
        "gold": root / "oracle_gold.jsonl",
    }
    return rows


def test_breaking_only_a_pass_to_pass_test_does_not_complete(scored) -> None:
    row = scored["breaks_p2p"]
    assert not row["passed"] and not row["exec_ok"]
    assert row["failure"] == "test_failure"


def test_a_correct_prediction_completes(scored) -> None:
    """The rule above is not just everything failing."""
    row = scored["correct"]
    assert row["passed"] and row["exec_ok"] and row["flags"] == []
    assert row["oracle"] == ""  # a model's prediction, not the benchmark's own check


def test_an_all_skipped_prediction_is_infra_and_does_not_complete(scored) -> None:
    row = scored["skips"]
    assert not row["passed"] and not row["exec_ok"]
    assert row["failure"] == "infra"
    assert "unreported_tests" in row["flags"]


def test_the_gold_targets_as_a_prediction_complete_the_task(scored) -> None:
    record = scored["oracle_gold_record"]
    names = {k["name"] for k in record["kernels"]}
    assert {"add_kernel", "add"} <= names  # the kernel and its launch wrapper
    assert "x + y" in next(k["source"] for k in record["kernels"] if k["name"] == "add_kernel")
    row = scored["oracle_gold"]
    assert row["passed"] and row["exec_ok"] and row["flags"] == []
    assert row["oracle"] == "gold"  # the score says which check it was (oracle_coverage.py)


def test_the_setup_state_as_a_prediction_does_not_complete(scored) -> None:
    record = scored["oracle_setup_record"]
    assert "tl.abs(x)" in next(k["source"] for k in record["kernels"] if k["name"] == "add_kernel")
    row = scored["oracle_setup"]
    assert not row["passed"] and row["failure"] == "test_failure"
    assert row["oracle"] == "setup"


def test_an_optimization_verified_on_its_workload_is_not_judged_on_the_tests(scored) -> None:
    """Liger-Kernel #815 on the H200 (2026-12-03): its gold, 3.28x faster than the setup state
    on its workload, was 0.90x on its tests' tiny shapes, and `eval score` without a workload
    run called the gold "correct, but" too slow. A task verified on its workload is flagged
    `workload_not_run` until the run has the prediction's workload times; scoring the same run
    again once it has them rescores that task (one line a task in results.jsonl)."""
    from curation.taskdir import TaskFile
    from eval.workload_model import CallResult, Metric, SizeLabel, Timing
    from eval.workload_run import summarize_result

    paths = scored["_paths"]
    tasks = paths["root"] / "opt_tasks"
    shutil.copytree(paths["tasks"], tasks)
    [tdir] = task_dirs(tasks)
    task = json.loads((tdir.root / "task.json").read_text())
    task["task_type"]["type"] = "optimization"
    (tdir.root / "task.json").write_text(json.dumps(task))

    def timing(ms: float) -> Timing:
        return Timing(ms, ms * 0.99, ms * 1.01, 100)

    def result(pred: float | None) -> CallResult:
        return CallResult(SizeLabel.LARGE, timing(3.0), timing(1.0),
                          timing(pred) if pred else None, True, True if pred else None)  # fmt: skip

    write_record(tdir.root / TaskFile.WORKLOAD_RESULT,
                 summarize_result(tdir.id, Metric.KERNEL_TIME, [result(None)]))  # fmt: skip
    common = [*paths["common"][:1], str(tasks), *paths["common"][2:]]
    out = paths["root"] / "opt_run"
    assert eval_main(["score", str(paths["gold"]), *common, "--out", str(out)]) == 0
    [row] = json.loads((out / "report.json").read_text())["tasks"]
    assert row["exec_ok"] and not row["passed"] and row["flags"] == ["workload_not_run"]
    assert "not timed on the task's workload" in row["detail"]
    # `eval workload --predictions P --out RUN` writes the prediction's times there
    (out / tdir.id).mkdir(parents=True, exist_ok=True)
    write_record(out / tdir.id / TaskFile.WORKLOAD_RESULT,
                 summarize_result(tdir.id, Metric.KERNEL_TIME, [result(1.01)]))  # fmt: skip
    assert eval_main(["score", str(paths["gold"]), *common, "--out", str(out)]) == 0
    [row] = json.loads((out / "report.json").read_text())["tasks"]
    assert row["passed"] and row["workload"] and row["flags"] == []
    assert len((out / "results.jsonl").read_text().splitlines()) == 1
