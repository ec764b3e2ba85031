"""Kernel kinds added for issue 12: gluon kernels, generated kernel source, and the alias and
runtime-object forms of `triton.autotune(...)(fn)`; each on a small hand-written source."""

from __future__ import annotations

import textwrap

import pytest

from mining.kernels import find_kernels
from mining.model import KernelKind, KernelRole


def find(src: str, path: str = "pkg/ops.py"):
    return find_kernels(textwrap.dedent(src).encode(), path)


GLUON_BODY = """
def k(out, BLOCK: gl.constexpr):
    gl.store(out, 1)
"""


@pytest.mark.parametrize(
    ("imports", "decorator"),
    [
        ("from triton.experimental import gluon", "@gluon.jit"),
        ("import triton.experimental.gluon as gluon", "@gluon.jit"),
        ("from triton.experimental.gluon import jit", "@jit"),
        ("from triton.experimental.gluon import jit as gjit", "@gjit"),
        ("from triton.experimental import gluon as G", "@G.jit"),
        ("import triton.experimental.gluon", "@triton.experimental.gluon.jit"),
        ("from triton.experimental.gluon import *", "@jit"),
        ("from fla.utils import gluon  # a re-export", "@gluon.jit"),
    ],
)
def test_gluon_jit_kernels_and_their_aliases(imports: str, decorator: str) -> None:
    gl = "from triton.experimental.gluon import language as gl"
    src = f"{imports}\n{gl}\n\n\n{decorator}{GLUON_BODY}"
    [k] = find_kernels(src.encode(), "fla/ops/attn/gluon.py")
    assert (k.name, k.kind, k.role) == ("k", KernelKind.GLUON, KernelRole.KERNEL)
    assert k.decorators == (decorator[1:],)
    assert k.constexpr_params == ("BLOCK",)


def test_gluon_helpers_constexpr_functions_and_launches() -> None:
    src = """
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl


    @gluon.constexpr_function
    def pick(n):
        return n * 2


    @gluon.jit
    def _tile(x):
        return x + 1


    @gluon.jit
    def main_kernel(out, N: gl.constexpr):
        gl.store(out, _tile(pick(N)))


    def run(out):
        main_kernel[(1,)](out, 4, num_warps=4)
    """
    ks = {k.name: k for k in find(src)}
    assert set(ks) == {"_tile", "main_kernel"}  # a constexpr function runs on the host
    assert ks["_tile"].role is KernelRole.HELPER
    assert ks["main_kernel"].wrappers == ("run",)


def test_triton_jit_is_not_gluon() -> None:
    src = (
        "import triton\nfrom triton.experimental import gluon\n\n@triton.jit\ndef k(x):\n    pass\n"
    )
    [k] = find_kernels(src.encode(), "m.py")
    assert k.kind is KernelKind.JIT


def test_gluon_only_file_passes_the_byte_prefilter() -> None:
    src = "from fla.utils import gluon\n\n\n@gluon.jit\ndef k(x):\n    pass\n"
    assert [k.kind for k in find_kernels(src.encode(), "m.py")] == [KernelKind.GLUON]


GENERATED = '''
import triton

POINTWISE_TEMPLATE = """
import triton
import triton.language as tl


@triton.jit
def {name}_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, {op}(tl.load(X + offs, mask=offs < N)), mask=offs < N)
"""

HEADER = "import triton\\n" + (
    "@triton.heuristics({'EVEN': lambda a: True})\\n"
    "@triton.jit\\n"
    "def reduce_kernel(X):\\n"
    "    pass\\n"
)


class Codegen:
    EPILOGUE = """
@triton.autotune(configs=[], key=[])
@triton.jit
def epilogue(X):
    pass
"""


def gen_kernel(code, name, rank):
    """Write one kernel per rank."""
    code.writeline("@triton.jit")
    code.writeline(f"def {name}(")
    with code.indent():
        for i in range(rank):
            code.writeline(f"in{i},")
    code.writeline("):")


def render(name):
    body = f"""
    @triton.jit
    def {name}(x):
        pass
    """
    return body


def check(fn):
    """Functions must be decorated with @triton.jit, like this:

    @triton.jit
    def k(x):
        pass
    """
    if "@triton.jit" not in fn.src:
        raise ValueError("fn must be a @triton.jit function, def or lambda")
    "@triton.jit\\ndef ignored(x): pass"


def strip_decorators(lines):
    return [ln for ln in lines if ln.strip() != "@triton.jit"]
'''


def test_generated_kernel_source_constants_and_builders() -> None:
    ks = {k.qualname: k for k in find(GENERATED, "src/flag_gems/utils/codegen.py")}
    assert set(ks) == {"POINTWISE_TEMPLATE", "HEADER", "Codegen.EPILOGUE", "gen_kernel", "render"}
    assert {k.kind for k in ks.values()} == {KernelKind.GENERATED}
    template = ks["POINTWISE_TEMPLATE"]
    assert template.source.startswith('POINTWISE_TEMPLATE = """\nimport triton\n')
    assert template.signature == "def {name}_kernel(X, Y, N, BLOCK: tl.constexpr)"
    assert template.params == ("X", "Y", "N", "BLOCK")
    assert (template.span.start_line, template.span.end_line) == (4, 13)
    assert ks["HEADER"].source.startswith('HEADER = "import triton\\n" + (')
    assert ks["HEADER"].signature == "def reduce_kernel(X)"
    builder = ks["gen_kernel"]
    assert builder.source.startswith("def gen_kernel(code, name, rank):")
    assert builder.signature == "def gen_kernel(code, name, rank)"
    assert builder.role is KernelRole.KERNEL and builder.launch_sites == ()


def test_generated_kernel_digest_sees_the_text() -> None:
    base = {k.qualname: k for k in find(GENERATED)}
    edited = GENERATED.replace("mask=offs < N)), mask", "mask=offs < N) * 2), mask")
    respaced = GENERATED.replace("tl.program_id(0) * BLOCK", "tl.program_id( 0 )*BLOCK")
    assert {k.qualname: k for k in find(edited)}["POINTWISE_TEMPLATE"].token_digest != (
        base["POINTWISE_TEMPLATE"].token_digest
    )
    assert {k.qualname: k for k in find(respaced)}["POINTWISE_TEMPLATE"].token_digest == (
        base["POINTWISE_TEMPLATE"].token_digest
    )


def test_template_source_string_is_a_template_not_generated() -> None:
    src = '''
    from torch._inductor.select_algorithm import TritonTemplate

    BMM = r"""
    @triton.jit
    def bmm(A):
        pass
    """
    bmm_template = TritonTemplate(name="bmm", grid=g, source=BMM)
    inline = TritonTemplate(name="inline", grid=g, source="""
    @triton.jit
    def inline(A):
        pass
    """)
    '''
    assert [(k.name, k.kind) for k in find(src)] == [
        ("bmm", KernelKind.TEMPLATE),
        ("inline", KernelKind.TEMPLATE),
    ]


AUTOTUNED_ALIAS = """
import triton
import triton.language as tl


@triton.jit
def _fwd_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr, 1)


fwd_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=[])(_fwd_kernel)


def forward(x):
    fwd_kernel[(1,)](x)
"""


def test_autotune_alias_of_a_jit_def_is_one_kernel() -> None:
    [k] = find(AUTOTUNED_ALIAS)
    assert (k.name, k.kind) == ("fwd_kernel", KernelKind.ASSIGNED)
    assert k.decorators == ('triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=[])',
                            "triton.jit")  # fmt: skip
    assert k.autotune_configs == '[triton.Config({"BLOCK": 64})]'
    assert k.signature == "def _fwd_kernel(x_ptr, BLOCK: tl.constexpr)"
    assert k.source.startswith("@triton.jit\ndef _fwd_kernel(")
    assert k.source.endswith(
        "\nfwd_kernel = triton.autotune("
        'configs=[triton.Config({"BLOCK": 64})], key=[])(_fwd_kernel)'
    )
    assert k.wrappers == ("forward",)
    rebound = AUTOTUNED_ALIAS.replace("fwd_kernel = triton", "_fwd_kernel = triton").replace(
        "    fwd_kernel[", "    _fwd_kernel["
    )
    [k] = find(rebound)
    assert (k.name, k.kind, k.wrappers) == ("_fwd_kernel", KernelKind.ASSIGNED, ("forward",))


def test_autotune_of_a_runtime_kernel_object_is_not_a_kernel() -> None:
    src = """
    import triton


    class PinnedConfig:
        def __init__(self, kernel):
            self._kernel = triton.heuristics(kernel.values)(kernel.fn)


    def one_config_each(kernel, configs):
        out = []
        for config in configs:
            single = triton.autotune(configs=[config], key=kernel.keys)(kernel.fn)
            tuned = triton.autotune(configs=[config], key=[])(kernel)
            wrapped = triton.jit(kernels[0])
            out.append((single, tuned, wrapped))
        return out
    """
    assert find(src) == []
