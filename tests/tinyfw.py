"""The tiny framework the eval tests share: a package with one Triton add kernel whose PR
fixes a wrong result, its tests, crawled and curated into one task (CPU, TRITON_INTERPRET=1)."""

from __future__ import annotations

from pathlib import Path

from curation.curate import main as curate
from mining.crawl import main as crawl
from tests.gitrepo import TinyRepo

# two device functions, one calling the other: what a launch of a kernel calling `add_one`
# reaches (the plugin's and the workload harness's tests of device-function targets)
DEVICE_FUNCTIONS = """
@triton.jit
def plus_one(x):
    return x + 1


@triton.jit
def add_one(x):
    return plus_one(x)
"""

CONFTEST = """import os

os.environ.setdefault("TRITON_INTERPRET", "1")
"""

OPS = '''"""Elementwise ops of the tiny framework."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y * 0.0, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out
'''

GOLD_OPS = OPS.replace("x + y * 0.0", "x + y")

TEST_SHAPE = """import torch

from pkg.ops import add


def test_shape():
    x = torch.ones(100)
    assert add(x, x).shape == x.shape
"""

TEST_VALUES = """import torch

from pkg.ops import add


def test_values():
    x = torch.arange(100, dtype=torch.float32)
    y = torch.full((100,), 2.0)
    torch.testing.assert_close(add(x, y), x + y)
"""


def make_task_env(root: Path, extra: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    """(repository, work dir, tasks dir) of the tiny framework under `root`; `extra` files are
    committed with the initial commit."""
    repo = TinyRepo(root / "fw")
    repo.write("conftest.py", CONFTEST)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", OPS)
    repo.write("tests/test_shape.py", TEST_SHAPE)
    for rel, text in (extra or {}).items():
        repo.write(rel, text)
    repo.commit("Initial commit with the add kernel")
    repo.write("pkg/ops.py", GOLD_OPS)
    repo.write("tests/test_values.py", TEST_VALUES)
    repo.commit("Fix wrong result of the add kernel (#7)")
    work, tasks = mine(repo.path, root)
    return repo.path, work, tasks


def mine_ops_fix(
    root: Path, base_ops: str, gold_ops: str, title: str, pr_files: dict[str, str] | None = None
) -> tuple[Path, Path, Path]:
    """(repository, work dir, tasks dir) of a one-PR tiny framework under `root`: `pkg/ops.py`
    is `base_ops`, then the PR (`title`, naming its number) makes it `gold_ops` and adds
    `pr_files`; crawled and curated."""
    repo = TinyRepo(root / "fw")
    repo.write("conftest.py", CONFTEST)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", base_ops)
    repo.commit("Add the add kernel")
    repo.write("pkg/ops.py", gold_ops)
    for rel, text in (pr_files or {}).items():
        repo.write(rel, text)
    repo.commit(title)
    work, tasks = mine(repo.path, root)
    return repo.path, work, tasks


def mine(repo: Path, root: Path) -> tuple[Path, Path]:
    """(work dir, tasks dir): the repository at `repo` crawled and curated under `root`."""
    work, tasks = root / "work", root / "tasks"
    assert crawl([str(repo), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    return work, tasks


# the add kernel wrong for negative x (it adds |x|), which a PR fixes: a test on negative inputs
# is fail-to-pass, one on positive inputs pass-to-pass
SIGN_OPS = OPS.replace("x + y * 0.0", "tl.abs(x) + y")
SIGN_GOLD = SIGN_OPS.replace("tl.abs(x) + y", "x + y")

TEST_POSITIVE = """import torch

from pkg.ops import add


def test_positive():
    x = torch.arange(1, 101, dtype=torch.float32)
    torch.testing.assert_close(add(x, x), 2 * x)
"""
TEST_NEGATIVE = """import torch

from pkg.ops import add


def test_negative():
    x = -torch.arange(1, 101, dtype=torch.float32)
    torch.testing.assert_close(add(x, torch.ones(100)), x + 1)
"""


def mine_sign_fix(root: Path, same_file: bool, number: int = 3) -> tuple[Path, Path]:
    """(work dir, tasks dir) of the sign bug's fix, crawled and curated: the base has `add`
    with SIGN_OPS and the pass-to-pass test, the PR (`#number`) brings SIGN_GOLD and the
    fail-to-pass test, appended to the pass-to-pass test's file `tests/test_add.py`
    (`same_file`) or in `tests/test_negative.py` beside `tests/test_positive.py`."""
    repo = TinyRepo(root / "fw")
    repo.write("conftest.py", CONFTEST)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", SIGN_OPS)
    old = "tests/test_add.py" if same_file else "tests/test_positive.py"
    repo.write(old, TEST_POSITIVE)
    repo.commit("Add the add kernel")
    repo.write("pkg/ops.py", SIGN_GOLD)
    if same_file:
        repo.write(old, TEST_POSITIVE + TEST_NEGATIVE.split("from pkg.ops import add\n", 1)[1])
    else:
        repo.write("tests/test_negative.py", TEST_NEGATIVE)
    repo.commit(f"Keep the sign of x in add (#{number})")
    return mine(repo.path, root)
