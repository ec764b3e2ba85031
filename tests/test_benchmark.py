"""Dataset build, card, frozen splits and regeneration on a tiny framework repo's tasks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

pytest.importorskip("datasets")

from benchmark.__main__ import main as bench
from curation.taskdir import TaskDir
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


def _both_verified_and_released(root: Path, out: Path) -> tuple[TaskDir, TaskDir, list[str]]:
    """The fixture's two tasks, both verified on the GPU, released as 1.0.0 into `out`; and the
    build command line for the next versions."""
    from curation.model import Verification, VerificationStatus
    from curation.taskdir import task_dirs

    first, second = task_dirs(root / "tasks")
    for t in (first, second):
        t.record_verification(Verification(VerificationStatus.VERIFIED, "1 fail-to-pass",
                                           "2026-12-01", "H200"))  # fmt: skip
    build = ["build", "--tasks", str(root / "tasks"), "--out", str(out)]
    assert bench([*build, "--version", "1.0.0", "--cutoff", "2020-01-01"]) == 0
    return first, second, build


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def released(tmp_path: Path) -> tuple[TinyRepo, Path]:
    repo = make_repo(tmp_path)
    assert regenerate(repo, tmp_path, "1.0.0", "--cutoff", "2023-11-15T01:00:00+00:00") == 0
    return repo, tmp_path


def test_the_environments_config_gives_every_task_its_pins(
    released, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A side table beside the splits (`benchmark.schema.SIDE_TABLES`): the pins of each task
    with an env.json, the same as its row's `env`, so that rows released before their
    directories were pinned (356 of release 1.20.0's) can be given theirs without rewriting
    them; a later build whose pins are the same writes no new file."""
    import datasets

    _, root = released
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    dist = root / "dist"
    envs = datasets.load_dataset(str(dist), "environments", download_mode="force_redownload")
    rows = {r["task_id"]: r for r in envs["train"]}
    tasks = datasets.load_dataset(str(dist), "all", download_mode="force_redownload")
    by_id = {r["task_id"]: r for split in tasks.values() for r in split}
    assert sorted(rows) == sorted(by_id) == ["fw__1__add_kernel", "fw__2__add_kernel"]
    for tid, row in rows.items():
        assert row["torch"] and row["triton"] and row["python"]
        assert {k: v for k, v in row.items() if k != "task_id"} == by_id[tid]["env"]
    files = sorted((dist / "data" / "environments").iterdir())
    assert [f.name for f in files] == ["environments-v1_0_0.parquet"]


def test_first_release_loads_offline_with_declared_features(
    released, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    _, root = released
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    dist = root / "dist"
    # no task is verified: there is no default config to hand out (a folder built so before
    # 2026-12-06 gave its unverified tasks as the default); `all` holds them
    with pytest.raises(ValueError, match="Config name is missing"):
        datasets.load_dataset(str(dist))
    ds = datasets.load_dataset(str(dist), "all")
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
    # the split files, and the environments side table's folder (its own test)
    assert names == ["dev-00000-of-00001.parquet", "environments", "test-00000-of-00001.parquet"]


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

    def files() -> dict[str, str]:
        return {str(p.relative_to(data)): sha(p) for p in data.rglob("*") if p.is_file()}

    frozen = files()
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
    assert {k: v for k, v in files().items() if k in frozen} == frozen
    new_files = sorted(k for k in files() if k not in frozen)
    # the new split, and the environments table with the two new tasks' pins
    assert new_files == ["environments/environments-v1_1_0.parquet",
                         "test_v1_1_0-00000-of-00001.parquet"]  # fmt: skip
    import datasets

    ds = datasets.load_dataset(str(root / "dist"), "all")
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


def test_field_table_features_rows_and_card_agree(released) -> None:
    """One field table: the Features, every row and the card's field list name the same
    columns in the same order, and every row fits the declared Features."""
    from datasets import Dataset

    from benchmark.schema import COLUMNS, card_fields, features, row
    from curation.taskdir import task_dirs

    _, root = released
    names = [c.name for c in COLUMNS]
    assert list(features()) == names
    card = card_fields().splitlines()
    assert [line.split("`")[1] for line in card] == names
    rows = [row(t) for t in task_dirs(root / "tasks")]
    assert rows and all(list(r) == names for r in rows)
    ds = Dataset.from_list(rows, features=features())
    assert ds.column_names == names and ds[0]["task_id"] == rows[0]["task_id"]
    readme = (root / "dist" / "README.md").read_text()
    assert all(line in readme for line in card)


def test_regenerate_stops_at_the_first_failing_stage_with_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path)
    work = tmp_path / "work" / "fw"
    work.mkdir(parents=True)
    (work / "state.json").write_text("[]")  # a corrupt crawl state: the crawl must refuse it
    assert regenerate(repo, tmp_path, "1.0.0", "--cutoff", "2023-11-15") == 1
    err = capsys.readouterr().err
    assert err.startswith("error: crawl failed:") and "state.json" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "tasks").exists() and not (tmp_path / "dist").exists()


def test_wheel_installed_in_a_fresh_venv_builds_the_dataset_with_its_card(
    released, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The card template ships inside the wheel: `benchmark build` works from an install with
    no checkout around (dependencies come from this environment through a path entry)."""
    import shutil
    import site
    import subprocess
    import sys
    import sysconfig
    import venv

    _, root = released
    project = Path(__file__).resolve().parents[1]
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    keep = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "dataset_card.md")
    src.mkdir()
    for name in keep:
        shutil.copy(project / name, src / name)
    for pkg in ("core", "mining", "curation", "envbuild", "eval", "benchmark"):
        shutil.copytree(project / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = work / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), str(src)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("triton_pr_bench-*.whl")
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    deps = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    # Plain path entries: the dependencies are importable, this checkout's editable install is
    # not (.pth files are only processed in site directories, not in appended paths).
    (Path(purelib) / "deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", purelib,
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "HF_DATASETS_OFFLINE": "1"}
    where = subprocess.run(
        [str(py), "-c", "import benchmark; print(benchmark.__file__)"],
        check=True, capture_output=True, text=True, cwd=work, env=env,
    ).stdout  # fmt: skip
    assert where.startswith(purelib), where
    out = work / "dist"
    proc = subprocess.run(
        [str(py), "-m", "benchmark", "build", "--tasks", str(root / "tasks"), "--out", str(out),
         "--version", "1.0.0", "--cutoff", "2023-11-15T01:00:00+00:00"],
        capture_output=True, text=True, cwd=work, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    card = (out / "README.md").read_text()
    assert "## Curation rationale" in card and "| `task_id` |" in card


def test_default_config_holds_the_verified_tasks_and_all_every_task(
    released, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    from curation.model import Verification, VerificationStatus
    from curation.taskdir import task_dirs

    _, root = released
    tdirs = task_dirs(root / "tasks")
    assert len(tdirs) == 2
    tdirs[0].record_verification(
        Verification(VerificationStatus.VERIFIED, "1 fail-to-pass", "2026-12-01", "H200")
    )
    tdirs[1].record_verification(Verification(VerificationStatus.OUT_OF_SCOPE, "needs 2 GPUs"))
    out = tmp_path / "dist-verified"
    assert bench(["build", "--tasks", str(root / "tasks"), "--out", str(out), "--version",
                  "1.0.0", "--cutoff", "2020-01-01"]) == 0  # fmt: skip
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    default = datasets.load_dataset(str(out))
    everything = datasets.load_dataset(str(out), "all")
    assert [r["task_id"] for r in default["test"]] == [tdirs[0].id]
    assert sorted(r["task_id"] for r in everything["test"]) == sorted(t.id for t in tdirs)
    row = default["test"][0]
    assert row["verification"]["status"] == "verified" and row["targets"]
    assert row["setup_patch"] is not None and row["requires"]["vendor"] == "nvidia"
    card = (out / "README.md").read_text()
    assert "| fw | 1 | 0 | 1 |" in card  # verified / unverified / out_of_scope per repository
    assert "out_of_scope: needs 2 GPUs | 1 |" in card


def test_a_later_verdict_moves_a_released_task_into_or_out_of_the_default_config(
    released, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    from curation.model import Verification, VerificationStatus
    from curation.taskdir import task_dirs

    _, root = released
    first, second = task_dirs(root / "tasks")
    first.record_verification(Verification(VerificationStatus.VERIFIED, "1 fail-to-pass",
                                           "2026-12-01", "H200"))  # fmt: skip
    second.record_verification(Verification(VerificationStatus.UNVERIFIED, "selection failed",
                                            "2026-12-01", "H200"))  # fmt: skip
    out = tmp_path / "dist-rejudged"
    build = ["build", "--tasks", str(root / "tasks"), "--out", str(out)]
    assert bench([*build, "--version", "1.0.0", "--cutoff", "2020-01-01"]) == 0
    released_files = {p.name: sha(p) for p in (out / "data").glob("*.parquet")}
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert [r["task_id"] for r in datasets.load_dataset(str(out))["test"]] == [first.id]
    # a later GPU run verifies the second task and finds the first flaky: a release that adds
    # no task still records it
    second.record_verification(Verification(VerificationStatus.VERIFIED, "2 fail-to-pass",
                                            "2026-12-02", "H200"), ("tests/t.py::t",))  # fmt: skip
    first.record_verification(Verification(VerificationStatus.UNVERIFIED, "flaky",
                                           "2026-12-02", "H200"))  # fmt: skip
    assert bench([*build, "--version", "1.1.0"]) == 0
    assert {p.name: sha(p) for p in (out / "data").glob("*.parquet")} == released_files
    default = datasets.load_dataset(str(out), download_mode="force_redownload")
    assert [r["task_id"] for r in default["test"]] == [second.id]
    row = default["test"][0]
    assert row["verification"]["reason"] == "2 fail-to-pass"
    assert row["tests"]["node_ids"] == ["tests/t.py::t"]
    everything = datasets.load_dataset(str(out), "all", download_mode="force_redownload")
    as_released = {r["task_id"]: r["verification"]["status"] for r in everything["test"]}
    assert as_released == {first.id: "verified", second.id: "unverified"}  # frozen rows
    manifest = json.loads((out / "manifest.json").read_text())
    moved = manifest["releases"][-1]["defaults"]["test"]
    assert (moved["verified_since"], moved["unverified_since"]) == ([second.id], [first.id])
    from benchmark.build import current_rows  # what scripts/restore_verdicts.py carries back

    now = {t: r["verification"]["reason"] for t, r in current_rows(out).items()}
    assert now == {first.id: "flaky", second.id: "2 fail-to-pass"}
    card = (out / "README.md").read_text()
    assert "| fw | 1 | 1 | 0 |" in card  # the card counts the verdicts shown now
    assert f"verified since (test's default config): {second.id}" in card  # its changelog
    assert f"unverified since (test's default config): {first.id}" in card
    # a third release with nothing new and no verdict moved is refused
    assert bench([*build, "--version", "1.2.0"]) == 1
    # a new reason for a task unverified before and now: the manifest lists it, the card
    # counts it (Liger-Kernel #778: "missing package(s) datasets" on day 1, then its tests
    # could not import HybridCache from the host's transformers)
    why = "installed package version differs from the task's pins: transformers lacks X"
    first.record_verification(Verification(VerificationStatus.UNVERIFIED, why, "2026-12-03",
                                           "H200"))  # fmt: skip
    assert bench([*build, "--version", "1.2.0"]) == 0
    release = json.loads((out / "manifest.json").read_text())["releases"][-1]
    assert list(release["verdicts"]) == [first.id] and "defaults" not in release
    assert current_rows(out)[first.id]["verification"]["reason"] == why
    card = (out / "README.md").read_text()
    assert "unverified: installed package version differs from the task's pins | 1 |" in card


def test_a_task_verified_again_after_curation_revised_it_shows_its_new_setup(
    released, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verdict belongs to the task it was measured on: a released verified task that
    curation revised and the GPU verified again shows, in the new default config, its current
    row (requirement, setup patch, targets) beside its new verdict, not the released one
    (release 1.3.0 showed 1.1.0's setup patches of Liger-Kernel #153 and #262 beside verdicts
    measured on their revised setups). A revision without a new verdict changes nothing."""
    import datasets

    from curation.model import Verification, VerificationStatus

    _, root = released
    out = tmp_path / "dist-revised"
    first, second, build = _both_verified_and_released(root, out)
    old = {t.id: t.read_requirement() for t in (first, second)}
    for t in (first, second):
        t.edit_requirement(old[t.id] + "\nRevised: the wrapper takes `scale`.\n", "curator")
    # curation revised both; only the first was verified again
    assert bench([*build, "--version", "1.1.0"]) == 1
    first.record_verification(Verification(VerificationStatus.VERIFIED, "2 fail-to-pass",
                                           "2026-12-03", "H200"))  # fmt: skip
    assert bench([*build, "--version", "1.1.0"]) == 0
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    default = datasets.load_dataset(str(out), download_mode="force_redownload")
    rows = {r["task_id"]: r for r in default["test"]}
    assert rows[first.id]["requirement"] == first.read_requirement() != old[first.id]
    assert rows[first.id]["verification"]["reason"] == "2 fail-to-pass"
    assert rows[second.id]["requirement"] == old[second.id]  # as before: no new verdict
    everything = datasets.load_dataset(str(out), "all", download_mode="force_redownload")
    assert {r["task_id"]: r["requirement"] for r in everything["test"]} == old  # frozen rows
    moved = json.loads((out / "manifest.json").read_text())["releases"][-1]["defaults"]["test"]
    assert (moved["revised"], moved["verified_since"], moved["unverified_since"]) == (
        [first.id],
        [],
        [],
    )
    assert f"revised (test's default config): {first.id}" in (out / "README.md").read_text()
    # curated again on a machine that has not run them: no verdict of their own is no news
    from dataclasses import replace

    from core.files import write_record
    from curation.taskdir import TaskFile

    for t in (first, second):
        write_record(t.path(TaskFile.TASK), replace(t.load_task(), verification=Verification()))
    assert bench([*build, "--version", "1.2.0"]) == 1  # refused: nothing new, nothing moved


def test_a_verdict_reached_on_another_setup_state_is_not_published_as_verified(
    released,
) -> None:
    """A GPU verdict notes the setup patch it was reached on (its hash); a task curated again
    since, with another setup patch, keeps the verdict in task.json but its row says
    unverified and why (before, a re-curation kept `verified` over a setup nobody ran)."""
    from benchmark.schema import SETUP_MARK, row
    from curation.model import Verification, VerificationStatus
    from curation.taskdir import TaskFile, task_dirs

    _, root = released
    tdir = task_dirs(root / "tasks")[0]
    task = tdir.record_verification(Verification(VerificationStatus.VERIFIED, "1 fail-to-pass",
                                                 "2026-12-03", "H200"))  # fmt: skip
    assert task.verification.setup == tdir.setup_digest()
    shown = row(tdir)["verification"]
    assert shown["status"] == "verified"
    assert shown["environment"] == f"H200{SETUP_MARK}{tdir.setup_digest()}"
    tdir.write(TaskFile.SETUP_PATCH, (tdir.read_bytes(TaskFile.SETUP_PATCH) or b"") + b"\n")
    stale = row(tdir)["verification"]
    assert stale["status"] == "unverified"
    assert (
        stale["reason"] == "the setup state changed since this verdict (verified: 1 fail-to-pass)"
    )
    assert tdir.load_task().verification.status == "verified"  # task.json keeps what ran


def test_the_same_verdict_beside_another_setup_patch_is_news() -> None:
    """Release 1.3.0 showed Liger-Kernel #153's verdict (reached on its revised setup state)
    beside the setup patch of release 1.1.0. A verdict that names its setup patch's hash is news
    where the shown row holds another setup patch, and no news where it holds the same."""
    from benchmark.build import _new_verdict
    from benchmark.schema import SETUP_MARK
    from curation.taskdir import patch_digest

    v = {"status": "verified", "reason": "3 fail-to-pass", "checked_at": "2026-12-02",
         "environment": "H200"}  # fmt: skip
    shown = {"verification": v, "setup_patch": "old setup"}
    on = {s: {"verification": {**v, "environment": f"H200{SETUP_MARK}{patch_digest(s.encode())}"}}
          for s in ("old setup", "new setup")}  # fmt: skip
    assert _new_verdict(shown, on["new setup"]) is True
    assert _new_verdict(shown, on["old setup"]) is False
    assert _new_verdict(shown, {"verification": v}) is False  # no hash: as shown
    never = {"status": "unverified", "reason": "no reference run yet", "checked_at": None,
             "environment": None}  # fmt: skip
    # a directory never judged on the shown setup patch (a new machine's curation): no news
    assert _new_verdict(shown, {"verification": never, "setup_patch": "old setup"}) is False
    # never judged on another setup patch (2026-12-05: keep_base_globals changed 28 setup
    # states; the calls' verdicts on the old ones are not merged): the verified row lapses
    assert _new_verdict(shown, {"verification": never, "setup_patch": "new setup"}) is True
    unverified = {"verification": {**v, "status": "unverified"}, "setup_patch": "old setup"}
    assert _new_verdict(unverified, {"verification": never, "setup_patch": "new setup"}) is False


def test_a_verified_row_whose_setup_state_changed_unrun_leaves_the_default_config(
    released, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Release 1.11.0 held six verified tasks whose setup state lost module names the PR
    deleted (their base failed for that alone); the fix changed their setup patch, and a task
    not run on the new one leaves the default config with the reason, in the next release."""
    import datasets

    from benchmark.build import LAPSED
    from curation.model import Verification, VerificationStatus
    from curation.taskdir import TaskFile

    _, root = released
    out = tmp_path / "dist-lapsed"
    first, second, build = _both_verified_and_released(root, out)
    # the curation fix: a new setup patch, and the directory's verdict gone (not merged)
    extra = (b"diff --git a/pkg/kept.py b/pkg/kept.py\nnew file mode 100644\n--- /dev/null\n"
             b"+++ b/pkg/kept.py\n@@ -0,0 +1 @@\n+KEPT = 1\n")  # fmt: skip
    first.write(TaskFile.SETUP_PATCH, (first.read_bytes(TaskFile.SETUP_PATCH) or b"") + extra)
    first.record_verification(Verification(VerificationStatus.UNVERIFIED, "no reference run yet"))
    assert bench([*build, "--version", "1.1.0"]) == 0
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    default = datasets.load_dataset(str(out), download_mode="force_redownload")
    assert [r["task_id"] for r in default["test"]] == [second.id]
    from benchmark.build import current_rows

    assert current_rows(out)[first.id]["verification"]["reason"] == LAPSED


def test_the_workloads_config_holds_each_tasks_workload_and_result(
    released, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10: the workload is in the dataset too. A config of its own (`workloads`), so the
    task rows' layout, frozen in released files, stays as it is; the calls and the result are
    JSON text."""
    import datasets

    from curation.model import Verification, VerificationStatus
    from curation.taskdir import TaskFile, task_dirs

    _, root = released
    first, _second = task_dirs(root / "tasks")
    calls = [{"label": "small", "source": "benchmark_script", "dims": {"N": 4096}}]
    plan = {"task_id": first.id, "metric": "kernel_time", "metric_evidence": "default",
            "calls": calls, "why": "", "tried": [], "schema_version": 1}  # fmt: skip
    first.write(TaskFile.WORKLOAD, json.dumps(plan))
    # stored `separated: false` under the old per-size rule (Liger-Kernel #815: the gold is
    # slower at the small size, faster in total); the row says what today's rule says
    timed = [
        {
            "label": "small",
            "base": {"median_ms": 0.1, "p25_ms": 0.09, "p75_ms": 0.11, "reps": 100},
            "gold": {"median_ms": 0.12, "p25_ms": 0.11, "p75_ms": 0.13, "reps": 100},
        },
        {
            "label": "large",
            "base": {"median_ms": 0.906, "p25_ms": 0.9, "p75_ms": 0.91, "reps": 100},
            "gold": {"median_ms": 0.533, "p25_ms": 0.53, "p75_ms": 0.54, "reps": 100},
        },
    ]
    stored = {"task_id": first.id, "metric": "kernel_time", "base_total_ms": 1.006,
              "gold_total_ms": 0.653, "speedup": 1.54, "separated": False,
              "measured_at": "2026-12-03T08:14:09+00:00", "environment": "NVIDIA H200",
              "calls": timed}  # fmt: skip
    first.write(TaskFile.WORKLOAD_RESULT, json.dumps(stored))
    result = {**stored, "separated": True}
    out = tmp_path / "dist-workloads"
    assert bench(["build", "--tasks", str(root / "tasks"), "--out", str(out), "--version",
                  "1.0.0", "--cutoff", "2020-01-01"]) == 0  # fmt: skip
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # (a fresh read: the datasets cache is keyed by the path, which pytest reuses across runs)
    [row] = datasets.load_dataset(str(out), "workloads", download_mode="force_redownload")["train"]
    assert (row["task_id"], row["sizes"], row["speedup"], row["separated"]) == (
        first.id, ["small"], 1.54, True)  # fmt: skip
    assert json.loads(row["calls"]) == calls and json.loads(row["result"]) == result
    assert datasets.load_dataset(str(out), "all")["test"].num_rows == 2  # the tasks as before
    # a later release whose workloads are the same writes no new file; a changed one does
    first.record_verification(Verification(VerificationStatus.VERIFIED, "1 fail-to-pass",
                                           "2026-12-03", "H200"))  # fmt: skip
    build = ["build", "--tasks", str(root / "tasks"), "--out", str(out)]
    assert bench([*build, "--version", "1.1.0"]) == 0
    assert len(list((out / "data" / "workloads").iterdir())) == 1
    first.write(TaskFile.WORKLOAD_RESULT, json.dumps({**stored, "speedup": 1.55}))
    first.record_verification(Verification(VerificationStatus.UNVERIFIED, "flaky",
                                           "2026-12-04", "H200"))  # fmt: skip
    assert bench([*build, "--version", "1.2.0"]) == 0
    [row] = datasets.load_dataset(str(out), "workloads", download_mode="force_redownload")["train"]
    assert row["speedup"] == 1.55 and len(list((out / "data" / "workloads").iterdir())) == 2
