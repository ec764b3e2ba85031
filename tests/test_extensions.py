"""A framework's compiled extension (issue 9, item 7): a tiny package whose `__init__` imports
its own C extension, built once per key with gcc and copied into each run's tree; a
prediction's tree is never built."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eval.errors import ExtensionError
from eval.extensions import build_key, declares_extensions, install_extensions

C_SOURCE = """#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(ANSWER); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_ops", "", -1, methods};
PyMODINIT_FUNC PyInit__ops(void) { return PyModule_Create(&mod); }
"""
# the build records where it ran (and whether a prediction's marker file was there)
SETUP = """import os
from setuptools import Extension, setup
with open(os.environ["BUILD_LOG"], "a") as f:
    f.write(("prediction" if os.path.exists("tinypkg/PREDICTION") else "trusted") + "\\n")
setup(name="tinypkg", ext_modules=[Extension("tinypkg._ops", ["csrc/ops.c"],
      define_macros=[("ANSWER", "42")])])
"""


def _tree(root: Path, c_source: str = C_SOURCE) -> Path:
    (root / "tinypkg").mkdir(parents=True)
    (root / "csrc").mkdir()
    (root / "csrc" / "ops.c").write_text(c_source)
    (root / "setup.py").write_text(SETUP)
    (root / "tinypkg" / "__init__.py").write_text("from tinypkg._ops import answer\n")
    (root / "tinypkg" / "kernels.py").write_text("def scale(x):\n    return 2 * x\n")
    return root


def _answer(tree: Path) -> str:
    run = subprocess.run([sys.executable, "-c", "import tinypkg; print(tinypkg.answer())"],
                         cwd=tree, capture_output=True, text=True)  # fmt: skip
    return run.stdout.strip() or run.stderr.strip().splitlines()[-1]


@pytest.fixture
def build_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("gcc") is None and not os.environ.get("CI"):
        pytest.skip("no C compiler")
    log = tmp_path / "builds.txt"
    monkeypatch.setenv("BUILD_LOG", str(log))
    return log


def test_the_extension_is_built_once_and_copied_into_every_tree(tmp_path, build_log) -> None:
    base, gold = _tree(tmp_path / "base"), _tree(tmp_path / "gold")
    (gold / "tinypkg" / "kernels.py").write_text("def scale(x):\n    return x + x\n")
    assert declares_extensions(base) and not declares_extensions(tmp_path)
    assert "No module named 'tinypkg._ops'" in _answer(base)  # the source alone does not run
    cache = tmp_path / "cache"
    key = install_extensions(base, sys.executable, cache)
    assert _answer(base) == "42"
    # the gold changed only Python: same key, no second build, the module copied in
    assert install_extensions(gold, sys.executable, cache) == key
    assert _answer(gold) == "42" and build_log.read_text() == "trusted\n"
    # a change to compiled code is another build
    other = _tree(tmp_path / "other", C_SOURCE.replace("ANSWER", "(ANSWER + 1)"))
    assert build_key(other, sys.executable) != key
    install_extensions(other, sys.executable, cache)
    assert _answer(other) == "43" and build_log.read_text() == "trusted\ntrusted\n"
    # a tree without extensions is left alone
    assert install_extensions(tmp_path / "cache", sys.executable, cache) == ""


def test_a_predictions_tree_is_never_built(tmp_path, build_log) -> None:
    prediction = _tree(tmp_path / "prediction")
    (prediction / "tinypkg" / "PREDICTION").write_text("")
    made: list[Path] = []

    def setup_state() -> Path:
        made.append(_tree(tmp_path / "setup-state"))
        return made[-1]

    install_extensions(prediction, sys.executable, tmp_path / "cache", setup_state)
    assert made and build_log.read_text() == "trusted\n"
    assert _answer(prediction) == "42"
    # a setup state whose compiled code differs from the prediction's tree: refused
    (prediction / "csrc" / "ops.c").write_text(C_SOURCE.replace("ANSWER", "7"))
    shutil.rmtree(tmp_path / "setup-state")
    with pytest.raises(ExtensionError, match="changes compiled code"):
        install_extensions(prediction, sys.executable, tmp_path / "cache2", setup_state)


def test_a_failed_build_is_one_line_and_not_retried(tmp_path, build_log) -> None:
    broken = _tree(tmp_path / "broken", C_SOURCE.replace("return", "retrun"))
    with pytest.raises(ExtensionError) as first:
        install_extensions(broken, sys.executable, tmp_path / "cache")
    assert "did not build (exit 1)" in str(first.value) and "\n" not in str(first.value)
    with pytest.raises(ExtensionError, match=r"delete .* to retry"):
        install_extensions(broken, sys.executable, tmp_path / "cache")
    assert build_log.read_text() == "trusted\n"  # the second call did not build again
