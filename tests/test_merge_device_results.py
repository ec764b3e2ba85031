"""scripts/merge_device_results.py: what a GPU call brought back goes into the task directory it
was carried from only when it was made on that task (same targets and setup state), never over
a newer verdict, from folders or from the call's nested archive."""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

from curation.taskdir import TaskFile, task_dirs
from tests.tinyfw import make_task_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from merge_device_results import main as merge

VERDICT = {"status": "verified", "reason": "1 fail-to-pass, 0 pass-to-pass",
           "checked_at": "2026-12-03T10:22:44+00:00", "environment": "NVIDIA H200"}  # fmt: skip


def _run_copy(tdir_root: Path, into: Path, **change: object) -> Path:
    """The task directory as a GPU call returns it: task.json with a verdict, reference.json."""
    run = into / tdir_root.name
    run.mkdir(parents=True)
    task = json.loads((tdir_root / "task.json").read_text())
    task["verification"] = {**VERDICT, **change.pop("verification", {})}
    task["tests"]["node_ids"] = ["tests/test_values.py::test_values"]
    task.update(change)
    (run / "task.json").write_text(json.dumps(task))
    (run / "reference.json").write_text('{"from": "the gpu"}')
    return run


def test_a_run_returns_only_to_its_own_task_and_never_over_a_newer_verdict(
    tmp_path: Path, capsys
) -> None:
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    before = tdir.path(TaskFile.TASK).read_bytes()
    # another curation's targets: skipped, nothing written
    _run_copy(tdir.root, tmp_path / "other", targets=[])
    assert merge([str(tmp_path / "other"), "--tasks", str(tasks)]) == 1
    assert "targets differ" in capsys.readouterr().out
    assert tdir.path(TaskFile.TASK).read_bytes() == before
    assert not tdir.path(TaskFile.REFERENCE).exists()
    # a run on another setup state: skipped
    _run_copy(tdir.root, tmp_path / "setup", verification={"setup": "0123456789abcdef"})
    assert merge([str(tmp_path / "setup"), "--tasks", str(tasks)]) == 1
    assert "setup state 0123456789abcdef" in capsys.readouterr().out
    # the call's archive, holding an archive of the task files (call5.sh packs so)
    run = _run_copy(tdir.root, tmp_path / "call" / "tasks")
    (run / "workload_result.json").write_text('{"measured_at": "2026-12-03T10:30:00+00:00"}')
    (run / "workload.json").write_text('{"plan": 0}')
    with tarfile.open(tmp_path / "call" / "tasks.tar", "w") as tar:
        tar.add(run, arcname=f"./{run.name}")
    shutil.rmtree(run.parent)
    with tarfile.open(tmp_path / "results.tgz", "w:gz") as tar:
        tar.add(tmp_path / "call" / "tasks.tar", arcname="tasks.tar")
    assert merge([str(tmp_path / "results.tgz"), "--tasks", str(tasks)]) == 0
    assert "merged: verified" in capsys.readouterr().out
    task = tdir.load_task()
    assert task.verification.status == "verified" and task.verification.setup
    assert task.tests.node_ids == ("tests/test_values.py::test_values",)
    assert tdir.path(TaskFile.REFERENCE).read_text() == '{"from": "the gpu"}'
    # the plan a workload result was measured on comes with it
    assert tdir.path(TaskFile.WORKLOAD).read_text() == '{"plan": 0}'
    # an older run does not replace the newer verdict
    older = {"checked_at": "2026-12-01T00:00:00+00:00", "status": "unverified", "reason": "x"}
    _run_copy(tdir.root, tmp_path / "old", verification=older)
    assert merge([str(tmp_path / "old"), "--tasks", str(tasks)]) == 1
    assert "newer verdict" in capsys.readouterr().out
    assert tdir.load_task().verification.status == "verified"
    # nor its reference where the directory has none (a verdict restored from a release has
    # no reference.json; 2026-12-05: adding older runs' references there brought back 22
    # verdicts they had replaced when the state was rebuilt)
    tdir.path(TaskFile.REFERENCE).unlink()
    assert merge([str(tmp_path / "old"), "--tasks", str(tasks)]) == 1
    assert not tdir.path(TaskFile.REFERENCE).exists()
    tdir.path(TaskFile.REFERENCE).write_text('{"from": "the gpu"}')
    # the run its verdict came from, rejudged since (a workload verified it): the verdict
    # stays, a run file the directory lacks comes back, none is overwritten
    rejudged = {**VERDICT, "reason": "2 tests pass with the gold; workload 1.46x",
                "setup": task.verification.setup}  # fmt: skip
    data = json.loads(tdir.path(TaskFile.TASK).read_text())
    data["verification"] = rejudged
    tdir.path(TaskFile.TASK).write_text(json.dumps(data))
    tdir.path(TaskFile.REFERENCE).unlink()
    again = _run_copy(tdir.root, tmp_path / "again", verification={"reason": "no workload yet"})
    (again / "workload_result.json").write_text("{}")
    tdir.path(TaskFile.WORKLOAD_RESULT).write_text('{"kept": true}')
    assert merge([str(tmp_path / "again"), "--tasks", str(tasks)]) == 0
    assert "has this run's verdict (verified), added reference.json" in capsys.readouterr().out
    assert tdir.load_task().verification.reason == rejudged["reason"]
    assert tdir.path(TaskFile.REFERENCE).read_text() == '{"from": "the gpu"}'
    assert tdir.path(TaskFile.WORKLOAD_RESULT).read_text() == '{"kept": true}'
    # 2026-12-05, call 34: the same verdict timed again on a new plan (Megatron-LM #4460: the
    # first plan failed on the base, the second measured 1.00x): the later result and its plan
    # replace the earlier ones; an earlier result never replaces a later one
    first = '{"measured_at": "2026-12-03T20:10:49+00:00", "speedup": null}'
    tdir.path(TaskFile.WORKLOAD_RESULT).write_text(first)
    tdir.path(TaskFile.WORKLOAD).write_text('{"plan": 1}')
    later = _run_copy(tdir.root, tmp_path / "later", verification={"reason": "timed again"})
    (later / "workload_result.json").write_text('{"measured_at": "2026-12-05T14:30:26+00:00"}')
    (later / "workload.json").write_text('{"plan": 2}')
    assert merge([str(tmp_path / "later"), "--tasks", str(tasks)]) == 0
    assert "added workload_result.json; workload.json" in capsys.readouterr().out
    assert tdir.path(TaskFile.WORKLOAD).read_text() == '{"plan": 2}'
    (later / "workload_result.json").write_text(first)
    (later / "workload.json").write_text('{"plan": 1}')
    assert merge([str(tmp_path / "later"), "--tasks", str(tasks)]) == 0
    assert tdir.path(TaskFile.WORKLOAD).read_text() == '{"plan": 2}'


def test_a_run_that_takes_a_verified_task_out_says_so(tmp_path: Path, capsys) -> None:
    """Call 88 (2026-12-07): #1033's third workload measurement (1.02x) and #1112's recorder
    (which had lost its restored tests) each left a verified task unverified, and both read as
    any other "merged" line. Such a line now says "no longer verified", and the summary counts
    them; a run that keeps a task verified, or judges an unverified one, says nothing more."""
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    _run_copy(tdir.root, tmp_path / "first")
    assert merge([str(tmp_path / "first"), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "merged: verified (1 fail-to-pass" in out and "no longer verified" not in out
    slower = {"checked_at": "2026-12-07T21:46:07+00:00", "status": "unverified",
              "reason": "gold not faster enough on the workload: 1.02x (needs 1.1x)"}  # fmt: skip
    _run_copy(tdir.root, tmp_path / "second", verification=slower)
    assert merge([str(tmp_path / "second"), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "merged: unverified (no longer verified) (gold not faster enough" in out
    assert out.rstrip().endswith(
        "1 merged, 0 kept, 0 partial, 0 skipped; 1 no longer verified: read their reasons after "
        "`eval rejudge`"
    )
    again = {**slower, "checked_at": "2026-12-08T00:00:00+00:00"}
    _run_copy(tdir.root, tmp_path / "third", verification=again)
    assert merge([str(tmp_path / "third"), "--tasks", str(tasks)]) == 0
    assert "no longer verified" not in capsys.readouterr().out  # it was not verified


def test_a_partial_reference_goes_back_for_the_next_call_and_a_verdict_removes_it(
    tmp_path: Path, capsys
) -> None:
    """Call 18: tasks that the call's end cut come back as reference.partial.json alone (their
    task.json unchanged): it replaces the directory's, so the next call resumes from it; the
    task's verdict, when it comes, removes it."""
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    cut = tmp_path / "cut" / tdir.root.name
    cut.mkdir(parents=True)
    (cut / "reference.partial.json").write_text(json.dumps({"task_id": tdir.id, "runs": [{}, {}]}))
    tdir.path(TaskFile.REFERENCE_PARTIAL).write_text("{}")  # an earlier call's, with less
    assert merge([str(tmp_path / "cut"), "--tasks", str(tasks)]) == 0
    out = capsys.readouterr().out
    assert "2 finished run(s) kept" in out and "1 partial" in out
    assert tdir.path(TaskFile.REFERENCE_PARTIAL).read_text() == (cut / "reference.partial.json"
                                                                  ).read_text()  # fmt: skip
    _run_copy(tdir.root, tmp_path / "done")
    assert merge([str(tmp_path / "done"), "--tasks", str(tasks)]) == 0
    assert "merged: verified" in capsys.readouterr().out
    assert not tdir.path(TaskFile.REFERENCE_PARTIAL).exists()
    # 2026-12-06, fourth session: the cut call merged again after the one that finished the
    # task brought its partial back beside the verdict (ten stale partials listed to run again)
    assert merge([str(tmp_path / "cut"), "--tasks", str(tasks)]) == 1
    assert "a partial reference (undated) older than the verdict" in capsys.readouterr().out
    assert not tdir.path(TaskFile.REFERENCE_PARTIAL).exists()
    # a partial saved after the verdict is a rerun (--force) under way: kept for the next call
    rerun = json.dumps({"task_id": tdir.id, "runs": [{}], "saved_at": "2099-01-01T00:00:00+00:00"})
    (cut / "reference.partial.json").write_text(rerun)
    assert merge([str(tmp_path / "cut"), "--tasks", str(tasks)]) == 0
    assert tdir.path(TaskFile.REFERENCE_PARTIAL).read_text() == rerun


def test_a_committed_call_folder_is_read_with_the_archives_it_holds(tmp_path: Path, capsys) -> None:
    """2026-12-04: the calls are committed as docs/runs/*/results/callN/ holding machine.txt and
    the results.tgz that came back (a tasks tar inside it); a merge given those folders found
    no task in them and reported "0 partial" where call 20 had brought back 14."""
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    inner = tmp_path / "inner" / tdir.root.name
    inner.mkdir(parents=True)
    (inner / "reference.partial.json").write_text(json.dumps({"task_id": tdir.id, "runs": [{}]}))
    pack = tmp_path / "pack"
    pack.mkdir()
    with tarfile.open(pack / "tasks_n0.tar", "w") as tar:
        tar.add(inner, arcname=tdir.root.name)
    call = tmp_path / "results" / "call20"
    call.mkdir(parents=True)
    (call / "machine.txt").write_text("NVIDIA H200\n")
    with tarfile.open(call / "results.tgz", "w:gz") as tar:
        tar.add(pack, arcname=".")
    assert merge([str(call), "--tasks", str(tasks)]) == 0
    assert "1 partial" in capsys.readouterr().out
    assert tdir.path(TaskFile.REFERENCE_PARTIAL).is_file()


def test_the_pins_a_call_ran_on_come_back_with_its_verdict(tmp_path: Path, capsys) -> None:
    """2026-12-04, call 29: flash-linear-attention tasks ran on their date-pinned transformers
    (the env.json that envbuild wrote, carried with the task); the call packs it in a tar of its
    own beside the task files, and the merge puts it beside the verdict, so the rebuilt state
    knows which wheelhouse the task needs."""
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    tdir.path(TaskFile.ENV).unlink(missing_ok=True)
    run = _run_copy(tdir.root, tmp_path / "run" / "tasks")
    envs = tmp_path / "envs" / tdir.root.name
    envs.mkdir(parents=True)
    (envs / "env.json").write_text('{"pins": "transformers==4.51.3"}')
    pack = tmp_path / "pack"
    pack.mkdir()
    with tarfile.open(pack / "tasks_c.tar", "w") as tar:
        tar.add(run, arcname=f"./{run.name}")
    with tarfile.open(pack / "env.tar", "w") as tar:
        tar.add(envs, arcname=f"./{envs.name}")
    with tarfile.open(tmp_path / "results.tgz", "w:gz") as tar:
        tar.add(pack, arcname=".")
    assert merge([str(tmp_path / "results.tgz"), "--tasks", str(tasks)]) == 0
    assert "merged: verified" in (out := capsys.readouterr().out) and "env.json" in out
    assert tdir.path(TaskFile.ENV).read_text() == '{"pins": "transformers==4.51.3"}'


def test_help_and_a_broken_archive(tmp_path: Path, capsys) -> None:
    import pytest

    with pytest.raises(SystemExit) as exit_:
        merge(["--help"])
    assert exit_.value.code == 0 and "--tasks" in capsys.readouterr().out
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not an archive")
    assert merge([str(bad), "--tasks", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_a_run_whose_targets_read_otherwise_but_are_the_same_functions_merges(
    tmp_path: Path, capsys
) -> None:
    # 2026-12-06: a signature lost the comment after its `def` line's colon, and the rebuilt
    # state skipped 64 more run folders as "targets differ" (7 verdicts changed)
    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    targets = json.loads(tdir.path(TaskFile.TASK).read_text())["targets"]
    assert targets
    worded = [{**t, "signature": t["signature"] + ":  # a comment", "docstring": "Other."}
              for t in targets]  # fmt: skip
    _run_copy(tdir.root, tmp_path / "worded", targets=worded)
    assert merge([str(tmp_path / "worded"), "--tasks", str(tasks)]) == 0
    assert "merged: verified" in capsys.readouterr().out
    # its record keeps the directory's words; another role is another function: skipped
    assert json.loads(tdir.path(TaskFile.TASK).read_text())["targets"] == targets
    other = [{**t, "role": "helper"} for t in targets]
    _run_copy(tdir.root, tmp_path / "other", targets=other)
    assert merge([str(tmp_path / "other"), "--tasks", str(tasks)]) == 1
    assert "targets differ" in capsys.readouterr().out
