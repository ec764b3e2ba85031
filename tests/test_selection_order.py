"""The selection run takes the test functions the PR added or changed first (flash-linear-
attention #712, H200 2026-12-03: its cap of 4 tests took the existing conv tests, which pass at
the setup state, and the non-contiguous tests the PR adds at the end of the file were never
run, so the task read "no test fails at the setup state"). A tiny framework whose PR appends a
fail-to-pass test after an existing pass-to-pass one, selected with a cap of one test; run on the
CPU with TRITON_INTERPRET=1."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from curation.targets import new_side_lines
from eval.pytest_plugin import cap_items, format_line_ranges, parse_line_ranges

DIFF = b"""diff --git a/tests/test_x.py b/tests/test_x.py
--- a/tests/test_x.py
+++ b/tests/test_x.py
@@ -3,4 +3,4 @@ import torch
<SP>
-@pytest.mark.parametrize("n", [1])
+@pytest.mark.parametrize("n", [1, 2])
 def test_old(n):
     pass
@@ -20,2 +20,6 @@ def test_other():
     pass
+
+
+def test_new():
+    pass
diff --git a/tests/test_y.py b/tests/test_y.py
--- a/tests/test_y.py
+++ b/tests/test_y.py
@@ -7,3 +7,2 @@
 a = 1
-b = 2
 c = 3
""".replace(b"<SP>", b" ")  # a context line that is empty in the file


def test_new_side_lines_of_a_test_patch() -> None:
    lines = new_side_lines(DIFF)
    # the changed decorator (the deletion sits next to the line that replaces it), the new
    # function, both lines a deletion leaves next to each other
    assert lines == {"tests/test_x.py": [(3, 4), (21, 24)], "tests/test_y.py": [(7, 8)]}
    assert parse_line_ranges(format_line_ranges(lines)) == {
        "tests/test_x.py": ((3, 4), (21, 24)), "tests/test_y.py": ((7, 8),)}  # fmt: skip
    # a dropped first decorator touches the function below it; content lines that start
    # with `++` or `--` are lines like any other, not file headers
    dropped = (b"diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -5,4 +5,3 @@\n"
               b" \n-@pytest.mark.parametrize('B', [1])\n def test_a(B):\n     pass\n")  # fmt: skip
    assert new_side_lines(dropped) == {"t.py": [(5, 6)]}
    doubled = (b"diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1,3 +1,4 @@\n x = 1\n"
               b"+++y\n---z\n+w = 2\n q = 3\n")  # fmt: skip
    assert new_side_lines(doubled) == {"t.py": [(2, 3)]}
    assert parse_line_ranges("junk;a.py:x-1;b.py:3-4") == {"b.py": ((3, 4),)}


def test_the_cap_takes_the_functions_the_pr_touched_first(tmp_path) -> None:
    src = tmp_path / "tests" / "test_x.py"
    src.parent.mkdir()
    src.write_text(
        "def test_a():\n    pass\n\n\n"  # 1-2
        "def test_b():\n    pass\n\n\n"  # 5-6
        "def test_c():\n    pass\n"  # 9-10
    )
    scope: dict = {}
    exec(compile(src.read_text(), str(src), "exec"), scope)
    items = [NS(nodeid=f"tests/test_x.py::{n}[p{i}]", function=scope[n])
             for n in ("test_a", "test_b", "test_c") for i in range(2)]  # fmt: skip
    kept, _ = cap_items(items, 1, 1, (), {"tests/test_x.py": ((10, 10),)})
    assert [i.nodeid for i in kept] == ["tests/test_x.py::test_c[p0]"]
    kept, _ = cap_items(items, 1, 2, (), {"tests/test_x.py": ((6, 9),)})
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_b[p0]", "test_c[p0]"]
    kept, _ = cap_items(items, 1, 2, (), {})  # nothing touched: collection order
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_a[p0]", "test_b[p0]"]


pytest.importorskip("torch")
pytest.importorskip("triton")


def test_a_cap_of_one_test_still_finds_the_prs_fail_to_pass_test(tmp_path) -> None:
    from curation.taskdir import task_dirs
    from eval.__main__ import main as eval_main
    from tests.tinyfw import mine_sign_fix

    # the PR appends its fail-to-pass test to the file of the pass-to-pass one
    work, tasks = mine_sign_fix(tmp_path, same_file=True, number=5)
    assert eval_main(["reference", "--tasks", str(tasks), "--work", str(work),
                      "--no-isolated-timing", "--timeout", "120", "--runs", "1",
                      "--select-max", "1", "--select-per-test", "1",
                      "--triton-cache", str(tmp_path / "cache"),
                      "--out", str(tmp_path / "ref")]) == 0  # fmt: skip
    [tdir] = task_dirs(tasks)
    ref = json.loads((tdir.root / "reference.json").read_text())
    assert ref["fail_to_pass"] == ["tests/test_add.py::test_negative"], ref["validity_note"]
    assert ref["valid"]


def test_a_task_that_cannot_get_a_fail_to_pass_test_stops_after_the_first_pair(tmp_path) -> None:
    """Call 15 (H200, 2026-12-03): flash-linear-attention #1107, #1135, #714, #717, #795 ran
    their base and gold three times each to say "no fail-to-pass", when the first pair had
    already left no test that could be one. Such a task now stops after the first pair
    (unverified either way); `--all-runs` makes every run; a task with a candidate runs all."""
    from curation.taskdir import task_dirs
    from eval.__main__ import main as eval_main
    from tests.tinyfw import mine_sign_fix

    work, tasks = mine_sign_fix(tmp_path, same_file=True, number=6)
    [tdir] = task_dirs(tasks)
    path = tdir.root / "task.json"

    def judge(node_ids: list[str], *extra: str) -> dict:
        data = json.loads(path.read_text())
        data["tests"]["node_ids"] = node_ids
        path.write_text(json.dumps(data))
        argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--no-isolated-timing",
                "--timeout", "120", "--runs", "3", "--force", "--triton-cache",
                str(tmp_path / "cache"), "--out", str(tmp_path / "ref"), *extra]  # fmt: skip
        assert eval_main(argv) == 0
        return json.loads((tdir.root / "reference.json").read_text())

    p2p = "tests/test_add.py::test_positive"
    ref = judge([p2p])  # passes at the setup state: never fail-to-pass
    assert [(r["variant"], r["run"]) for r in ref["runs"]] == [("base", 0), ("gold", 0)]
    assert "no test fails at the setup state" in ref["validity_note"]
    ref = judge([p2p], "--all-runs")
    assert len(ref["runs"]) == 6 and "no test fails at the setup state" in ref["validity_note"]
    ref = judge([p2p, "tests/test_add.py::test_negative"])
    assert len(ref["runs"]) == 6 and ref["valid"], ref["validity_note"]


def test_a_task_without_test_files_collects_the_test_directories_not_the_tree(tmp_path) -> None:
    """flash-linear-attention #789 and #720 (H200, 2026-12-03) name no test file: their
    selection runs collected the whole tree, and `benchmarks/cp/test_gdn_with_cp.py`, a script
    whose `test_ops(args)` is no test, took two of their four tests with fixture errors."""
    from eval.backends import run_targets

    tests = NS(node_ids=(), changed_in_pr=(), selected_existing=())
    task = NS(tests=tests, kernels=())
    (tmp_path / "benchmarks" / "cp").mkdir(parents=True)
    (tmp_path / "benchmarks" / "cp" / "test_gdn_with_cp.py").write_text(
        "def test_ops(args): pass\n"
    )
    assert run_targets(task, 4, tmp_path) == []  # no test directory: pytest's own rules
    (tmp_path / "tests").mkdir()
    assert run_targets(task, 4, tmp_path) == ["tests"]
    (tmp_path / "test").mkdir()  # Liger-Kernel's is test/
    assert run_targets(task, 4, tmp_path) == ["tests", "test"]
    # a task's own files or node ids come first, as before
    task = NS(tests=NS(node_ids=(), changed_in_pr=("tests/test_a.py",), selected_existing=()),
              kernels=())  # fmt: skip
    assert run_targets(task, 4, tmp_path) == ["tests/test_a.py"]
    task = NS(tests=NS(node_ids=("tests/test_a.py::t",), changed_in_pr=(), selected_existing=()),
              kernels=())  # fmt: skip
    assert run_targets(task, 4, tmp_path) == ["tests/test_a.py::t"]


def test_a_selection_whose_gold_fails_the_first_parametrization_tries_the_next(tmp_path) -> None:
    """H200 call 45 (2026-12-06): flash-linear-attention #36dedac3ab, #6bf991d107 and
    #cce7a2fc0b each ran one parametrization of `test_chunk` (D=300), which the gold itself
    fails, and ended "the selection run failed". Here the gold launches too few programs for
    n > 256 (it fails n=300) and fixes the base's wrong sum at n=100: the selection runs once
    more without the failed node ids and the task verifies on n=100. (The test is the PR's, so
    its first PR_CASES cases run at once: three sizes the gold fails come first.)"""
    from curation.taskdir import task_dirs
    from eval.__main__ import main as eval_main
    from tests.tinyfw import GOLD_OPS, OPS, mine_ops_fix

    test = (
        "import pytest\nimport torch\n\nfrom pkg.ops import add\n\n\n"
        "@pytest.mark.parametrize('n', [300, 400, 500, 100])\n"
        "def test_values(n):\n"
        "    x = torch.arange(n, dtype=torch.float32)\n"
        "    torch.testing.assert_close(add(x, x), 2 * x)\n"
    )  # fmt: skip
    four = GOLD_OPS.replace("(triton.cdiv(n, 64),)", "(min(triton.cdiv(n, 64), 4),)")
    _repo, work, tasks = mine_ops_fix(tmp_path, OPS, four, "Fix the sum of the add kernel (#8)",
                                      {"tests/test_values.py": test})  # fmt: skip
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--no-isolated-timing",
            "--timeout", "120", "--runs", "1", "--select-per-test", "1",
            "--triton-cache", str(tmp_path / "cache"), "--out", str(tmp_path / "ref")]  # fmt: skip
    assert eval_main(argv) == 0
    [tdir] = task_dirs(tasks)
    ref = json.loads((tdir.root / "reference.json").read_text())
    second = "tests/test_values.py::test_values[100]"
    assert ref["fail_to_pass"] == [second], ref["validity_note"]
    assert ref["valid"]
    assert [t["nodeid"] for t in ref["selection"]["tests"]] == [second]
