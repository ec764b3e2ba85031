"""Triton's switches for code written for an older Triton (`eval.compat`): chosen by the
Triton the task pins, given to its test runs and its workload harness, and what the switch
does on this machine's Triton (a kernel compiled for an sm_90 target, no GPU needed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.files import write_record
from curation.taskdir import TaskDir, TaskFile
from envbuild.model import EnvSpec, Layer, LayerKind, Pin, PinSource
from eval.compat import compat_env, pinned_triton, task_compat_env

GLOBALS = "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS"
MATH = "TPB_TRITON2_MATH"  # eval.triton_names
DNS = "TPB_TRITON_DNS_CONSTEXPR"


def pinned(tmp_path: Path, triton: str | None) -> TaskDir:
    """A task directory whose env.json pins `triton` (None: no env.json)."""
    tdir = TaskDir(tmp_path / f"t-{triton}")
    tdir.root.mkdir()
    if triton is not None:
        p = Pin("x", "1", PinSource.DEFAULT, "test")
        layers = tuple(Layer(k, f"tag-{k}", None, "FROM scratch\n") for k in LayerKind)
        pin = Pin("triton", triton, PinSource.DATE, "releases.json")
        spec = EnvSpec("t", "fw", "pip-editable", "c", "2024-01-09", p, p, pin, p, (), layers)
        write_record(tdir.path(TaskFile.ENV), spec)
    return tdir


@pytest.mark.parametrize(
    ("pin", "switched"),
    [
        ("2.1.0", True),
        ("2.2.0", True),
        ("3.0.0", False),
        ("3.6.0", False),
        (None, False),
        ("nightly", False),
    ],
)
def test_the_switch_follows_the_pinned_triton(tmp_path: Path, pin, switched) -> None:
    """Triton 2 read non-constexpr globals freely, 3.0 refused them: only a task pinned
    before 3.0 gets the switch (a task pinned later whose PR fixed such a read keeps its
    failing base, as Liger-Kernel #1275's)."""
    tdir = pinned(tmp_path, pin)
    assert pinned_triton(tdir) == pin
    assert (GLOBALS in compat_env(pin)) is switched
    assert (compat_env(pin).get(MATH) == "1") is switched
    assert (task_compat_env(tdir).get(GLOBALS) == "1") is switched


def test_a_test_run_and_the_workload_harness_get_the_switch(tmp_path: Path) -> None:
    from dataclasses import replace
    from types import SimpleNamespace

    from eval.backends import MULTICAST_OFF, RunSettings, run_env
    from eval.workload_run import MeasureSettings, with_compat

    old, new = pinned(tmp_path, "2.2.0"), pinned(tmp_path, "3.4.0")
    task = SimpleNamespace(framework="liger-kernel")  # only its framework is read
    settings = RunSettings(extra_env={"X": "1"})
    env = run_env(task, old, settings, tmp_path / "cache")  # type: ignore[arg-type]
    assert env[GLOBALS] == "1" and env["X"] == "1"
    assert all(env[k] == v for k, v in MULTICAST_OFF.items())
    assert GLOBALS not in run_env(task, new, settings, tmp_path / "cache")  # type: ignore[arg-type]
    # the operator's value still wins
    off = replace(settings, extra_env={GLOBALS: "0"})
    assert run_env(task, old, off, tmp_path / "cache")[GLOBALS] == "0"  # type: ignore[arg-type]
    measure = MeasureSettings(extra_env={"Y": "2"})
    assert with_compat(measure, old).extra_env == {"Y": "2", GLOBALS: "1", MATH: "1", DNS: "1"}
    assert with_compat(measure, new).extra_env == {"Y": "2", DNS: "1"}  # 3.4: before 3.5


KERNEL = """
import sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SCALE = 2.0  # a plain float, as flash-linear-attention's early `inv_ln2`


@triton.jit
def scale_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * SCALE)


src = ASTSource(scale_kernel, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 64})
try:
    triton.compile(src, target=GPUTarget("cuda", 90, 32))
except Exception as exc:
    print(type(exc).__name__, str(exc).splitlines()[-1][:80])
    sys.exit(1)
print("compiled")
"""


def compile_for(
    tmp_path: Path, kernel: str, pin: str, compiles: bool, refusal: str, expect: str = "compiled"
) -> None:
    """Run `kernel` (a script compiling for sm_90, no GPU needed) with the environment of a
    task pinned to Triton `pin`: it prints `expect` when `compiles`, else fails naming
    `refusal`. The project is on its path (`eval.triton_names`, as the test plugin has it)."""
    script = tmp_path / "k.py"  # a file: @triton.jit reads the kernel's source
    script.write_text(textwrap.dedent(kernel))
    env = {"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(tmp_path / "cache"),
           "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           **compat_env(pin)}  # fmt: skip
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    log = run.stdout + run.stderr[-500:]
    if compiles:
        assert run.returncode == 0 and expect in run.stdout, log
    else:
        assert run.returncode == 1 and refusal in run.stdout, log


@pytest.mark.parametrize(("pin", "compiles"), [("2.1.0", True), ("3.6.0", False)])
def test_the_switch_lets_a_triton_2_kernel_compile_here(tmp_path: Path, pin, compiles) -> None:
    """This machine's Triton, compiling for sm_90 without a GPU: a kernel that reads a plain
    global compiles with the environment of a task pinned to Triton 2.1 and fails, naming the
    global, with that of a task pinned to 3.6."""
    compile_for(tmp_path, KERNEL, pin, compiles, "Cannot access global variable SCALE")


# a script's opening and end: the switches as the test plugin and the harness apply them, and
# the compile for sm_90 (no GPU needed) that prints "compiled" and whether it calls __nv_powf
SCRIPT_HEAD = """
import os
import sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from eval import triton_names

triton_names.apply(os.environ)
"""

SCRIPT_TAIL = """
try:
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32))
except Exception as exc:
    print(type(exc).__name__, str(exc).splitlines()[-1][:120])
    sys.exit(1)
print("compiled", "__nv_powf" in compiled.asm["llir"])
"""

POW_KERNEL = (
    SCRIPT_HEAD
    + """
if os.environ.get(triton_names.ENV) == "1":  # nothing Triton 3 has is replaced
    import triton.language.extra.cuda.libdevice as libdevice
    assert tl.math.exp is not libdevice.exp


@triton.jit
def pow_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # as flash-linear-attention's retention kernels: an int base, a float exponent (Triton 2
    # promoted the pair; Triton 3 looks (int32, fp32) up in libdevice's table and fails)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.math.pow(x, 2.0) + tl.math.pow(2, -5 - x * 1.0))


src = ASTSource(pow_kernel, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 64})
"""
    + SCRIPT_TAIL
)


@pytest.mark.parametrize(("pin", "compiles"), [("2.2.0", True), ("3.6.0", False)])
def test_triton_2_math_names_compile_for_a_task_pinned_to_triton_2(
    tmp_path: Path, pin, compiles
) -> None:
    """12 flash-linear-attention selections of early 2024 (Triton 2.1 / 2.2 pins) failed on
    the H200's Triton 3.6 with "module 'triton.language.math' has no attribute 'pow'": with a
    Triton 2 task's environment `tl.math.pow` is libdevice's again, dispatched as Triton 2 did
    (`pow(2, x)`, an int and a float, promoted), and the kernel compiles for sm_90 calling
    `__nv_powf`; with a Triton 3 task's it still fails."""
    compile_for(
        tmp_path, POW_KERNEL, pin, compiles, "has no attribute 'pow'", expect="compiled True"
    )


BOUNDARY_KERNEL = (
    SCRIPT_HEAD
    + """

@triton.jit
def copy_kernel(x_ptr, y_ptr, T, BT: tl.constexpr, BK: tl.constexpr):
    p_x = tl.make_block_ptr(x_ptr, (T, BK), (BK, 1), (0, 0), (BT, BK), (1, 0))
    p_y = tl.make_block_ptr(y_ptr, (T, BK), (BK, 1), (0, 0), (BT, BK), (1, 0))
    # Triton 2's forms, as flash-linear-attention's based kernels of early 2024 wrote them
    b_x = tl.load(p_x, boundary_check=(0)) + tl.load(p_x, boundary_check=(1))
    tl.store(p_y, b_x, boundary_check=(0, 1))


sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "T": "i32", "BT": "constexpr", "BK": "constexpr"}
src = ASTSource(copy_kernel, sig, constexprs={"BT": 16, "BK": 16})
"""
    + SCRIPT_TAIL
)


def _has_block_pointers() -> bool:
    from triton.language import semantic

    cls = getattr(semantic, "TritonSemantic", None)
    return hasattr(cls, "_canonicalize_boundary_check")


@pytest.mark.skipif(not _has_block_pointers(), reason="this Triton has no block pointers (3.9+)")
@pytest.mark.parametrize(("pin", "compiles"), [("2.1.0", True), ("3.6.0", False)])
def test_a_single_int_boundary_check_compiles_for_a_task_pinned_to_triton_2(
    tmp_path: Path, pin, compiles
) -> None:
    """flash-linear-attention #ccc55cf4b1, #98233f8075, #722374cec7 (Triton 2.1 pins) failed on
    the GPU host's Triton 3.6 with "'int' object is not iterable" at `boundary_check=(1)`: with
    a Triton 2 task's environment the int is taken as Triton 2 took it. (Checked with Triton
    3.6.0 on the CPU, 2026-12-07; this machine's Triton 3.9 removed block pointers.)"""
    compile_for(tmp_path, BOUNDARY_KERNEL, pin, compiles, "not iterable")


DNS_KERNEL = (
    SCRIPT_HEAD
    + """

@triton.jit(do_not_specialize=["T"])
def mean_kernel(x_ptr, y_ptr, T: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < T) / T)


sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "T": "constexpr", "BLOCK": "constexpr"}
src = ASTSource(mean_kernel, sig, constexprs={"T": 100, "BLOCK": 128})
"""
    + SCRIPT_TAIL
)


@pytest.mark.parametrize(("pin", "compiles"), [("3.3.0", True), ("3.6.0", False)])
def test_a_constexpr_listed_in_do_not_specialize_compiles_for_a_task_pinned_before_3_5(
    tmp_path: Path, pin, compiles
) -> None:
    """Six flash-linear-attention tasks pinned to Triton 3.2-3.4 (the path-attention kernels,
    #d262316b96's mean pooling) declare `T` both `tl.constexpr` and in `do_not_specialize`,
    which the GPU host's Triton 3.6 refuses: with such a task's environment the constexpr is
    compiled in, as their Triton did; with a 3.6 task's it is still refused."""
    compile_for(tmp_path, DNS_KERNEL, pin, compiles, "marked as constexpr")
