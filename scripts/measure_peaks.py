"""Measure the lent GPU's copy bandwidth and bf16 matrix throughput, the peaks a workload's
efficiency is a fraction of (eval/perf_scores.py `PEAKS`, one row per GPU name).

    python scripts/measure_peaks.py [--out peaks.json] [--seconds 2]

Copy: `dst.copy_(src)` of a 2 GiB buffer (bytes read plus bytes written a copy); matrix:
`torch.mm` of two 8192x8192 bf16 matrices (2*8192^3 FLOPs a product). Each is timed with CUDA
events over at least `--seconds` of back-to-back work after a warm-up; the best of five such
windows is the peak (a busy neighbour only ever lowers a window). Prints one JSON object with
the GPU name, torch and the two peaks; needs CUDA.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path


def _best_rate(torch, step: Callable[[], object], work: float, seconds: float) -> float:
    """The best of five windows of `work` units a call to `step`, in units per second."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    step()
    end.record()
    end.synchronize()
    per_call = start.elapsed_time(end) / 1e3
    n = max(1, int(seconds / max(per_call, 1e-6)))
    best = 0.0
    for _ in range(5):
        start.record()
        for _ in range(n):
            step()
        end.record()
        end.synchronize()
        best = max(best, n * work / (start.elapsed_time(end) / 1e3))
    return best


def _copy_rate(torch, seconds: float) -> float:
    size = 2 << 30
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return _best_rate(torch, lambda: dst.copy_(src), 2.0 * size, seconds)


def _mm_rate(torch, seconds: float) -> float:
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return _best_rate(torch, lambda: torch.mm(a, b, out=out), 2.0 * n**3, seconds)


def measure(seconds: float) -> dict[str, object]:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("measure_peaks: no CUDA device")
    return {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "copy_bytes_per_s": round(_copy_rate(torch, seconds), -9),
        "bf16_flops": round(_mm_rate(torch, seconds), -12),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    args = ap.parse_args(argv)
    row = measure(args.seconds)
    text = json.dumps(row)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
