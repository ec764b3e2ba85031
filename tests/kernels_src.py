"""Small Triton kernels written for the tests (sources as text, committed into tiny repos)."""

ADD_KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 256),)
    add_kernel[grid](x, y, out, n, BLOCK=256)
    return out
"""

# Same tokens as ADD_KERNEL: only whitespace and comments differ inside the kernel.
ADD_KERNEL_REFORMATTED = ADD_KERNEL.replace(
    "    pid = tl.program_id(0)\n",
    "    # one program per block\n    pid = tl.program_id( 0 )\n\n",
)

# A real change of the body: a scale factor.
ADD_KERNEL_SCALED = ADD_KERNEL.replace("x + y, mask=mask)", "(x + y) * 2.0, mask=mask)")

SCALE_KERNEL = """import triton
import triton.language as tl


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
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)
"""

HELPER_KERNEL = """import triton
import triton.language as tl
from triton import jit as J


@J
def _square(x):
    return x * x


@triton.jit
def square_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _square(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""

TEMPLATE_MODULE = '''from torch._inductor.select_algorithm import TritonTemplate

copy_template = TritonTemplate(
    name="copy",
    grid=lambda n, meta: (n // meta["BLOCK"],),
    source=r"""
{{def_kernel("X", "Y")}}
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs))
""",
)
'''

PLAIN_MODULE = '''def helper(x):
    """No Triton here."""
    return x + 1
'''
