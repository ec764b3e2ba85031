"""The world the fault probes run in (`scripts/fault_probes.py`): tiny repositories made here,
a crawl and curation of them by the real commands, and how a probe runs a command and checks
its outcome.

Reads nothing outside its temporary directory. Writes: that directory (repositories, work,
tasks, copies a probe may damage). Refuses: a setup step that fails (it exits with its stderr).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
EPOCH = 1_700_000_000

KERNEL = """import torch\r
import triton\r
import triton.language as tl\r
\r
\r
@triton.jit\r
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\r
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\r
    mask = offs < n\r
    x = tl.load(x_ptr + offs, mask=mask)\r
    y = tl.load(y_ptr + offs, mask=mask)\r
    tl.store(out_ptr + offs, x - y, mask=mask)\r
\r
\r
def add(x, y):\r
    out = torch.empty_like(x)\r
    add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)\r
    return out\r
"""
FIXED = KERNEL.replace("x - y, mask", "x + y, mask")
CONFTEST = 'import os\n\nos.environ.setdefault("TRITON_INTERPRET", "1")\n'
TEST_SHAPE = "import torch\nfrom pkg.ops import add\n\n\ndef test_shape():\n"
TEST_SHAPE += "    assert add(torch.ones(8), torch.ones(8)).shape == (8,)\n"
TEST_VALUES = "import torch\nfrom pkg.ops import add\n\n\ndef test_values():\n"
TEST_VALUES += "    x = torch.arange(9.0)\n    torch.testing.assert_close(add(x, x), 2 * x)\n"


class Repo:
    """A git repository with fixed dates, one hour per commit."""

    def __init__(self, path: Path):
        self.path, self.n = path, 0
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Probe")
        self.git("config", "user.email", "probe@example.com")

    def git(self, *args: str) -> str:
        stamp = f"{EPOCH + 3600 * self.n} +0000"
        env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        out = subprocess.run(["git", *args], cwd=self.path, env=env, capture_output=True,
                             check=True)  # fmt: skip
        return out.stdout.decode().strip()

    def commit(self, message: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.path / rel).write_bytes(text.encode())
        self.n += 1
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)


@dataclass
class Run:
    rc: int
    out: str
    err: str


@dataclass
class Outcome:
    observed: str
    lost: str  # "none", or what was lost or changed
    ok: bool


@dataclass(frozen=True)
class Probe:
    name: str
    expected: str
    run: Callable[[Lab], Outcome]


class Lab:
    """The probes' temporary world: repositories, a crawl, tasks, and how to run commands."""

    def __init__(self, root: Path):
        self.root = root
        self.fw = Repo(root / "fw")
        self.fw.commit("Initial commit with the add kernel", {
            "conftest.py": CONFTEST, "pkg/__init__.py": "", "pkg/ops.py": KERNEL,
            "tests/test_shape.py": TEST_SHAPE})  # fmt: skip
        self.fw.commit("Fix wrong result of the add kernel (#7)",
                       {"pkg/ops.py": FIXED, "tests/test_values.py": TEST_VALUES})  # fmt: skip
        self.other = Repo(root / "other")
        self.other.commit("Unrelated history", {"x.py": "x = 1\n"})
        self.work, self.tasks = root / "work", root / "tasks"
        self.check(self.cmd("mining.crawl", str(self.fw.path), "--out", str(self.work),
                            "--quiet", "--no-github"), "crawl")  # fmt: skip
        self.check(self.cmd("curation.curate", "--work", str(self.work), "--out",
                            str(self.tasks), "--quiet"), "curate")  # fmt: skip
        self.task = "fw__7__add_kernel"
        self._big: Path | None = None
        self._big_ids: set[str] | None = None

    def cmd(self, module: str, *args: str, timeout: float = 600) -> Run:
        proc = subprocess.run([sys.executable, "-m", module, *args], cwd=self.root, env=ENV,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        return Run(proc.returncode, proc.stdout, proc.stderr)

    @staticmethod
    def check(run: Run, what: str) -> None:
        if run.rc != 0:
            raise SystemExit(f"setup step {what} failed ({run.rc}): {run.err[-2000:]}")

    def copy(self, src: Path, name: str) -> Path:
        dest = self.root / name
        shutil.copytree(src, dest)
        return dest

    def big(self) -> Path:
        """A repository whose crawl takes a few seconds (60 commits of 300 kernels each)."""
        if self._big is None:
            repo = Repo(self.root / "big")
            body = "".join(
                f"\n\n@triton.jit\ndef k{i}(x_ptr, n, B: tl.constexpr):\n"
                f"    o = tl.program_id(0) * B + tl.arange(0, B)\n"
                f"    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * {i}, mask=o < n)\n"
                for i in range(30)
            )
            head = "import triton\nimport triton.language as tl\n"
            for c in range(60):
                repo.commit(f"Kernels {c} (#{c + 1})",
                            {f"pkg/c{c}_{f}.py": head + body for f in range(10)})  # fmt: skip
            self._big = repo.path
        return self._big

    def big_ids(self) -> set[str]:
        """Candidate ids of an uninterrupted crawl of the big repository."""
        if self._big_ids is None:
            out = self.root / "big-reference"
            self.check(self.cmd("mining.crawl", str(self.big()), "--out", str(out), "--quiet",
                                "--no-github"), "reference crawl")  # fmt: skip
            self._big_ids = ids_of(out / "big" / "candidates.jsonl")
        return self._big_ids


def ids_of(path: Path) -> set[str]:
    """Candidate ids, refusing a duplicated id or commit (what a lost or doubled record shows)."""
    ids, commits = [], []
    for line in path.read_bytes().splitlines():
        rec = json.loads(line)
        ids.append(rec["id"])
        commits.append(rec["commit"])
    if len(set(ids)) != len(ids) or len(set(commits)) != len(commits):
        raise AssertionError(f"{path}: duplicated records")
    return set(ids)


def snapshot(*paths: Path) -> dict[str, str]:
    """path -> sha256 of every file under `paths` (locks left out: they name their holder)."""
    out = {}
    for base in paths:
        files = [base] if base.is_file() else sorted(base.rglob("*")) if base.exists() else []
        for p in files:
            if p.is_file() and p.name != ".lock":
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def lost(before: dict[str, str], after: dict[str, str]) -> str:
    changed = sorted(k for k in before if after.get(k) != before[k])
    return "none" if not changed else f"{len(changed)} files changed: {Path(changed[0]).name}"


def one_line(run: Run, lab: Lab, want_rc: int = 1, needle: str = "") -> tuple[str, bool]:
    """The observed exit code and error line, and whether they are what a refusal must be."""
    lines = [line for line in run.err.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    text = text.replace(str(lab.root), "<tmp>")
    ok = (run.rc == want_rc and len(lines) == 1 and text.startswith("error: ")
          and "Traceback" not in run.err and needle in text)  # fmt: skip
    shown = text if len(text) <= 150 else text[:147] + "..."
    more = "" if len(lines) <= 1 else f" (+{len(lines) - 1} lines)"
    return f"exit {run.rc}: `{shown}`{more}", ok
