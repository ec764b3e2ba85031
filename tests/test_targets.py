"""A prediction changes only its targets: the kernels of the task and their launch wrappers, in
their files. Everything else is refused as a splice error before any test runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.taskdir import TaskDir, task_dirs
from eval.errors import SpliceError
from eval.model import Variant
from eval.protected import is_protected
from eval.targets import Target, targets
from eval.workspace import SourceStore, prepare
from mining.git import GitRepo
from tests.test_eval_local import GOOD
from tests.tinyfw import CONFTEST, GOLD_OPS, OPS, TEST_SHAPE, make_task_env

WRAPPER = """def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
    return out
"""


@pytest.fixture(scope="module")
def task_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[SourceStore, TaskDir]:
    root = tmp_path_factory.mktemp("targets")
    extra = {"pyproject.toml": "[tool.pytest.ini_options]\n",
             "pkg/other.py": "def helper():\n    return 1\n"}  # fmt: skip
    repo_path, _work, tasks = make_task_env(root, extra)
    [tdir] = task_dirs(tasks)
    return SourceStore(GitRepo(repo_path)), tdir


def apply(task_env, tmp_path: Path, **prediction: object) -> Path:
    store, tdir = task_env
    pred = {"task_id": tdir.id, **prediction}
    return prepare(tdir.load_task(), tdir, store, tmp_path / "tree", Variant.PREDICTION, pred)


def patch_of(path: str, old: str, new: str) -> str:
    """A one-hunk unified diff replacing the whole of `path` (`old` empty: a new file)."""
    olds, news = old.splitlines(), new.splitlines()
    head = f"diff --git a/{path} b/{path}\n"
    if not old:
        head += f"new file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    else:
        head += f"--- a/{path}\n+++ b/{path}\n"
    body = "".join(f"-{ln}\n" for ln in olds) + "".join(f"+{ln}\n" for ln in news)
    return f"{head}@@ -{1 if olds else 0},{len(olds)} +1,{len(news)} @@\n{body}"


def test_targets_are_the_kernels_and_their_wrappers(task_env) -> None:
    _, tdir = task_env
    assert targets(tdir.load_task()) == (
        Target("pkg/ops.py", "add_kernel", "kernel"),
        Target("pkg/ops.py", "add", "wrapper"),
    )


def test_replacing_the_kernel_and_its_wrapper_is_allowed(task_env, tmp_path: Path) -> None:
    tree = apply(task_env, tmp_path, kernels={"add_kernel": GOOD, "add": WRAPPER})
    assert "x + y, mask=mask" in (tree / "pkg/ops.py").read_text()


@pytest.mark.parametrize(
    ("kernels", "message"),
    [
        ({"helper": "def helper():\n    return 2\n"}, "helper: not one of the task's targets"),
        ([{"file": "pkg/other.py", "name": "helper", "source": "def helper():\n    pass\n"}],
         "pkg/other.py: holds none of the task's targets"),
        ({"add_kernel": "import os\n" + GOOD}, "its source holds a Import statement"),
        ({"add_kernel": GOOD + "\nhook = print('at import')\n"}, "its source also defines hook"),
        ({"add_kernel": GOOD + "\ndef _helper():\n    pass\n"}, "also defines _helper"),
    ],
)  # fmt: skip
def test_items_beyond_the_targets_are_refused(task_env, tmp_path, kernels, message) -> None:
    with pytest.raises(SpliceError, match=message):
        apply(task_env, tmp_path, kernels=kernels)


def test_a_patch_of_the_target_functions_is_allowed(task_env, tmp_path: Path) -> None:
    new = GOLD_OPS.replace("import torch\n", "import math\nimport torch\n")
    tree = apply(task_env, tmp_path, patch=patch_of("pkg/ops.py", OPS, new))
    assert (tree / "pkg/ops.py").read_text() == new  # an added import is fine


@pytest.mark.parametrize(
    ("path", "old", "new", "message"),
    [
        ("tests/conftest.py", "", "def pytest_configure(config):\n    pass\n",
         "tests/conftest.py, which decides how the tests run"),
        ("conftest.py", CONFTEST, CONFTEST + "X = 1\n", "conftest.py, which decides"),
        ("tests/test_shape.py", TEST_SHAPE, TEST_SHAPE.replace("assert", "assert True or"),
         "tests/test_shape.py, which decides"),
        ("pyproject.toml", "[tool.pytest.ini_options]\n",
         "[tool.pytest.ini_options]\naddopts = '-p no:tpb_verdict'\n",
         "pyproject.toml, which decides"),
        ("setup.py", "", "print('install')\n", "setup.py, which decides"),
        ("pkg/other.py", "def helper():\n    return 1\n", "def helper():\n    return 2\n",
         "pkg/other.py, which holds none of the task's targets"),
        ("pkg/sitecustomize.py", "", "import os\n", "sitecustomize.py, which decides"),
        ("pkg/ops.py", OPS, OPS + "\nHOOK = __import__('os').getpid()\n",
         "changes pkg/ops.py outside the task's targets"),
    ],
)  # fmt: skip
def test_patches_beyond_the_targets_are_refused(
    task_env, tmp_path: Path, path, old, new, message
) -> None:
    with pytest.raises(SpliceError, match=message):
        apply(task_env, tmp_path, patch=patch_of(path, old, new))


def test_links_binaries_and_mode_changes_are_refused(task_env, tmp_path: Path) -> None:
    link = "diff --git a/pkg/ops.py b/pkg/ops.py\nold mode 100644\nnew mode 100755\n"
    with pytest.raises(SpliceError, match="changes a file mode"):
        apply(task_env, tmp_path, patch=link)
    symlink = (
        "diff --git a/pkg/x.py b/pkg/x.py\nnew file mode 120000\n--- /dev/null\n"
        "+++ b/pkg/x.py\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
    )
    with pytest.raises(SpliceError, match="120000"):
        apply(task_env, tmp_path, patch=symlink)
    binary = "diff --git a/pkg/ops.py b/pkg/ops.py\nGIT binary patch\nliteral 0\n"
    with pytest.raises(SpliceError, match="binary"):
        apply(task_env, tmp_path, patch=binary)


def test_protected_paths() -> None:
    for path in ("conftest.py", "a/b/conftest.py", "tests/unit/test_x.py", "pkg/x_test.py",
                 "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py",
                 "requirements-dev.txt", "x.pth", "sitecustomize.py"):  # fmt: skip
        assert is_protected(path), path
    for path in ("pkg/ops.py", "megatron/core/fusions/fused_kernel.py", "README.md"):
        assert not is_protected(path), path
