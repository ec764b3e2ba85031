"""What one task's workload measurement costs on the GPU: base, gold and one prediction (the
gold targets as the prediction), compilation included, and how that scales.

    python scripts/bench_workload.py --tasks tasks --task ID --repo-path NAME=PATH \\
        [--triton-cache DIR] [--rounds 2] [--rep-ms 100] [--anchored]

Reads: the task directory (its workload.json: run `python -m eval workload --plan-only`
first), the framework's repository or bundle. Writes nothing but scratch trees (removed).
Prints the wall time of the measurement with an empty Triton cache and again with the warm
cache (and each harness process's seconds: what seeding the gold's and the prediction's cache
from the base's saves shows in gold-0 and prediction-0 beside base-0), the calls and rounds it
ran, and the estimate for N tasks. Target: under 60 s per task.
`--anchored`: then the prediction alone as `eval workload --anchored` times it (the gold once
beside it, the base's times from the warm measurement), the cost of scoring one more
prediction of a task the gate has measured.
Without CUDA it prints why it skips and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, default=Path("tasks"))
    ap.add_argument("--task", required=True, help="the task id")
    ap.add_argument("--repo-path", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--work", type=Path, default=Path("work"))
    ap.add_argument("--triton-cache", type=Path, help="kept between the two measurements")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--anchored", action="store_true", help="also time an anchored prediction")
    args = ap.parse_args(argv)

    from eval.timing import cuda_available

    if not cuda_available():
        print("bench_workload: skipped, no CUDA device here (the measurement needs a GPU)")
        return 0
    from core.records import from_args
    from curation.taskdir import TaskDir, TaskFile
    from eval.oracle import oracle_predictions
    from eval.session import EvalSettings, stores
    from eval.workload_model import Workload
    from eval.workload_run import MeasureSettings, measure_task

    tdir = TaskDir(args.tasks / args.task)
    task = tdir.load_task()
    workload = tdir.load(TaskFile.WORKLOAD, Workload)
    if workload is None or not workload.calls:
        print(f"error: {args.task} has no workload (eval workload --plan-only)", file=sys.stderr)
        return 1
    repos = stores(from_args(EvalSettings, args))
    store = repos[task.framework]
    pred = oracle_predictions([tdir], repos, "gold")[0]
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.triton_cache or Path(tmp) / "cache"
        settings = MeasureSettings(rounds=args.rounds, rep_ms=args.rep_ms,
                                   trusted_unsandboxed=True, triton_cache=cache)  # fmt: skip
        walls = []
        for label in ("cold cache", "warm cache"):
            t0 = time.perf_counter()
            result = measure_task(task, tdir, store, Path(tmp) / label.replace(" ", "-"),
                                  settings, pred)  # fmt: skip
            walls.append(time.perf_counter() - t0)
            times = (result.base_total_ms, result.gold_total_ms, result.prediction_total_ms)
            print(f"{label}: {walls[-1]:.1f} s; base / gold / prediction {times} ms")
            # each harness process's seconds: with a cold cache, base-0 compiles and autotunes
            # everything, and gold-0 and prediction-0 (seeded from the base's cache,
            # `seed_cache`) only the kernels they changed
            print(
                "  processes: "
                + ", ".join(
                    f"{k} {v:.1f} s"
                    for k, v in result.seconds.items()
                    if k.split("-")[0] in ("base", "gold", "prediction")
                )
            )
        if args.anchored:
            from eval.reference import environment

            env = environment()
            label = f"{env.gpu}; torch {env.torch}; triton {env.triton}"
            ref = replace(result, environment=label)
            t0 = time.perf_counter()
            got = measure_task(task, tdir, store, Path(tmp) / "anchored", settings, pred,
                               label, ref)  # fmt: skip
            wall = time.perf_counter() - t0
            print(f"anchored prediction: {wall:.1f} s ({got.anchor or 'anchored'}; "
                  f"{len(got.seconds) - 2} harness processes; target < 60 s)")  # fmt: skip
    n_calls = len(workload.calls)
    processes = 3 * args.rounds
    print(
        f"{n_calls} calls x 3 variants x {args.rounds} rounds = {processes} harness processes; "
        f"per call and process about {args.rep_ms:.0f} ms of measured work plus warm-up"
    )
    print(f"per task: {walls[0]:.1f} s cold, {walls[1]:.1f} s warm (target < 60 s); "
          f"100 tasks about {walls[1] * 100 / 60:.0f} min warm on one GPU; the time grows "
          "linearly in calls, rounds and rep_ms")  # fmt: skip
    return 0 if walls[0] < 60 else 2


if __name__ == "__main__":
    sys.exit(main())
