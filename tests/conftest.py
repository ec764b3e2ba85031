"""Fixtures shared across test modules: the Docker engine ones live with the builder tests.

Without CUDA, Triton runs in its interpreter. Triton reads TRITON_INTERPRET when a function is
decorated, and `triton.language` decorates its own helpers (`tl.zeros`, ...) when first
imported, so it is set here, before any test module imports triton (the README's test command
sets nothing)."""

import os
from importlib.util import find_spec

if find_spec("torch") is not None:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")

from tests.test_builder import busybox, client, engine, run_id  # noqa: F401
