"""Capture a Triton kernel's launches: describe their arguments, copy them, replay the largest.

Reads: one launch as the kernel watch sees it (the kernel, its positional and keyword arguments,
its grid) and, for a copy, the bytes of the tensors it is given. Writes: nothing outside memory;
a capture keeps a JSON record, a one-line summary and host copies of the tensor arguments, and
a replay makes fresh device tensors from those copies. Refuses: a launch whose tensor arguments
span more than 4 GiB is described but not copied; launches inside a CUDA graph capture are not
copied either (each refusal is reported through the `note` callback, never raised).

torch and Triton are never imported at module level: torch is handed in by the caller, and
Triton's `TensorWrapper` is imported only when a reinterpreted tensor is rebuilt.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

_ALIGN = 16  # bytes: a snapshot keeps each pointer's address modulo this (Triton specialises on it)
_SNAPSHOT_LIMIT_BYTES = 4 * 2**30  # a launch with more argument bytes is described, not copied


# --- describing and copying launch arguments -------------------------------------------------


def launching_classes() -> list[type]:
    """The Triton classes whose `run` launches a kernel: `JITFunction`, and the interpreter's
    `InterpretedFunction` under TRITON_INTERPRET=1. The test plugin and the workload harness
    both wrap `run` on exactly these."""
    from triton.runtime import jit

    classes: list[type] = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return classes
    return [*classes, InterpretedFunction]


def code_file(fn: Any) -> str:
    """The file a Triton function's code was compiled from, `/`-separated; "" where the code
    names none (made from a string by `exec`: "<string>")."""
    path = str(getattr(getattr(getattr(fn, "fn", None), "__code__", None), "co_filename", "") or "")
    return "" if path.startswith("<") else path.replace(os.sep, "/")


def in_file(path: str, wanted: str) -> bool:
    """Whether code from `path` (`code_file`) is in the file `wanted` (a path from the package
    root, so a package imported from any folder matches); either one unknown (""): yes."""
    return not path or not wanted or path == wanted or path.endswith("/" + wanted)


def kernel_key(fn: Any) -> str:
    """A Triton function as a launch log names it: `name@file` (`code_file`), or the bare name
    when the code names no file. Two kernels of one name in two files (77 of release 1.24.8's
    455 tasks have one) are two entries."""
    name = getattr(getattr(fn, "fn", None), "__name__", "") or "?"
    path = code_file(fn)
    return f"{name}@{path}" if path else name


def relative_key(entry: str, root: str) -> str:
    """A `kernel_key` entry with its file made relative to `root` (the variant's tree) when it
    lies there: a published result names `fla/ops/gla/chunk.py`, not a scratch folder."""
    name, _, path = entry.partition("@")
    top = root.replace(os.sep, "/").rstrip("/") + "/"
    return f"{name}@{path[len(top) :]}" if path.startswith(top) else entry


def same_kernel(entry: str, wanted: str) -> bool:
    """Whether a launch log entry (`kernel_key`, or a bare name as logs before 2026-12-08 kept
    them) is the wanted kernel (`name`, or `name@path` with the path from the package root, as
    `eval.targets.watched_kernels` gives it): the names agree and, where both carry a file,
    the entry's file is the wanted one (`in_file`)."""
    name, _, path = entry.partition("@")
    want, _, file = wanted.partition("@")
    return name == want and in_file(path, file)


def kernel_name(entry: str) -> str:
    """A launch log entry's kernel name (`kernel_key` without its file)."""
    return entry.partition("@")[0]


def callee_functions(fn: Any, jit_types: tuple[type, ...]) -> dict[str, Any]:
    """The Triton functions a Triton function calls, transitively, by name: the globals its
    code names (`exp`, or `op` and `exp` for `op.exp`) that are Triton functions, resolved in
    its module's namespace (what a launch of it runs besides itself; each function's file tells
    a device function from another file's of the same name)."""
    found: dict[str, Any] = {}
    todo = [fn]
    while todo:
        py = getattr(todo.pop(), "fn", None)
        code, names = getattr(py, "__code__", None), getattr(py, "__globals__", None)
        if code is None or names is None:
            continue
        codes, words = [code], set()
        while codes:
            c = codes.pop()
            words.update(c.co_names)
            codes += [k for k in c.co_consts if hasattr(k, "co_names")]
        values = [names.get(w) for w in words]
        values += [getattr(m, w, None) for m in values if inspect.ismodule(m) for w in words]
        for v in values:
            if isinstance(v, jit_types):
                name = getattr(getattr(v, "fn", None), "__name__", "")
                if name and name not in found:
                    found[name] = v
                    todo.append(v)
    return found


def _is_wrapper(v: Any) -> bool:
    return type(v).__name__ == "TensorWrapper" and hasattr(v, "base")  # triton.reinterpret


def _is_tensor(v: Any) -> bool:
    return type(v).__module__.startswith("torch") and hasattr(v, "untyped_storage")


def tensors(v: Any) -> Iterator[Any]:
    """The torch tensors in an argument (or list of them), reinterpreted ones unwrapped."""
    if _is_wrapper(v):
        v = v.base
    if _is_tensor(v):
        yield v
    elif isinstance(v, tuple | list):
        for x in v:
            yield from tensors(x)


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    return str(v)


_STATS_LIMIT = 1 << 24  # integer tensors up to this many elements get value statistics


def _int_stats(t: Any) -> dict[str, Any] | None:
    """What a workload needs to rebuild an index tensor validly at a larger size: its range,
    the fraction of negative entries (ignore_index) and whether it is sorted (offsets)."""
    if t.is_floating_point() or t.is_complex() or str(t.dtype) == "torch.bool":
        return None
    if t.numel() == 0 or t.numel() > _STATS_LIMIT:
        return None
    flat = t.detach().reshape(-1).long()
    stats = {
        "min": int(flat.min()),
        "max": int(flat.max()),
        "negative": round(float((flat < 0).float().mean()), 4),
        "monotone": bool(flat.numel() < 2 or bool((flat[1:] >= flat[:-1]).all())),
    }
    if t.dim() == 2 and t.shape[1] > 1:  # top-k rows: are the entries of a row distinct?
        rows = t.detach().long().sort(dim=1).values
        stats["row_distinct"] = bool((rows[:, 1:] != rows[:, :-1]).all())
    return stats


def _describe(v: Any) -> Any:
    """JSON form of one argument: tensors by layout (integer ones with value statistics),
    scalars by value."""
    if _is_wrapper(v):
        return {**_describe(v.base), "dtype": str(v.dtype), "reinterpreted": True}
    if _is_tensor(v):
        out: dict[str, Any] = {
            "shape": list(v.shape),
            "dtype": str(v.dtype),
            "stride": list(v.stride()),
            "device": str(v.device),
        }
        try:
            stats = _int_stats(v)
        except Exception:  # a statistic must never break the test that launched the kernel
            stats = None
        if stats is not None:
            out["int_stats"] = stats
        return out
    if isinstance(v, tuple | list):
        return [_describe(x) for x in v]
    if v is None or isinstance(v, bool | int | float | str):
        return _scalar(v)
    return {"type": type(v).__name__, "repr": repr(v)[:80]}


def _short(v: Any) -> str:
    if _is_wrapper(v):
        return f"{v.dtype}{list(v.base.shape)}"
    if _is_tensor(v):
        return f"{str(v.dtype).removeprefix('torch.')}{list(v.shape)}"
    if isinstance(v, tuple | list):
        return "(" + ",".join(_short(x) for x in v) + ")"
    return repr(v)[:24]


def _layout_key(v: Any) -> Hashable:
    if _is_wrapper(v):
        return ("W", str(v.dtype), _layout_key(v.base))
    if _is_tensor(v):
        return (tuple(v.shape), str(v.dtype))
    if isinstance(v, tuple | list):
        return tuple(_layout_key(x) for x in v)
    return None


def _span(t: Any) -> int:
    """Elements from a tensor's first to its last addressed element."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))


@dataclass(frozen=True)
class _TensorRef:
    buffer: int
    offset: int  # elements from the buffer's start
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: Any
    wrapper_dtype: Any  # the Triton dtype of a reinterpreted tensor, else None


class ArgumentSnapshot:
    """Host copies of a launch's tensor arguments, keeping strides, offsets and aliasing.

    Copies live on the host so that captures never change what fits on the GPU during the tests.
    Tensors sharing a storage share one buffer, so an in-place kernel replays in place.
    """

    def __init__(self, buffers: list[tuple[Any, Any]], args: list[Any], kwargs: dict[str, Any]):
        self._buffers = buffers  # (host uint8 tensor, device)
        self._args = args
        self._kwargs = kwargs

    @classmethod
    def take(
        cls, torch: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ArgumentSnapshot | None:
        extents: dict[tuple[str, int], list[Any]] = {}
        for t in tensors([*args, *kwargs.values()]):
            key = (str(t.device), t.untyped_storage().data_ptr())
            lo = t.storage_offset() * t.element_size()
            hi = lo + _span(t) * t.element_size()
            e = extents.setdefault(key, [t, lo, hi])
            e[1], e[2] = min(e[1], lo), max(e[2], hi)
        if sum(hi - lo + _ALIGN for _, lo, hi in extents.values()) > _SNAPSHOT_LIMIT_BYTES:
            return None
        buffers: list[tuple[Any, Any]] = []
        where: dict[tuple[str, int], tuple[int, int]] = {}
        with torch.no_grad():
            for key, (t, lo, hi) in extents.items():
                lo -= lo % _ALIGN
                raw = torch.empty(0, dtype=torch.uint8, device=t.device)
                raw.set_(t.untyped_storage(), lo, (hi - lo,), (1,))
                where[key] = (len(buffers), lo)
                buffers.append((raw.to("cpu", copy=True), t.device))

        def ref(v: Any) -> Any:
            if _is_wrapper(v) or _is_tensor(v):
                t = v.base if _is_wrapper(v) else v
                index, lo = where[(str(t.device), t.untyped_storage().data_ptr())]
                offset = (t.storage_offset() * t.element_size() - lo) // t.element_size()
                wdt = v.dtype if _is_wrapper(v) else None
                return _TensorRef(index, offset, tuple(t.shape), t.stride(), t.dtype, wdt)
            if isinstance(v, tuple):
                return tuple(ref(x) for x in v)
            return v

        return cls(buffers, [ref(a) for a in args], {k: ref(v) for k, v in kwargs.items()})

    def restore(self, torch: Any) -> tuple[list[Any], dict[str, Any]]:
        """A fresh device copy of the arguments (each call gives independent tensors)."""
        bufs = [host.to(device, copy=True) for host, device in self._buffers]

        def build(v: Any) -> Any:
            if isinstance(v, _TensorRef):
                buf = bufs[v.buffer]
                t = torch.empty(0, dtype=v.dtype, device=buf.device)
                t.set_(buf.untyped_storage(), v.offset, v.size, v.stride)
                if v.wrapper_dtype is None:
                    return t
                from triton.runtime.jit import TensorWrapper

                return TensorWrapper(t, v.wrapper_dtype)
            if isinstance(v, tuple):
                return tuple(build(x) for x in v)
            return v

        return [build(a) for a in self._args], {k: build(v) for k, v in self._kwargs.items()}


# --- the capture store --------------------------------------------------------------------------


@dataclass
class Capture:
    """One kept launch: its JSON record and summary, and what a replay needs."""

    numel: int
    record: dict[str, Any]  # JSON: grid, args, kwargs, constexprs
    summary: str
    kernel: Any
    grid: tuple[int, ...] | None
    snapshot: ArgumentSnapshot | None


class CaptureStore:
    """Up to `limit` launches of one kernel, one per key, the ones with most elements kept."""

    def __init__(self, limit: int):
        self.limit = limit
        self.captures: dict[Hashable, Capture] = {}

    def wanted(self, key: Hashable, numel: int) -> bool:
        caps = self.captures
        if key in caps or self.limit == 0:
            return False
        return len(caps) < self.limit or numel > min(c.numel for c in caps.values())

    def keep(self, key: Hashable, capture: Capture) -> None:
        if not self.wanted(key, capture.numel):
            return
        self.captures[key] = capture
        if len(self.captures) > self.limit:
            smallest = min(self.captures, key=lambda k: self.captures[k].numel)
            del self.captures[smallest]

    def largest(self, replayable: bool = False) -> Capture | None:
        caps = [c for c in self.captures.values() if not replayable or (c.snapshot and c.grid)]
        return max(caps, key=lambda c: c.numel, default=None)

    def records(self) -> list[dict[str, Any]]:
        """The kept launches' JSON records, largest first."""
        return [c.record for c in sorted(self.captures.values(), key=lambda c: -c.numel)]


class LaunchCapturer:
    """Builds the `Capture` of one launch; `torch` is None where it is not importable."""

    def __init__(self, torch: Any, cuda: bool, note: Callable[[str], None]):
        self.torch = torch
        self.cuda = cuda
        self.note = note
        self._signatures: dict[int, tuple[Any, inspect.Signature, frozenset[str]]] = {}

    def capture(
        self,
        name: str,
        store: CaptureStore,
        kernel: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        grid: Any,
    ) -> tuple[Hashable, Capture] | None:
        """The capture of this launch if `store` would keep it (may raise: the caller guards)."""
        sig, constexprs = self._signature(kernel)
        params = {k: v for k, v in kwargs.items() if k in sig.parameters}
        options = {k: v for k, v in kwargs.items() if k not in sig.parameters}
        bound = sig.bind_partial(*args, **params)
        bound.apply_defaults()
        named = dict(bound.arguments)
        key = (
            tuple((n, _layout_key(v)) for n, v in named.items() if n not in constexprs),
            tuple((n, repr(named[n])) for n in sorted(constexprs) if n in named),
            tuple(sorted((k, repr(v)) for k, v in options.items())),
        )
        numel = sum(t.numel() for t in tensors(list(named.values())))
        if not store.wanted(key, numel):
            return None
        resolved = tuple(int(g) for g in (grid(named) if callable(grid) else grid))
        snapshot = None
        if self.torch is None:
            pass
        elif self.cuda and self.torch.cuda.is_current_stream_capturing():
            self.note(f"{name}: launches inside CUDA graph capture are not copied")
        else:
            snapshot = ArgumentSnapshot.take(self.torch, args, kwargs)
            if snapshot is None:
                self.note(f"{name}: a launch over the snapshot limit was not copied")
        record = {
            "grid": list(resolved),
            "params": list(sig.parameters)[: len(args)],  # the names of the positional args
            "args": [_describe(a) for a in args],
            "kwargs": {k: _describe(v) for k, v in kwargs.items()},
            "constexprs": {n: _scalar(named[n]) for n in sorted(constexprs) if n in named},
            "numel": numel,
        }
        parts = [f"{n}={_short(v)}" for n, v in named.items()]
        parts += [f"{k}={_short(v)}" for k, v in options.items()]
        summary = f"{name}[grid={resolved}](" + ", ".join(parts) + ")"
        return key, Capture(numel, record, summary, kernel, resolved, snapshot)

    def _signature(self, kernel: Any) -> tuple[inspect.Signature, frozenset[str]]:
        cached = self._signatures.get(id(kernel))
        if cached is None:
            sig = inspect.signature(kernel.fn)
            params = getattr(kernel, "params", None)
            if params is not None:  # JITFunction: its own reading of the annotations
                constexprs = frozenset(p.name for p in params if p.is_constexpr)
            else:
                constexprs = frozenset(
                    n for n, p in sig.parameters.items() if "constexpr" in _annotation(p)
                )
            cached = (kernel, sig, constexprs)  # the kernel is kept so its id stays unique
            self._signatures[id(kernel)] = cached
        return cached[1], cached[2]


def _annotation(p: inspect.Parameter) -> str:
    a = p.annotation
    return a if isinstance(a, str) else getattr(a, "__name__", repr(a))


# --- replay -------------------------------------------------------------------------------------


class Replay:
    """Independent device copies of a captured launch's arguments, launchable by index."""

    def __init__(self, capture: Capture, torch: Any, n_inputs: int):
        self.capture = capture
        self.inputs = [capture.snapshot.restore(torch) for _ in range(n_inputs)]  # type: ignore[union-attr]

    @property
    def device(self) -> Any:
        """The device of the launch's first tensor argument, or None when it has none."""
        args, kwargs = self.inputs[0]
        first = next(tensors([*args, *kwargs.values()]), None)
        return None if first is None else first.device

    def launch(self, i: int) -> None:
        """Launch the kernel once on input set `i` (for `eval.timing.bench`)."""
        args, kwargs = self.inputs[i]
        self.capture.kernel.run(*args, grid=self.capture.grid, warmup=False, **kwargs)
