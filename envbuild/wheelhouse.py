"""Wheelhouses: the pinned packages of each task environment, downloaded for a GPU machine that
has no network, and the virtual environments made from them there.

`python -m envbuild.wheelhouse --tasks tasks --out wheels` reads each task's env.json (run
`python -m envbuild` first) and, for every distinct set of package pins, downloads their wheels
with their dependencies for the target interpreter and platform into `wheels/<key>/`, with the
pins in `requirements.txt`. The key is a hash of the pins, so tasks with the same pins share one
wheelhouse. torch, Triton and CUDA packages are never part of it: a task's environment is
installed over the host's torch, Triton and CUDA (a virtual environment that sees the system
site packages), and a task whose torch or Triton pin the host cannot meet is not helped by it.

`prepare_venv` (used by the eval's local backend) makes `<cache>/<key>` once: a virtual
environment whose own site directory holds the wheelhouse (installed offline) and which then
sees this interpreter's site directories (a path file): the pinned packages win, torch and
Triton come from the host.
`--pool` keeps once the wheels several wheelhouses under `--out` hold (`<out>/_pool`, each
wheelhouse naming them in its `pooled.txt`): a carry to the GPU machine holds 64 MiB.
Refuses: a pip failure is an `EnvBuildError` naming the key and pip's last line; a pooled wheel
the pool lacks, one naming the wheelhouse and the wheel.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuild.errors import EnvBuildError
from envbuild.model import EnvSpec

HOST_PROVIDED = ("torch", "triton", "pytorch-triton", "nvidia-", "cuda-", "base_image")
PLATFORMS = (
    "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
    "manylinux2014_x86_64", "manylinux1_x86_64",
)  # fmt: skip
REQUIREMENTS = "requirements.txt"
# wheels several wheelhouses of one root hold, kept once (`pool`): a carry to the GPU machine
# holds 64 MiB, and flash-linear-attention's wheelhouses differ only in transformers (10 MB)
# while sharing tokenizers and huggingface-hub (3.7 MB)
POOL = "_pool"
POOLED = "pooled.txt"  # in a wheelhouse: the names of its wheels that live in the pool


def package_pins(spec: EnvSpec) -> tuple[str, ...]:
    """`name==version` of the environment's pins the host does not provide, sorted."""
    return tuple(
        sorted(
            f"{p.name}=={p.value}"
            for p in spec.extra_pins
            if not p.name.startswith(HOST_PROVIDED) and p.value
        )
    )


def env_key(pins: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:16]


def read_host(path: Path) -> dict[str, str]:
    """A machine's package set (`name==version` lines, `#` comments) by canonical name."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[canonicalize_name(name)] = version.strip()
    return out


def _requires(wheel: Path) -> list[Requirement]:
    """The unconditional requirements in a wheel's METADATA (extras and markers that do not
    hold for a Linux CPython left out)."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode("utf-8", "replace")
    out = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        if req.marker is not None:
            try:
                if not req.marker.evaluate({"extra": "", "sys_platform": "linux"}):
                    continue
            except Exception:  # a marker this environment cannot evaluate: keep the need
                pass
        out.append(req)
    return out


def _wheel_name(wheel: Path) -> str:
    return canonicalize_name(wheel.name.split("-", 1)[0])


def trim(dest: Path, pins: Sequence[str], host: dict[str, str]) -> list[str]:
    """Remove the dependency wheels whose package the host already has at a version every
    downloaded wheel accepts (the virtual environment sees the host's site packages); the
    pinned packages always stay. The names removed."""
    wheels = sorted(dest.glob("*.whl"))
    specs: dict[str, SpecifierSet] = {}
    for w in wheels:
        for req in _requires(w):
            key = canonicalize_name(req.name)
            specs[key] = specs.get(key, SpecifierSet()) & req.specifier
    pinned = {canonicalize_name(p.split("==", 1)[0]) for p in pins}
    removed = []
    for w in wheels:
        name = _wheel_name(w)
        have = host.get(name)
        if name in pinned or have is None:
            continue
        try:
            ok = specs.get(name, SpecifierSet()).contains(Version(have), prereleases=True)
        except InvalidVersion:
            ok = False
        if ok:
            w.unlink()
            removed.append(name)
    return removed


_NO_BINARY = re.compile(r"No matching distribution found for (\S+)")


def download(
    pins: Sequence[str],
    dest: Path,
    python_version: str,
    platforms: Sequence[str] = PLATFORMS,
    host: dict[str, str] | None = None,
    pip_args: Sequence[str] = (),
) -> int:
    """Download the wheels of `pins` and their dependencies into `dest` (without those the
    `host` package set already satisfies); the bytes kept. A dependency published only as a
    source distribution is built here into a pure-Python wheel (omegaconf needs
    antlr4-python3-runtime 4.9, an sdist); `pip_args` go to every pip call (an index)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / REQUIREMENTS).write_text("".join(f"{p}\n" for p in pins))
    args = [
        sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(dest),
        "--python-version", python_version, "--implementation", "cp",
        *(x for plat in platforms for x in ("--platform", plat)), "-r", str(dest / REQUIREMENTS),
        "--find-links", str(dest), *pip_args,
    ]  # fmt: skip
    built: set[str] = set()
    while True:
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            break
        last = (proc.stderr.strip().splitlines() or ["pip failed"])[-1]
        wanted = _NO_BINARY.search(proc.stderr)
        if wanted is None or wanted.group(1) in built:
            raise EnvBuildError(f"wheelhouse {dest.name}: {last}")
        why = pure_wheel(wanted.group(1), dest, pip_args)
        if why:
            raise EnvBuildError(f"wheelhouse {dest.name}: {last} ({why})")
        built.add(wanted.group(1))
    if host:
        trim(dest, pins, host)
    return sum(f.stat().st_size for f in dest.glob("*.whl"))


def pure_wheel(requirement: str, dest: Path, pip_args: Sequence[str] = ()) -> str | None:
    """Build `requirement` from its source distribution into a wheel in `dest`; None when it
    gave a pure-Python one (`-none-any`, good on any target), else why not (a compiled wheel
    would be built for this machine, not for the GPU machine's interpreter)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp, *pip_args,
               requirement]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != 1:
            return "no wheel could be built from its source distribution"
        if not wheels[0].name.endswith("-none-any.whl"):
            return f"its source distribution builds a compiled wheel ({wheels[0].name})"
        shutil.move(str(wheels[0]), dest / wheels[0].name)
    return None


def pool(root: Path) -> int:
    """Move every wheel that more than one wheelhouse under `root` holds into `root/_pool`
    (once), each of those wheelhouses naming it in its `pooled.txt`; the bytes saved. Run again,
    it pools what was added since."""
    houses = sorted(d for d in root.iterdir() if (d / REQUIREMENTS).is_file())
    holders: dict[str, list[Path]] = {}
    for house in houses:
        for wheel in house.glob("*.whl"):
            holders.setdefault(wheel.name, []).append(house)
    shared = root / POOL
    saved = 0
    for name, where in sorted(holders.items()):
        if len(where) < 2 and not (shared / name).is_file():
            continue
        shared.mkdir(exist_ok=True)
        for house in where:
            wheel = house / name
            if (shared / name).is_file():
                saved += wheel.stat().st_size
                wheel.unlink()
            else:
                shutil.move(str(wheel), shared / name)
            listed = _pooled(house)
            if name not in listed:
                (house / POOLED).write_text("".join(f"{n}\n" for n in [*listed, name]))
    return saved


def _pooled(house: Path) -> list[str]:
    path = house / POOLED
    return path.read_text().split() if path.is_file() else []


INSTALLED = ".installed"  # written last: a venv without it is half made


def prepare_venv(wheelhouse: Path, cache: Path, python: str = sys.executable) -> Path:
    """The interpreter of a virtual environment (system site packages visible) with the
    wheelhouse installed offline; made once per wheelhouse under `cache`."""
    venv = cache / wheelhouse.name
    bin_python = venv / "bin" / "python"
    marker = venv / INSTALLED
    if marker.exists():
        return bin_python
    cache.mkdir(parents=True, exist_ok=True)
    # tasks run side by side share a wheelhouse: one process makes its venv, the others wait
    with open(cache / f"{wheelhouse.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            _make_venv(wheelhouse, venv, python)
    return bin_python


def _make_venv(wheelhouse: Path, venv: Path, python: str) -> None:
    bin_python = venv / "bin" / "python"
    shutil.rmtree(venv, ignore_errors=True)  # a run killed half way leaves no marker
    _step([python, "-m", "venv", "--without-pip", str(venv)], wheelhouse)
    # The host's packages (torch, Triton, ... in this interpreter's site directories, which
    # may themselves be a virtual environment's) come after the venv's own: a path file.
    own = _step([str(bin_python), "-c", _PURELIB], wheelhouse).strip()
    Path(own, "tpb-host.pth").write_text("\n".join(_site_dirs()) + "\n")
    install = [python, "-m", "pip", "--python", str(bin_python), "install", "-q", "--no-index",
               "--no-deps", "--find-links", str(wheelhouse), *_wheels(wheelhouse)]  # fmt: skip
    _step(install, wheelhouse)
    (venv / INSTALLED).write_text("\n".join(_wheels(wheelhouse)) + "\n")


_PURELIB = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def _site_dirs() -> list[str]:
    import site
    import sysconfig

    dirs = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    dirs += site.getsitepackages()
    return list(dict.fromkeys(d for d in dirs if Path(d).is_dir()))


def _step(cmd: list[str], wheelhouse: Path) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise EnvBuildError(f"environment {wheelhouse.name}: {last}")
    return proc.stdout


def _wheels(wheelhouse: Path) -> list[str]:
    """The wheelhouse's own wheels and those its `pooled.txt` names in the root's pool."""
    shared = [wheelhouse.parent / POOL / name for name in _pooled(wheelhouse)]
    missing = [p.name for p in shared if not p.is_file()]
    if missing:
        raise EnvBuildError(
            f"environment {wheelhouse.name}: {wheelhouse / POOLED} names {missing[0]}, which "
            f"{wheelhouse.parent / POOL} does not hold"
        )
    return sorted(str(p) for p in [*wheelhouse.glob("*.whl"), *shared])


def main(argv: list[str] | None = None) -> int:
    from core.errors import CoreError
    from curation.taskdir import TaskFile, task_dirs

    p = argparse.ArgumentParser(prog="python -m envbuild.wheelhouse", description=__doc__.split(
        "\n\n")[0])  # fmt: skip
    p.add_argument("--tasks", type=Path, default=Path("tasks"))
    p.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    p.add_argument("--task-file", type=Path, help="only the task ids this file lists (one a line)")
    p.add_argument("--out", type=Path, required=True, help="wheelhouse root (one folder a key)")
    p.add_argument(
        "--pool", action="store_true",
        help="only keep once the wheels several wheelhouses under OUT hold (OUT/_pool; each "
        "names them in its pooled.txt), e.g. before carrying them to the GPU machine",
    )  # fmt: skip
    p.add_argument(
        "--plan", action="store_true",
        help="download nothing: each key with its pins, task count and whether OUT holds it, "
        "most tasks first (a carry to a GPU machine holds only a few wheelhouses)",
    )  # fmt: skip
    p.add_argument("--python-version", default="3.12", help="of the GPU machine (default 3.12)")
    p.add_argument(
        "--host", type=Path,
        help="the GPU machine's package set (`name==version` lines, e.g. envbuild/hosts/"
        "h200.txt): dependencies it already satisfies are not downloaded",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.pool:
        if not args.out.is_dir():
            print(f"error: {args.out}: no such wheelhouse root", file=sys.stderr)
            return 1
        saved = pool(args.out)
        print(f"pooled in {args.out / POOL}: {saved / 2**20:.1f} MB saved")
        return 0
    host = read_host(args.host) if args.host else None
    groups: dict[str, list[str]] = {}
    pins_of: dict[str, tuple[str, ...]] = {}
    try:
        wanted = set(args.task)
        if args.task_file is not None:
            try:
                wanted |= set(args.task_file.read_text().split())
            except OSError as exc:
                raise EnvBuildError(f"{args.task_file}: cannot read the task list ({exc.strerror})"
                                    ) from None  # fmt: skip
        for tdir in task_dirs(args.tasks):
            if wanted and tdir.id not in wanted:
                continue
            spec = tdir.load(TaskFile.ENV, EnvSpec)
            if spec is None:
                print(f"{tdir.id}: no env.json (run python -m envbuild first)", file=sys.stderr)
                continue
            pins = package_pins(spec)
            if pins:
                key = env_key(pins)
                groups.setdefault(key, []).append(tdir.id)
                pins_of[key] = pins
        if args.plan:
            for key, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                here = "here" if (args.out / key / REQUIREMENTS).is_file() else "to download"
                print(f"{key} {len(ids)} {' '.join(pins_of[key])} ({here})")
            return 0
        total = 0
        for key, ids in sorted(groups.items()):
            size = download(pins_of[key], args.out / key, args.python_version, host=host)
            total += size
            print(f"{key}: {', '.join(pins_of[key])}: {len(ids)} tasks, {size / 2**20:.1f} MB")
    except (EnvBuildError, CoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{len(groups)} wheelhouses, {total / 2**20:.1f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
