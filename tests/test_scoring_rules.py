"""Scoring rules on a tiny framework whose pass-to-pass test a prediction can break alone: the
base kernel drops the sign of x (the PR fixes it), so a test on negative inputs is fail-to-pass
and one on positive inputs pass-to-pass. Run on the CPU with TRITON_INTERPRET=1."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from curation.taskdir import task_dirs
from eval.__main__ import main as eval_main
from tests.gitrepo import TinyRepo
from tests.tinyfw import CONFTEST, TEST_NEGATIVE, TEST_POSITIVE, mine
from tests.tinyfw import SIGN_GOLD as GOLD
from tests.tinyfw import SIGN_OPS as OPS

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
    repo = TinyRepo(root / "fw")
    repo.write("conftest.py", CONFTEST)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", OPS)
    repo.write("tests/test_positive.py", TEST_POSITIVE)
    repo.commit("Add the add kernel")
    repo.write("pkg/ops.py", GOLD)
    repo.write("tests/test_negative.py", TEST_NEGATIVE)
    repo.commit("Keep the sign of x in add (#3)")
    work, tasks = mine(repo.path, root)
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
    return rows


def test_breaking_only_a_pass_to_pass_test_does_not_complete(scored) -> None:
    row = scored["breaks_p2p"]
    assert not row["passed"] and not row["exec_ok"]
    assert row["failure"] == "test_failure"


def test_a_correct_prediction_completes(scored) -> None:
    """The rule above is not just everything failing."""
    row = scored["correct"]
    assert row["passed"] and row["exec_ok"] and row["flags"] == []


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


def test_the_setup_state_as_a_prediction_does_not_complete(scored) -> None:
    record = scored["oracle_setup_record"]
    assert "tl.abs(x)" in next(k["source"] for k in record["kernels"] if k["name"] == "add_kernel")
    row = scored["oracle_setup"]
    assert not row["passed"] and row["failure"] == "test_failure"
