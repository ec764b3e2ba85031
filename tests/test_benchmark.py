"""Dataset build, card, frozen splits and regeneration on a tiny framework repo's tasks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("datasets")

from benchmark.__main__ import main as bench
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_SCALED, HELPER_KERNEL, SCALE_KERNEL

TEST_ADD = "from pkg.ops.add import add\n\n\ndef test_add():\n    assert add\n"


def make_repo(root: Path) -> TinyRepo:
    repo = TinyRepo(root / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("README.md", "fw\n")
    repo.commit("Initial commit")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.write("tests/test_add.py", TEST_ADD)
    repo.commit("Add an add kernel (#1)")  # 2023-11-15T00:13:20Z
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Fix the add kernel's scale (#2)")  # 01:13:20Z
    return repo


def regenerate(repo: TinyRepo, root: Path, version: str, *extra: str) -> int:
    return bench([
        "regenerate", str(repo.path), "--work", str(root / "work"), "--tasks",
        str(root / "tasks"), "--out", str(root / "dist"), "--version", version,
        "--no-github", *extra,
    ])  # fmt: skip


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def released(tmp_path: Path) -> tuple[TinyRepo, Path]:
    repo = make_repo(tmp_path)
    assert regenerate(repo, tmp_path, "1.0.0", "--cutoff", "2023-11-15T01:00:00+00:00") == 0
    return repo, tmp_path


def test_first_release_loads_offline_with_declared_features(
    released, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    _, root = released
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    dist = root / "dist"
    ds = datasets.load_dataset(str(dist))
    assert sorted(ds) == ["dev", "test"]
    assert ds["dev"]["task_id"] == ["fw__1__add_kernel"]
    assert ds["test"]["task_id"] == ["fw__2__add_kernel"]
    row = ds["test"][0]
    assert row["task_type"] == "bug_fix"
    assert row["kernels"][0]["name"] == "add_kernel" and "* 2.0" in row["kernels"][0]["after_src"]
    assert row["tests"]["changed_in_pr"] == [] and "pkg/ops/add.py" in row["gold_patch"]
    assert row["reference"]["measured"] is False
    kernels = ds["test"].features["kernels"]
    assert isinstance(kernels, datasets.List)
    assert kernels.feature["constexpr_params"] == datasets.List(datasets.Value("string"))
    # a config per framework
    assert datasets.load_dataset(str(dist), "fw")["test"].num_rows == 1
    names = sorted(p.name for p in (dist / "data").iterdir())
    assert names == ["dev-00000-of-00001.parquet", "test-00000-of-00001.parquet"]


def test_card_has_configs_sections_stats_and_plots(released) -> None:
    _, root = released
    card = (root / "dist" / "README.md").read_text()
    assert card.startswith("---\n") and "configs:" in card and "config_name: fw" in card
    for section in ("## Summary", "## Fields", "## Splits", "## Curation rationale",
                    "## Source data", "## Reference runs and timings", "## Limitations",
                    "## License", "## Changelog", "## Citation"):  # fmt: skip
        assert section in card
    assert "| bug_fix | 1 |" in card and "| new_op | 1 |" in card
    assert "**1.0.0**" in card and "$" not in card.split("## Citation")[0]
    for png in ("difficulty.png", "speedup.png"):
        assert (root / "dist" / "assets" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_regeneration_adds_exactly_the_new_tasks_and_freezes_released_splits(
    released, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, root = released
    data = root / "dist" / "data"
    frozen = {p.name: sha(p) for p in data.iterdir()}
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit("Add a scale kernel (#3)")
    repo.write("pkg/ops/square.py", HELPER_KERNEL)
    repo.commit("Add a square kernel (#4)")
    capsys.readouterr()
    # dry run: says what would change, writes nothing
    manifest_before = (root / "dist" / "manifest.json").read_text()
    assert regenerate(repo, root, "1.1.0", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "would build version 1.1.0: 2 new tasks" in out
    assert "+ fw__3__scale_kernel" in out and "+ fw__4__square_kernel" in out
    assert (root / "dist" / "manifest.json").read_text() == manifest_before
    assert not (root / "tasks" / "fw__3__scale_kernel").exists()
    # the real run
    assert regenerate(repo, root, "1.1.0") == 0
    assert {p.name: sha(p) for p in data.iterdir() if p.name in frozen} == frozen
    new_files = sorted(p.name for p in data.iterdir() if p.name not in frozen)
    assert new_files == ["test_v1_1_0-00000-of-00001.parquet"]
    import datasets

    ds = datasets.load_dataset(str(root / "dist"))
    assert sorted(ds["test_v1_1_0"]["task_id"]) == ["fw__3__scale_kernel", "fw__4__square_kernel"]
    assert ds["test"]["task_id"] == ["fw__2__add_kernel"]
    manifest = json.loads((root / "dist" / "manifest.json").read_text())
    assert [r["version"] for r in manifest["releases"]] == ["1.0.0", "1.1.0"]
    assert manifest["releases"][1]["added"] == ["fw__3__scale_kernel", "fw__4__square_kernel"]
    card = (root / "dist" / "README.md").read_text()
    assert "**1.1.0**" in card and "added 2 tasks in test_v1_1_0" in card
    # a version is released once
    assert regenerate(repo, root, "1.1.0") == 1


def test_a_changed_frozen_file_stops_the_build(released, capsys) -> None:
    repo, root = released
    shard = root / "dist" / "data" / "test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes() + b"tampered")
    assert regenerate(repo, root, "1.2.0") == 1
    assert "frozen split 'test'" in capsys.readouterr().err


def test_first_release_needs_a_cutoff(tmp_path: Path, capsys) -> None:
    repo = make_repo(tmp_path)
    assert regenerate(repo, tmp_path, "1.0.0") == 1
    assert "--cutoff" in capsys.readouterr().err
