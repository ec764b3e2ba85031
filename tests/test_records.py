"""The one record rule (`core.records`) and the file rules (`core.files`) every stage uses."""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from pathlib import Path

import pytest

from core.errors import LockedError, RecordError
from core.files import output_lock, read_json, read_jsonl, read_record, write_atomic, write_json
from core.records import derived, from_json, set_derived, to_json
from curation.model import Task
from mining.model import Candidate, PrRef


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    name: str
    span: tuple[int, int] | None = None


@dataclass(frozen=True)
class Outer:
    schema_version: int = field(default=2, kw_only=True)
    color: Color
    items: tuple[Inner, ...]
    scores: dict[str, float]
    when: date
    total: int = derived()
    note: str | None = None

    def __post_init__(self) -> None:
        set_derived(self, "total", len(self.items))


OUTER = Outer(
    color=Color.BLUE,
    items=(Inner("a", (1, 2)), Inner("b")),
    scores={"x": 1.5, "y": 2},
    when=date(2026, 12, 1),
)


def test_round_trip_keeps_field_order_enums_and_derived_fields() -> None:
    data = to_json(OUTER)
    assert list(data) == ["schema_version", "color", "items", "scores", "when", "total", "note"]
    assert data["color"] == "blue" and data["when"] == "2026-12-01" and data["total"] == 2
    assert data["items"][0] == {"name": "a", "span": [1, 2]}
    back = from_json(Outer, json.loads(json.dumps(data)))
    assert back == OUTER and back.total == 2 and back.items[0].span == (1, 2)


def test_derived_value_in_the_data_is_recomputed_not_trusted() -> None:
    data = to_json(OUTER) | {"total": 99}
    assert from_json(Outer, data).total == 2


def test_unknown_key_is_an_error_naming_record_and_key() -> None:
    data = to_json(OUTER)
    data["items"][1]["colour"] = "x"
    with pytest.raises(
        RecordError, match=r"task\.json: items\[1\]: unknown key 'colour' for Inner"
    ):
        from_json(Outer, data, where="task.json")


def test_missing_required_key_is_an_error_and_missing_default_is_filled() -> None:
    data = to_json(OUTER)
    del data["note"]
    assert from_json(Outer, data).note is None
    del data["scores"]
    with pytest.raises(RecordError, match=r"scores: missing \(required by Outer\)"):
        from_json(Outer, data)


def test_wrong_types_are_one_line_errors_with_the_path() -> None:
    data = to_json(OUTER)
    data["items"][0]["span"] = [1, "two"]
    with pytest.raises(RecordError, match=r"items\[0\]\.span\[1\]: expected int, got str"):
        from_json(Outer, data)
    data = to_json(OUTER) | {"color": "green"}
    with pytest.raises(RecordError, match="'green' is not one of red, blue"):
        from_json(Outer, data)
    data = to_json(OUTER) | {"scores": {"x": True}}
    with pytest.raises(RecordError, match=r"scores\.x: expected float, got bool"):
        from_json(Outer, data)


def test_newer_schema_version_is_refused_older_is_read() -> None:
    with pytest.raises(RecordError, match="schema version 3 is newer than this reader's 2"):
        from_json(Outer, to_json(OUTER) | {"schema_version": 3})
    assert from_json(Outer, to_json(OUTER) | {"schema_version": 1}).schema_version == 1


def test_a_task_whose_difficulty_level_is_a_string_is_a_one_line_error(tmp_path: Path) -> None:
    bad = {"task_id": "t", "difficulty": {"level": "hard", "score": 1.0, "features": {}}}
    path = tmp_path / "task.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(RecordError) as info:
        read_record(Task, path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_candidate_json_line_keeps_its_layout() -> None:
    """schema_version first, derived stats between kernel_changes and github (the published
    layout of candidates.jsonl, kept byte for byte by the record rule)."""
    cand = Candidate(
        id="#1", framework="fw", repo="o/r",
        pr=PrRef(id="#1", number=1, source="squash", url=None),
        commit="c", parent="p", is_merge=False, authored_at="a", committed_at="b", author="x",
        subject="s", body="", revert=None, files=(), kernel_changes=(),
    )  # fmt: skip
    keys = list(to_json(cand))
    assert keys[0] == "schema_version"
    assert keys[-4:] == ["kernel_changes", "stats", "github", "root"]
    assert from_json(Candidate, to_json(cand)) == cand


def test_write_atomic_uses_unique_temp_files_and_leaves_none(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_json(target, {"a": "é"})
    assert target.read_text() == '{\n "a": "é"\n}'
    write_atomic(target, b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_read_json_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text('{\n "releases": [\n')
    with pytest.raises(RecordError, match=r"manifest\.json:3: not valid JSON"):
        read_json(path)


def test_read_jsonl_reports_bad_lines_and_duplicates_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"task_id": "a"}\n\n{"task_id": "b"}\n')
    assert [n for n, _ in read_jsonl(path, id_key="task_id")] == [1, 3]
    path.write_text('{"task_id": "a"}\nnot json\n')
    with pytest.raises(RecordError, match=r"p\.jsonl:2: not valid JSON"):
        read_jsonl(path)
    path.write_text('{"task_id": "a"}\n{"task_id": "b"}\n{"task_id": "a"}\n')
    with pytest.raises(RecordError, match=r"p\.jsonl:3: duplicate task_id 'a' \(first on line 1\)"):
        read_jsonl(path, id_key="task_id")
    path.write_text("[1, 2]\n")
    with pytest.raises(RecordError, match=r"p\.jsonl:1: expected a JSON object"):
        read_jsonl(path)


def _hold(directory: str, ready, release) -> None:  # type: ignore[no-untyped-def]
    with output_lock(Path(directory), "holder-job"):
        ready.set()
        release.wait(30)


def test_output_lock_names_its_holder_and_is_released_when_the_holder_dies(
    tmp_path: Path,
) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    proc.start()
    try:
        assert ready.wait(30)
        with (
            pytest.raises(LockedError, match=r"in use by pid \d+ .*holder-job"),
            output_lock(tmp_path),
        ):
            pass
    finally:
        proc.kill()
        proc.join()
    with output_lock(tmp_path):  # the killed holder left no stale lock
        pass
