"""Kernel detection on small hand-written sources, one declaration form per test."""

from __future__ import annotations

import pickle
import textwrap

import pytest

from mining.kernels import UnparsableSource, find_kernels, might_contain_kernels
from mining.model import KernelKind, KernelRole, LaunchSite


def find(src: str, path: str = "pkg/ops.py"):
    return find_kernels(textwrap.dedent(src).encode(), path)


def by_name(src: str, path: str = "pkg/ops.py"):
    return {k.qualname: k for k in find(src, path)}


BODY = """
    pid = tl.program_id(0)
    tl.store(out + pid, pid)
"""


@pytest.mark.parametrize(
    ("imports", "decorator"),
    [
        ("import triton", "@triton.jit"),
        ("import triton", "@triton.jit()"),
        ("import triton", "@triton.jit(do_not_specialize=['n'])"),
        ("import triton as tr", "@tr.jit"),
        ("from triton import jit", "@jit"),
        ("from triton import jit as J", "@J"),
        ("from triton.runtime.jit import jit", "@jit"),
        ("import triton.runtime.jit as rj", "@rj.jit"),
        ("from triton import *", "@jit"),
        ("from vllm.triton_utils import triton", "@triton.jit"),
        ("import triton\njit = triton.jit", "@jit"),
        ("from triton import autotune, heuristics", "@autotune(configs=[], key=[])"),
        ("from triton import autotune, heuristics", "@heuristics({'A': lambda a: 1})"),
    ],
)
def test_decorator_alias_forms(imports: str, decorator: str) -> None:
    src = f"{imports}\nimport triton.language as tl\n\n\n{decorator}\ndef k(out):{BODY}"
    [k] = find_kernels(src.encode(), "pkg/ops.py")
    assert (k.name, k.qualname, k.kind, k.role) == ("k", "k", KernelKind.JIT, KernelRole.KERNEL)
    assert k.decorators == (decorator[1:],)
    assert k.span.start_line == imports.count("\n") + 5  # the decorator line
    assert k.source.startswith(decorator + "\ndef k(out):")
    assert k.file == "pkg/ops.py"


@pytest.mark.parametrize(
    ("imports", "decorator"),
    [
        ("import triton.language as tl", "@tl.jit"),
        ("from numba import jit", "@jit"),
        ("import torch", "@torch.jit.script"),
        ("import triton\nfrom triton.runtime import jit", "@jit"),  # the module, not the function
        ("import triton", "@functools.cache"),
    ],
)
def test_foreign_decorators_are_not_kernels(imports: str, decorator: str) -> None:
    src = f"{imports}\n\n\n{decorator}\ndef k(out):{BODY}"
    assert find_kernels(src.encode(), "pkg/ops.py") == []


STACKED = '''
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK": 64}, num_warps=4),
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})
@triton.jit
def scaled(x_ptr, n,  # elements
           BLOCK: tl.constexpr, EVEN: triton.language.constexpr, SCALE: tl.constexpr = 2):
    """Scale a vector."""
    pid = tl.program_id(0)


@triton.heuristics(values={"B": lambda a: 1})
@triton.autotune([triton.Config({}, num_stages=2)], key=[])
@triton.jit(do_not_specialize=["n"])
def inline(x, n, *rest, **extra):
    pass
'''


def test_stacked_autotune_heuristics_jit() -> None:
    ks = by_name(STACKED)
    k = ks["scaled"]
    assert k.decorators == (
        'triton.autotune(configs=CONFIGS, key=["n"])',
        'triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})',
        "triton.jit",
    )
    # a bare name is resolved to what the module binds it to
    assert k.autotune_configs == '[\n    triton.Config({"BLOCK": 64}, num_warps=4),\n]'
    assert k.heuristics == '{"EVEN": lambda args: args["n"] % 64 == 0}'
    assert k.signature == (
        "def scaled(x_ptr, n, BLOCK: tl.constexpr, EVEN: triton.language.constexpr, "
        "SCALE: tl.constexpr = 2)"
    )
    assert k.params == ("x_ptr", "n", "BLOCK", "EVEN", "SCALE")
    assert k.constexpr_params == ("BLOCK", "EVEN", "SCALE")
    assert (k.span.start_line, k.span.end_line) == (10, 16)

    k = ks["inline"]
    assert k.autotune_configs == "[triton.Config({}, num_stages=2)]"
    assert k.heuristics == '{"B": lambda a: 1}'
    assert k.decorators[-1] == 'triton.jit(do_not_specialize=["n"])'
    assert k.params == ("x", "n", "*rest", "**extra")
    assert k.constexpr_params == ()


def test_plain_jit_has_no_autotune_or_heuristics() -> None:
    [k] = find("import triton\n@triton.jit\ndef k(x):\n    pass\n")
    assert k.autotune_configs is None
    assert k.heuristics is None
    assert k.launch_sites == ()
    assert k.wrappers == ()


ASSIGNED = """
import triton
import triton.language as tl


def _add_impl(x, y, BLOCK: tl.constexpr):
    pass


add = triton.jit(_add_impl)
tuned = triton.autotune(configs=[triton.Config({})], key=[])(triton.jit(_add_impl))
not_a_kernel = triton.autotune(configs=[], key=[])
opaque = triton.jit(make_fn())


def launch(x):
    add[(1,)](x, x)
"""


def test_assigned_kernels() -> None:
    ks = by_name(ASSIGNED)
    assert set(ks) == {"add", "tuned", "opaque"}
    add = ks["add"]
    assert add.kind == KernelKind.ASSIGNED
    assert add.decorators == ("triton.jit",)
    assert add.span.start_line == add.span.end_line == 10
    assert add.source == (
        "def _add_impl(x, y, BLOCK: tl.constexpr):\n    pass\nadd = triton.jit(_add_impl)"
    )
    assert add.signature == "def _add_impl(x, y, BLOCK: tl.constexpr)"
    assert add.params == ("x", "y", "BLOCK")
    assert add.constexpr_params == ("BLOCK",)
    assert add.launch_sites == (LaunchSite(17, "launch", "(1,)", "add[(1,)](x, x)"),)
    tuned = ks["tuned"]
    assert tuned.decorators == (
        "triton.autotune(configs=[triton.Config({})], key=[])",
        "triton.jit",
    )
    assert tuned.autotune_configs == "[triton.Config({})]"
    opaque = ks["opaque"]
    assert (opaque.signature, opaque.params, opaque.source) == (
        "",
        (),
        "opaque = triton.jit(make_fn())",
    )


def test_assigned_digest_follows_the_wrapped_function() -> None:
    changed = ASSIGNED.replace("    pass", "    return x + y", 1)
    assert by_name(ASSIGNED)["add"].token_digest != by_name(changed)["add"].token_digest


HELPERS = """
import triton
import triton.language as tl


@triton.jit
def _square(x):
    return x * x


@triton.jit
def _unused(x):
    return x


_cube = triton.jit(_cube_impl)


@triton.jit
def main_kernel(x_ptr):
    v = tl.load(x_ptr)
    tl.store(x_ptr, _square(v) + _cube(v))


def host(x):
    _unused(x)  # a call from host code does not make a helper
"""


def test_helper_role() -> None:
    roles = {k.name: k.role for k in find(HELPERS)}
    assert roles == {
        "_square": KernelRole.HELPER,
        "_unused": KernelRole.KERNEL,
        "_cube": KernelRole.HELPER,
        "main_kernel": KernelRole.KERNEL,
    }


NESTED = """
import triton


class Ops:
    @staticmethod
    @triton.jit
    def bar_kernel(x):
        pass

    class Inner:
        @triton.jit
        def deep(x):
            pass


def factory():
    @triton.jit
    def made(x):
        pass

    return made
"""


def test_nested_qualnames() -> None:
    ks = find(NESTED)
    assert [k.qualname for k in ks] == ["Ops.bar_kernel", "Ops.Inner.deep", "factory.made"]
    assert [k.name for k in ks] == ["bar_kernel", "deep", "made"]
    assert ks[0].decorators == ("staticmethod", "triton.jit")


LAUNCHES = """
import triton
import my_kernels as mod


@triton.jit
def copy_kernel(x, y, BLOCK: "tl.constexpr"):
    pass


class Copy:
    def forward(self, x, y):
        grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)
        copy_kernel[grid](x, y, BLOCK=128)
        return y


def copy_other(x, y):
    mod.copy_kernel[(4, 1)](
        x,
        y,
    )


copy_kernel[(1,)](a, b)
other_kernel[(1,)](a, b)
"""


def test_launch_sites_and_wrappers() -> None:
    [k] = find(LAUNCHES)
    assert k.constexpr_params == ("BLOCK",)  # a string annotation counts too
    assert k.launch_sites == (
        LaunchSite(14, "Copy.forward", "grid", "copy_kernel[grid](x, y, BLOCK=128)"),
        LaunchSite(19, "copy_other", "(4, 1)", "mod.copy_kernel[(4, 1)]( x, y, )"),
        LaunchSite(25, None, "(1,)", "copy_kernel[(1,)](a, b)"),
    )
    assert k.wrappers == ("Copy.forward", "copy_other")


def test_long_launch_text_is_not_cut() -> None:
    args = ", ".join(f"arg{i}" for i in range(100))
    [k] = find(f"import triton\n@triton.jit\ndef k(x):\n    pass\ndef w():\n    k[(1,)]({args})\n")
    [site] = k.launch_sites
    assert site.text == f"k[(1,)]({args})"
    assert len(site.text) > 600


def test_launch_text_drops_comments_so_it_still_parses() -> None:
    src = (
        "import triton\n@triton.jit\ndef k(x, n, BLOCK):\n    pass\n"
        "def w(x):\n    k[(4,)](  # one program per row\n        x,\n        x.numel(),  # n\n"
        '        BLOCK=64,  # "#" in a comment\n    )\n'
    )
    [k] = find(src)
    [site] = k.launch_sites
    assert site.text == "k[(4,)]( x, x.numel(), BLOCK=64, )"
    assert site.grid == "(4,)"


TEMPLATES = '''
from torch._inductor import select_algorithm
from torch._inductor.select_algorithm import TritonTemplate

MM_SOURCE = r"""
{{def_kernel("A", "B")}}
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
"""
PROLOGUE = "{{def_kernel('X')}}\\n"
EPILOGUE = """
    tl.store(out, acc)
"""

mm_template = TritonTemplate(
    name="mm",
    grid=mm_grid,
    source=MM_SOURCE,
)

bmm_template = select_algorithm.TritonTemplate(grid=g, source=r"""
@triton.jit
def bmm():
    pass
""")

fused = TritonTemplate(name="fused", grid=g, source=PROLOGUE + load_body() + EPILOGUE)

no_source = TritonTemplate(name="dynamic", grid=g, source=load_template("x"))
'''


def test_triton_templates() -> None:
    ks = by_name(TEMPLATES, "torch/_inductor/kernel/mm.py")
    assert set(ks) == {"mm", "bmm_template", "fused"}
    mm = ks["mm"]
    assert mm.kind == KernelKind.TEMPLATE
    assert mm.source == (
        '\n{{def_kernel("A", "B")}}\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n'
    )
    assert mm.params == ("A", "B")
    assert (mm.signature, mm.constexpr_params, mm.launch_sites) == ("", (), ())
    assert (mm.span.start_line, mm.span.end_line) == (14, 18)  # the assignment statement
    bmm = ks["bmm_template"]
    assert bmm.source == "\n@triton.jit\ndef bmm():\n    pass\n"
    assert bmm.params == ()
    fused = ks["fused"]
    # the call in the middle is unknown until run time; the literals around it are joined
    assert fused.source == "{{def_kernel('X')}}\n\n    tl.store(out, acc)\n"
    assert fused.params == ("X",)


def test_unassigned_template_spans_the_call() -> None:
    src = 'from x import TritonTemplate\nregister(TritonTemplate(name="t", source="tl.x"))\n'
    [k] = find(src)
    assert (k.name, k.source) == ("t", "tl.x")
    assert k.span.start_byte == src.index("TritonTemplate(")
    assert k.span.end_byte == src.index("))") + 1


JINJA = """{{def_kernel("A", "B", "C")}}
    # a comment
    acc = tl.dot(a, b)
"""


def test_jinja_template_file() -> None:
    [k] = find_kernels(JINJA.encode(), "torch/_inductor/kernel/templates/mm.py.jinja")
    assert (k.name, k.qualname, k.kind) == ("mm", "mm", KernelKind.TEMPLATE)
    assert k.params == ("A", "B", "C")
    assert k.source == JINJA
    assert (k.span.start_line, k.span.end_line, k.span.start_byte, k.span.end_byte) == (
        1,
        3,
        0,
        len(JINJA),
    )
    assert find_kernels(b"<div>{{ x }}</div>\n", "docs/page.html.jinja") == []


def test_template_digest_ignores_spacing_and_comments_but_not_indentation() -> None:
    path = "t/mm.py.jinja"
    [base] = find_kernels(JINJA.encode(), path)
    respaced = JINJA.replace("# a comment", "# another").replace("tl.dot(a, b)", "tl.dot( a,b )")
    [same] = find_kernels(respaced.encode(), path)
    [dedented] = find_kernels(JINJA.replace("    acc", "acc").encode(), path)
    assert same.token_digest == base.token_digest
    assert dedented.token_digest != base.token_digest


def test_non_kernel_files() -> None:
    assert find("import torch\n\ndef f(x):\n    return x\n") == []
    assert find("import triton\n\n\ndef f(x):\n    return x\n") == []
    assert find_kernels(b"", "pkg/empty.py") == []


def test_syntax_error_raises() -> None:
    src = "import triton\n\n@triton.jit\ndef k(x:\n    pass\n"
    with pytest.raises(UnparsableSource, match=r"pkg/ops\.py: syntax error near line 3"):
        find(src)


def test_non_utf8_raises_decode_error() -> None:
    with pytest.raises(UnicodeDecodeError):
        find_kernels(b"import triton\n# \xff\xfe\n", "pkg/ops.py")


def test_spans_are_utf8_byte_offsets() -> None:
    src = '# é ü\nimport triton\n@triton.jit\ndef k(x):\n    "ß"\n'
    data = src.encode()
    [k] = find_kernels(data, "pkg/ops.py")
    assert k.span.start_byte == data.index(b"@triton")
    assert data[k.span.start_byte : k.span.end_byte].decode() == k.source
    assert (k.span.start_line, k.span.end_line) == (3, 5)


def test_results_sorted_and_picklable() -> None:
    ks = find(HELPERS) + find(TEMPLATES)
    assert pickle.loads(pickle.dumps(ks)) == ks
    starts = [k.span.start_byte for k in find(HELPERS)]
    assert starts == sorted(starts)


@pytest.mark.parametrize(
    ("path", "data", "expected"),
    [
        ("a/k.py", b"import triton\n", True),
        ("a/k.py", b"# Triton kernels live elsewhere\n", True),
        ("a/k.py", b"import torch\n", False),
        ("a/k.pyi", b"import triton\n", False),
        ("a/README.md", b"triton", False),
        ("a/mm.py.jinja", b'{{def_kernel("A")}}', True),
        ("a/mm.jinja", b"x = tl.load(p)", True),
        ("a/page.html.jinja", b"<p>triton</p>", False),
    ],
)
def test_might_contain_kernels(path: str, data: bytes, expected: bool) -> None:
    assert might_contain_kernels(path, data) is expected


DIGEST_BASE = '''
import triton


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Docstring."""
    for i in range(n):
        v = tl.load(x_ptr + i)
        tl.store(y_ptr + i, v)
    return 0
'''

REFORMATTED = """
import triton


@triton.jit
def k(
    x_ptr,
    y_ptr,
    n,
    BLOCK: tl.constexpr,
):
    '''Docstring.'''
    # a new comment
    for i in range(n):

        v = tl.load(x_ptr  +  i)  # trailing comment
        tl.store(y_ptr + i,
                 v)
    return 0
"""


def digest(src: str) -> str:
    [k] = find(src)
    return k.token_digest


def test_token_digest_ignores_formatting_and_comments() -> None:
    assert find(REFORMATTED)[0].source != find(DIGEST_BASE)[0].source
    assert digest(REFORMATTED) == digest(DIGEST_BASE)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tl.store(y_ptr + i, v)", "tl.store(y_ptr + i, v * 2)"),  # a real change
        ('"""Docstring."""', '"""Docstring, edited."""'),  # docstrings count
        ("        tl.store(y_ptr + i, v)", "    tl.store(y_ptr + i, v)"),  # dedented out of loop
        ("n, BLOCK", "n, BLOCK, EXTRA"),  # signature
        ("@triton.jit", "@triton.jit(do_not_specialize=['n'])"),  # decorators are in the span
    ],
)
def test_token_digest_sees_real_changes(old: str, new: str) -> None:
    assert old in DIGEST_BASE
    assert digest(DIGEST_BASE.replace(old, new)) != digest(DIGEST_BASE)


def test_tuple_trailing_comma_is_not_cosmetic() -> None:
    base = "import triton\n@triton.jit\ndef k(x):\n    return (x)\n"
    assert digest(base) != digest(base.replace("(x)", "(x,)"))


def test_valid_python_that_trips_tree_sitter_still_yields_kernels() -> None:
    # `return a, *rest` is valid Python that tree-sitter-python 0.25 reports as an error.
    src = (
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n\n\n"
        "def backward(dy):\n    return dy, *[None] * 3\n"
    )
    assert [k.name for k in find_kernels(src.encode(), "m.py")] == ["k"]
