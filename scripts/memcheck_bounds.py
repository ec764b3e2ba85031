"""Where compute-sanitizer memcheck sees a Triton kernel's read past its tensor, on this GPU.

    python scripts/memcheck_bounds.py [--offsets 16,128,4096,262144,67108864] [--padding 4096]
        [--masked 0,1] [--out bounds.jsonl]

A measurement of the tool before it becomes a gate rule. This runs one small process per case: a
16-element float32 tensor read `offset` elements past its start (16 is the first element past
its end) by a one-block Triton kernel, under memcheck with PyTorch's caching allocator on and
off (`eval.memcheck.CHECKED_ENV`), with compute-sanitizer's `--padding` (bytes of guard buffer
after each allocation) at each value given, and with the load unmasked, masked by a runtime
bound that keeps every lane on (`mask=i < n`, n = 16: the form of almost every Triton load), or
both; each row says whether memcheck reported the read, and its first finding. The last default
offset (256 MiB past) lies outside any allocation a small process makes.

On an H100, call 89 (2026-12-07, `--padding 0,4096`, unmasked): every read is reported with the
allocator off and padding 4096; with it on, only the one 256 MiB past. Call 88's GPU test, a
masked read 16 KiB past with the allocator off and no padding, was reported by none: whether
the mask is why is what `--masked 0,1` measures.

Reads nothing. Writes: each case's script and Triton cache in a temporary directory; with --out
one JSON line per case, appended as it ends. Prints a table. Exits 1 when compute-sanitizer or a
CUDA GPU is not found.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from eval.backends import MULTICAST_OFF
from eval.memcheck import (
    CHECKED_ENV,
    MEMCHECK_EXIT,
    NOT_FOUND,
    PADDING,
    find_sanitizer,
    memcheck_command,
    read_log,
)

ELEMENTS = 16  # the tensor's length (float32): offset 16 is the first element past its end

READ_PAST = """
import sys
import torch, triton, triton.language as tl

@triton.jit
def read_at(x_ptr, out_ptr, n, OFFSET: tl.constexpr, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    i = tl.arange(0, BLOCK)
    if MASKED:
        v = tl.load(x_ptr + i + OFFSET, mask=i < n)
    else:
        v = tl.load(x_ptr + i + OFFSET)
    tl.store(out_ptr + i, v)

x = torch.ones({n}, device="cuda")
out = torch.empty({n}, device="cuda")
read_at[(1,)](x, out, {n}, OFFSET=int(sys.argv[1]), BLOCK={n}, MASKED=sys.argv[2] == "1")
torch.cuda.synchronize()
"""


@dataclass(frozen=True)
class Case:
    """One process: the read's offset in elements, the allocator, memcheck's padding, and
    whether the load is masked (every lane on)."""

    offset: int
    caching: bool
    padding: int
    masked: bool = False

    @property
    def bytes_past_end(self) -> int:
        return (self.offset - ELEMENTS) * 4  # the block's first read past the tensor's end


@dataclass(frozen=True)
class Outcome:
    case: Case
    exit_code: int
    errors: int | None  # None: no memcheck summary (the process did not run to its end)
    first: str

    @property
    def seen(self) -> bool:
        return bool(self.errors) and self.exit_code == MEMCHECK_EXIT


def cases(offsets: list[int], paddings: list[int], masks: Sequence[int] = (0,)) -> list[Case]:
    """Every offset with the allocator on and off, at each padding and mask (0: unmasked)."""
    return [Case(o, c, p, bool(m)) for m in masks for p in paddings for o in offsets
            for c in (True, False)]  # fmt: skip


def command(sanitizer: str, case: Case, script: Path) -> list[str]:
    checker = memcheck_command(sanitizer, padding=case.padding)
    return [*checker, sys.executable, str(script), str(case.offset), str(int(case.masked))]


def environment(case: Case, cache: Path) -> dict[str, str]:
    """The case's process environment: this one's without the allocator switch, then the
    switch where the allocator is off; multicast off as in every process the eval starts."""
    env = {k: v for k, v in os.environ.items() if k not in CHECKED_ENV}
    env |= {"TRITON_CACHE_DIR": str(cache), **MULTICAST_OFF}
    return env if case.caching else env | CHECKED_ENV


def outcome(case: Case, exit_code: int, log: str) -> Outcome:
    found = read_log(log)
    return Outcome(case, exit_code, found.errors, found.first)


def table(outcomes: list[Outcome]) -> Table:
    t = Table(title="memcheck on a read past a 64-byte tensor")
    for col in ("bytes past the end", "caching allocator", "padding", "load", "exit", "errors",
                "seen", "first finding"):  # fmt: skip
        t.add_column(col)
    for o in outcomes:
        c = o.case
        t.add_row(str(c.bytes_past_end), "on" if c.caching else "off", str(c.padding),
                  "masked" if c.masked else "unmasked",
                  str(o.exit_code), "-" if o.errors is None else str(o.errors),
                  "yes" if o.seen else "no", o.first[:80])  # fmt: skip
    return t


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text}") from e


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offsets", type=_ints, default=[16, 128, 4096, 262144, 1 << 26],
                    help="read offsets in float32 elements from the tensor's start (16: just "
                    "past its end)")  # fmt: skip
    ap.add_argument(
        "--padding",
        type=_ints,
        default=[PADDING],
        help="compute-sanitizer --padding values in bytes (0: none; default: "
        "eval.memcheck.PADDING)",
    )
    ap.add_argument(
        "--masked",
        type=_ints,
        default=[0, 1],
        help="load forms: 0 unmasked, 1 masked by a runtime bound (every lane on)",
    )
    ap.add_argument("--timeout", type=int, default=300, help="seconds per process")
    ap.add_argument("--out", type=Path, help="append one JSON line per case")
    args = ap.parse_args(argv)
    sanitizer = find_sanitizer()
    if sanitizer is None:
        print(f"error: {NOT_FOUND}", file=sys.stderr)
        return 1
    from eval.timing import cuda_available

    if not cuda_available():
        print("error: no CUDA GPU here", file=sys.stderr)
        return 1
    console, done = Console(), []
    with tempfile.TemporaryDirectory(prefix="memcheck-bounds-") as scratch:
        script = Path(scratch, "read_past.py")
        script.write_text(READ_PAST.format(n=ELEMENTS))
        for case in cases(args.offsets, args.padding, args.masked):
            env = environment(case, Path(scratch, "cache"))
            try:
                proc = subprocess.run(command(sanitizer, case, script), env=env, text=True,
                                      capture_output=True, timeout=args.timeout)  # fmt: skip
                o = outcome(case, proc.returncode, proc.stdout + proc.stderr)
            except subprocess.TimeoutExpired:
                o = Outcome(case, -1, None, f"timed out after {args.timeout} s")
            console.print(f"{case}: exit {o.exit_code}, errors {o.errors}", markup=False)
            done.append(o)
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(asdict(o) | {"seen": o.seen}) + "\n")
    console.print(table(done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
