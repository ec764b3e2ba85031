"""Difficulty 1-5 from measurable features of a task's kernel change.

Reads: the substantive kernel changes of a candidate and its file list. Writes nothing.

The score is a weighted sum of log-scaled sizes and of the Triton features that make kernels
hard to get right; levels cut the score at fixed thresholds (see `LEVELS`). The formula is
documented in docs/curation.md with its distribution on real data; change both together.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from curation.filters import changed_kernel_lines, is_kernel_source_path
from curation.model import Difficulty
from mining.model import Candidate, KernelChange, KernelRole

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+\.?\d*|\S")
_LOOP = re.compile(r"^\s*(for|while)\b", re.MULTILINE)

# Score thresholds: level n when score < LEVELS[n-1], level 5 above the last. Set near the
# quintiles of the 827 tasks curated from Megatron-LM, Liger-Kernel and flash-linear-attention
# on 2026-12-01 (with the PR's total diff size counted; docs/curation.md).
LEVELS = (6.6, 9.0, 11.6, 14.8)

WEIGHTS = {
    "changed_lines": 1.0,  # x log2(1 + changed_lines / 10)
    "kernel_lines": 0.8,  # x log2(1 + kernel_lines / 20)
    "kernels": 0.5,  # x min(kernels - 1, 4)
    "helpers": 0.3,  # x min(helpers, 4)
    "params": 0.1,  # x min(max(params - 4, 0), 10)
    "uses_dot": 1.0,
    "uses_atomic": 0.7,
    "loops": 0.4,  # x min(loops, 3)
    "masks": 0.2,  # x min(masked loads/stores, 5)
    "files": 0.3,  # x min(source files - 1, 5)
    "diff_lines": 0.5,  # x log2(1 + lines the PR changes in source files / 50)
}


def features(cand: Candidate, targets: Sequence[KernelChange]) -> dict[str, float]:
    sources = [kc.kernel.source for kc in targets]
    text = "\n".join(sources)
    return {
        "changed_lines": float(sum(len(changed_kernel_lines(kc)) for kc in targets)),
        "kernel_lines": float(sum(len(s.splitlines()) for s in sources)),
        "kernel_tokens": float(len(_TOKEN.findall(text))),
        "kernels": float(sum(kc.kernel.role is KernelRole.KERNEL for kc in targets)),
        "helpers": float(sum(kc.kernel.role is KernelRole.HELPER for kc in targets)),
        "params": float(max((len(kc.kernel.params) for kc in targets), default=0)),
        "uses_dot": float("tl.dot(" in text or "tl.dot_scaled(" in text),
        "uses_atomic": float("tl.atomic_" in text),
        "loops": float(len(_LOOP.findall(text))),
        "masks": float(text.count("mask=")),
        "files": float(len({f.path for f in cand.files if is_kernel_source_path(f.path)})),
        "diff_lines": float(
            sum(
                (f.additions or 0) + (f.deletions or 0)
                for f in cand.files
                if is_kernel_source_path(f.path)
            )
        ),
    }


def score(f: dict[str, float]) -> float:
    w = WEIGHTS
    return (
        w["changed_lines"] * math.log2(1 + f["changed_lines"] / 10)
        + w["kernel_lines"] * math.log2(1 + f["kernel_lines"] / 20)
        + w["kernels"] * min(max(f["kernels"] - 1, 0), 4)
        + w["helpers"] * min(f["helpers"], 4)
        + w["params"] * min(max(f["params"] - 4, 0), 10)
        + w["uses_dot"] * f["uses_dot"]
        + w["uses_atomic"] * f["uses_atomic"]
        + w["loops"] * min(f["loops"], 3)
        + w["masks"] * min(f["masks"], 5)
        + w["files"] * min(max(f["files"] - 1, 0), 5)
        + w["diff_lines"] * math.log2(1 + f.get("diff_lines", 0.0) / 50)
    )


def level(s: float) -> int:
    return 1 + sum(s >= t for t in LEVELS)


def grade(cand: Candidate, targets: Sequence[KernelChange]) -> Difficulty:
    f = features(cand, targets)
    s = score(f)
    return Difficulty(level=level(s), score=round(s, 3), features=f)
