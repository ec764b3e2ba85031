"""Task types against hand labels: a confusion matrix (for docs/curation.md).

Usage: python scripts/type_confusion.py LABELS.json KEY.json WORK_DIR TASKS_DIR
LABELS.json: {"t00": {"type": ..., "why": ...}, ...} written by a labeller who saw only each PR's
text and diff; KEY.json: {"t00": task_id, ...}. Prints, for the types stored in task.json (the
classifier that curated them) and for the current classifier (`curation.classify`, rerun on the
mined candidates), the agreement and the confusion matrix, rows = hand label.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curation.classify import classify
from curation.filters import substantive_changes
from curation.model import TaskType
from curation.taskdir import TaskDir
from mining.store import read_candidates

TYPES = [str(t) for t in TaskType]


def matrix(pairs: list[tuple[str, str]]) -> str:
    c = Counter(pairs)
    head = "| hand \\ ours | " + " | ".join(TYPES) + " |\n|---|" + "---|" * len(TYPES)
    rows = [f"| {h} | " + " | ".join(str(c[(h, o)]) for o in TYPES) + " |" for h in TYPES]
    agree = sum(n for (h, o), n in c.items() if h == o)
    return f"{agree}/{len(pairs)} agree\n\n{head}\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("labels", type=Path, help="hand labels, {id: {type, why}}")
    ap.add_argument("key", type=Path, help="{id: task_id}")
    ap.add_argument("work", type=Path, help="mining work directory")
    ap.add_argument("tasks", type=Path, help="task directories")
    args = ap.parse_args(argv)
    labels = json.loads(args.labels.read_text())
    key = json.loads(args.key.read_text())
    work, tasks = args.work, args.tasks
    cands = {}
    for path in work.glob("*/candidates.jsonl"):
        cands.update({c.commit: c for c in read_candidates(path)})
    stored, current, rows = [], [], []
    for label_id, task_id in sorted(key.items()):
        task = TaskDir(tasks / task_id).load_task()
        cand = cands[task.merge_commit]
        now = str(classify(cand, substantive_changes(cand)).type)
        hand = labels[label_id]["type"]
        stored.append((hand, str(task.task_type.type)))
        current.append((hand, now))
        rows.append(f"| {label_id} | `{task_id}` | {hand} | {task.task_type.type} | {now} |")
    print("Types stored by the curation run:", matrix(stored), sep="\n\n")
    print("\nCurrent classifier:", matrix(current), sep="\n\n")
    print("\n| label | task | hand | stored | current |\n|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
