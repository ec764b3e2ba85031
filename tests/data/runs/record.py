"""Records the runs that tests/test_classify.py judges: real pytest processes, each over one
small test file, keeping the junit XML, the log and the exit code as the pre-channel runner kept
them. Rerun to refresh: `python tests/data/runs/record.py` (CPU; torch and triton installed).

The CUDA errors are raised with the text torch gives them (no GPU on the machine that records).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

KERNEL = """
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def scale_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * scale)


def test_scale_compiles():
    signature = {"x_ptr": "*fp32", "BLOCK": "constexpr"}
    src = ASTSource(scale_kernel, signature, constexprs={"BLOCK": 64})
    triton.compile(src, target=GPUTarget("cuda", 80, 32))
"""
CUDA = """
def test_launch():
    raise RuntimeError(
        "CUDA error: an illegal memory access was encountered\\n"
        "CUDA kernel errors might be asynchronously reported at some other API call"
    )
"""
NO_GPU = """
import pytest


@pytest.fixture
def device():
    raise RuntimeError(
        "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
        "and installed a driver"
    )


def test_gpu(device):
    pass
"""
SKIPPED = """
import pytest


@pytest.mark.skip(reason="needs 8 GPUs")
def test_a():
    pass


@pytest.mark.skipif(True, reason="no NVLS")
def test_b():
    pass
"""
FAILING = """
import torch


def test_values():
    torch.testing.assert_close(torch.ones(4), torch.zeros(4))


def test_shape():
    assert torch.ones(4).shape == (4,)
"""
CASES = {
    "passed": "def test_ok():\n    assert 1 + 1 == 2\n",
    "test_failure": FAILING,
    "compile_error": KERNEL,
    "cuda_error": CUDA,
    "infra_missing_module": "import transformer_engine\n\n\ndef test_te():\n    pass\n",
    "infra_no_gpu": NO_GPU,
    "infra_all_skipped": SKIPPED,
    "infra_nothing_collected": "def helper():\n    return 1\n",
    "crash": "import os\nimport signal\n\n\ndef test_dies():\n    os.kill(os.getpid(), 9)\n",
    "timeout": "import time\n\n\ndef test_hangs():\n    time.sleep(600)\n",
}
TIMEOUTS = {"timeout": 5.0}


def record(name: str, source: str) -> None:
    out = HERE / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / f"test_{name}.py"
        test.write_text(source)
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            "-o",
            "junit_family=xunit1",
            test.name,
        ]
        with (out / "pytest.log").open("wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "TRITON_INTERPRET": "0"},
            )
            try:
                proc.wait(timeout=TIMEOUTS.get(name, 120))
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                timed_out = True
        if junit.exists():
            shutil.copy(junit, out / "junit.xml")
    # the log and the junit XML name the temporary directory; keep them stable
    for kept in (out / "pytest.log", out / "junit.xml"):
        if kept.exists():
            kept.write_text(kept.read_text(errors="replace").replace(tmp, "/tmp/run"))
    meta = {"exit_code": None if timed_out else proc.returncode, "timed_out": timed_out}
    (out / "meta.json").write_text(json.dumps(meta) + "\n")
    print(name, meta)


if __name__ == "__main__":
    for name, source in CASES.items():
        record(name, source)
