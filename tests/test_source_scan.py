"""The static scan of a prediction's source (`eval.source_scan`): what it flags and what it must
not (a real gold wrapper, Liger-Kernel #1357's, names its tensor argument `input`)."""

from __future__ import annotations

from eval.source_scan import added_lines, forbidden

WRAPPER = """
def gemm_swiglu(input, weight, out=None):
    rows = input.shape[0]
    kernel[(rows,)](input, weight, out)
    return out
"""


def test_a_parameter_named_like_a_builtin_is_not_the_builtin() -> None:
    assert forbidden([WRAPPER]) == []


def test_calling_the_builtins_is_flagged() -> None:
    assert forbidden(["def f(x):\n    return input()\n"]) == ["input()"]
    assert forbidden(["def f(p):\n    return open(p).read()\n"]) == ["open()"]
    assert forbidden(["def f(s):\n    exec(s)\n"]) == ["exec()"]


def test_modules_and_attributes_a_kernel_has_no_business_with() -> None:
    assert forbidden(["import subprocess\n"]) == ["import subprocess"]
    assert forbidden(["import os\ndef f():\n    os._exit(0)\n"]) == ["os._exit"]
    assert forbidden(["import os\ndef f():\n    return os.environ.get('X')\n"]) == []
    assert forbidden(["def f(g):\n    return g.__globals__\n"]) == [".__globals__"]


def test_patch_lines_that_do_not_parse_are_scanned_as_text() -> None:
    patch = "--- a/k.py\n+++ b/k.py\n@@ -1 +1,2 @@\n-x = 1\n+    import socket\n+    y = eval(s\n"
    assert forbidden([added_lines(patch)]) == ["eval()", "import socket"]
