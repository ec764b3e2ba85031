"""compute-sanitizer memcheck for a process the eval starts: where the tool is, the command a
checked process runs under, the environment it needs, and what its log says.

Used by the workload's gold check (`eval.workload_run.memcheck`) and by
`scripts/memcheck_probe.py` (a task's kept tests under the tool, base and gold). Reads and
writes nothing itself.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

MEMCHECK_EXIT = 86  # compute-sanitizer's exit status when it found errors (--error-exitcode)
# With it a checked process allocates each tensor by its own cudaMalloc (PyTorch's caching
# allocator hands out pieces of 2 MiB and larger segments, inside which memcheck sees no
# access as out of bounds); PyTorch's notes on CUDA semantics give this switch for memory
# checkers. Measured on an H100 (scripts/memcheck_bounds.py, call 89, 2026-12-07): an unmasked
# read 0 B, 16 KiB and 1 MiB past a 64-byte tensor is reported with the allocator off and
# missed with it on (only a read 256 MiB past, outside every segment, is seen either way).
CHECKED_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
# compute-sanitizer's guard bytes after each allocation: without them a read 448 B past the
# 64-byte tensor landed in the next tensor's allocation (the 512-byte granule after it) and was
# missed even with the allocator off; with 4096 every read of that measurement was reported.
PADDING = 4096

# what a caller says when `find_sanitizer` finds none
NOT_FOUND = "compute-sanitizer not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)"

_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_FINDING = re.compile(r"^=+ (?!COMPUTE-SANITIZER|ERROR SUMMARY)(\S.*)$", re.M)
# the frame under a finding: "=========     at fused_recurrent_fwd_kernel+0x1a0 in ..."
_AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?([A-Za-z_]\w*)", re.M)


def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, or in the CUDA toolkit ($CUDA_HOME, /usr/local/cuda)."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "compute-sanitizer").is_file():
            return str(Path(root) / "bin" / "compute-sanitizer")
    return None


def memcheck_command(sanitizer: str, print_limit: int = 5, padding: int = PADDING) -> list[str]:
    """The command a checked process runs under: memcheck, exit MEMCHECK_EXIT on an error;
    compute-sanitizer's guard buffer of `padding` bytes after each allocation (an access there
    is an error, where it might land in the next allocation without; 0: none)."""
    pad = ["--padding", str(padding)] if padding else []
    return [sanitizer, "--tool", "memcheck", "--error-exitcode", str(MEMCHECK_EXIT),
            "--print-limit", str(print_limit), *pad]  # fmt: skip


@dataclass(frozen=True)
class Findings:
    """What a memcheck log says: `errors` None where it holds no summary (the tool did not run
    to its end), the first finding's line and the function it names (a kernel's name, where
    the access was in one)."""

    errors: int | None
    first: str = ""
    where: str = ""


def read_log(log: str) -> Findings:
    """The findings of the last memcheck summary in `log` (a process's output)."""
    summaries = list(_SUMMARY.finditer(log))
    if not summaries:
        return Findings(None)
    errors = int(summaries[-1].group(1))
    if not errors:
        return Findings(0)
    first = _FINDING.search(log)
    if first is None:
        return Findings(errors)
    at = _AT.search(log, first.end())
    return Findings(errors, first.group(1).strip()[:200], at.group(1) if at else "")
