"""A model's prediction as splice items, put into a prepared tree.

Reads: one predictions.jsonl record and the task it is for. Writes: the files under the tree
that the items name (`splice_prediction`). Refuses (`SpliceError`, a prediction failure, not a
harness error): a record without kernels, entries without name or source, and every refusal
of the splice engine (`curation.splice`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from curation.errors import SpliceError as EngineError
from curation.model import Task
from curation.splice import KernelSource, splice_tree
from eval.errors import SpliceError


def splice_prediction(root: Path, items: Sequence[KernelSource]) -> list[str]:
    """`splice_tree` with the engine's refusals reported as the prediction's splice errors."""
    try:
        return splice_tree(root, items)
    except EngineError as exc:
        if isinstance(exc, SpliceError):
            raise
        raise SpliceError(str(exc)) from None


def items_from_prediction(pred: Mapping[str, Any], task: Task) -> list[KernelSource]:
    """The kernel part of one predictions.jsonl record (a patch is the caller's to apply).

    `{"kernels": {name: source}}` puts each name into the file of the task's kernel of that
    name, else into the task's first kernel file (new helpers and wrappers);
    `{"kernels": [{"file": ..., "name": ..., "source": ...}]}` says where itself.
    """
    kernels = pred.get("kernels")
    if kernels is None:
        raise SpliceError("the prediction has no 'kernels' to splice", task_id=task.task_id)
    files = {k.name: k.file for k in task.kernels}
    default = task.kernels[0].file if task.kernels else None

    def file_of(name: str) -> str:
        file = files.get(name) or files.get(name.rsplit(".", 1)[-1]) or default
        if file is None:
            raise SpliceError(f"no file known for {name!r}", task_id=task.task_id)
        return file

    if isinstance(kernels, Mapping):
        entries = [{"name": name, "source": src} for name, src in kernels.items()]
    elif isinstance(kernels, list) and all(isinstance(e, Mapping) for e in kernels):
        entries = list(kernels)
    else:
        raise SpliceError("'kernels' is neither a mapping nor a list", task_id=task.task_id)
    out = []
    for entry in entries:
        name, source, file = entry.get("name"), entry.get("source"), entry.get("file")
        if not isinstance(name, str) or not name or not isinstance(source, str):
            raise SpliceError(f"a kernel entry without name or source: {name!r}",
                              task_id=task.task_id)  # fmt: skip
        if file is not None and not isinstance(file, str):
            raise SpliceError(f"{name}: 'file' is not a path", task_id=task.task_id)
        out.append(KernelSource(file or file_of(name), name, source))
    return out
