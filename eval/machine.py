"""What this process runs on: the GPU and the torch and Triton it imports."""

from __future__ import annotations

import functools
from typing import NamedTuple


class GpuStack(NamedTuple):
    gpu: str  # the first CUDA device's name, "unavailable" without one
    cuda: str  # the CUDA torch was built with
    torch: str
    triton: str


@functools.cache
def gpu_stack() -> GpuStack:
    """GPU, CUDA, torch and Triton of this process ("unavailable" for what it lacks)."""
    gpu = cuda = torch_v = triton_v = "unavailable"
    try:
        import torch

        torch_v = torch.__version__
        cuda = str(torch.version.cuda)
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    try:
        import triton

        triton_v = triton.__version__
    except ImportError:
        pass
    return GpuStack(gpu, cuda, torch_v, triton_v)
