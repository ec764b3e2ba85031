"""Time a full crawl of a real repository against a plain `git log --first-parent --raw` pass.

    python scripts/bench_mining.py --repo-path /path/to/Megatron-LM [--jobs 2] [--branch main]

Prints three timings from the same run: the plain git pass (the floor: reading history alone),
a full crawl from scratch into a temporary work directory, and a rerun with no new commits.
Targets (issue 2): full Megatron-LM history (~4,700 first-parent commits) under 15 s on a
2-core machine; the incremental rerun under 2 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mining.crawl import main as crawl_main


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo-path", type=Path, required=True)
    ap.add_argument("--branch", default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--target-full", type=float, default=15.0)
    ap.add_argument("--target-rerun", type=float, default=2.0)
    args = ap.parse_args()
    branch = (
        args.branch
        or subprocess.run(
            ["git", "symbolic-ref", "--short", "HEAD"],
            cwd=args.repo_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )

    def git_pass() -> None:
        subprocess.run(
            ["git", "log", "--first-parent", "--raw", "--no-abbrev", branch],
            cwd=args.repo_path,
            stdout=subprocess.DEVNULL,
            check=True,
        )

    t_git = timed(git_pass)
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            str(args.repo_path),
            "--out",
            tmp,
            "--quiet",
            "--no-github",
            "--jobs",
            str(args.jobs),
            "--branch",
            branch,
        ]
        t_full = timed(lambda: crawl_main(argv))
        name = next(Path(tmp).iterdir()).name
        summary = json.loads((Path(tmp) / name / "summary.json").read_text())
        t_rerun = timed(lambda: crawl_main(argv))
    print(f"repository        {args.repo_path} ({branch})")
    print(f"commits scanned   {summary['commits_scanned']}")
    print(f"candidates        {summary['candidates']}")
    print(f"kernel changes    {summary['kernel_changes']}")
    print(f"skipped files     {summary['skipped_files']}")
    print(f"git log --raw     {t_git:6.2f} s")
    print(f"full crawl        {t_full:6.2f} s   (target < {args.target_full} s)")
    print(f"rerun, no new     {t_rerun:6.2f} s   (target < {args.target_rerun} s)")
    ok = t_full < args.target_full and t_rerun < args.target_rerun
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
