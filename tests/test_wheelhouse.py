"""Per-environment wheelhouses (envbuild.wheelhouse): the pins a task's tests need, installed
into a virtual environment over this interpreter's packages, and the eval running the task's
tests there, on wheels built here from tiny packages written for the test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.files import write_record
from curation.taskdir import TaskDir, TaskFile, task_dirs
from envbuild.errors import EnvBuildError
from envbuild.model import EnvSpec, Layer, LayerKind, Pin, PinSource
from envbuild.wheelhouse import env_key, package_pins, prepare_venv, read_host, trim
from eval.__main__ import main as eval_main
from tests.tinyfw import make_task_env

pytest.importorskip("torch")
pytest.importorskip("triton")


def build_wheel(root: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of `name` whose module says its version (pip wheel, no network)."""
    src = root / f"src-{name}-{version}"
    (src / name).mkdir(parents=True)
    (src / name / "__init__.py").write_text(f"VERSION = {version!r}\n")
    deps = ", ".join(json.dumps(r) for r in requires)
    (src / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
        f'[tool.setuptools]\npackages = ["{name}"]\n'
    )
    out = root / "built"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(src)],
                   check=True, capture_output=True)  # fmt: skip
    return next(out.glob(f"{name}-{version}-*.whl"))


def spec(task_id: str, pins: dict[str, str]) -> EnvSpec:
    pin = [Pin(n, v, PinSource.DATE, "test") for n, v in pins.items()]
    layers = tuple(Layer(k, f"tag-{k}", None, "FROM scratch\n") for k in LayerKind)
    p = Pin("x", "1", PinSource.DEFAULT, "test")
    return EnvSpec(task_id, "fw", "pip-editable", "c", "2024-01-01", p, p, p, p,
                   (*pin, Pin("torch", "2.4", PinSource.DATE, "host")), layers)  # fmt: skip


def test_pins_key_and_trim_keep_only_what_the_host_lacks(tmp_path: Path) -> None:
    s = spec("t", {"tpbdep": "1.0"})
    assert package_pins(s) == ("tpbdep==1.0",)  # torch is the host's, never in a wheelhouse
    assert env_key(["b==1", "a==2"]) == env_key(["a==2", "b==1"])
    house = tmp_path / "house"
    house.mkdir()
    for w in (
        build_wheel(tmp_path, "tpbdep", "1.0", ("tpbbase>=1,<2",)),
        build_wheel(tmp_path, "tpbbase", "1.2"),
        build_wheel(tmp_path, "tpbother", "3.0"),
    ):
        w.rename(house / w.name)  # fmt: skip
    host_file = tmp_path / "host.txt"
    host_file.write_text("# a machine\ntpbbase==1.5\ntpbother==9.0\ntpbdep==7.0\n")
    host = read_host(host_file)
    removed = trim(house, ["tpbdep==1.0"], host)
    # tpbbase 1.5 fits >=1,<2: the host's serves; tpbother has no constraint: the host's
    # serves; the pinned tpbdep always stays, whatever the host has
    assert sorted(removed) == ["tpbbase", "tpbother"]
    assert [w.name.split("-")[0] for w in house.glob("*.whl")] == ["tpbdep"]
    host_file.write_text("tpbbase==2.5\n")
    house2 = tmp_path / "house2"
    house2.mkdir()
    for w in (
        build_wheel(tmp_path / "b", "tpbdep", "1.0", ("tpbbase>=1,<2",)),
        build_wheel(tmp_path / "b", "tpbbase", "1.2"),
    ):
        w.rename(house2 / w.name)  # fmt: skip
    assert trim(house2, ["tpbdep==1.0"], read_host(host_file)) == []  # 2.5 does not fit


PINNED_TEST = (
    "import torch\nimport tpbdep\n\nfrom pkg.ops import add\n\n\n"
    "def test_pinned():\n    assert tpbdep.VERSION == '1.0'\n"
    "    x = torch.ones(8)\n    assert add(x, x).shape == x.shape\n"
)


def pinned_task(tmp_path: Path) -> tuple[Path, Path, Path, TaskDir, Path]:
    """(repository, work, tasks, the task, wheels) of a tiny task whose test imports `tpbdep`,
    pinned at 1.0 in its env.json, with that pin's wheelhouse under `wheels`."""
    repo, work, tasks = make_task_env(tmp_path, {"tests/test_pinned.py": PINNED_TEST})
    [tdir] = task_dirs(tasks)
    write_record(tdir.path(TaskFile.ENV), spec(tdir.id, {"tpbdep": "1.0"}))
    wheels = tmp_path / "wheels"
    house = wheels / env_key(["tpbdep==1.0"])
    house.mkdir(parents=True)
    wheel = build_wheel(tmp_path, "tpbdep", "1.0")
    wheel.rename(house / wheel.name)
    (house / "requirements.txt").write_text("tpbdep==1.0\n")
    return repo, work, tasks, tdir, wheels


def test_a_task_runs_on_its_pinned_packages_and_records_them(tmp_path: Path) -> None:
    _repo, work, tasks, tdir, wheels = pinned_task(tmp_path)
    house = wheels / env_key(["tpbdep==1.0"])
    python = prepare_venv(house, tmp_path / "venvs")
    out = subprocess.run([str(python), "-c", "import tpbdep, torch; print(tpbdep.VERSION)"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "1.0"  # its own pin, and the host's torch
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--timeout", "120",
            "--triton-cache", str(tmp_path / "cache"), "--wheelhouse", str(wheels),
            "--task-file", str(_ids(tmp_path, tdir.id)), "--reselect"]  # fmt: skip
    assert eval_main(argv) == 0
    ref = json.loads(tdir.path(TaskFile.REFERENCE).read_text())
    assert "tpbdep==1.0" in ref["environment"]["packages"]
    passed = {t["nodeid"] for r in ref["runs"] if r["variant"] == "gold" for t in r["tests"]
              if t["outcome"] == "passed"}  # fmt: skip
    assert "tests/test_pinned.py::test_pinned" in passed
    # without the wheelhouse the same test cannot import its pin
    argv_plain = [a for a in argv if a not in ("--wheelhouse", str(wheels))]
    argv_plain[argv_plain.index("--out") + 1] = str(tmp_path / "runs2")
    assert eval_main([*argv_plain, "--force"]) == 0
    ref = json.loads(tdir.path(TaskFile.REFERENCE).read_text())
    assert "tpbdep==1.0" not in ref["environment"]["packages"]


def test_side_by_side_tasks_share_one_venv_and_a_half_made_one_is_remade(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    house = tmp_path / "house"
    house.mkdir()
    wheel = build_wheel(tmp_path, "tpbdep", "1.0")
    wheel.rename(house / wheel.name)
    cache = tmp_path / "venvs"
    (cache / house.name / "bin").mkdir(parents=True)  # a run killed while making it
    (cache / house.name / "bin" / "python").write_text("not an interpreter")
    with ThreadPoolExecutor(4) as pool:
        pythons = list(pool.map(lambda _: prepare_venv(house, cache), range(4)))
    assert len(set(pythons)) == 1
    out = subprocess.run([str(pythons[0]), "-c", "import tpbdep; print(tpbdep.VERSION)"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "1.0"


def _ids(tmp_path: Path, *ids: str) -> Path:
    path = tmp_path / "ids.txt"
    path.write_text("\n".join(ids) + "\n")
    return path


def test_a_score_never_mixes_the_package_sets_of_reference_and_prediction(tmp_path: Path) -> None:
    """Liger-Kernel #262 and #320 were verified on their transformers 4.44.2 / 4.46.2
    wheelhouses; scored on the H200 without them, the gold as a prediction read as "infra,
    unreported_tests" (their tests no longer imported). The score now refuses such a task up
    front and says which pin differs and how to give it."""
    from eval.gate import package_gap

    assert package_gap(["a==1"], ["A==1", "b==2"], ["a==1", "b==3"]) is None  # b is not pinned
    assert package_gap(["a==1"], ["a==1"], ["b==2"]) == "a 1 (here missing)"
    assert package_gap(["a_b==1"], ["A-B==1"], ["a-b==2"]) == "a-b 1 (here 2)"
    assert package_gap(["a==1"], [], ["a==2"]) is None  # no package set recorded: not checked
    repo, work, tasks, tdir, wheels = pinned_task(tmp_path)
    common = ["--tasks", str(tasks), "--work", str(work), "--no-isolated-timing",
              "--timeout", "120", "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(["reference", *common, "--runs", "1", "--out", str(tmp_path / "runs"),
                      "--wheelhouse", str(wheels)]) == 0  # fmt: skip
    preds = tmp_path / "gold.jsonl"
    assert eval_main(["oracle", "--tasks", str(tasks), "--repo-path", f"fw={repo}",
                      "--from", "gold", "--out", str(preds)]) == 0  # fmt: skip

    def score(out: str, *extra: str) -> dict:
        eval_main(["score", str(preds), *common, "--out", str(tmp_path / out), *extra])
        return json.loads((tmp_path / out / "report.json").read_text())["tasks"][0]

    row = score("plain")
    assert (row["failure"], row["passed"]) == ("infra", False)
    assert "tpbdep 1.0 (here missing)" in row["detail"] and "--wheelhouse" in row["detail"]
    assert not (tmp_path / "plain" / tdir.id).exists()  # refused before any run
    row = score("pinned", "--wheelhouse", str(wheels))
    assert row["passed"], row


def test_a_dependency_published_only_as_a_source_distribution_is_built_pure(
    tmp_path: Path,
) -> None:
    """omegaconf 2.3 needs antlr4-python3-runtime 4.9, published only as an sdist: the
    binary-only download failed ("No matching distribution found"). A pure-Python package is
    built into a `-none-any` wheel and the download goes on."""
    import tarfile

    from envbuild.wheelhouse import download

    src = tmp_path / "sdistdep-1.0"
    (src / "sdistdep").mkdir(parents=True)
    (src / "sdistdep" / "__init__.py").write_text("VERSION = '1.0'\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "sdistdep"\nversion = "1.0"\n'
        '[tool.setuptools]\npackages = ["sdistdep"]\n'
    )
    index = tmp_path / "index"
    index.mkdir()
    with tarfile.open(index / "sdistdep-1.0.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="sdistdep-1.0")
    build_wheel(tmp_path, "binarydep", "2.0", requires=("sdistdep==1.0",)).rename(
        index / "binarydep-2.0-py3-none-any.whl"
    )
    dest = tmp_path / "wh"
    local = ("--no-index", "--find-links", str(index), "--no-build-isolation")
    size = download(["binarydep==2.0"], dest, "3.12", pip_args=local)
    names = sorted(w.name for w in dest.glob("*.whl"))
    assert names == ["binarydep-2.0-py3-none-any.whl", "sdistdep-1.0-py3-none-any.whl"]
    assert size == sum(w.stat().st_size for w in dest.glob("*.whl"))


def test_a_workload_is_timed_on_the_tasks_wheelhouse(tmp_path: Path) -> None:
    """Megatron-LM #4460 / #4603 (H200, 2026-12-03): their modules import omegaconf, which the
    machine's image lacks; `eval workload --wheelhouse` times them on the venv their tests run
    on, and a task without a wheelhouse keeps this interpreter."""
    from eval.workload_cli import on_wheelhouse
    from eval.workload_run import MeasureSettings

    _repo, _work, _tasks, tdir, wheels = pinned_task(tmp_path)
    settings = on_wheelhouse(MeasureSettings(), wheels, tdir)
    assert settings.python is not None and settings.python != sys.executable
    out = subprocess.run([settings.python, "-c", "import tpbdep; print(tpbdep.VERSION)"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "1.0"
    assert on_wheelhouse(MeasureSettings(), None, tdir).python is None
    assert on_wheelhouse(MeasureSettings(), tmp_path / "elsewhere", tdir).python is None


def test_the_plan_ranks_wheelhouses_by_the_tasks_they_let_run_and_downloads_nothing(
    tmp_path: Path, capsys
) -> None:
    """2026-12-04: a carry to the GPU machine holds two wheelhouses beside the tracked tree, so
    which two matters (flash-linear-attention before mid-2025: 67 tasks over 21 keys); `--plan`
    ranks the keys by their tasks, says which are already downloaded, and fetches nothing."""
    from envbuild.wheelhouse import main as wheelhouse_main

    _repo, _work, tasks = make_task_env(tmp_path / "env")
    [tdir] = task_dirs(tasks)
    write_record(tdir.path(TaskFile.ENV), spec(tdir.id, {"tpbdep": "1.0"}))
    other = TaskDir(tasks / f"{tdir.id}-b")
    shutil.copytree(tdir.root, other.root)
    third = TaskDir(tasks / f"{tdir.id}-c")
    shutil.copytree(tdir.root, third.root)
    write_record(third.path(TaskFile.ENV), spec(third.id, {"tpbdep": "2.0"}))
    out = tmp_path / "wheels"
    argv = ["--tasks", str(tasks), "--out", str(out), "--plan"]
    assert wheelhouse_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    one, two = env_key(["tpbdep==1.0"]), env_key(["tpbdep==2.0"])
    assert lines == [f"{one} 2 tpbdep==1.0 (to download)", f"{two} 1 tpbdep==2.0 (to download)"]
    assert not out.exists()
    (out / two).mkdir(parents=True)
    (out / two / "requirements.txt").write_text("tpbdep==2.0\n")
    (tmp_path / "ids.txt").write_text(f"{third.id}\n")
    assert wheelhouse_main([*argv, "--task-file", str(tmp_path / "ids.txt")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{two} 1 tpbdep==2.0 (here)"]
    assert wheelhouse_main([*argv, "--task-file", str(tmp_path / "none.txt")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "none.txt: cannot read the task list" in err
    assert "\n" not in err


def test_pooled_wheelhouses_keep_a_shared_wheel_once_and_still_install_it(tmp_path: Path) -> None:
    """Two keys that differ in one pin and share a dependency (flash-linear-attention's
    wheelhouses: transformers 4.47.1 / 4.49.0 beside one tokenizers): `--pool` keeps the shared
    wheel once, and each venv still gets it; a pool that lost it is a one-line error."""
    from envbuild.wheelhouse import POOL, POOLED
    from envbuild.wheelhouse import main as wheelhouse_main

    root = tmp_path / "wh"
    shared = build_wheel(tmp_path / "s", "tpbbase", "1.2")
    for version in ("1.0", "2.0"):
        house = root / env_key([f"tpbdep=={version}"])
        house.mkdir(parents=True)
        own = build_wheel(tmp_path / version, "tpbdep", version, ("tpbbase>=1,<2",))
        shutil.copy(own, house / own.name)
        shutil.copy(shared, house / shared.name)
        (house / "requirements.txt").write_text(f"tpbdep=={version}\n")
    assert wheelhouse_main(["--out", str(root), "--pool"]) == 0
    assert [p.name for p in (root / POOL).iterdir()] == [shared.name]
    for version in ("1.0", "2.0"):
        house = root / env_key([f"tpbdep=={version}"])
        assert [p.name for p in house.glob("*.whl")] == [f"tpbdep-{version}-py3-none-any.whl"]
        assert (house / POOLED).read_text().split() == [shared.name]
        python = prepare_venv(house, tmp_path / "venvs")
        probe = "import tpbdep, tpbbase; print(tpbdep.VERSION, tpbbase.VERSION)"
        out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                             check=True)  # fmt: skip
        assert out.stdout.split() == [version, "1.2"]
    assert wheelhouse_main(["--out", str(root), "--pool"]) == 0  # again: nothing moves
    (root / POOL / shared.name).unlink()
    house = root / env_key(["tpbdep==1.0"])
    with pytest.raises(EnvBuildError, match=f"{POOLED} names {shared.name}"):
        prepare_venv(house, tmp_path / "other-venvs")
