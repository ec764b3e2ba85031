"""Autotuning's configs compiled on threads before the benchmark loop (eval.parallel_compile):
Triton compiles for an sm_90 target here without a GPU (the benchmark script's compile-only
driver), in a process of its own (the tests run Triton's interpreter, which compiles nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eval.parallel_compile import WORKERS_ENV, default_workers, workers_from
from eval.pytest_plugin import KernelWatcher, WatchConfig

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def compiled(
    workers: int, configs: int, salt: float, limit: int = 2**30, keywords: bool = False
) -> dict:
    pytest.importorskip("triton")
    sys.path.insert(0, str(SCRIPTS))
    from bench_parallel_compile import compile_configs

    try:
        return compile_configs(workers, configs, salt, limit, keywords)
    except SystemExit as exc:  # no ptxas for sm_90 on this machine
        pytest.skip(str(exc))


def test_every_config_is_built_before_the_benchmark_loop_and_a_failing_one_is_left_to_it() -> None:
    """With two threads the autotuner's pruning returns with every config compiled (the loop
    that times them finds each built); Triton's serial path has compiled none by then. A config
    that fails to compile (a static assertion: too large a tile) raises nothing there and stays
    out, for the benchmark loop to meet and report as Triton does."""
    serial = compiled(1, 4, 11.0)
    assert serial["configs"] == 4 and serial["at_prune"] == 0 and serial["compiled"] == 4
    threaded = compiled(2, 4, 12.0)
    assert threaded["at_prune"] == threaded["compiled"] == 4
    # the four are 64x64 tiles, BK 32 and 64, 4 and 8 warps: the two with BK=64 fail
    partly = compiled(2, 4, 13.0, limit=64 * 64 * 32)
    assert partly["configs"] == 4 and partly["at_prune"] == 2


def test_a_kernel_called_with_keyword_arguments_compiles_in_parallel_too() -> None:
    """flash-linear-attention calls its kernels with keyword arguments only, so the autotuner's
    `nargs` is empty when it prunes (the first version waited for positional arguments and
    compiled chunk_gla's 122 kernels on the main thread, 2026-12-07)."""
    threaded = compiled(2, 4, 14.0, keywords=True)
    assert threaded["at_prune"] == threaded["compiled"] == 4


def test_the_parallel_compile_benchmark_script(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("triton")
    sys.path.insert(0, str(SCRIPTS))
    from bench_parallel_compile import main

    try:
        code = main(["--configs", "2", "--workers", "2"])
    except SystemExit as exc:
        pytest.skip(str(exc))
    out = capsys.readouterr().out
    assert code == 0 and "2 configs for sm_90" in out and "(2 compiled)" in out


def test_threads_share_out_the_cpus_among_the_tasks_run_side_by_side() -> None:
    assert default_workers(1, cpus=16) == 16
    assert default_workers(8, cpus=16) == 2
    assert default_workers(32, cpus=16) == 1 and default_workers(0, cpus=2) == 2
    assert workers_from({WORKERS_ENV: "4"}) == 4
    assert workers_from({WORKERS_ENV: "many"}) == 0 and workers_from({}) == 0


def test_the_test_runs_compile_in_parallel_except_the_selections_first_config_tuning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plugin patches the autotuner's pruning where TPB_COMPILE_WORKERS asks for threads
    and Triton compiles (not in its interpreter), and never with the selection's first-config
    tuning, which compiles one config of each."""
    from triton.runtime.autotuner import Autotuner

    original = Autotuner.__dict__["prune_configs"]
    assert WatchConfig.from_env({WORKERS_ENV: "3"}).compile_workers == 3
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    for autotune, patched in (("", True), ("first", False)):
        watcher = KernelWatcher(WatchConfig(kernels=(), out=None, autotune=autotune,
                                            compile_workers=3))  # fmt: skip
        watcher.patch()
        try:
            assert (Autotuner.__dict__["prune_configs"] is not original) is patched
            assert any("3 threads" in n for n in watcher.notes) is patched
        finally:
            watcher.unpatch()
        assert Autotuner.__dict__["prune_configs"] is original
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    watcher = KernelWatcher(WatchConfig(kernels=(), out=None, compile_workers=3))
    watcher.patch()
    assert Autotuner.__dict__["prune_configs"] is original
    watcher.unpatch()


_TINY_OP = """
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (32, 64)
                          for w in (1, 2)], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})
@triton.jit
def scaled_exp(x, y, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + i) if EVEN else tl.load(x + i, mask=i < n)
    tl.store(y + i, tl.exp(v.to(tl.float32)).to(tl.bfloat16), mask=i < n)


@triton.jit
def negate(x, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + i, -tl.load(x + i, mask=i < n), mask=i < n)


def op(x):
    y = torch.empty_like(x)
    with torch.cuda.device(x.device.index):
        scaled_exp[lambda m: (triton.cdiv(x.numel(), m["BLOCK"]),)](x=x, y=y, n=x.numel())
        negate[(1,)](y, y.numel(), BLOCK=128)
    return y
"""


def test_a_frameworks_op_compiles_every_kernel_and_config_its_first_call_builds(
    tmp_path: Path,
) -> None:
    """The benchmark's --op mode on a tiny framework: the op (an autotuned kernel over
    heuristics called with keywords inside a CUDA device context, then a plain kernel) runs
    on CPU tensors, each launch only compiled for sm_90: the four configs and the plain kernel
    are built, on threads as on Triton's serial path."""
    pytest.importorskip("triton")
    sys.path.insert(0, str(SCRIPTS))
    from bench_parallel_compile import compile_op

    (tmp_path / "tinyfw.py").write_text(_TINY_OP)
    try:
        serial = compile_op(1, tmp_path, "tinyfw:op", 1, "256")
        threaded = compile_op(2, tmp_path, "tinyfw:op", 1, "320")
    except SystemExit as exc:
        if "could not compile" in str(exc) or "ptxas" in str(exc).lower():
            pytest.skip(str(exc))
        raise
    assert serial["compiled"] == threaded["compiled"] == 5
