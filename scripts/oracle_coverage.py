"""Which verified tasks the benchmark's own check has scored: the gold targets as a prediction
(must complete every verified task) and the setup state, the do-nothing answer (must complete
none), over the `eval score` runs kept under the given folders.

    python scripts/oracle_coverage.py docs/runs --tasks tasks [--unscored gold|setup]

Reads: every score result under the folders, inside .tar / .tgz archives too: `results.jsonl`
rows and the markdown tables of `report.md` and of the logs that printed one. A row says which
check it was (`oracle`, written by `eval score` since 2026-12-04); a row from before that is
told by the name of its log or run folder (`legacy_oracle`: the names the GPU calls of
2026-12-02/03 used). The verified tasks are those of `--tasks`.
Prints: per repository, the verified tasks, how many the gold was scored on and completed, how
many the setup state was scored on and completed (0 is the benchmark's promise), then the
tasks that break a promise (a gold never completed with why, in its rows' words: a flag, a
failure class, or "tests passed, not completed"), and how many verified tasks' gold got a PMR
within 1 +- 0.03;
with `--unscored`, only the ids of the verified tasks without that score (a task file for the
next GPU call).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from merge_device_results import unpacked_roots

from curation.taskdir import task_dirs
from eval.perf_scores import NOISE

ORACLES = ("gold", "setup")
# the run folders of 2026-12-02/03 whose names do not say "gold" or "setup"
LEGACY_RUNS = {"sg": "gold", "sg2": "gold", "fg": "gold", "lg": "gold",
               "ss": "setup", "fs": "setup", "ls": "setup"}  # fmt: skip
# the gold as a prediction: PMR 1 +- the isolated timings' measured day-to-day agreement (issue
# 10's 0.03; fast_gold's band too)
PMR_BAND = NOISE
TABLE_ROW = re.compile(r"^\| ([\w.-]+__[\w.-]+) \| (yes|no) \| (\w+) \| ([^|]*?) \|", re.M)
# a task `eval score` refused before running it (its table row still says "no | infra"):
# call 73's oracle named three whose references ran on other packages
NOT_RUN = re.compile(r"^([\w.-]+__[\w.-]+): not run: ", re.M)


def within_band(pmrs: list[float]) -> bool:
    """Whether one of a task's gold PMRs came within 1 +- PMR_BAND (one score is enough)."""
    return any(abs(x - 1) <= PMR_BAND for x in pmrs)


def legacy_oracle(path: Path) -> str | None:
    """The check a result written before the `oracle` field was, from where it lies."""
    name = path.parent.name if path.name in ("results.jsonl", "report.md") else path.stem
    for oracle in ORACLES:
        if oracle in name:
            return oracle
    return LEGACY_RUNS.get(name)


Found = tuple[str, str, bool, float | None, int | None, str]


def why_not(failure: str | None, flags: Sequence[str] = ()) -> str:
    """Why a score did not complete, in its row's words: its flags, else its failure class,
    else its tests passed and the rest of the rule (an optimization's gain) was not met."""
    if flags:
        return "flagged " + ", ".join(flags)
    if failure and failure != "none":
        return str(failure)
    return "tests passed, not completed"


def results(root: Path) -> list[Found]:
    """(task id, oracle, completed, PMR, timed beside, why not completed) of every oracle score
    under `root` (the PMR of a results.jsonl row, None from a markdown table; how many other
    processes were on the GPU around its timings, at least, None where the row does not say:
    rows before 2026-12-06's fourth session; "" for a completed score)."""
    found: list[Found] = []
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        if f.name == "results.jsonl" or f.name.endswith("_results.jsonl"):
            for line in f.read_text(errors="replace").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                oracle = row.get("oracle") or legacy_oracle(f)
                if oracle in ORACLES and row.get("has_prediction"):
                    pmr = row.get("pmr") if isinstance(row.get("pmr"), int | float) else None
                    # `gpu_company` since 2026-12-06's fourth session (NVML's list and the
                    # memory it leaves unaccounted); the older `timed_beside` said 0 inside a
                    # sandbox whose NVML hid the other processes: not read
                    beside = row.get("gpu_company")
                    beside = beside if isinstance(beside, int) else None
                    done = bool(row.get("passed"))
                    flags = [str(f) for f in row.get("flags") or ()]
                    why = "" if done else why_not(row.get("failure"), flags)
                    found.append((row["task_id"], oracle, done, pmr, beside, why))
        elif f.suffix in (".md", ".log"):
            if f.name == "report.md" and (f.parent / "results.jsonl").is_file():
                continue  # its rows, bar the tasks refused before running (infra), are there
            text = f.read_text(errors="replace")
            oracle = legacy_oracle(f)
            if oracle is None or "| task | passed |" not in text:
                continue
            refused = set(NOT_RUN.findall(text))
            for m in TABLE_ROW.finditer(text):
                if m[3] == "no_prediction" or m[1] in refused:
                    continue
                marks = m[4].split(", ") if m[4] != "-" else []
                why = "" if m[2] == "yes" else why_not(m[3], marks)
                found.append((m[1], oracle, m[2] == "yes", None, None, why))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="folders (or archives) of score runs")
    ap.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    ap.add_argument("--unscored", choices=ORACLES, help="print the verified ids lacking it")
    args = ap.parse_args(argv)
    verified = sorted(t.id for t in task_dirs(args.tasks)
                      if t.load_task().verification.status == "verified")  # fmt: skip
    seen: dict[tuple[str, str], set[bool]] = defaultdict(set)
    whys: dict[tuple[str, str], set[str]] = defaultdict(set)  # why a score did not complete
    pmrs: dict[str, list[float]] = defaultdict(list)  # the gold's, by task
    alone: dict[str, list[float]] = defaultdict(list)  # those timed with no other process
    with tempfile.TemporaryDirectory(prefix="tpb-coverage-") as tmp:
        for root in unpacked_roots(args.runs, Path(tmp)):
            for task_id, oracle, completed, pmr, beside, why in results(root):
                seen[task_id, oracle].add(completed)
                if why:
                    whys[task_id, oracle].add(why)
                if oracle == "gold" and pmr is not None:
                    pmrs[task_id].append(pmr)
                    if beside == 0:
                        alone[task_id].append(pmr)
    if args.unscored:
        print("\n".join(t for t in verified if (t, args.unscored) not in seen))
        return 0
    print("| repository | verified | gold scored | gold completed | setup scored | "
          "setup completed |\n|---|---|---|---|---|---|")  # fmt: skip
    by_repo: dict[str, list[str]] = defaultdict(list)
    for t in verified:
        by_repo[t.split("__")[0]].append(t)
    for repo, ids in [*sorted(by_repo.items()), ("all", verified)]:
        counts = [sum((t, o) in seen for t in ids) for o in ORACLES]
        done = [sum(True in seen.get((t, o), ()) for t in ids) for o in ORACLES]
        print(f"| {repo} | {len(ids)} | {counts[0]} | {done[0]} | {counts[1]} | {done[1]} |")
    for t in verified:
        if (t, "gold") in seen and True not in seen[t, "gold"]:
            print(f"gold scored and never completed: {t} ({'; '.join(sorted(whys[t, 'gold']))})")
        if True in seen.get((t, "setup"), ()):
            print(f"setup state completed: {t}")
    # issue 10: the gold scored as a prediction gets PMR 1 +- PMR_BAND (a task counts when one
    # of its scores does; a score beside other GPU work can fall outside, docs/verification.md)
    timed = [t for t in verified if pmrs.get(t)]
    near = [t for t in timed if within_band(pmrs[t])]
    print(f"gold PMR within 1 +- {PMR_BAND}: {len(near)} of the {len(timed)} verified tasks "
          f"with a PMR in a results.jsonl row")  # fmt: skip
    quiet = [t for t in verified if alone.get(t)]
    if quiet:  # the rows that say so (eval.timing.gpu_company)
        near_alone = [t for t in quiet if within_band(alone[t])]
        print(f"of those timed with no other process on the GPU: {len(near_alone)} of "
              f"{len(quiet)}")  # fmt: skip
    for t in timed:
        if t not in near:
            print(f"gold PMR outside: {t} ({', '.join(f'{x:.3f}' for x in pmrs[t])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
