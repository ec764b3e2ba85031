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

import atexit
import shutil
import tempfile

from tests.test_builder import busybox, client, engine, run_id  # noqa: F401

# `datasets` caches what it built from a local folder under a name made from the folder's
# name and file patterns, not its contents: a row layout that changed since (a field added to
# the `requires` column, 2026-12-07, since taken out) met the features cached by an earlier run
# of the suite and failed to cast. The suite's loads get a cache of their own.
os.environ["HF_DATASETS_CACHE"] = _hf_cache = tempfile.mkdtemp(prefix="tpb-hf-datasets-")
atexit.register(shutil.rmtree, _hf_cache, ignore_errors=True)
