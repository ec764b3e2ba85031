"""Forms an older Triton accepted, for kernels written for it: Triton 2's `tl.math` names and
single-int `boundary_check`, and a constexpr listed in `do_not_specialize` (before 3.5).

In Triton 2.1 and 2.2 `triton.language.math` was NVIDIA's libdevice: a kernel of that era calls
`tl.math.pow`, `tl.math.log1p`, `tl.math.tanh`. Triton 3.0 moved them to
`triton.language.extra.cuda.libdevice` and `tl.math` kept a handful (exp, log, sqrt, ...), so
the same kernel fails to compile on the GPU host's Triton 3.6 ("module 'triton.language.math'
has no attribute 'pow'": 12 flash-linear-attention selections of early 2024, pinned to Triton
2.1 or 2.2). `alias_math` puts every libdevice function `tl.math` lacks back under its old
name, the very function Triton 3 calls libdevice's by: no name Triton 3 has is replaced.

`int_boundary_check` takes back the other Triton 2 form these kernels use, a single int as a
block pointer's `boundary_check`. Applied (`apply`) where `ENV` is "1" (`eval.compat` sets it
for a task pinned below Triton 3.0, for every variant's test runs and workload harness alike):
by the kernel-watch plugin at pytest's start and by the workload harness before it imports
the variant's tree. `constexpr_over_dns` (`DNS_ENV`, tasks pinned below Triton 3.5) likewise.
Compiled code only: Triton's interpreter runs no libdevice function
(TRITON_INTERPRET=1 raises "extern_elementwise not supported"). Imports Triton only when
called.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

ENV = "TPB_TRITON2_MATH"  # Triton 2's forms: `alias_math`, `int_boundary_check`
DNS_ENV = "TPB_TRITON_DNS_CONSTEXPR"  # before Triton 3.5: `constexpr_over_dns`


def apply(env: Mapping[str, str]) -> list[str]:
    """The forms `env` switches on (`eval.compat` sets the variables by the task's pinned
    Triton); what was done, one entry each (nothing, and Triton not imported, when no switch
    is on)."""
    done = []
    if env.get(ENV) == "1":
        if names := alias_math():
            done.append(f"tl.math: {len(names)} libdevice names")
        if int_boundary_check():
            done.append("boundary_check: a single int")
    if env.get(DNS_ENV) == "1" and constexpr_over_dns():
        done.append("a constexpr listed in do_not_specialize")
    return done


def constexpr_over_dns() -> bool:
    """Compile a parameter that is both `tl.constexpr` and listed in `do_not_specialize` as
    Triton before 3.5 did: the constexpr is compiled in and the listing has nothing to do
    (Triton 3.6 refuses it: "T marked as constexpr and listed in do_not_specialize", six
    flash-linear-attention tasks pinned to Triton 3.2-3.4, the path-attention kernels and
    #d262316b96's mean pooling). At compile time, so kernels defined before the switch (a
    conftest's imports) get it too. False where Triton has no such check or it was patched."""
    from triton.compiler import code_generator

    cls: Any = getattr(code_generator, "CodeGenerator", None)
    original = getattr(cls, "visit_arg", None)
    if cls is None or original is None or getattr(original, "_tpb_dns", False):
        return False

    @functools.wraps(original)
    def visit_arg(self: Any, node: Any) -> Any:
        for param in getattr(getattr(self, "jit_fn", None), "params", ()):
            if param.name == node.arg and param.is_constexpr:
                param.do_not_specialize = param.do_not_specialize_on_alignment = False
        return original(self, node)

    visit_arg._tpb_dns = True  # type: ignore[attr-defined]
    cls.visit_arg = visit_arg
    return True


def int_boundary_check() -> bool:
    """Let a block-pointer load or store take `boundary_check=(1)`, a single int, as Triton 2
    did (Python reads `(1)` as 1; Triton 3 receives it as a `tl.constexpr`, whose `__iter__`
    iterates the int: "'int' object is not iterable", flash-linear-attention #ccc55cf4b1,
    #98233f8075, #722374cec7 of early 2024). `(0)` stays falsy, no check, as in Triton 2.
    False where Triton has no block pointers (removed in 3.9) or was patched already."""
    from triton.language import core, semantic

    cls: Any = getattr(semantic, "TritonSemantic", None)
    original = getattr(cls, "_canonicalize_boundary_check", None)
    if cls is None or original is None or getattr(original, "_tpb_int", False):
        return False

    @functools.wraps(original)
    def canonical(self: Any, boundary_check: Any, block_shape: Any) -> Any:
        # (only a constexpr is asked for its value: a Triton tuple's attribute lookup raises
        # ValueError, not AttributeError)
        if isinstance(boundary_check, core.constexpr) and isinstance(boundary_check.value, int):
            boundary_check = boundary_check.value
        return original(self, boundary_check, block_shape)

    canonical._tpb_int = True  # type: ignore[attr-defined]
    cls._canonicalize_boundary_check = canonical
    return True


def alias_math() -> list[str]:
    """Add to `triton.language.math` each CUDA libdevice function it lacks; the names added
    (none where Triton has no CUDA libdevice module)."""
    import triton.language as tl

    try:
        from triton.language.extra.cuda import libdevice
    except ImportError:
        return []
    added = []
    for name, fn in sorted(vars(libdevice).items()):
        if name.startswith("_") or not inspect.isfunction(fn) or hasattr(tl.math, name):
            continue
        if fn.__module__ != libdevice.__name__:  # a helper it imported, not one of its own
            continue
        takes = [p for p in inspect.signature(fn).parameters if not p.startswith("_")]
        setattr(tl.math, name, _promoting(fn) if len(takes) > 1 else fn)
        added.append(name)
    return added


def _promoting(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (a libdevice function of several arguments) as Triton 2 dispatched it: arguments
    whose types its table lacks are first brought to a common type. Triton 3 looks the types up
    before it promotes, so `tl.math.pow(2, x)` (int32, float32), which flash-linear-attention's
    retention kernels of early 2024 call, fails there with a KeyError; Triton 2 called
    `__nv_powf`. Types the table has are passed as they are (`pow(x, 3)` stays `__nv_powif`)."""
    from triton.language import core

    @core.extern
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        semantic = kwargs.get("_semantic")  # Triton 3.4 and later; before, `_builder`: as is
        if semantic is None:
            return fn(*args, **kwargs)
        values = [semantic.to_tensor(a) for a in args]
        try:
            return fn(*values, **kwargs)
        except KeyError:  # Triton 3's lookup of a type tuple the table lacks
            common = values[0]
            for v in values[1:]:
                _, common = semantic.binary_op_type_checking_impl(v, common)
            values = [semantic.binary_op_type_checking_impl(v, common)[0] for v in values]
            return fn(*values, **kwargs)

    return call
