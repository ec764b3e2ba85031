"""`eval score` and `eval reference` with a broken task among good ones, and with malformed
predictions: a task's error is that task's `infra` failure and the run goes on; nothing ran is a
non-zero exit; a bad predictions file is one line naming the file and the line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from curation.taskdir import task_dirs
from eval.__main__ import main as eval_main
from tests.test_eval_local import GOOD, task_env  # noqa: F401  (the module's tiny framework)

GHOST = "fw__8__ghost_kernel"  # a task of a framework with no repository
TORN = "fw__9__torn_kernel"  # a task whose task.json was cut short


@pytest.fixture(scope="module")
def mixed(task_env, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:  # noqa: F811
    """The tiny framework's task plus two broken ones."""
    _repo, work, tasks = task_env
    [good] = task_dirs(tasks)
    root = tmp_path_factory.mktemp("mixed") / "tasks"
    shutil.copytree(good.root, root / good.id)
    shutil.copytree(good.root, root / GHOST)
    data = json.loads((root / GHOST / "task.json").read_text())
    data.update(task_id=GHOST, framework="ghost")
    (root / GHOST / "task.json").write_text(json.dumps(data))
    shutil.copytree(good.root, root / TORN)
    text = (root / TORN / "task.json").read_text()
    (root / TORN / "task.json").write_text(text[: len(text) // 2])
    return work, root, good.id


def score(work: Path, tasks: Path, preds: Path, out: Path) -> int:
    return eval_main(["score", str(preds), "--tasks", str(tasks), "--work", str(work), "--out",
                      str(out), "--no-isolated-timing", "--timeout", "120"])  # fmt: skip


def predictions(path: Path, *task_ids: str) -> Path:
    path.write_text("".join(json.dumps({"task_id": t, "kernels": {"add_kernel": GOOD}}) + "\n"
                            for t in task_ids))  # fmt: skip
    return path


def test_score_records_a_task_error_as_infra_and_goes_on(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, tasks, good = mixed
    preds = predictions(tmp_path / "p.jsonl", good, GHOST, TORN)
    out = tmp_path / "run"
    assert score(work, tasks, preds, out) == 0
    report = json.loads((out / "report.json").read_text())
    rows = {r["task_id"]: r for r in report["tasks"]}
    assert rows[good]["passed"]
    assert rows[GHOST]["failure"] == "infra" and "no repository for ghost" in rows[GHOST]["detail"]
    assert rows[TORN]["failure"] == "infra" and "task.json" in rows[TORN]["detail"]
    assert report["report"]["tasks"] == 3 and report["report"]["failures"] == {"infra": 2}
    err = capsys.readouterr().err
    assert f"{GHOST}: not run: EvalError: no repository for ghost" in err
    assert "Traceback" not in err
    # only the finished task is kept for a resume; the broken ones are tried again
    lines = (out / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in lines] == [good]


def test_score_exits_non_zero_when_nothing_ran(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, tasks, _ = mixed
    out = tmp_path / "run"
    assert score(work, tasks, predictions(tmp_path / "p.jsonl", GHOST, TORN), out) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: nothing ran: none of the 2 predictions for selected tasks")
    assert json.loads((out / "report.json").read_text())["report"]["completed"] == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"task_id": "a"}\nnot json\n', ":2: not valid JSON (Expecting value)"),
        (b'{"task_id": "a"}\n{"task_id": "a"}\n', ":2: duplicate task_id 'a' (first on line 1)"),
        (b'{"kernels": {}}\n', ":1: no 'task_id'"),
        (b"[1, 2]\n", ":1: expected a JSON object per line"),
        (b'{"task_id": "a", "kernels": {"k": "\xff"}}\n', ":1: not valid JSON (not UTF-8)"),
        (b'{"task_id": "a", "kernels"', ":1: not valid JSON (Expecting ':' delimiter)"),
    ],
)
def test_score_refuses_malformed_predictions_in_one_line(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    work, tasks, _ = mixed
    preds = tmp_path / "p.jsonl"
    preds.write_bytes(content)
    out = tmp_path / "run"
    capsys.readouterr()
    assert score(work, tasks, preds, out) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"error: {preds}{message}"]
    assert not out.exists()


def test_score_refuses_a_missing_predictions_file_in_one_line(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, tasks, _ = mixed
    assert score(work, tasks, tmp_path / "none.jsonl", tmp_path / "run") == 1
    assert capsys.readouterr().err.strip() == (
        f"error: {tmp_path / 'none.jsonl'}: cannot read (No such file or directory)"
    )


def test_reference_records_a_broken_task_and_goes_on(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, tasks, good = mixed
    copy = tmp_path / "tasks"
    shutil.copytree(tasks, copy)
    argv = ["reference", "--tasks", str(copy), "--work", str(work), "--runs", "1",
            "--no-isolated-timing", "--out", str(tmp_path / "ref"), "--force"]  # fmt: skip
    assert eval_main(argv) == 0
    assert (copy / good / "reference.json").exists()
    assert not (copy / GHOST / "reference.json").exists()
    err = capsys.readouterr().err
    assert f"{GHOST}: not run: no repository for ghost" in err
    assert f"{TORN}: not run: RecordError:" in err and "Traceback" not in err


def test_reference_names_each_task_its_deadline_left_unstarted(
    mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, tasks, good = mixed
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--no-isolated-timing", "--out", str(tmp_path / "ref"), "--force",
            "--deadline", "0.000001"]  # fmt: skip
    eval_main(argv)
    err = capsys.readouterr().err
    for tid in (good, GHOST, TORN):
        assert f"{tid}: not run: not started: the deadline passed" in err
    assert not (tasks / good / "reference.json").exists()


def test_score_scores_again_alone_a_prediction_that_ran_out_of_gpu_memory(
    mixed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the H200, twelve memory-heavy runs side by side (`--jobs`) failed four correct gold
    predictions with OutOfMemoryError: such a score is made again once the others are done,
    alone. The first attempt is injected (a CPU cannot run out of GPU memory); the retry is real."""
    from dataclasses import replace

    import eval.score as score_mod

    work, tasks, good = mixed
    real, calls = score_mod.score_task, []

    def starved_once(task, tdir, prediction, backend, run_root, runs):
        calls.append(task.task_id)
        if len(calls) == 1:
            s = score_mod.infra_failure(task.task_id, True, RuntimeError("x"))
            return replace(s, failure="cuda_error", detail="E torch.OutOfMemoryError: CUDA out "
                           "of memory. Tried to allocate 500.00 MiB.")  # fmt: skip
        return real(task, tdir, prediction, backend, run_root, runs)

    monkeypatch.setattr(score_mod, "score_task", starved_once)
    preds = predictions(tmp_path / "p.jsonl", good)
    out = tmp_path / "run"
    assert eval_main(["score", str(preds), "--tasks", str(tasks), "--work", str(work), "--out",
                      str(out), "--no-isolated-timing", "--timeout", "120", "--jobs", "2",
                      "--task", good]) == 0  # fmt: skip
    rows = {r["task_id"]: r for r in json.loads((out / "report.json").read_text())["tasks"]}
    assert calls == [good, good] and rows[good]["passed"]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [x["passed"] for x in lines] == [False, True]  # a resume takes the last line
