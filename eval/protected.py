"""Files of a source tree that decide how tests run, and snapshots that show whether a run (or
a prediction's patch) changed them.

Reads: a prepared source tree. Writes nothing.
Protected: test files (`mining.paths.is_test_path`: test_*.py, *_test.py, conftest.py, anything
under a tests/ directory), pytest configuration (pytest.ini, pytest.toml, tox.ini, setup.cfg,
pyproject.toml), packaging (setup.py, MANIFEST.in, requirements files) and interpreter start-up
hooks (sitecustomize.py, usercustomize.py, *.pth). A run's snapshot also covers every file Python
could import (.py, .pyc, .so, .pth): a module written into the tree during a run could shadow
another one later in the same run.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from mining.paths import is_test_path

CONFIG_FILES = frozenset({"pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
                          "pyproject.toml", "conftest.py"})  # fmt: skip
PACKAGING_FILES = frozenset({"setup.py", "MANIFEST.in", "noxfile.py", "Pipfile", "Pipfile.lock",
                             "poetry.lock", "uv.lock"})  # fmt: skip
STARTUP_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
IMPORTABLE = (".py", ".pyc", ".so", ".pth", ".pyd")


def is_protected(path: str) -> bool:
    """Whether a prediction may never touch `path` (relative, POSIX)."""
    name = PurePosixPath(path).name
    if name in CONFIG_FILES or name in PACKAGING_FILES or name in STARTUP_FILES:
        return True
    if name.endswith(".pth") or re.match(r"requirements.*\.(txt|in)$", name):
        return True
    return is_test_path(path)


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def snapshot(tree: Path, *, everything: bool = False) -> dict[str, str]:
    """rel path -> content digest ("link:<target>" for a symlink) of the tree's protected and
    importable files (`everything`: of all its files)."""
    out: dict[str, str] = {}
    root = str(tree)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" or everything]
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if not (everything or name.endswith(IMPORTABLE) or is_protected(rel)):
                continue
            if os.path.islink(full):
                out[rel] = f"link:{os.readlink(full)}"
            elif os.path.isfile(full):
                try:
                    out[rel] = _digest(full)
                except OSError:
                    out[rel] = "unreadable"
            else:
                out[rel] = "special"
    return out


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What differs between two snapshots, one line per path."""
    out = [f"{p} added" for p in sorted(after.keys() - before.keys())]
    out += [f"{p} removed" for p in sorted(before.keys() - after.keys())]
    out += [f"{p} changed" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return out


def freeze_list(tree: Path, run_files: list[str]) -> list[Path]:
    """Files to bind read-only inside a sandboxed run: the test files it runs, every conftest
    and the pytest configuration at the tree's top (all regular files, no links). `run_files`
    may be node ids (`tests/test_x.py::test_a`): their file is frozen."""
    found = [tree / f.split("::", 1)[0] for f in run_files]
    found += [tree / n for n in CONFIG_FILES if n != "conftest.py"]
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        if "conftest.py" in filenames:
            found.append(Path(dirpath) / "conftest.py")
    return [p for p in dict.fromkeys(found) if p.is_file() and not p.is_symlink()]
