"""Crawl regressions of issue 12 (reliability), each on its own tiny real git repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mining.crawl import main
from mining.store import read_candidates
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, PLAIN_MODULE


def crawl(repo: TinyRepo, out: Path, *extra: str) -> int:
    return main(
        [str(repo.path), "--out", str(out), "--quiet", "--no-github", "--jobs", "1", *extra]
    )


def candidates(out: Path, repo: TinyRepo):
    return read_candidates(out / repo.path.name / "candidates.jsonl")


def changes_of(cand) -> list[tuple[str, str]]:
    return sorted((kc.name, str(kc.change)) for kc in cand.kernel_changes)


@pytest.fixture
def base(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/plain.py", PLAIN_MODULE)
    repo.commit("Initial commit")
    return repo


def test_rename_py_to_non_analysed_path_does_not_crash(base: TinyRepo, tmp_path: Path) -> None:
    base.write("tools/extract_ops.py", ADD_KERNEL)
    base.commit("Add a script with a kernel (#1)")
    base.mv("tools/extract_ops.py", "tools/extract_ops")
    base.commit("Drop the .py suffix of the script (#2)")
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("A kernel after the rename (#3)")
    assert crawl(base, tmp_path / "out") == 0
    first, second, third = candidates(tmp_path / "out", base)
    assert changes_of(first) == [("add_kernel", "added")]
    # The path without .py is not analysed: its kernels left the analysed files.
    assert changes_of(second) == [("add_kernel", "deleted")]
    assert {(f.path, f.old_path, f.status) for f in second.files} == {
        ("tools/extract_ops", "tools/extract_ops.py", "R")
    }
    assert changes_of(third) == [("add_kernel", "added")]


def test_rename_from_uppercase_py_suffix_does_not_crash(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/__init__.PY", ADD_KERNEL)
    base.commit("A package init with a wrong suffix (#1)")
    base.mv("pkg/ops/__init__.PY", "pkg/ops/__init__.py")
    base.commit("Fix the suffix (#2)")
    assert crawl(base, tmp_path / "out") == 0
    [cand] = candidates(tmp_path / "out", base)
    assert cand.id == "#2"
    assert changes_of(cand) == [("add_kernel", "added")]
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["commits_scanned"] == 3
