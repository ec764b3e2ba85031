"""A one-element Triton kernel of the harness's own, compiled and launched before a cold round.

Reads and writes nothing but one tensor element. `eval.workload_harness` imports it (before the
variant's tree is on the path) for a `cold_wall_time` job, so that the round's timed calls hold
the task's compilation and autotuning, not the process's one-time Triton costs: the backend's
driver utilities built with the C compiler into the emptied cache, the compiler's first load.
Both variants paid those in their first call, and they moved the totals: Megatron-LM #5608's
first call, which compiles in both variants, was nine tenths of each cold total and differed by
several hundred milliseconds between two processes (H100, 2026-12-05; docs/workloads.md).
"""

from __future__ import annotations

import time
from typing import Any

import triton
import triton.language as tl


@triton.jit
def _bump(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


def warm(torch: Any, device: Any) -> float:
    """Compile and run `_bump` once on `device`; seconds it took."""
    t0 = time.perf_counter()
    x = torch.zeros(1, device=device)
    _bump[(1,)](x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    if float(x.item()) != 1.0:
        raise RuntimeError("the harness's warm-up kernel did not run")
    return time.perf_counter() - t0
