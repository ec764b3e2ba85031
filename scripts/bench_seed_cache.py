"""What seeding a workload's Triton cache from the base's saves in compilation
(`eval.workload_run.seed_cache`): Triton compiles `--kernels` distinct kernels ahead of time for
an sm_90 target (no GPU needed) into a base's cache, the cache is seeded into an empty one, and
the same kernels are compiled there again: each is then found, not built.

    python scripts/bench_seed_cache.py [--kernels 16]

Prints the cold compilation, the seeding and the seeded "compilation" (cache hits), each in
seconds and per kernel, one process each (Triton's import included in both compilations). The
GPU's side of a workload's first process, autotuning every config of every kernel, is not in
it: on the GPU the saving per unchanged kernel is its compilation at every config plus its
benchmarking. Measured on the 2-core CPU machine: docs/workloads.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_COMPILE = """
import sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

@triton.jit
def scale_rows(x_ptr, y_ptr, n, C: tl.constexpr, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + i, mask=i < n)
    tl.store(y_ptr + i, tl.exp(x * C) / (OFFSET + x * x), mask=i < n)

sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "C": "constexpr", "B": "constexpr"}
for c in range(int(sys.argv[1])):
    src = triton.compiler.ASTSource(fn=scale_rows, signature=sig, constexprs={"C": c + 1, "B": 256})
    print(triton.compile(src, target=GPUTarget("cuda", 90, 32)).hash)
"""


def compile_kernels(cache: Path, kernels: int, offset: float = 1.0) -> tuple[float, list[str]]:
    """Triton, in a process of its own with `cache` as its cache, compiles `kernels`
    specializations of one kernel ahead of time for sm_90 (`offset` changes its source, as a
    gold or a prediction changes a kernel); the seconds it took and the compiled hashes.
    SystemExit, naming Triton's error, where it cannot compile for sm_90."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(cache)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "compile.py"  # a file: @triton.jit reads its kernel's source
        script.write_text(_COMPILE.replace("OFFSET", repr(offset)))
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, str(script), str(kernels)], env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
        seconds = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"bench_seed_cache: Triton could not compile: {run.stderr[-300:]}")
    return seconds, run.stdout.split()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=16, help="distinct kernels compiled")
    args = ap.parse_args(argv)

    from eval.workload_run import seed_cache

    with tempfile.TemporaryDirectory() as tmp:
        base, seeded = Path(tmp) / "base", Path(tmp) / "seeded"
        cold, _ = compile_kernels(base, args.kernels)
        t0 = time.perf_counter()
        copied = seed_cache(seeded, base)
        seeding = time.perf_counter() - t0
        before = sorted(str(p.relative_to(seeded)) for p in seeded.rglob("*"))
        hit, _ = compile_kernels(seeded, args.kernels)
        built = sorted(str(p.relative_to(seeded)) for p in seeded.rglob("*")) != before
    n = args.kernels
    print(f"cold: {cold:.2f} s for {n} kernels ({cold / n * 1e3:.0f} ms a kernel)")
    print(f"seeding: {seeding * 1e3:.1f} ms for {copied} entries")
    print(f"seeded: {hit:.2f} s for the same {n} ({hit / n * 1e3:.0f} ms a kernel); "
          f"{'something was built again' if built else 'nothing built'}")  # fmt: skip
    return 1 if built else 0


if __name__ == "__main__":
    sys.exit(main())
