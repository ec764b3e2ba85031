"""`python -m envbuild` on task directories curated from a tiny Megatron-like repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.records import from_json
from curation.curate import main as curate
from envbuild.__main__ import main as envbuild
from envbuild.dockerfile import parse_dockerfile
from envbuild.model import EnvSpec
from mining.crawl import main as crawl
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_SCALED, SCALE_KERNEL

CI_DOCKERFILE = "ARG FROM_IMAGE_NAME=nvcr.io/nvidia/pytorch:25.09-py3\nFROM ${FROM_IMAGE_NAME}\n"
TEST_ADD = "from megatron.core.ops.add import add\n\n\ndef test_add():\n    assert add\n"


def _megatron(path: Path, first: dict[str, str]) -> TinyRepo:
    """A tiny Megatron-LM: its packages and `first`'s files, then PR #1 adds the add kernel."""
    repo = TinyRepo(path)
    for rel, text in {**first, "megatron/__init__.py": "", "megatron/core/__init__.py": "",
                      "megatron/core/ops/__init__.py": ""}.items():  # fmt: skip
        repo.write(rel, text)
    repo.commit("Initial commit")
    repo.write("megatron/core/ops/add.py", ADD_KERNEL)
    repo.write("tests/unit_tests/test_add.py", TEST_ADD)
    repo.commit("Add kernel (#1)")
    return repo


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    repo = _megatron(tmp_path / "Megatron-LM", {
        "docker/Dockerfile.ci.dev": CI_DOCKERFILE,
        "megatron/core/requirements.txt": "numpy==1.26.4\npackaging\n",
    })  # fmt: skip
    repo.write("megatron/core/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Optimize the add kernel (#2)")
    repo.write("megatron/core/requirements.txt", "numpy==2.1.0\npackaging\n")
    repo.commit("Bump numpy")
    repo.write("megatron/core/ops/scale.py", SCALE_KERNEL)
    repo.commit("Add scale kernel (#3)")
    return _mined(repo, tmp_path)[1]


def _mined(repo: TinyRepo, tmp_path: Path) -> tuple[Path, Path]:
    """(work, tasks): the tiny Megatron-LM crawled and curated under `tmp_path`."""
    work, out = tmp_path / "work", tmp_path / "tasks"
    argv = [str(repo.path), "--name", "megatron-lm", "--out", str(work), "--quiet", "--no-github"]
    assert crawl(argv) == 0
    assert curate(["--work", str(work), "--out", str(out), "--quiet"]) == 0
    return work, out


def spec(tasks: Path, task_id: str) -> EnvSpec:
    return from_json(EnvSpec, json.loads((tasks / task_id / "env.json").read_text()))


def test_envbuild_pins_renders_and_shares_layers(tasks: Path, tmp_path: Path) -> None:
    assert envbuild(["--tasks", str(tasks), "--work", str(tmp_path / "work")]) == 0
    ids = sorted(p.name for p in tasks.iterdir() if (p / "task.json").exists())
    assert ids == [
        "megatron-lm__1__add_kernel",
        "megatron-lm__2__add_kernel",
        "megatron-lm__3__scale_kernel",
    ]
    s1, s2, s3 = (spec(tasks, i) for i in ids)
    assert s1.recipe == "source-pythonpath"
    base_image = next(p for p in s1.extra_pins if p.name == "base_image")
    assert base_image.value == "nvcr.io/nvidia/pytorch:25.09-py3"
    assert base_image.where.startswith("docker/Dockerfile.ci.dev:1")
    assert (s1.torch.source, s1.cuda.source) == ("file", "file")
    # same pins and requirement files: shared base and env layers, own task layers
    assert [x.tag for x in s1.layers[:2]] == [x.tag for x in s2.layers[:2]]
    assert s1.layers[2].tag != s2.layers[2].tag
    # the numpy bump before task 3 changes its env layer, not its base layer
    assert s3.layers[0].tag == s1.layers[0].tag and s3.layers[1].tag != s1.layers[1].tag
    task_layer = parse_dockerfile((tasks / ids[0] / "Dockerfile").read_text())
    assert task_layer[0] == ("FROM", s1.layers[1].tag)
    assert ("ENV", 'PYTHONPATH="/workspace/src"') in task_layer
    base = (tasks / ids[0] / "docker" / "base.Dockerfile").read_text()
    assert "FROM nvcr.io/nvidia/pytorch:25.09-py3" in base
    summary = json.loads((tasks / "env_summary.json").read_text())
    assert summary["distinct_layers"] == {"base": 1, "env": 2, "task": 3}
    assert summary["lint_findings"] == 0


def test_build_without_engine_is_one_clear_error(
    tasks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--tasks", str(tasks), "--work", str(tmp_path / "work"), "--build",
            "--docker-host", f"unix://{tmp_path}/no-such.sock"]  # fmt: skip
    assert envbuild(argv) == 1
    err = capsys.readouterr().err
    assert "no Docker engine reachable" in err


def test_help_explains_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        envbuild(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--tasks", "--build", "--docker-host", "--no-lint", "--repo-path"):
        assert opt in text


def test_a_task_older_than_the_release_table_is_reported_and_the_others_pinned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Dao-AILab/flash-attention b910bf14c1 (2022-10-30) predates torch 2.0.0, the table's
    # first release: it stopped the whole run before any later task was pinned
    from tests import gitrepo

    monkeypatch.setattr(gitrepo, "BASE_EPOCH", 1_660_000_000)  # 2022-08-08
    repo = _megatron(tmp_path / "Megatron-LM", {})
    monkeypatch.setattr(gitrepo, "BASE_EPOCH", 1_710_000_000)  # 2024-03-09
    repo.write("README.md", "Megatron\n")
    repo.commit("Docs")  # the base of #3: its date pins torch
    repo.write("megatron/core/ops/scale.py", SCALE_KERNEL)
    repo.commit("Add scale kernel (#3)")
    work, tasks = _mined(repo, tmp_path)
    assert envbuild(["--tasks", str(tasks), "--work", str(work)]) == 1
    said = caplog.text
    assert "megatron-lm__1__add_kernel: not pinned: " in said and "no torch release before" in said
    assert not (tasks / "megatron-lm__1__add_kernel" / "env.json").exists()
    assert spec(tasks, "megatron-lm__3__scale_kernel").torch.source == "date"
    summary = json.loads((tasks / "env_summary.json").read_text())
    assert [f["task_id"] for f in summary["failed"]] == ["megatron-lm__1__add_kernel"]
    assert [t["task_id"] for t in summary["tasks"]] == ["megatron-lm__3__scale_kernel"]
