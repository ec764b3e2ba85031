"""What compiling an autotuner's configs on threads saves (`eval.parallel_compile`): an
autotuned matrix-product kernel's configs are compiled for an sm_90 target (no GPU needed: a
compile-only driver stands in for CUDA's) the way the autotuner's first call for a new key
does, once with Triton's serial path and once per thread count, each in a fresh process with
an empty Triton cache.

    python scripts/bench_parallel_compile.py [--configs 16] [--workers 2 4 8]
    python scripts/bench_parallel_compile.py --tree DIR --op fla.ops.gla:chunk_gla \
        [--tensors 4] [--shape 2,2048,4,64] [--workers 2]

With `--tree` and `--op`, a framework's own op instead (with `eval.compat`'s switches in the
environment, e.g. TPB_TRITON2_MATH=1, compiled as the test plugin would for a task pinned to
an older Triton) (DIR on the path: a checkout of the
framework at some commit, its dependencies installed): the op runs forward on CPU tensors of
`--shape` while every kernel launch only compiles (the device queries answer as an H100's, the
autotuner's benchmark times nothing), so every kernel and config the op's first call would
build on an sm_90 GPU is built, as on the GPU's cold first call.

Prints, per thread count, the seconds to compile every config and the speed-up over one
thread (Triton's import is outside the timing). The GPU's side of autotuning, benchmarking
each config, is not in it and does not change: the configs are still timed one by one.
Measured on the 2-core CPU machine and on the GPU hosts: docs/workloads.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a driver for a machine without a GPU that compiles for sm_90 (what JITFunction.run and the
# autotuner ask of one; its device queries answer as an H100's), set before any kernel runs;
# both scripts below run after it (argv[3]: the project, for eval.parallel_compile)
_DRIVER = """
import json, os, pathlib, sys, time
sys.path.insert(0, sys.argv[3])
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime import driver

class Utils:
    def get_device_properties(self, device=0):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536,
                "warpSize": 32}

def bench(kernel_call, quantiles=None):
    kernel_call()  # compiles: every launch is a warmup here
    return [1.0, 1.0, 1.0]

class CompileOnly:
    utils = Utils()
    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)
    def get_current_device(self):
        return 0
    def get_current_stream(self, device=None):
        return 0
    def get_active_torch_device(self):
        return torch.device("cpu")
    def get_device_interface(self):
        return torch.cuda
    def get_benchmarker(self):
        return bench

driver.set_active(CompileOnly())
"""

_COMPILE = """
SCALE = tl.constexpr(SALT)
SIZES = [(m, n, k, w) for m in (64, 128) for n in (64, 128) for k in (32, 64) for w in (4, 8)]

@triton.autotune(configs=[triton.Config({"BM": m, "BN": n, "BK": k}, num_warps=w, num_stages=3)
                          for m, n, k, w in (SIZES * 4)[:int(sys.argv[1])]], key=["K"])
@triton.jit
def matmul(a, b, c, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tl.static_assert(BM * BN * BK <= LIMIT)  # a config that fails to compile (tests)
    pid = tl.program_id(0)
    rm = (pid // tl.cdiv(N, BN)) * BM + tl.arange(0, BM)
    rn = (pid % tl.cdiv(N, BN)) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], (acc * SCALE).to(tl.bfloat16))

from eval.parallel_compile import install
install(int(sys.argv[2]))
x = torch.empty(256, 256, dtype=torch.bfloat16)
named = dict(zip(matmul.arg_names, (x, x, x, 256, 256)))
# as the autotuner's run leaves them: positional arguments in nargs, or (sys.argv[4] ==
# "keywords": a call with keyword arguments, as flash-linear-attention's) none there
keywords = sys.argv[4:5] == ["keywords"]
args, kwargs = ((), named) if keywords else (tuple(named.values()), {})
matmul.nargs = dict(zip(matmul.arg_names, args))
t0 = time.perf_counter()
configs = matmul.prune_configs({**kwargs, "grid": (1,), "warmup": False})
at_prune = len(matmul.fn.device_caches[0][0])
seconds = time.perf_counter() - t0
if int(sys.argv[2]) < 2:  # Triton's serial path: the benchmark loop compiles each config
    for config in configs:
        try:
            matmul.fn.run(*args, **kwargs, grid=(1,), warmup=True, **config.all_kwargs())
        except Exception:  # the benchmark loop reports it as an infinite time
            pass
    seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "configs": len(configs), "at_prune": at_prune,
                  "compiled": len(matmul.fn.device_caches[0][0])}))
"""


_OP = """
sys.path.insert(0, sys.argv[2])
from triton.runtime.jit import JITFunction
from eval import triton_names
triton_names.apply(os.environ)  # an older Triton's forms, as the test plugin applies them

class NoDevice:
    def __init__(self, *args):
        pass
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False

torch.cuda.get_device_name = lambda *a, **k: "NVIDIA H100 80GB HBM3"
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.is_available = lambda: True
torch.cuda.device = NoDevice
launch = JITFunction.run
JITFunction.run = lambda self, *a, grid, warmup, **k: launch(self, *a, grid=grid, warmup=True, **k)
from eval.parallel_compile import install
install(int(sys.argv[1]))
import importlib
module, _, name = sys.argv[4].partition(":")
op = getattr(importlib.import_module(module), name)
shape = [int(x) for x in sys.argv[6].split(",")]
inputs = [torch.randn(*shape, dtype=torch.bfloat16) for _ in range(int(sys.argv[5]))]
t0 = time.perf_counter()
op(*inputs)
seconds = time.perf_counter() - t0
built = len(list(pathlib.Path(os.environ["TRITON_CACHE_DIR"]).rglob("*.cubin")))
print(json.dumps({"seconds": seconds, "compiled": built}))
"""


def compile_op(workers: int, tree: Path, op: str, tensors: int, shape: str) -> dict:
    """In a fresh process with an empty Triton cache: the framework op `op` ("module:function",
    imported from `tree`) run forward once on `tensors` CPU tensors of `shape`, every launch
    compiled for sm_90 and none run, autotuning compiling on `workers` threads;
    {"seconds", "compiled" (kernels built)}. SystemExit with the op's error where it fails."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory() as tmp:
        env["TRITON_CACHE_DIR"] = str(Path(tmp) / "cache")
        script = Path(tmp) / "op.py"
        script.write_text(_DRIVER + _OP)
        argv = [str(workers), str(tree), str(ROOT), op, str(tensors), shape]
        run = subprocess.run([sys.executable, str(script), *argv],
                             env=env, capture_output=True, text=True, timeout=1800)  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"bench_parallel_compile: {op} failed: {run.stderr[-400:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def compile_configs(
    workers: int, configs: int, salt: float = 1.0, limit: int = 2**30, keywords: bool = False
) -> dict:
    """In a fresh process with an empty Triton cache: `configs` configs of an autotuned kernel
    compiled for sm_90 on `workers` threads (< 2: one by one, as Triton's benchmark loop does);
    {"seconds", "configs", "at_prune" (kernels built when the autotuner's pruning returned),
    "compiled"}. `salt` changes the kernel's source; configs whose BM*BN*BK passes `limit` fail
    to compile; `keywords`: the kernel is called with keyword arguments. SystemExit, naming
    Triton's error, where it cannot compile for sm_90."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory() as tmp:
        env["TRITON_CACHE_DIR"] = str(Path(tmp) / "cache")
        script = Path(tmp) / "compile.py"  # a file: @triton.jit reads its kernel's source
        script.write_text(
            _DRIVER + _COMPILE.replace("SALT", repr(salt)).replace("LIMIT", str(limit))
        )
        argv = [str(configs), str(workers), str(ROOT)] + (["keywords"] if keywords else [])
        run = subprocess.run([sys.executable, str(script), *argv],
                             env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"bench_parallel_compile: Triton could not compile: {run.stderr[-300:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=16, help="autotune configs to compile")
    ap.add_argument("--workers", type=int, nargs="+", default=None,
                    help="thread counts to compare with one (default: 2 and the CPUs)")  # fmt: skip
    ap.add_argument("--tree", type=Path, help="a framework's checkout (with --op)")
    ap.add_argument("--op", help="module:function of the framework, e.g. fla.ops.gla:chunk_gla")
    ap.add_argument("--tensors", type=int, default=4, help="the op's tensor arguments (--op)")
    ap.add_argument("--shape", default="2,2048,4,64", help="each tensor's shape (--op)")
    args = ap.parse_args(argv)
    cpus = len(os.sched_getaffinity(0))
    counts = args.workers or sorted({2, cpus})
    if args.op:
        if args.tree is None:
            ap.error("--op needs --tree")
        one = compile_op(1, args.tree, args.op, args.tensors, args.shape)
        print(f"{cpus} CPUs, {args.op} forward on {args.tensors}x[{args.shape}]: "
              f"{one['compiled']} kernels for sm_90")  # fmt: skip
        print(f"  1 thread   {one['seconds']:7.2f} s")
        for w in counts:
            got = compile_op(w, args.tree, args.op, args.tensors, args.shape)
            print(f"{w:3d} threads  {got['seconds']:7.2f} s  {one['seconds'] / got['seconds']:.2f}x"
                  f"  ({got['compiled']} compiled)")  # fmt: skip
        return 0
    serial = compile_configs(1, args.configs, salt=1.0)
    print(f"{cpus} CPUs, {serial['configs']} configs for sm_90")
    print(f"  1 thread   {serial['seconds']:7.2f} s")
    for i, w in enumerate(counts):
        got = compile_configs(w, args.configs, salt=2.0 + i)  # a new source: nothing cached
        print(f"{w:3d} threads  {got['seconds']:7.2f} s  {serial['seconds'] / got['seconds']:.2f}x"
              f"  ({got['compiled']} compiled)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
