"""Triton's autotuning results in a task's cache: collected when a reference ends or pauses,
put back before a run that would otherwise tune every config again.

A flash-linear-attention kernel's first tuning run takes up to 400 s on the H200, and the gold
oracle scored 0 of 26 cold golds in 340 s (call 45) and 3 of 13 in 175 s (call 49), while on
the references' own cache it scored 9 in 80 s (call 44). Triton keys each result by the
kernel's source, the target and the tuning key, so a result only ever serves the kernel it was
tuned for; the caller decides whether the machine it was tuned on is close enough
(`same_machine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from eval.machine import gpu_stack
from eval.model import Environment

TUNING_SUFFIX = ".autotune.json"  # Triton's autotuning results (TRITON_CACHE_AUTOTUNING=1)
TUNING_GLOB = f"*{TUNING_SUFFIX}"


def tuning_results(cache: Path) -> dict[str, str]:
    """The autotuning results in a task's Triton cache, by their path under it."""
    if not cache.is_dir():
        return {}
    return {str(p.relative_to(cache)): p.read_text(errors="replace")
            for p in sorted(cache.rglob(TUNING_GLOB)) if p.is_file()}  # fmt: skip


def restore_tuning(cache: Path, results: Mapping[str, str], *, replace: bool = False) -> int:
    """Put autotuning results back into a task's cache (those it has are kept, unless
    `replace`: a prediction's cache, where an earlier prediction may have written its own
    result for a kernel the base tuned); a path that would leave the cache, or that is not a
    tuning result, is ignored. How many were written."""
    root = cache.resolve()
    written = 0
    for rel, text in results.items():
        path = (cache / rel).resolve()
        if not path.is_relative_to(root) or not path.name.endswith(TUNING_SUFFIX):
            continue
        if replace or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written += 1
    return written


def same_machine(env: Environment) -> bool:
    """Whether results tuned where `env` was recorded hold here: the same GPU model and Triton
    (an H100's choice is not restored on an H200, though Triton's key, sm_90 for both, would
    take it)."""
    here = gpu_stack()
    return here.gpu != "unavailable" and (env.gpu, env.triton) == (here.gpu, here.triton)
