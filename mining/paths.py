"""What a changed path is: Python, a kernel template, a test, documentation, a benchmark."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_TEST_DIRS = {"test", "tests", "unit_tests", "functional_tests", "testing"}
_DOC_SUFFIXES = {".md", ".rst", ".txt", ".ipynb", ".png", ".jpg", ".svg"}
_BENCH_DIR = re.compile(r"(^|/)(benchmarks?|bench)(/|$)")


def is_analysable_path(path: str) -> bool:
    """Python files and Inductor-style `.jinja` templates can hold Triton kernels."""
    return path.endswith((".py", ".jinja"))


def is_python_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    name = p.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in _TEST_DIRS for part in p.parts[:-1])


def is_doc_path(path: str) -> bool:
    p = PurePosixPath(path)
    return p.suffix.lower() in _DOC_SUFFIXES or "docs" in p.parts[:-1] or "doc" in p.parts[:-1]


def is_benchmark_path(path: str) -> bool:
    return bool(_BENCH_DIR.search(path)) or PurePosixPath(path).name.startswith("bench_")
