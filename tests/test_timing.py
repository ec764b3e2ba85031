"""Isolated kernel timing: refusals everywhere, a real measurement on a CUDA machine."""

from __future__ import annotations

import pytest

from core.records import from_json, to_json
from eval.timing import (
    BenchResult,
    TimingError,
    bench,
    cuda_available,
    flush_bytes,
    repetitions,
    summarize,
)


@pytest.mark.skipif(cuda_available(), reason="checks the refusal without a GPU")
def test_bench_refuses_without_cuda() -> None:
    with pytest.raises(TimingError, match="needs torch with a CUDA device"):
        bench(lambda i: None)


def test_bench_refuses_arguments_that_measure_nothing() -> None:
    with pytest.raises(TimingError, match="min_reps <= max_reps"):
        bench(lambda i: None, min_reps=20, max_reps=10)
    with pytest.raises(TimingError, match="n_inputs >= 1"):
        bench(lambda i: None, n_inputs=0)


@pytest.mark.parametrize(
    ("estimate_ms", "reps"),
    [(0.01, 1000), (0.5, 200), (20.0, 10), (99.0, 10), (100.0, 3), (2500.0, 3)],
)
def test_repetitions_give_rep_ms_of_work_and_a_long_call_three_times(
    estimate_ms: float, reps: int
) -> None:
    # rep_ms 100, at least 10, at most 1000: a call of 100 ms or more is its own measurement
    # (flash-linear-attention's attention at T=16384 lasts seconds: ten of them outlast a
    # harness process)
    assert repetitions(estimate_ms, 100.0, 10, 1000) == reps
    assert repetitions(500.0, 100.0, 2, 1000) == 2


def test_summarize_takes_median_and_quartiles() -> None:
    r = summarize([5.0, 1.0, 2.0, 4.0, 3.0])
    assert r == BenchResult(median_ms=3.0, p25_ms=2.0, p75_ms=4.0, reps=5, spread=2.0 / 3.0)
    assert summarize([2.0]).spread == 0.0
    assert from_json(BenchResult, to_json(r)) == r
    with pytest.raises(TimingError):
        summarize([])


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
def test_bench_times_a_torch_op_with_rotation_and_flush() -> None:
    import torch

    xs = [torch.randn(1 << 22, device="cuda") for _ in range(3)]
    outs = [torch.empty_like(x) for x in xs]
    seen: list[int] = []

    def fn(i: int) -> None:
        seen.append(i)
        torch.mul(xs[i], 2.0, out=outs[i])

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    r = bench(fn, n_inputs=3, warmup_ms=5, rep_ms=20, min_reps=10, max_reps=200)
    inputs = sum(t.nbytes for t in xs + outs)
    assert torch.cuda.max_memory_allocated() >= inputs + flush_bytes()
    assert flush_bytes() >= max(256 * 2**20, 2 * torch.cuda.get_device_properties(0).L2_cache_size)
    assert r.median_ms > 0 and r.p25_ms <= r.median_ms <= r.p75_ms
    assert r.spread == pytest.approx((r.p75_ms - r.p25_ms) / r.median_ms)
    assert 10 <= r.reps <= 200
    assert set(seen) == {0, 1, 2}
    assert seen[:6] == [0, 1, 2, 0, 1, 2]
    torch.testing.assert_close(outs[1], xs[1] * 2.0)


def test_the_gpu_spin_covers_the_hosts_enqueueing_time_within_bounds() -> None:
    from eval.timing import MAX_BACKLOG_MS, backlog_ms

    assert backlog_ms(0.0) == 0.1
    assert backlog_ms(2.0) == 3.0
    assert backlog_ms(1e6) == MAX_BACKLOG_MS


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
def test_host_overhead_between_small_kernels_is_not_timed() -> None:
    # 40 tiny kernels enqueued with a Python pause between each: without the spin ahead the
    # events would time the pauses (about 40 x 0.1 ms); with it the GPU runs them back to back
    import time

    import torch

    x = torch.randn(1024, device="cuda")

    def fn(i: int) -> None:
        for _ in range(40):
            x.mul_(1.0)
            time.sleep(1e-4)

    slow = bench(fn, rep_ms=20, backlog=False).median_ms
    fast = bench(fn, rep_ms=20).median_ms
    assert slow > 3.0 and fast < slow / 4


def test_gpu_company_counts_the_other_processes_nvml_lists() -> None:
    from eval.timing import gpu_company

    # what torch.cuda.list_gpu_processes prints (torch 2.11): a header, then one line a process
    listing = "GPU:0\nprocess     812307 uses     1234.000 MB GPU memory\n" \
              "process     812411 uses      530.000 MB GPU memory\n"  # fmt: skip
    assert gpu_company(listing) == 1
    assert gpu_company("GPU:0\nprocess     812307 uses     1234.000 MB GPU memory") == 0
    # NVML that lists no process, not even the caller (a container), or no pynvml: not known
    assert gpu_company("GPU:0\nno processes are running") is None
    assert gpu_company("pynvml module not found, please install pynvml") is None
    # NVML inside a container may list the caller alone (2026-12-06, calls 53-56: 0 beside
    # fifteen reference streams): memory that no listed process holds is another process's
    alone = "GPU:0\nprocess     812307 uses     1234.000 MB GPU memory"
    assert gpu_company(alone, used_bytes=1300 * 2**20) == 0  # the caller's and the driver's
    assert gpu_company(alone, used_bytes=(1234 + 2048) * 2**20) == 1  # at least one unlisted
    assert gpu_company(listing, used_bytes=80 * 2**30) == 1  # listed others: their count stands
    assert gpu_company("GPU:0\nno processes are running", used_bytes=80 * 2**30) is None
