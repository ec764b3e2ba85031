"""A framework's compiled extensions for the local backend (issue 9, item 7).

A repository whose package imports its own C++/CUDA extension cannot run its tests from the
source tree alone (on an unseen Triton repository, 17 of 19 tasks failed with `No module named
'<extension>'`): the local backend puts the tree on the path and installs nothing. Here the
tree's extensions are built once with the interpreter the tests run on (`setup.py build_ext
--inplace`: the H200 has nvcc, so CUDA extensions build there too), cached by what they are
built from, and copied into every run's tree.

The key is a hash of every compiled source (`SOURCES`), `setup.py` and `pyproject.toml`, and
of the interpreter (its path, version and torch version): base, gold and prediction trees share
one build unless the gold patch changes compiled code. A prediction may change only its target
functions (Python), so its key is the setup state's; and its tree is never built (the build
imports framework modules, which would run the prediction's code outside the sandbox): on a
cache miss the build runs in a trusted tree of the setup state instead.

Reads: the prepared tree. Writes: `<cache root>/extensions/<key>/` (the built files, `DONE`,
`build.log`), under a lock, so parallel runs of one key build once.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from eval.errors import ExtensionError

# setup.py text that declares compiled extensions (setuptools' and torch's helpers)
MARKERS = ("ext_modules", "CUDAExtension", "CppExtension", "Pybind11Extension")
SOURCES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp")
BUILT = (".so", ".pyd")
SKIP_DIRS = {".git", "build", "__pycache__", ".eggs"}
BUILD_TIMEOUT_S = 3600.0  # a CUDA extension of many kernels compiles for tens of minutes
PROBE = (
    "import sys, importlib.metadata as m\n"
    "print(sys.version)\n"
    "try:\n    print(m.version('torch'))\nexcept m.PackageNotFoundError:\n    print('-')\n"
)


def declares_extensions(tree: Path) -> bool:
    setup = tree / "setup.py"
    return setup.is_file() and any(m in setup.read_text(errors="replace") for m in MARKERS)


def _files(tree: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        p
        for p in tree.rglob("*")
        if p.suffix in suffixes
        and p.is_file()
        and not SKIP_DIRS.intersection(p.relative_to(tree).parts)
    )


@functools.cache
def _interpreter(python: str) -> str:
    """The interpreter's path, version and torch version (asked once per process)."""
    probe = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=60)
    return f"{python}\n{probe.stdout}"


def build_key(tree: Path, python: str) -> str:
    """What the build depends on: compiled sources, build files, the interpreter."""
    h = hashlib.sha256()
    h.update(_interpreter(python).encode())
    named = [tree / n for n in ("setup.py", "pyproject.toml") if (tree / n).is_file()]
    for p in named + _files(tree, SOURCES):
        h.update(str(p.relative_to(tree)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _build(source: Path, python: str, out: Path) -> None:
    """Build `source`'s extensions in a copy and keep the files the build added in `out`."""
    with tempfile.TemporaryDirectory(prefix="ext-build-") as tmp:
        work = Path(tmp) / "tree"
        shutil.copytree(source, work, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        before = {p.relative_to(work) for p in _files(work, BUILT)}
        log = out / "build.log"
        try:
            done = subprocess.run(
                [python, "setup.py", "build_ext", "--inplace"],
                cwd=work,
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S,
            )
            failed = f"exit {done.returncode}" if done.returncode else ""
        except subprocess.TimeoutExpired:
            failed = f"not done in {BUILD_TIMEOUT_S:.0f} s"
        if failed:
            tail = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
            raise ExtensionError(
                f"the framework's compiled extensions did not build ({failed}): {tail[:200]}"
                f" (log: {log})"
            )
        added = [p.relative_to(work) for p in _files(work, BUILT)]
        for rel in (r for r in added if r not in before):
            (out / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / rel, out / "files" / rel)
    if not (out / "files").is_dir():
        raise ExtensionError(f"the build of the framework's extensions made no module (log: {log})")
    (out / "DONE").write_text("")


def install_extensions(
    tree: Path, python: str, cache_root: Path, trusted: Callable[[], Path] | None = None
) -> str:
    """Put `tree`'s compiled extensions into it, built once per key; "" when it has none,
    else the key. `trusted`: a tree to build in instead of `tree` on a cache miss (for a
    prediction's tree, the setup state); it must have the same key."""
    if not declares_extensions(tree):
        return ""
    key = build_key(tree, python)
    out = cache_root / "extensions" / key
    out.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "DONE").exists():
            pass  # built by an earlier run
        elif (out / "FAILED").exists():  # a failed build is not retried for every run
            raise ExtensionError(f"{(out / 'FAILED').read_text()} (cached: delete {out} to retry)")
        else:
            source = trusted() if trusted is not None else tree
            if source != tree and build_key(source, python) != key:
                raise ExtensionError("the prediction's tree changes compiled code")
            try:
                _build(source, python, out)
            except ExtensionError as exc:
                (out / "FAILED").write_text(str(exc))
                raise
    for built in _files(out / "files", BUILT):
        dest = tree / built.relative_to(out / "files")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)
    return key
