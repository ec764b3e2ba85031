"""A predictions file is untrusted input: every malformed line is one error naming the file and
the line, and a task predicted twice is an error, not last-wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import RecordError
from eval.__main__ import main as eval_main
from eval.score import load_predictions


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(f"{ln}\n" for ln in lines))
    return path


def rec(task_id: str, **extra: object) -> str:
    return json.dumps({"task_id": task_id, "kernels": {"k": "def k():\n  pass\n"}, **extra})


def test_good_file_is_read_by_task_id(tmp_path: Path) -> None:
    path = write(tmp_path, rec("a"), "", rec("b"))
    assert set(load_predictions(path)) == {"a", "b"}


def test_a_task_predicted_twice_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, rec("a"), rec("b"), rec("a", note="second"))
    with pytest.raises(RecordError) as err:
        load_predictions(path)
    assert str(err.value) == f"{path}:3: duplicate task_id 'a' (first on line 1)"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"task_id": "b", "kernels": ', "not valid JSON (Expecting value)"),
        ("[1, 2]", "expected a JSON object per line"),
        ('{"kernels": {}}', "no 'task_id'"),
        ('{"task_id": 7}', "a prediction's task_id must be a task id (a string)"),
    ],
)
def test_a_malformed_line_is_one_error_with_its_number(tmp_path: Path, line, message) -> None:
    path = write(tmp_path, rec("a"), line, rec("c"))
    with pytest.raises(RecordError) as err:
        load_predictions(path)
    assert str(err.value) == f"{path}:2: {message}"


def test_the_command_prints_one_error_line(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, rec("a"), "not json")
    tasks = tmp_path / "tasks"
    (tasks / "a").mkdir(parents=True)
    (tasks / "a" / "task.json").write_text("{}")
    argv = ["score", str(path), "--tasks", str(tasks), "--out", str(tmp_path / "out")]
    assert eval_main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}:2: not valid JSON")
