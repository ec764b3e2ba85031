"""What sampling costs and gives in a FLOP count (`eval.flop_count`): a causal block kernel
(program i multiplies i + 1 blocks, as an attention's block row does) counted in Triton's
interpreter with every program run and with samples of `--programs`, on the CPU.

    TRITON_INTERPRET=1 python scripts/bench_flop_count.py [--blocks 256] [--block 32]
        [--programs 8 32 128]

Prints per sample size: seconds, the count, and its error against the exact count (and the
full grid's time). Target: a workload call counted in seconds, within 2% of the full grid.
Measured 2026-12-06 on the 2-core CPU machine (Triton 3.9): see docs/workloads.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


_KERNEL: list[object] = []


def causal_kernel():  # type: ignore[no-untyped-def]
    """The benchmark's kernel: program i multiplies i + 1 blocks, as a causal attention's block
    row does (jitted on first use, so that TRITON_INTERPRET is read then)."""
    if not _KERNEL:
        import triton
        import triton.language as tl

        @triton.jit
        def causal(q_ptr, o_ptr, B: tl.constexpr):
            i = tl.program_id(0)
            r = tl.arange(0, B)
            q = tl.load(q_ptr + r[:, None] * B + r[None, :])
            acc = tl.zeros((B, B), dtype=tl.float32)
            for _ in range(0, i + 1):
                acc += tl.dot(q, q)
            tl.store(o_ptr + i * B * B + r[:, None] * B + r[None, :], acc)

        _KERNEL.append(causal)
    return _KERNEL[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=256, help="programs of the launch")
    ap.add_argument("--block", type=int, default=32, help="block size (a power of two >= 16)")
    ap.add_argument("--programs", type=int, nargs="+", default=[8, 32, 128])
    args = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1":
        ap.error("run it with TRITON_INTERPRET=1 (the count runs Triton's interpreter)")
    import torch
    import triton

    from eval.flop_count import DotFlops

    causal = causal_kernel()
    n, b = args.blocks, args.block
    q, o = torch.randn(b, b), torch.zeros(n, b, b)
    exact = sum(i + 1 for i in range(n)) * 2 * b**3
    print(f"causal kernel: {n} programs of {b}x{b} blocks, exact {exact / 1e9:.4g} GFLOP")
    print("| programs run | seconds | GFLOP | error |")
    print("|---|---|---|---|")
    for programs in [*args.programs, n]:
        t0 = time.perf_counter()
        with DotFlops(programs) as counter, counter.counting():
            causal[(n,)](q, o, B=b)
        spent = time.perf_counter() - t0
        label = f"{min(programs, n)}" + (" (all)" if programs >= n else "")
        print(f"| {label} | {spent:.2f} | {counter.total / 1e9:.4g} | "
              f"{counter.total / exact - 1:+.2%} |")  # fmt: skip
    print(f"triton {triton.__version__}, torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
