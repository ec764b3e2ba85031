"""Reference predictions: the gold targets, or the setup state's own (the do-nothing answer),
written as a model would write them, so that scoring them checks the benchmark itself.

Reads: task directories and the framework's sources (the same stores as `eval score`).
Writes: nothing; `oracle_predictions` returns predictions.jsonl records
`{"task_id", "kernels": [{"file", "name", "source"}], "oracle": "gold" | "setup"}`.

Each target's definition is read from the tree of the variant it comes from (the gold tree, or
the setup state: base versions and stubs), so the records go through the same splice, target
checks, sandbox and reward-hack checks as a model's answer. Scored, the gold records must
complete every verified task and the setup records none (issue 9's check of the gate).
Refuses (EvalError): an oracle other than gold or setup. A target the chosen tree lacks (a
kernel the PR deletes, for the gold) is left out of the record: the setup state keeps it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from curation.splice import all_definitions
from curation.taskdir import TaskDir
from eval.errors import EvalError
from eval.model import Variant
from eval.targets import targets
from eval.workspace import SourceStore, prepare

ORACLES = {"gold": Variant.GOLD, "setup": Variant.BASE}


def oracle_record(tdir: TaskDir, store: SourceStore, oracle: str, scratch: Path) -> dict[str, Any]:
    """One predictions.jsonl record holding the `oracle` tree's version of every target."""
    if oracle not in ORACLES:
        raise EvalError(f"unknown oracle {oracle!r} (gold or setup)")
    task = tdir.load_task()
    tree = prepare(task, tdir, store, scratch / task.task_id, ORACLES[oracle])
    items = []
    seen: dict[tuple[str, str], int] = {}
    for t in targets(task):
        path = tree / t.file
        if not path.is_file():
            continue
        # the n-th target of a repeated name is the file's n-th definition of it, the order in
        # which the splice pairs them (#810: `tanh` under `if` and under `else`)
        nth = seen[t.file, t.name] = seen.get((t.file, t.name), -1) + 1
        found = all_definitions(path.read_bytes()).get(t.name, [])
        if nth < len(found):
            items.append({"file": t.file, "name": t.name, "source": found[nth].source})
    return {"task_id": task.task_id, "kernels": items, "oracle": oracle}


def oracle_predictions(
    tdirs: Iterable[TaskDir], stores: Mapping[str, SourceStore], oracle: str
) -> list[dict[str, Any]]:
    """`oracle_record` of every task whose framework has a source store (others are named)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="tpb-oracle-") as tmp:
        for tdir in tdirs:
            framework = tdir.load_task().framework
            store = stores.get(framework)
            if store is None:
                raise EvalError(f"{tdir.id}: no repository for {framework} (--repo-path)")
            out.append(oracle_record(tdir, store, oracle, Path(tmp)))
    return out
