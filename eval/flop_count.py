"""The matrix-product FLOPs of a call's Triton kernels, counted in the Triton interpreter.

Under TRITON_INTERPRET=1 each `tl.dot` a program executes is one `create_dot` of the
interpreter's builder on that program's operand blocks: `DotFlops` adds 2*M*N*K for it (times
any batch dimension of a 3-D dot). These are the FLOPs the kernels execute, masked padding of a
block included, whatever the autotuner's config; element-wise work is not counted (the bytes
moved measure that kind of kernel).

At a workload's sizes a launch has thousands of programs, each hundreds of numpy operations in
the interpreter: the counter runs an evenly spread sample of at most `programs` of a launch's
programs and scales what they executed by the grid's size over the sample's. Sampling along
the linear program index spreads the sample over the outermost grid dimension that varies, so
a causal kernel whose work grows with its block index is estimated from blocks of every
depth. A program it skips stores nothing, so a later kernel reads whatever the framework
allocated there (`torch.empty`): only the dots' shapes are counted, and they do not depend on
the values, except where a loop's bound is read from such a tensor. An autotuned kernel runs
its first config: the counter gives the autotuner no timings (the interpreter has none to give),
so no benchmarking launch runs, and the FLOPs are those of that config (configs differ only in
the padding of partial blocks). `scaled_dot` (microscaled formats) is not counted.

Imported by `eval.workload_harness` for a `count_flops` job, before the variant's tree is on the
path; Triton's interpreter internals it wraps (`GridExecutor`, the builder's `create_dot`,
`Autotuner._bench`) are those of Triton 3.6 (the H200's) and 3.9, both checked.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

_MISSING = object()


def _libdevice_home(value: Any, math: Any) -> tuple[Any, str] | None:
    """`triton.language.math`'s function of the name of a libdevice function (Liger-Kernel's
    `from triton.language.extra.libdevice import rsqrt`), which the interpreter runs; it
    gives libdevice's extern calls no value (Triton 3.6: "'NoneType' object has no attribute
    'to'")."""
    name = getattr(value, "__name__", "")
    if not str(getattr(value, "__module__", "")).startswith("triton.language.extra"):
        return None
    member = getattr(math, name, None)
    return (math, name) if member is not None and callable(member) else None


def _through(lang: Any, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(lang, name)(*args, **kwargs)

    call.__name__ = name
    return call


class _NoDevice:
    """A device context (`torch.cuda.device(index)`'s form) that changes nothing."""

    def __init__(self, index: Any = None) -> None:
        self.index = index

    def __enter__(self) -> _NoDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class _Launch:
    """The launch the interpreter is running: dot FLOPs of its programs run so far."""

    flops: int = 0
    ran: int = 0  # programs run
    asked: int = 0  # programs of the grid
    kernel: str = ""


class _Sampled:
    """A kernel's Python function that runs only the sampled programs of each launch. Keeps the
    function's signature and globals: the interpreter binds arguments by the former and patches
    `triton.language` through the latter."""

    def __init__(self, fn: Any, counter: DotFlops, builder: Any) -> None:
        self.fn = fn
        self.counter = counter
        self.builder = builder
        self.__signature__ = inspect.signature(fn)
        self.__globals__ = fn.__globals__
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)

    def __call__(self, **kwargs: Any) -> Any:
        nx, ny, nz = self.builder.grid_dim
        x, y, z = self.builder.grid_idx
        if not self.counter.take((x * ny + y) * nz + z, nx * ny * nz, self.__name__):
            return None
        return self.fn(**kwargs)


class DotFlops:
    """Context: while active, interpreted launches run a sample of their programs; inside
    `counting()`, the dots of each launch add to `total` and `by_kernel`."""

    def __init__(self, programs: int = 32, roots: Sequence[str] = ()) -> None:
        if programs < 1:
            raise ValueError(f"programs must be at least 1, not {programs}")
        self.programs = programs
        self.roots = tuple(os.path.abspath(r) + os.sep for r in roots)
        self.total = 0
        self.by_kernel: dict[str, int] = {}
        self.launches = 0
        self.ran = 0  # programs run in the counted launches
        self.asked = 0  # programs the counted launches' grids held
        self._counting = False
        self._chosen: tuple[int, frozenset[int]] = (0, frozenset())
        self._launch = _Launch()
        self._restore: list[tuple[Any, str, Any]] = []
        self.triton = ""

    # --- sampling and counting --------------------------------------------------------------

    def sample(self, total: int) -> frozenset[int]:
        """The linear program indices a launch of `total` programs runs: `programs` of them at
        the middles of equal strides (all of them when there are fewer)."""
        if self._chosen[0] != total:
            n = min(total, self.programs)
            self._chosen = (total, frozenset(int((i + 0.5) * total / n) for i in range(n)))
        return self._chosen[1]

    def take(self, linear: int, total: int, kernel: str) -> bool:
        self._launch.asked, self._launch.kernel = total, kernel
        if linear not in self.sample(total):
            return False
        self._launch.ran += 1
        return True

    def add_dot(self, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
        m_k = 1
        for d in a_shape:
            m_k *= int(d)
        self._launch.flops += 2 * m_k * int(b_shape[-1])

    def _end_launch(self) -> None:
        done, self._launch = self._launch, _Launch()
        if not self._counting or not done.ran:
            return
        scaled = round(done.flops * done.asked / done.ran)
        self.total += scaled
        self.by_kernel[done.kernel] = self.by_kernel.get(done.kernel, 0) + scaled
        self.launches += 1
        self.ran += done.ran
        self.asked += done.asked

    @contextmanager
    def counting(self) -> Iterator[DotFlops]:
        self._counting = True
        try:
            yield self
        finally:
            self._counting = False

    # --- the interpreter's hooks --------------------------------------------------------------

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        self._restore.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, new)

    def __enter__(self) -> DotFlops:
        import triton
        from triton.runtime import autotuner, interpreter

        self.triton = triton.__version__

        builder = interpreter.interpreter_builder
        executor = interpreter.GridExecutor
        counter = self
        dot, init, call = builder.create_dot, executor.__init__, executor.__call__

        def create_dot(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
            counter.add_dot(a.data.shape, b.data.shape)
            return dot(a, b, *args, **kwargs)

        def grid_init(ex: Any, fn: Any, *args: Any, **kwargs: Any) -> None:
            init(ex, fn, *args, **kwargs)
            ex.fn = _Sampled(ex.fn, counter, builder)

        def grid_call(ex: Any, *args: Any, **kwargs: Any) -> Any:
            counter._launch = _Launch()
            try:
                return call(ex, *args, **kwargs)
            finally:
                counter._end_launch()

        def untimed_bench(tuner: Any, *args: Any, **kwargs: Any) -> list[float]:
            # the interpreter has no timer to tune with (Triton 3.9 finds no driver): every
            # config ties, and the autotuner keeps its first
            return [0.0, 0.0, 0.0]

        self._alias_language()
        self._device_context()
        if not hasattr(builder, "get_bf16"):
            # Triton 3.6's interpreter builds no bf16 constant (a `tl.full(..., tl.bfloat16)`
            # of flash-linear-attention #479: "'InterpreterBuilder' object has no attribute
            # 'get_bf16'"); Triton 3.9's rounds an fp32 one, as this does
            import triton.language as tl

            def get_bf16(value: Any) -> Any:
                return builder.create_fp_trunc(builder.get_fp32(value), tl.bfloat16)

            self._patch(builder, "get_bf16", get_bf16)
        self._index_scalars(interpreter)
        self._patch(builder, "create_dot", create_dot)
        self._patch(executor, "__init__", grid_init)
        self._patch(executor, "__call__", grid_call)
        self._patch(autotuner.Autotuner, "_bench", untimed_bench)
        return self

    def _index_scalars(self, interpreter: Any) -> None:
        """A scalar used as an index (a loop's bound: `range(i_t * BT, ..., BS)` in
        flash-linear-attention #479) converts its one-element block to an int as Triton 3.9
        does, squeezed: Triton 3.6's interpreter calls `int()` on the block itself, which NumPy
        2.5 (the H100's and H200's) refuses ("only 0-dimensional arrays can be converted to
        Python scalars", call 72) and NumPy 2.2 only warns of."""
        patch_tensor = getattr(interpreter, "_patch_lang_tensor", None)
        if patch_tensor is None:
            return

        def lang_tensor(tensor: Any, scope: Any, *args: Any, **kwargs: Any) -> Any:
            done = patch_tensor(tensor, scope, *args, **kwargs)
            scope.set_attr(tensor, "__index__", lambda t: int(t.handle.data.squeeze()))
            return done

        self._patch(interpreter, "_patch_lang_tensor", lang_tensor)

    def _device_context(self) -> None:
        """`torch.cpu.device(index)` while counting, a context that does nothing: under the
        interpreter Triton's active backend is `cpu`, and flash-linear-attention enters
        `getattr(torch, backend).device(tensor.device.index)` around each op, which torch (2.11
        to 2.13) does not have for the CPU (2026-12-06, call 68: every flash-linear-attention
        count failed "module 'torch.cpu' has no attribute 'device'", on the H100 as here). The
        interpreter's programs run on the host whatever the device context says."""
        torch = sys.modules.get("torch")
        if torch is not None and not hasattr(torch.cpu, "device"):
            self._patch(torch.cpu, "device", _NoDevice)

    def _alias_language(self) -> None:
        """Module globals under `roots` that hold a `triton.language` builtin under a name of
        their own (flash-linear-attention's `exp = tl.exp` in fla/ops/utils/op.py) call it
        through the language module while counting: the interpreter replaces the module's
        attribute, not the copies (Triton 3.6: "Did you forget to add @triton.jit ?"). A
        libdevice function goes to `tl.math`'s of its name (`_libdevice_home`)."""
        import triton.language as tl

        homes = {
            id(member): (lang, name)
            for lang in (tl, tl.math)
            for name, member in inspect.getmembers(lang)
            if tl.core.is_builtin(member)
        }
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None) or ""
            if not self.roots or not os.path.abspath(path).startswith(self.roots):
                continue
            for name, value in list(vars(module).items()):
                home = homes.get(id(value)) or _libdevice_home(value, tl.math)
                if home is not None:
                    self._patch(module, name, _through(*home))

    def __exit__(self, *exc: object) -> None:
        for owner, name, old in reversed(self._restore):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._restore.clear()

    def summary(self) -> dict[str, Any]:
        """What the counted launches executed, for a harness row."""
        return {
            "flops": self.total,
            "flop_kernels": dict(sorted(self.by_kernel.items())),
            "launches": self.launches,
            "programs": [self.ran, self.asked],
            "triton": self.triton,
        }
