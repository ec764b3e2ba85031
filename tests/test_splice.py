"""Splicing kernels into framework files: replace, insert, re-indent, and refuse broken results."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from curation.errors import SpliceError
from curation.model import (
    Difficulty,
    TargetKernel,
    Task,
    TaskType,
    TypeDecision,
)
from curation.model import (
    TestSelection as Selection,
)
from curation.splice import (
    KernelSource,
    base_items,
    definitions,
    gold_items,
    splice_file,
    splice_tree,
)
from eval.errors import EvalError
from eval.splice import items_from_prediction
from mining.kernels import find_kernels
from mining.model import KernelKind

PATH = "pkg/ops/scale.py"

BASE = '''\
"""Fused scaling ops."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _square(x):
    return x * x


# Tuned on H100.
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _square(x) * alpha, mask=mask)


def scale(x, alpha):
    """Scale the squares of `x` by `alpha`."""
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    scale_kernel[grid](x, out, n, alpha)
    return out


class Shift:
    """Kernels kept on a class."""

    @triton.jit
    def shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
        """Add one.

        In place.
        """
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    def shift(self, x):
        Shift.shift_kernel[(1,)](x, x.numel(), BLOCK=1024)
        return x
'''

OLD_SCALE_KERNEL = BASE[BASE.index("@triton.autotune") : BASE.index("\n\n\ndef scale(")]

NEW_SCALE_KERNEL = """\
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _square(x) * alpha + 1.0, mask=mask)"""

RETUNED_SCALE_KERNEL = """\
@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (512, 1024) for w in (4, 8)],
    key=["n", "alpha"],
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, _square(x) * alpha, mask=offs < n)
"""


def kernels(src: bytes) -> dict[str, str]:
    return {k.qualname: k.token_digest for k in find_kernels(src, PATH)}


def item(name: str, source: str, file: str = PATH) -> KernelSource:
    return KernelSource(file=file, name=name, source=source)


def test_modified_kernel_replaces_its_span_and_nothing_else() -> None:
    out = splice_file(BASE.encode(), PATH, [item("scale_kernel", NEW_SCALE_KERNEL + "\n")])
    assert out == BASE.replace(OLD_SCALE_KERNEL, NEW_SCALE_KERNEL).encode()
    before, after = kernels(BASE.encode()), kernels(out)
    assert after["scale_kernel"] != before["scale_kernel"]
    assert {k: v for k, v in after.items() if k != "scale_kernel"} == {
        k: v for k, v in before.items() if k != "scale_kernel"
    }


def test_decorators_and_autotune_configs_are_replaced_too() -> None:
    out = splice_file(BASE.encode(), PATH, [item("scale_kernel", RETUNED_SCALE_KERNEL)])
    (kernel,) = [k for k in find_kernels(out, PATH) if k.name == "scale_kernel"]
    assert kernel.autotune_configs is not None and "1024" in kernel.autotune_configs
    assert kernel.heuristics is not None and "EVEN" in kernel.heuristics
    text = out.decode()
    assert text.count("@triton.autotune") == 1 and "num_warps=8),\n" not in text
    assert "# Tuned on H100.\n@triton.autotune(\n    configs=[triton.Config(" in text


def test_new_kernel_goes_before_the_function_that_launches_it() -> None:
    # The wrapper is there (a model replaced the kernel under a new name): the new kernel must
    # be defined above it, below the helpers.
    base = BASE.replace("# Tuned on H100.\n" + OLD_SCALE_KERNEL + "\n\n\n", "")
    base = base.replace("scale_kernel[", "scale2_kernel[")
    new = NEW_SCALE_KERNEL.replace("def scale_kernel", "def scale2_kernel")
    out = splice_file(base.encode(), PATH, [item("scale2_kernel", new)]).decode()
    assert out.index("def _square") < out.index("def scale2_kernel") < out.index("def scale(")
    assert "\n\n\n" + new + "\n\n\ndef scale(" in out
    assert "scale2_kernel" in kernels(out.encode())


def test_new_kernel_and_its_new_wrapper_and_helper_are_ordered() -> None:
    kernel = """\
@triton.jit
def cube_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, _cube(x), mask=offs < n)
"""
    helper = "@triton.jit\ndef _cube(x):\n    return x * x * x\n"
    wrapper = "def cube(x):\n    cube_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), 256)\n"
    items = [item("cube_kernel", kernel), item("cube", wrapper), item("_cube", helper)]
    out = splice_file(BASE.encode(), PATH, items).decode()
    assert out.index("def _cube") < out.index("def cube_kernel") < out.index("def cube(")
    assert out.index("class Shift") < out.index("def _cube")  # nothing used them: at the end
    assert out.endswith("cube_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), 256)\n")


def test_new_helper_of_a_modified_kernel_lands_above_it_and_its_comment() -> None:
    kernel = NEW_SCALE_KERNEL.replace("_square(x)", "_cube(x)")
    helper = "@triton.jit\ndef _cube(x):\n    return x * x * x"
    items = [item("scale_kernel", kernel), item("_cube", helper)]
    out = splice_file(BASE.encode(), PATH, items).decode()
    assert f"{helper}\n\n\n# Tuned on H100.\n{kernel}\n" in out


def test_new_kernel_in_a_file_without_triton_imports_gets_them() -> None:
    base = '"""Plain torch ops."""\n\nfrom __future__ import annotations\n\nimport torch\n\n\n'
    base += "def double(x):\n    return x * 2\n"
    kernel = "@triton.jit\ndef half_kernel(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr) / 2)\n"
    out = splice_file(base.encode(), PATH, [item("half_kernel", kernel)]).decode()
    assert out.startswith(
        '"""Plain torch ops."""\n\nfrom __future__ import annotations\n\n'
        "import triton\nimport triton.language as tl\n\nimport torch\n"
    )
    assert out.endswith("return x * 2\n\n\n" + kernel)
    assert list(kernels(out.encode())) == ["half_kernel"]


def test_imports_already_bound_under_try_are_not_added_again() -> None:
    base = "try:\n    import triton\n    import triton.language as tl\nexcept ImportError:\n"
    base += "    triton = None\n"
    kernel = "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"
    out = splice_file(base.encode(), PATH, [item("k", kernel)]).decode()
    assert out == base + "\n\n" + kernel


def test_wrapper_function_is_replaced_whole() -> None:
    wrapper = '''\
def scale(x, alpha, out=None):
    """Scale the squares of `x` by `alpha`, into `out` when given."""
    out = torch.empty_like(x) if out is None else out
    scale_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel(), alpha)
    return out
'''
    out = splice_file(BASE.encode(), PATH, [item("scale", wrapper)])
    old = BASE[BASE.index("def scale(") : BASE.index("\n\n\nclass Shift")]
    assert out == BASE.replace(old, wrapper.rstrip()).encode()
    assert kernels(out) == kernels(BASE.encode())


def test_kernel_in_a_class_body_keeps_the_class_indentation() -> None:
    new = '''\
@triton.jit
def shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """Add two."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 2, mask=offs < n)
'''
    out = splice_file(BASE.encode(), PATH, [item("Shift.shift_kernel", new)]).decode()
    indented = "".join("    " + line if line else line for line in new.splitlines(True))
    assert indented.rstrip() + "\n\n    def shift(self, x):" in out
    (kernel,) = [k for k in find_kernels(out.encode(), PATH) if k.name == "shift_kernel"]
    assert kernel.qualname == "Shift.shift_kernel"


def test_strings_keep_their_text_wherever_the_code_moves() -> None:
    # Column 0 into a class: the code moves right, the docstring's lines (data) stay as given.
    new = '@triton.jit\ndef shift_kernel(x_ptr):\n    """Add two.\n\n    In place.\n    """\n'
    new += "    tl.store(x_ptr, tl.load(x_ptr) + 2)\n"
    out = splice_file(BASE.encode(), PATH, [item("shift_kernel", new)])
    (method,) = [
        n
        for n in ast.walk(ast.parse(out))
        if isinstance(n, ast.FunctionDef) and n.name == "shift_kernel"
    ]
    assert ast.get_docstring(method, clean=False) == "Add two.\n\n    In place.\n    "
    assert "\n        tl.store(x_ptr, tl.load(x_ptr) + 2)\n" in out.decode()
    # Indented as a whole (copied from a class): the docstring moves back with the code.
    square = '@triton.jit\ndef _square(x):\n    """Square.\n\n    Elementwise.\n    """\n'
    square += "    return x * x\n"
    indented = "".join("    " + line if line.strip() else line for line in square.splitlines(True))
    out = splice_file(BASE.encode(), PATH, [item("_square", indented)])
    old = "@triton.jit\ndef _square(x):\n    return x * x\n"
    assert out == BASE.replace(old, square).encode()


def test_hanging_source_cut_from_a_class_round_trips_exactly() -> None:
    # A nested node's text: first line bare, the rest (docstring included) where it stood.
    (kernel,) = [k for k in find_kernels(BASE.encode(), PATH) if k.name == "shift_kernel"]
    assert kernel.source.startswith("@triton.jit\n    def shift_kernel")
    assert splice_file(BASE.encode(), PATH, [item("shift_kernel", kernel.source)]) == BASE.encode()
    changed = kernel.source.replace("+ 1, mask", "+ 3, mask")
    out = splice_file(BASE.encode(), PATH, [item("shift_kernel", changed)])
    assert out == BASE.replace("+ 1, mask", "+ 3, mask").encode()


ASSIGNED = """\
import triton
import triton.language as tl


def _add_impl(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs), mask=offs < n)


def add(x, y):
    add_kernel[(1,)](x, y, x.numel(), BLOCK=1024)


add_kernel = triton.jit(_add_impl)
"""


def test_assigned_kernel_replaces_the_def_and_the_assignment() -> None:
    new_fn = ASSIGNED[ASSIGNED.index("def _add_impl") : ASSIGNED.index("\n\n\ndef add(")]
    new_fn = new_fn.replace("tl.load(y_ptr + offs)", "2 * tl.load(y_ptr + offs)")
    new_assign = (
        'add_kernel = triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])'
        "(triton.jit(_add_impl))"
    )
    out = splice_file(ASSIGNED.encode(), PATH, [item("add_kernel", new_fn + "\n" + new_assign)])
    expected = ASSIGNED.replace("tl.load(y_ptr + offs)", "2 * tl.load(y_ptr + offs)").replace(
        "add_kernel = triton.jit(_add_impl)", new_assign
    )
    assert out == expected.encode()
    (kernel,) = find_kernels(out, PATH)
    assert kernel.kind is KernelKind.ASSIGNED and kernel.autotune_configs is not None
    assert kernel.source == new_fn + "\n" + new_assign


def test_unparsable_prediction_is_refused_naming_file_and_item() -> None:
    broken = "@triton.jit\ndef scale_kernel(x_ptr:\n    pass\n"
    with pytest.raises(SpliceError, match=r"pkg/ops/scale\.py: scale_kernel: .*does not parse"):
        splice_file(BASE.encode(), PATH, [item("scale_kernel", broken)])


def test_a_result_that_does_not_compile_is_refused() -> None:
    # Parses alone, but a snippet's own `from __future__` import cannot sit mid-file.
    snippet = "from __future__ import annotations\n\n" + NEW_SCALE_KERNEL
    with pytest.raises(SpliceError, match=r"pkg/ops/scale\.py: splicing scale_kernel leaves"):
        splice_file(BASE.encode(), PATH, [item("scale_kernel", snippet)])


def test_non_utf8_and_unparsable_files_are_refused() -> None:
    with pytest.raises(SpliceError, match="not UTF-8"):
        splice_file(b"x = '\xff'\n", PATH, [item("k", "def k():\n    pass\n")])
    with pytest.raises(SpliceError, match="does not parse before splicing"):
        splice_file(b"def (:\n", PATH, [item("k", "def k():\n    pass\n")])


def test_a_file_in_newer_python_than_the_interpreter_still_takes_a_kernel() -> None:
    # Python 3.12 f-strings reuse their quotes inside braces (meta-pytorch/tritonbench
    # 6d4f9f42c5's new module: `f"/home/{os.getenv("USER")}/trace.json"`): CPython 3.11 cannot
    # parse the file, tree-sitter can; the result is held to tree-sitter's check alone.
    newer = BASE.replace("import torch\n", "import os\nimport torch\n").replace(
        "\n\nclass Shift:", '\n\nTRACE = f"/home/{os.getenv("USER")}/trace.json"\n\n\nclass Shift:'
    )
    out = splice_file(newer.encode(), PATH, [item("scale_kernel", NEW_SCALE_KERNEL)]).decode()
    assert 'TRACE = f"/home/{os.getenv("USER")}/trace.json"' in out
    assert NEW_SCALE_KERNEL.strip() in out and OLD_SCALE_KERNEL not in out
    assert out.count("import triton\n") == 1  # the file's own imports were read (tree-sitter)
    # a snippet that breaks such a file is still refused
    with pytest.raises(SpliceError, match=r"scale_kernel: .*does not parse"):
        splice_file(newer.encode(), PATH, [item("scale_kernel", "def scale_kernel(:\n  x\n")])


def test_overlapping_edits_are_refused() -> None:
    # The wrapper's new text and the kernel nested in its class cannot both replace their span.
    items = [
        item("Shift", "class Shift:\n    pass\n"),
        item("Shift.shift_kernel", "def f():\n    pass"),
    ]
    base = BASE.replace("class Shift:", "def Shift():")
    with pytest.raises(SpliceError, match="overlap"):
        splice_file(base.encode(), PATH, items)


def test_splice_tree_changes_files_in_place_and_creates_missing_ones(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "ops").mkdir(parents=True)
    (tmp_path / PATH).write_text(BASE)
    new_file = "pkg/ops/fresh/half.py"
    kernel = "@triton.jit\ndef half_kernel(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr) / 2)\n"
    items = [item("scale_kernel", NEW_SCALE_KERNEL), item("half_kernel", kernel, new_file)]
    assert splice_tree(tmp_path, items) == [PATH, new_file]
    assert (tmp_path / PATH).read_text() == BASE.replace(OLD_SCALE_KERNEL, NEW_SCALE_KERNEL)
    created = (tmp_path / new_file).read_text()
    assert created == "import triton\nimport triton.language as tl\n\n\n" + kernel
    assert splice_tree(tmp_path, [item("scale_kernel", NEW_SCALE_KERNEL)]) == []
    with pytest.raises(SpliceError, match="not a file under"):
        splice_tree(tmp_path, [item("k", kernel, "../escape.py")])


def make_task(before: str, after: str, *, new_helper: bool = True) -> Task:
    """A task whose target kernels are read off the two versions, as curation reads them."""
    old = {k.name: k for k in find_kernels(before.encode(), PATH)}
    targets = []
    for k in find_kernels(after.encode(), PATH):
        prev = old.get(k.name)
        if prev is not None and prev.token_digest == k.token_digest:
            continue
        targets.append(
            TargetKernel(
                file=PATH, name=k.name, change="modified" if prev else "added", kind=str(k.kind),
                role=str(k.role), old_file=PATH if prev else None,
                before_src=prev.source if prev else None, after_src=k.source,
                signature_before=prev.signature if prev else None, signature_after=k.signature,
                constexpr_params=k.constexpr_params, autotune_configs_before=None,
                autotune_configs_after=k.autotune_configs, wrappers=k.wrappers,
                span_before=(prev.span.start_line, prev.span.end_line) if prev else None,
                span_after=(k.span.start_line, k.span.end_line),
            )
        )  # fmt: skip
    return Task(
        task_id="demo__1__scale_kernel", framework="demo", repo="demo/demo", pr_id="1",
        pr_number=1, pr_url=None, title="Faster scale_kernel", body="", merged_at="2025-01-01",
        base_commit="a" * 40, merge_commit="b" * 40, base_tag=None,
        task_type=TypeDecision(TaskType.OPTIMIZATION, ()),
        difficulty=Difficulty(level=2, score=0.3, features={}), kernels=tuple(targets),
        files_changed=(), context={}, tests=Selection("pytest", (), ()),
        requirement="Make scale_kernel faster.", requirement_origin="template",
    )  # fmt: skip


# The PR: retunes scale_kernel, adds a helper it calls, changes the class's kernel.
AFTER = (
    BASE.replace(OLD_SCALE_KERNEL, RETUNED_SCALE_KERNEL.rstrip().replace("_square(x)", "_sq2(x)"))
    .replace(
        "\n\n\n# Tuned on H100.",
        "\n\n\n@triton.jit\ndef _sq2(x):\n    y = x * x\n    return y + y\n\n\n# Tuned on H100.",
    )
    .replace("+ 1, mask=offs < n)", "+ 1.5, mask=offs < n)")
    .replace("scale_kernel[grid](x, out, n, alpha)", "scale_kernel[grid](x, out, n, alpha)  # new")
)


def test_gold_items_into_the_base_file_give_the_after_kernels() -> None:
    task = make_task(BASE, AFTER)
    assert {k.name: k.change for k in task.kernels} == {
        "_sq2": "added",
        "scale_kernel": "modified",
        "shift_kernel": "modified",
    }
    out = splice_file(BASE.encode(), PATH, gold_items(task))
    assert kernels(out) == kernels(AFTER.encode())
    # Everything but the wrapper's comment, which is no kernel's, is the PR's text.
    assert out.decode() == AFTER.replace("alpha)  # new", "alpha)")
    # and back: the base items into the after file give the base kernels (the helper stays)
    back = splice_file(AFTER.encode(), PATH, base_items(task))
    assert {k: v for k, v in kernels(back).items() if k != "_sq2"} == kernels(BASE.encode())


def test_items_from_prediction_mapping_and_list_forms() -> None:
    task = make_task(BASE, AFTER)
    pred = {"kernels": {"scale_kernel": NEW_SCALE_KERNEL, "_helper": "def _helper():\n  pass"}}
    assert items_from_prediction(pred, task) == [
        KernelSource(PATH, "scale_kernel", NEW_SCALE_KERNEL),
        KernelSource(PATH, "_helper", "def _helper():\n  pass"),
    ]
    listed = {"kernels": [{"file": "other.py", "name": "k", "source": "def k():\n  pass"}]}
    assert items_from_prediction(listed, task) == [
        KernelSource("other.py", "k", "def k():\n  pass")
    ]
    with pytest.raises(SpliceError, match=r"no 'kernels'.*\[demo__1__scale_kernel\]"):
        items_from_prediction({"patch": "diff --git ..."}, task)
    with pytest.raises(EvalError, match="without name or source"):
        items_from_prediction({"kernels": [{"name": "k"}]}, task)


def test_every_splice_result_is_valid_python() -> None:
    task = make_task(BASE, AFTER)
    for items in (gold_items(task), [item("scale_kernel", NEW_SCALE_KERNEL)]):
        ast.parse(splice_file(BASE.encode(), PATH, items))


def test_a_signature_leaves_out_the_comments_of_its_def_line() -> None:
    # meta-pytorch/tritonbench 6d4f9f42c5's wrapper: `def forward(ctx, ...):` then a comment
    # line before the body, which tree-sitter places in the def: the requirement's Interface
    # read "def forward(ctx, q, k, v, causal, sm_scale, baseVariant): # shape constraints"
    src = b'''class Attn:
    @staticmethod
    def forward(ctx, q,  # queries
                k: "dict[str, int]" = {"a": 1}) -> int:  # trailing
        # shape constraints
        """Run it."""
        return 1


def plain(x): return x
'''
    found = definitions(src)
    assert found["Attn.forward"].signature == (
        'def forward(ctx, q, k: "dict[str, int]" = {"a": 1}) -> int'
    )
    assert found["Attn.forward"].docstring == '"""Run it."""'
    assert found["plain"].signature == "def plain(x)"
