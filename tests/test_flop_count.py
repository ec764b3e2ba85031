"""The matrix-product FLOPs of a workload's calls, counted in Triton's interpreter on the CPU
(eval/flop_count.py; `eval workload --count-flops`), and the efficiency they give."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from curation.taskdir import TaskFile, task_dirs
from eval.perf_scores import h200_us
from eval.workload_model import (
    ArgSpec,
    CallResult,
    Entry,
    EntryKind,
    Metric,
    Mode,
    SizeLabel,
    Source,
    Timing,
    Workload,
    WorkloadCall,
    WorkloadResult,
    gold_efficiency,
)
from tests.gitrepo import TinyRepo

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ["TRITON_INTERPRET"] != "1":
    pytest.skip("counting runs Triton's interpreter", allow_module_level=True)

import triton.language as tl  # noqa: E402

from eval.flop_count import DotFlops  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_flop_count import causal_kernel  # noqa: E402


@pytest.fixture
def fw_mm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The tiny framework's matmul module (`MM` below), imported from a file of its own."""
    import importlib

    (tmp_path / "fw_mm.py").write_text(MM)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("fw_mm")


def test_a_tiled_matmul_counts_2mnk_whether_every_program_runs_or_a_sample(fw_mm) -> None:  # type: ignore[no-untyped-def]
    a, b = torch.randn(64, 32), torch.randn(32, 48)
    with DotFlops(1000) as every, every.counting():
        c = fw_mm.mm(a, b)
    assert torch.allclose(c, a @ b, atol=1e-4)  # every program ran
    assert every.total == 2 * 64 * 48 * 32
    assert every.summary()["programs"] == [12, 12] and every.launches == 1
    # 3 of the 12 tiles run; each does the same work, so the scaled count is exact
    with DotFlops(3) as sampled, sampled.counting():
        c = fw_mm.mm(a, b)
    assert sampled.total == 2 * 64 * 48 * 32
    assert sampled.summary()["programs"] == [3, 12]
    assert sampled.by_kernel == {"mm_kernel": 2 * 64 * 48 * 32}


def test_a_sample_spread_over_a_causal_grid_estimates_its_count() -> None:
    blocks, bs = 64, 16
    q, o = torch.randn(bs, bs), torch.zeros(blocks, bs, bs)
    exact = sum(i + 1 for i in range(blocks)) * 2 * bs**3
    with DotFlops(8) as counter, counter.counting():
        causal_kernel()[(blocks,)](q, o, B=bs)
    assert counter.summary()["programs"] == [8, blocks]
    assert abs(counter.total / exact - 1) < 0.02, (counter.total, exact)
    # the programs it skipped stored nothing: only 8 blocks of the output were written
    assert int((o.abs().sum(dim=(1, 2)) > 0).sum()) == 8


def test_only_counted_launches_count_and_the_interpreter_is_given_back(fw_mm) -> None:  # type: ignore[no-untyped-def]
    from triton.runtime import interpreter

    a, b = torch.randn(32, 32), torch.randn(32, 32)
    executor_call = interpreter.GridExecutor.__call__
    with DotFlops(4) as counter:
        fw_mm.mm(a, b)  # outside counting(): sampled, not counted
        assert counter.total == 0
        with counter.counting():
            fw_mm.mm(a, b)
            fw_mm.mm(a, b)
    assert counter.total == 2 * (2 * 32**3) and counter.launches == 2
    # every hook undone: a later launch runs all its programs and nothing counts it
    assert interpreter.GridExecutor.__call__ is executor_call
    assert "create_dot" not in vars(interpreter.interpreter_builder)
    assert torch.allclose(fw_mm.mm(a, b), a @ b, atol=1e-4)
    assert counter.total == 2 * (2 * 32**3)
    with pytest.raises(ValueError, match="at least 1"):
        DotFlops(0)


@triton.jit
def _bf16_scaled_mm(a, b, c, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(a + r[:, None] * N + r[None, :])
    y = tl.load(b + r[:, None] * N + r[None, :])
    scale = tl.full((N, N), 0.5, tl.bfloat16)  # a bf16 constant (Triton 3.6: no get_bf16)
    tl.store(c + r[:, None] * N + r[None, :], tl.dot(x * scale.to(tl.float32), y))


def test_an_op_that_enters_its_backends_device_context_is_counted() -> None:
    """flash-linear-attention enters `getattr(torch, backend).device(index)` around each op, and
    the interpreter's backend is `cpu`: torch.cpu has no `device`, so every such count failed
    (call 68); while counting it is a context that changes nothing, and afterwards gone."""
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    c = torch.empty_like(a)
    had = hasattr(torch.cpu, "device")
    with DotFlops(4) as counter, counter.counting(), torch.cpu.device(a.device.index):
        _bf16_scaled_mm[(1,)](a, b, c, 16)
    assert counter.total == 2 * 16**3
    assert torch.allclose(c, (a * 0.5) @ b, atol=1e-3)
    assert hasattr(torch.cpu, "device") == had


def test_an_autotuned_kernel_runs_its_first_config_and_no_benchmark_launch() -> None:
    @triton.autotune(configs=[triton.Config({"BM": 16}), triton.Config({"BM": 32})], key=["N"])
    @triton.jit
    def tuned(a_ptr, b_ptr, c_ptr, N, K, BM: tl.constexpr, BK: tl.constexpr):
        pm = tl.program_id(0)
        rm = pm * BM + tl.arange(0, BM)
        rk = tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rk[None, :])
        tl.store(c_ptr + rm[:, None] * N + rk[None, :], tl.dot(a, b))

    a, b, c = torch.randn(64, 16), torch.randn(16, 16), torch.empty(64, 16)
    with DotFlops(100) as counter, counter.counting():
        tuned[lambda meta: (64 // meta["BM"],)](a, b, c, 16, 16, BK=16)
    # one launch (no tuning run), of the first config: 4 programs of 16 rows
    assert counter.launches == 1 and counter.summary()["programs"] == [4, 4]
    assert counter.total == 2 * 64 * 16 * 16
    assert tuned.best_config.kwargs == {"BM": 16}
    assert torch.allclose(c, a @ b, atol=1e-4)


ALIASES = """import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt

exp = tl.exp


@triton.jit
def scaled(x_ptr, y_ptr, a_ptr, b_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, rsqrt(x) * exp(x))
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    tl.store(b_ptr + r[:, None] * B + r[None, :], tl.dot(a, a))
"""


def test_language_functions_under_names_of_the_frameworks_own_run_while_counting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flash-linear-attention's `exp = tl.exp` and Liger-Kernel's libdevice `rsqrt`: the
    interpreter patches `triton.language`'s attributes, not a module's copies of them, and runs
    no libdevice call (Triton 3.6: "Did you forget to add @triton.jit ?", "'NoneType' object
    has no attribute 'to'"). Under the framework's tree (`roots`) they go through `tl`."""
    import importlib

    (tmp_path / "fw_aliases.py").write_text(ALIASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("fw_aliases")
    x, y = torch.rand(16) + 0.5, torch.empty(16)
    a, b = torch.randn(16, 16), torch.empty(16, 16)
    with DotFlops(4, [str(tmp_path)]) as counter, counter.counting():
        mod.scaled[(1,)](x, y, a, b, B=16)
    assert torch.allclose(y, torch.rsqrt(x) * torch.exp(x), rtol=1e-5)
    assert counter.total == 2 * 16**3
    # given back: the module holds its own names again
    assert mod.exp is triton.language.exp


MM = """import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def mm(a, b):
    c = torch.empty(a.shape[0], b.shape[1], device=a.device)
    grid = (a.shape[0] // 16, b.shape[1] // 16)
    mm_kernel[grid](a, b, c, b.shape[1], a.shape[1], BM=16, BN=16, BK=16)
    return c
"""


def _mm_task(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A tiny framework whose PR speeds up its matmul, crawled and curated."""
    from curation.curate import main as curate
    from mining.crawl import main as crawl

    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/mm.py", MM)
    repo.write("tests/test_mm.py", "from pkg.ops.mm import mm\n")
    repo.commit("Initial commit")
    repo.write("pkg/ops/mm.py", MM.replace("acc += tl.dot(a, b)", "acc = tl.dot(a, b, acc)"))
    repo.commit("Speed up mm: accumulate inside the dot (#4)")
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    return repo, tasks, task_dirs(tasks)[0]


@pytest.mark.parametrize(
    "sandbox",
    [
        pytest.param(["--no-sandbox"], id="trusted"),
        pytest.param([], id="sandboxed", marks=pytest.mark.skipif(
            not shutil.which("bwrap"), reason="the sandbox needs bubblewrap")),
    ],
)  # fmt: skip
def test_count_flops_command_writes_each_calls_flops_into_the_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sandbox: list[str]
) -> None:
    from eval.__main__ import main

    repo, tasks, tdir = _mm_task(tmp_path)
    task = tdir.load_task()
    a, b = ArgSpec("a", True, (64, 64), "float32"), ArgSpec("b", True, (64, 32), "float32")
    wrapper = WorkloadCall(SizeLabel.SMALL, Source.BENCHMARK_SCRIPT, "test",
                           Entry("pkg.ops.mm", "mm"), (a, b), bytes_moved=4_300_000)  # fmt: skip
    kernel = WorkloadCall(SizeLabel.LARGE, Source.SCALED_TEST_CALL, "test",
                          Entry("pkg.ops.mm", "mm_kernel", EntryKind.KERNEL),
                          (a, b, ArgSpec("c", True, (64, 32), "float32", rule="zeros"),
                           ArgSpec("N", False, value=32), ArgSpec("K", False, value=64),
                           ArgSpec("BM", False, value=16, keyword=True),
                           ArgSpec("BN", False, value=16, keyword=True),
                           ArgSpec("BK", False, value=16, keyword=True)),
                          grid=(4, 2))  # fmt: skip
    # a bare kernel planned with a backward mode before 2026-12-06 (flash-linear-attention
    # #449) ran its launch in an untimed forward: it is counted, and timed, as the launch
    kernel = replace(kernel, mode=Mode.BACKWARD)
    tdir.store(TaskFile.WORKLOAD, Workload(task.task_id, Metric.KERNEL_TIME, "test",
                                           (wrapper, kernel)))  # fmt: skip
    argv = ["workload", "--count-flops", "3", "--all-types", "--tasks", str(tasks), "--out",
            str(tmp_path / "out"), "--repo-path", f"{task.framework}={repo.path}",
            *sandbox]  # fmt: skip
    assert main(argv) == 0
    plan = json.loads(tdir.path(TaskFile.WORKLOAD).read_text())
    # 3 of the 8 tiles of each launch ran, 4 dots of 16x16x16 each
    assert [c["flops"] for c in plan["calls"]] == [2 * 64 * 32 * 64] * 2
    assert plan["flops_counted"].startswith(f"Triton {triton.__version__} interpreter, at most 3")
    out = capsys.readouterr()
    # the estimate keeps the bytes where they take longer: 1 µs at the H200's copy bandwidth
    assert [c["estimate_us"] for c in plan["calls"]] == [1.0, 0.0]
    assert "small 0.0002621 GFLOP (~1 µs), large 0.0002621 GFLOP (~0 µs)" in out.err
    assert "FLOPs counted on 1 workloads, 0 failed, 0 counted before" in out.out
    # counted once: a second run keeps it
    assert main(argv) == 0
    assert "FLOPs counted on 0 workloads, 0 failed, 1 counted before" in capsys.readouterr().out
    # --force counts again on the same plan: it never replans (the plan's result was measured
    # on it; a replan of this task would find no source and leave no call)
    assert main([*argv, "--force"]) == 0
    assert "FLOPs counted on 1 workloads, 0 failed, 0 counted before" in capsys.readouterr().out
    assert json.loads(tdir.path(TaskFile.WORKLOAD).read_text())["calls"] == plan["calls"]


def test_a_call_whose_count_fails_names_it_and_leaves_the_workload_uncounted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval.__main__ import main

    repo, tasks, tdir = _mm_task(tmp_path)
    task = tdir.load_task()
    bad = WorkloadCall(SizeLabel.SMALL, Source.BENCHMARK_SCRIPT, "test",
                       Entry("pkg.ops.mm", "mm_renamed"),
                       (ArgSpec("a", True, (64, 32), "float32"),
                        ArgSpec("b", True, (32, 32), "float32")))  # fmt: skip
    tdir.store(TaskFile.WORKLOAD, Workload(task.task_id, Metric.KERNEL_TIME, "test", (bad,)))
    argv = ["workload", "--count-flops", "--all-types", "--tasks", str(tasks), "--out",
            str(tmp_path / "out"), "--repo-path", f"{task.framework}={repo.path}",
            "--no-sandbox"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{tdir.id}: not counted: " in err and "FLOPs not counted: small:" in err
    assert "mm_renamed" in err
    plan = json.loads(tdir.path(TaskFile.WORKLOAD).read_text())
    assert plan["flops_counted"] == "" and plan["calls"][0]["flops"] == 0


def test_the_harness_refuses_to_count_outside_the_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from eval import workload_harness

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    got = workload_harness.run({"calls": [], "metric": "kernel_time", "count_flops": 8})
    assert "TRITON_INTERPRET=1" in got["error"]


def test_counted_flops_give_the_efficiency_when_they_are_the_larger_fraction() -> None:
    gpu = "NVIDIA H200; torch 2.11.0+cu130; triton 3.6.0"
    ms = Timing(1.0, 0.99, 1.01, 10)
    # measured before the count: 0.1 of the copy bandwidth stored, no FLOPs
    call = CallResult(SizeLabel.LARGE, ms, ms, gold_efficiency=0.1)
    result = WorkloadResult("t", Metric.KERNEL_TIME, (call,), gpu, "2026-12-06")
    assert gold_efficiency(result, call) == pytest.approx(0.1)
    # 395 GFLOP in 1 ms on the H200's 790 TFLOP/s: half its bf16 peak
    assert gold_efficiency(result, call, flops=395 * 10**9) == pytest.approx(0.5)
    # a few FLOPs do not lower what the bytes gave
    assert gold_efficiency(result, call, flops=10**6) == pytest.approx(0.1)
    # a cold sequence has no efficiency, counted or not
    cold = WorkloadResult("t", Metric.COLD_WALL_TIME, (call,), gpu, "2026-12-06")
    assert gold_efficiency(cold, call, flops=395 * 10**9) is None


def test_the_sampling_benchmark_script(capsys: pytest.CaptureFixture[str]) -> None:
    from bench_flop_count import main as bench

    with pytest.raises(SystemExit) as e:
        bench(["--help"])
    assert e.value.code == 0 and "--programs" in capsys.readouterr().out
    assert bench(["--blocks", "16", "--block", "16", "--programs", "4"]) == 0
    out = capsys.readouterr().out
    exact = sum(range(1, 17)) * 2 * 16**3
    assert f"exact {exact / 1e9:.4g} GFLOP" in out
    assert "| 16 (all) | " in out and f"| {exact / 1e9:.4g} | +0.00% |" in out
    assert "| 4 | " in out


def test_a_call_the_harness_left_out_is_not_counted_as_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness that stops after its first call (a crash, a replaced timer) leaves the later
    calls without a row: they are named, and the workload is not marked counted."""
    from eval import workload_run
    from eval.errors import EvalError
    from eval.workload_run import MeasureSettings, count_task_flops
    from eval.workspace import SourceStore
    from mining.git import GitRepo

    repo, _, tdir = _mm_task(tmp_path)
    task = tdir.load_task()
    args = (ArgSpec("a", True, (32, 32), "float32"), ArgSpec("b", True, (32, 32), "float32"))
    calls = tuple(WorkloadCall(label, Source.BENCHMARK_SCRIPT, "test",
                               Entry("pkg.ops.mm", "mm"), args)
                  for label in (SizeLabel.SMALL, SizeLabel.LARGE))  # fmt: skip
    tdir.store(TaskFile.WORKLOAD, Workload(task.task_id, Metric.KERNEL_TIME, "test", calls))
    original = workload_run._run_once

    def first_row_only(*a, **kw):  # type: ignore[no-untyped-def]
        result, run = original(*a, **kw)
        return {**result, "calls": result["calls"][:1]}, run

    monkeypatch.setattr(workload_run, "_run_once", first_row_only)
    settings = MeasureSettings(trusted_unsandboxed=True, timeout_s=300)
    with pytest.raises(EvalError, match="FLOPs not counted: large: not counted"):
        count_task_flops(task, tdir, SourceStore(GitRepo(repo.path)), tmp_path / "s", settings)
    plan = json.loads(tdir.path(TaskFile.WORKLOAD).read_text())
    assert plan["flops_counted"] == ""
    assert [c["flops"] for c in plan["calls"]] == [2 * 32**3, 0]


def test_an_estimate_takes_the_flops_where_they_take_longer_than_the_bytes() -> None:
    # flash-linear-attention #1033's small call: 512 MiB moved, 3350 GFLOP counted
    assert h200_us(4_300_000) == pytest.approx(1.0)
    assert h200_us(536_870_912, 3_350_074_490_880) == pytest.approx(4240.6, abs=0.1)
    assert h200_us(536_870_912, 10**9) == pytest.approx(124.85, abs=0.01)


@triton.jit
def _rows_from_pid(a_ptr, b_ptr, c_ptr, N, B: tl.constexpr):
    """Program i multiplies the row blocks from i * B on: a loop whose bounds are scalars of
    the program (flash-linear-attention #479's `range(i_t * BT, ..., BS)`)."""
    i = tl.program_id(0)
    r = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for s in range(i * B, N, B):
        a = tl.load(a_ptr + (s + r)[:, None] * B + r[None, :])
        acc += tl.dot(a, tl.load(b_ptr + r[:, None] * B + r[None, :]))
    tl.store(c_ptr + i * B * B + r[:, None] * B + r[None, :], acc)


def test_a_loop_bound_from_a_program_scalar_is_counted_with_triton_3_6s_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Triton 3.6's interpreter makes a scalar an index with `int()` of its one-element block,
    which NumPy 2.4 and later refuse (call 72: #479 "only 0-dimensional arrays can be converted
    to Python scalars" on the H100's NumPy 2.5); the counter squeezes the block, as Triton 3.9
    does. Here Triton's own patch is replaced by 3.6's."""
    from triton.runtime import interpreter

    own = getattr(interpreter, "_patch_lang_tensor", None)
    if own is None:
        pytest.skip("this Triton's interpreter patches its tensors otherwise")

    def as_in_3_6(tensor, scope):  # type: ignore[no-untyped-def]
        own(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", as_in_3_6)
    import numpy as np

    try:
        int(np.array([3]))
    except TypeError:
        pass
    else:
        pytest.skip("this NumPy converts a one-element block to an int")
    b, n = 16, 64
    a, w = torch.randn(n, b), torch.randn(b, b)
    c = torch.empty(n // b, b, b)
    with DotFlops(8) as counter, counter.counting():
        _rows_from_pid[(n // b,)](a, w, c, n, b)
    # program i runs n/b - i dots of b x b x b
    assert counter.total == 2 * b**3 * sum(n // b - i for i in range(n // b))
    assert torch.allclose(c[1], a[b:].reshape(-1, b, b).sum(0) @ w, atol=1e-3)
    assert interpreter._patch_lang_tensor is as_in_3_6
