"""scripts/oracle_coverage.py: which verified tasks the gold and the setup state were scored on,
from score results as the GPU calls kept them (rows with `oracle`, older rows told by their run
folder or log name, markdown tables in logs, inside archives)."""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

from curation.taskdir import TaskFile, task_dirs
from tests.tinyfw import make_task_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from oracle_coverage import legacy_oracle
from oracle_coverage import main as coverage


def _verified(tasks: Path) -> str:
    [tdir] = task_dirs(tasks)
    task = json.loads(tdir.path(TaskFile.TASK).read_text())
    task["verification"] = {"status": "verified", "reason": "1 fail-to-pass",
                            "checked_at": "2026-12-03", "environment": "H200"}  # fmt: skip
    tdir.path(TaskFile.TASK).write_text(json.dumps(task))
    return tdir.id


def test_each_check_is_counted_from_where_the_calls_left_it(tmp_path: Path, capsys) -> None:
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    tid = _verified(tasks)
    runs = tmp_path / "runs"
    # nothing scored yet: the task is listed for both checks
    runs.mkdir()
    assert coverage([str(runs), "--tasks", str(tasks), "--unscored", "gold"]) == 0
    assert capsys.readouterr().out.split() == [tid]
    # a legacy run folder (2026-12-02's "ss": the setup state) inside a call's results.tgz
    (tmp_path / "pack" / "ss").mkdir(parents=True)
    row = {"task_id": tid, "has_prediction": True, "passed": False, "failure": "test_failure"}
    (tmp_path / "pack" / "ss" / "results.jsonl").write_text(json.dumps(row) + "\n")
    (runs / "call5").mkdir()
    with tarfile.open(runs / "call5" / "results.tgz", "w:gz") as tar:
        tar.add(tmp_path / "pack", arcname=".")
    # the gold: a log that printed the report's table (no results.jsonl came back)
    (runs / "lig_gold.log").write_text(
        "| task | passed | failure | flags |\n|---|---|---|---|\n"
        f"| {tid} | yes | none | - |\n| other__1__k | no | no_prediction | - |\n"
    )
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "| all | 1 | 1 | 1 | 1 | 0 |" in out and "completed:" not in out
    # a task the score refused before running it is not scored (call 73: a reference on other
    # packages than the carried key); its table row says "no | infra" all the same
    (runs / "lig_gold.log").write_text(
        "| task | passed | failure | flags |\n|---|---|---|---|\n"
        f"| {tid} | no | infra | - |\n\n{tid}: not run: EvalError: the reference ran on other"
        " package versions than this run would\n"
    )
    assert coverage([str(runs), "--tasks", str(tasks), "--unscored", "gold"]) == 0
    assert capsys.readouterr().out.split() == [tid]
    # nor is one in a report.md beside its results.jsonl, which holds the rows that ran
    (runs / "lig_gold.log").unlink()
    (runs / "sgold0").mkdir()
    (runs / "sgold0" / "report.md").write_text(
        f"| task | passed | failure | flags |\n|---|---|---|---|\n| {tid} | no | infra | - |\n"
    )
    (runs / "sgold0" / "results.jsonl").write_text("")
    assert coverage([str(runs), "--tasks", str(tasks), "--unscored", "gold"]) == 0
    assert capsys.readouterr().out.split() == [tid]
    shutil.rmtree(runs / "sgold0")
    (runs / "lig_gold.log").write_text(
        "| task | passed | failure | flags |\n|---|---|---|---|\n"
        f"| {tid} | yes | none | - |\n| other__1__k | no | no_prediction | - |\n"
    )
    # a row that says which check it was wins over its folder's name; a broken promise is named
    (runs / "lgold").mkdir()
    row = {"task_id": tid, "has_prediction": True, "passed": True, "oracle": "setup"}
    (runs / "lgold" / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    assert f"setup state completed: {tid}" in capsys.readouterr().out
    # a gold that never completed is named with why, in its rows' words: a flag, a failure
    # class, or tests that passed short of the rest of the rule (an optimization's gain)
    (runs / "lig_gold.log").write_text(
        f"| task | passed | failure | flags |\n|---|---|---|---|\n| {tid} | no | none | - |\n"
    )
    (runs / "fgold").mkdir()
    flagged = {"task_id": tid, "has_prediction": True, "passed": False, "oracle": "gold",
               "failure": "none", "flags": ["forbidden_api"]}  # fmt: skip
    (runs / "fgold" / "results.jsonl").write_text(json.dumps(flagged) + "\n")
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    assert (f"gold scored and never completed: {tid} (flagged forbidden_api; tests passed, "
            "not completed)") in capsys.readouterr().out  # fmt: skip
    shutil.rmtree(runs / "fgold")
    (runs / "lig_gold.log").write_text(
        "| task | passed | failure | flags |\n|---|---|---|---|\n"
        f"| {tid} | yes | none | - |\n| other__1__k | no | no_prediction | - |\n"
    )
    assert coverage([str(runs), "--tasks", str(tasks), "--unscored", "setup"]) == 0
    assert capsys.readouterr().out.strip() == ""
    # the gold's PMR (issue 10: 1 +- 0.03): one score within the band is enough, and a task
    # whose every score falls outside is named with them
    (runs / "sgold").mkdir()
    row = {"task_id": tid, "has_prediction": True, "passed": True, "oracle": "gold", "pmr": 0.52}
    (runs / "sgold" / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "gold PMR within 1 +- 0.03: 0 of the 1 verified" in out
    assert f"gold PMR outside: {tid} (0.520)" in out
    (runs / "sgold" / "results.jsonl").write_text(
        json.dumps(row) + "\n" + json.dumps(row | {"pmr": 0.99}) + "\n"
    )
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "gold PMR within 1 +- 0.03: 1 of the 1 verified" in out and "outside" not in out
    assert "timed with no other process" not in out  # no row says how it was timed
    # the rows of 2026-12-06's calls 53-56 said `timed_beside` 0 beside fifteen references
    # (NVML's list inside the sandbox): not read as timed alone
    (runs / "sgold" / "results.jsonl").write_text(json.dumps(row | {"timed_beside": 0}) + "\n")
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    assert "timed with no other process" not in capsys.readouterr().out
    # rows since then say how many other processes were on the GPU, at least (`gpu_company`):
    # the band is counted over those timed alone too
    (runs / "sgold" / "results.jsonl").write_text(
        json.dumps(row | {"gpu_company": 0})
        + "\n"
        + json.dumps(row | {"pmr": 0.99, "gpu_company": 4})
        + "\n"
    )
    assert coverage([str(runs), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "gold PMR within 1 +- 0.03: 1 of the 1 verified" in out
    assert "of those timed with no other process on the GPU: 0 of 1" in out


def test_legacy_names() -> None:
    assert legacy_oracle(Path("x/fsetup/results.jsonl")) == "setup"
    assert legacy_oracle(Path("x/sg2/report.md")) == "gold"
    assert legacy_oracle(Path("x/score1112_gold.log")) == "gold"
    assert legacy_oracle(Path("x/fla.log")) is None  # a gate's log, not a score


def test_help(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit):
        coverage(["--help"])
    assert "--unscored" in capsys.readouterr().out
