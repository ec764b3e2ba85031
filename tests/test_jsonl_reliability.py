"""Resume and reading of the project's JSONL and JSON files: a line that is not JSON, a
duplicated record or a truncated file is refused in one line naming the file and the line, and
nothing is adopted or changed silently."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from core.errors import RecordError
from core.files import cut_torn_tail, read_jsonl
from curation.curate import main as curate
from mining.crawl import main as crawl
from tests.gitrepo import TinyRepo, add_kernel_history
from tests.kernels_src import SCALE_KERNEL


@pytest.fixture
def repo(tmp_path: Path) -> TinyRepo:
    return add_kernel_history(tmp_path / "fw")


def run_crawl(repo: TinyRepo, out: Path) -> int:
    return crawl([str(repo.path), "--out", str(out), "--quiet", "--no-github"])


def digest(*paths: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def crawled(repo: TinyRepo, tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "work"
    assert run_crawl(repo, out) == 0
    work = out / "fw"
    return out, work / "candidates.jsonl", work / "state.json"


def test_resume_refuses_a_duplicated_candidate_line_past_the_checkpoint(
    repo: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cands, state = crawled(repo, tmp_path)
    with cands.open("ab") as fh:  # what two crawls into one --out once left behind
        fh.write(cands.read_bytes().splitlines(keepends=True)[0])
    before = digest(cands, state)
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit("Add a scale kernel (#3)")
    capsys.readouterr()
    assert run_crawl(repo, out) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{cands}:3: duplicate id '#1' (first on line 1)" in line
    assert digest(cands, state) == before  # nothing adopted, nothing crawled, nothing cut


def test_resume_refuses_a_second_record_of_one_commit_under_another_id(
    repo: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cands, state = crawled(repo, tmp_path)
    first = json.loads(cands.read_bytes().splitlines()[0])
    first["id"] = "#1@again"
    with cands.open("ab") as fh:
        fh.write(json.dumps(first).encode() + b"\n")
    before = digest(cands, state)
    capsys.readouterr()
    assert run_crawl(repo, out) == 1
    assert f"{cands}:3: duplicate record of commit" in one_error_line(capsys.readouterr().err)
    assert digest(cands, state) == before


@pytest.mark.parametrize("where", ["past", "before"])
def test_resume_refuses_a_non_json_line_of_candidates(
    repo: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    out, cands, state = crawled(repo, tmp_path)
    lines = cands.read_bytes().splitlines(keepends=True)
    if where == "past":
        cands.write_bytes(b"".join(lines) + b"this is not json\n")
        number = 3
    else:  # the same length as the line it replaces: the checkpoint still falls on a boundary
        cands.write_bytes(b"x" * (len(lines[0]) - 1) + b"\n" + lines[1])
        number = 1
    before = digest(cands, state)
    capsys.readouterr()
    assert run_crawl(repo, out) == 1
    line = one_error_line(capsys.readouterr().err)
    assert f"{cands}:{number}: not valid JSON" in line
    assert digest(cands, state) == before


def test_resume_adopts_whole_records_and_cuts_only_a_torn_last_line(
    repo: TinyRepo, tmp_path: Path
) -> None:
    out, cands, state = crawled(repo, tmp_path)
    whole = cands.read_bytes()
    recorded = json.loads(state.read_text())["recorded"]
    # killed after appending a record and part of another, before the state covered them
    state_data = json.loads(state.read_text())
    first_len = len(whole.splitlines(keepends=True)[0])
    state_data["candidates_bytes"] = first_len
    state_data["recorded"] = {"#1": recorded["#1"]}
    state.write_text(json.dumps(state_data))
    cands.write_bytes(whole + b'{"id": "#9", "comm')
    assert run_crawl(repo, out) == 0
    assert cands.read_bytes() == whole
    assert json.loads(state.read_text())["recorded"] == recorded


def test_curate_refuses_a_duplicated_candidate_line(
    repo: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, cands, _ = crawled(repo, tmp_path)
    with cands.open("ab") as fh:
        fh.write(cands.read_bytes().splitlines(keepends=True)[1])
    tasks = tmp_path / "tasks"
    capsys.readouterr()
    assert curate(["--work", str(out), "--out", str(tasks), "--quiet"]) == 1
    assert f"{cands}:3: duplicate id '#2' (first on line 2)" in one_error_line(
        capsys.readouterr().err
    )
    assert sorted(p.name for p in tasks.iterdir()) == [".lock"]  # nothing written


def test_read_jsonl_names_unreadable_files_and_skips_only_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with pytest.raises(RecordError, match=r"x\.jsonl: cannot read \(No such file"):
        read_jsonl(path)
    path.write_bytes(b'{"id": 1}\n{"id": 2')
    with pytest.raises(RecordError, match=r"x\.jsonl:2: not valid JSON"):
        read_jsonl(path)
    assert read_jsonl(path, skip_torn_tail=True) == [(1, {"id": 1})]
    assert cut_torn_tail(path) == len(b'{"id": 2')
    assert path.read_bytes() == b'{"id": 1}\n'
    assert cut_torn_tail(path) == 0
