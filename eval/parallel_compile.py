"""Autotuning's compilations in parallel: before an autotuned kernel benchmarks its configs
for a new key, every config is compiled at once on a thread pool (Triton's own
`AsyncCompileMode`, Triton >= 3.4), so the benchmark loop finds each one built.

Triton compiles an autotuner's configs one by one inside the loop that times them (a cold
flash-linear-attention workload process spent 128-139 s compiling and autotuning its op's
kernels on an H200, 2026-12-06); compilation is host CPU work whose native passes and `ptxas`
release the GIL (measured: 16 configs of a matrix-product kernel for sm_90 compiled 1.5-1.9x
faster on two threads than on one on this project's 2-core CPU machine, Triton 3.6 and 3.9;
`scripts/bench_parallel_compile.py`). What is timed does not change: the same binaries come out
of the compiler, the benchmarks still run one config at a time, and a config that fails to
compile is left to the benchmark loop, which compiles it again and reports it as Triton does.

Used where kernel times are measured (the workload harness's `kernel_time` jobs, the test
runs of `eval reference` and `eval score`), never where compilation is the measured quantity
(`cold_wall_time` workloads) or only one config compiles (the selection's "first" tuning).
`TPB_COMPILE_WORKERS` sets the threads (0 or 1: Triton's serial path).

No Triton at module level: the workload harness imports this before a variant's tree.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

WORKERS_ENV = "TPB_COMPILE_WORKERS"


def default_workers(jobs: int = 1, cpus: int | None = None) -> int:
    """Threads per process when `jobs` processes compile side by side: the CPUs shared out."""
    cpus = cpus if cpus is not None else len(os.sched_getaffinity(0))
    return max(1, cpus // max(1, jobs))


def workers_from(env: Mapping[str, str]) -> int:
    """The threads `TPB_COMPILE_WORKERS` asks for (0 where it is unset or not a number)."""
    text = env.get(WORKERS_ENV, "").strip()
    return int(text) if text.isdigit() else 0


def precompiling(original: Callable[..., Any], workers: int) -> Callable[..., Any]:
    """`Autotuner.prune_configs` that, where more than one config is left, compiles them all
    on `workers` threads before returning them (the autotuner calls it once per new key, just
    before its benchmark loop). Where this Triton has no `AsyncCompileMode`, `original`."""
    try:
        from triton.runtime._async_compile import AsyncCompileMode
    except ImportError:
        return original
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(workers, thread_name_prefix="tpb-compile")

    @functools.wraps(original)
    def prune_configs(tuner: Any, kwargs: dict[str, Any]) -> Any:
        configs = original(tuner, kwargs)
        # `run` sets nargs (the positional arguments by name, in order; none where the kernel
        # is called with keywords, as flash-linear-attention's are) before it prunes; a
        # `warmup` compiles every config itself
        if len(configs) > 1 and kwargs.get("warmup") is False:
            args = list((tuner.nargs or {}).values())
            with AsyncCompileMode(pool, ignore_errors=True):
                for config in configs:
                    try:
                        tuner.fn.run(*args, **{**kwargs, **config.all_kwargs(), "warmup": True})
                    except Exception:  # the benchmark loop meets it again, as Triton reports it
                        continue
        return configs

    prune_configs.tpb_pool = pool  # type: ignore[attr-defined]
    return prune_configs


def install(workers: int) -> Callable[[], None]:
    """Patch Triton's autotuner to compile in parallel on `workers` threads (nothing where
    `workers` < 2, or in Triton's interpreter, which compiles nothing); returns what undoes
    it."""
    if workers < 2 or os.environ.get("TRITON_INTERPRET") == "1":
        return lambda: None
    from triton.runtime import autotuner

    original = autotuner.Autotuner.__dict__["prune_configs"]
    wrapped = precompiling(original, workers)
    autotuner.Autotuner.prune_configs = wrapped

    def uninstall() -> None:
        autotuner.Autotuner.prune_configs = original
        pool = getattr(wrapped, "tpb_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)

    return uninstall
