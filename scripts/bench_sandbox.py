"""Time the sandbox's overhead per run: the same command with and without bubblewrap,
alternating, several times; medians and the difference.

    python scripts/bench_sandbox.py [--reps 10] [--json out.json]

Two commands: `python -c pass` (what starting the sandbox costs) and a whole test run as the
eval runner makes it (`eval.runner.run_pytest` on one trivial test: pytest, the kernel-watch and
verdict plugins, the tree's hash check, the channel), which is the number per reference or
scoring run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.runner import run_pytest
from eval.sandbox import Mounts, SandboxPolicy, run_environment, spawn


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", type=Path, help="write the numbers here too")
    args = ap.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "tree"
        work.mkdir()
        (work / "test_trivial.py").write_text("def test_trivial():\n    assert True\n")
        env = run_environment(os.environ)

        def start(policy: SandboxPolicy | None) -> None:
            proc = spawn([sys.executable, "-c", "pass"], Mounts(work), policy, env, timeout_s=60)
            assert proc.wait() == 0

        def test_run(policy: SandboxPolicy | None) -> None:
            raw = run_pytest(work, ["test_trivial.py"], Path(tmp) / "out", timeout_s=300,
                             policy=policy, isolated_timing=False)  # fmt: skip
            assert raw.tests and raw.tests[0].outcome == "passed", raw.log_text

        for name, fn in (("python -c pass", start), ("one test run", test_run)):
            fn(SandboxPolicy())  # warm the page cache for both
            times: dict[str, list[float]] = {"bwrap": [], "none": []}
            for _ in range(args.reps):
                times["bwrap"].append(timed(lambda f=fn: f(SandboxPolicy())))
                times["none"].append(timed(lambda f=fn: f(None)))
            row = {k: statistics.median(v) for k, v in times.items()}
            row["overhead_s"] = row["bwrap"] - row["none"]
            results[name] = row
            ms = row["overhead_s"] * 1000
            print(f"{name:16s} sandboxed {row['bwrap']:.3f} s, not {row['none']:.3f} s, "
                  f"overhead {ms:+.0f} ms (median of {args.reps})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"reps": args.reps, "cpus": os.cpu_count(),
                                         "results": results}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
