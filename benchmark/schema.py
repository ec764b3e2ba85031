"""The dataset's one field table: each column's name, Arrow type, how it is read from a task
directory, and what it means. The `datasets.Features`, the row builder and the card's field list
are all generated from `COLUMNS`; adding a column is one entry here plus the code that computes
it.

Reads: a task directory (task.json, requirement.md, the patches, env.json and reference.json when
present). Writes nothing. Nested data are lists and structs, not JSON strings; a map keyed by
file (the context) becomes a list of structs with a `file` field, since Arrow has no free-form
struct keys.

Types are written small: "string", "int32", "float64", "bool"; `[t]` is a list of `t`;
`{"name": t, ...}` is a struct. A struct column read from a record (`project`) takes each
sub-field from the record attribute of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property
from typing import Any

from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from envbuild.model import EnvSpec
from eval.model import Reference

SCHEMA_VERSION = 1

S, I, F, B = "string", "int32", "float64", "bool"  # noqa: E741
DType = str | list[Any] | dict[str, Any]


@dataclass(frozen=True)
class TaskSource:
    """What one row is computed from: a task directory and the records in it."""

    tdir: TaskDir

    @cached_property
    def task(self) -> Task:
        return self.tdir.load_task()

    @cached_property
    def env(self) -> EnvSpec | None:
        return self.tdir.load(TaskFile.ENV, EnvSpec)

    @cached_property
    def reference(self) -> Reference | None:
        return self.tdir.load(TaskFile.REFERENCE, Reference)


@dataclass(frozen=True)
class Column:
    name: str
    dtype: DType
    read: Callable[[TaskSource], Any]
    doc: str  # the card's description


def project(value: Any, dtype: DType) -> Any:
    """A record (or tuple of records) as the plain value of `dtype`: struct sub-fields are the
    record's attributes of the same name; tuples become lists, enums their values."""
    if value is None:
        return None
    if isinstance(dtype, dict):
        get = value.get if isinstance(value, Mapping) else lambda k: getattr(value, k)
        return {k: project(get(k), t) for k, t in dtype.items()}
    if isinstance(dtype, list):
        return [project(v, dtype[0]) for v in value]
    return value.value if isinstance(value, Enum) else value


def _verification(src: TaskSource) -> Any:
    v = src.tdir.current_verification(src.task)
    if v.setup is not None:
        v = replace(v, environment=f"{v.environment or ''}{SETUP_MARK}{v.setup}")
    return project(v, VERIFICATION)


# how a row's verification environment names the setup patch's hash
SETUP_MARK = "; setup "


def split_setup(environment: str | None) -> tuple[str | None, str | None]:
    """A row's verification environment without the setup patch's hash it names, and that
    hash (None in rows before 1.4.0): the inverse of `_verification`."""
    env, mark, setup = (environment or "").partition(SETUP_MARK)
    return env or None, (setup if mark else None)


def _task(attr: str, dtype: DType = S) -> Callable[[TaskSource], Any]:
    return lambda src: project(getattr(src.task, attr), dtype)


KERNEL: dict[str, Any] = {
    "file": S, "name": S, "change": S, "kind": S, "role": S, "old_file": S,
    "before_src": S, "after_src": S, "signature_before": S, "signature_after": S,
    "constexpr_params": [S], "wrappers": [S],
}  # fmt: skip
FILE_STAT = {"path": S, "status": S, "additions": I, "deletions": I, "is_test": B}
CONTEXT_ITEM = {"name": S, "kind": S, "signature": S, "source": S, "why": S}
TESTS = {
    "command": S, "changed_in_pr": [S], "selected_existing": [S],
    "fail_to_pass": [S], "pass_to_pass": [S], "node_ids": [S],
}  # fmt: skip
TARGET = {"file": S, "name": S, "role": S, "status": S, "signature": S, "docstring": S}
# `Hardware.arch` is not a column: released files are frozen and a struct field added to them
# would not load beside theirs; its evidence line is in `evidence`, its effect in the verdict
REQUIRES = {"gpus": I, "nvlink_multicast": B, "vendor": S, "evidence": [S]}
VERIFICATION = {"status": S, "reason": S, "checked_at": S, "environment": S}
ENV = {
    "python": S, "torch": S, "triton": S, "cuda": S, "base_image": S, "recipe": S,
    "image_tag": S, "pin_sources": S,
}  # fmt: skip
REFERENCE = {
    "measured": B, "valid": B, "note": S, "gpu": S, "torch": S, "triton": S,
    "base_passed_runs": I, "gold_passed_runs": I, "runs": I, "base_e2e_s": F, "gold_e2e_s": F,
    "base_kernel_ms": F, "gold_kernel_ms": F, "base_isolated_ms": F, "gold_isolated_ms": F,
}  # fmt: skip


def _context(src: TaskSource) -> list[dict[str, Any]]:
    return [
        {
            "file": path,
            "imports": list(ctx.imports),
            "items": project((*ctx.classes, *ctx.functions), [CONTEXT_ITEM]),
        }
        for path, ctx in sorted(src.task.context.items())
    ]


def _tests(src: TaskSource) -> dict[str, Any]:
    row = project(src.task.tests, TESTS)
    if src.reference is not None:  # the reference run decides the outcome lists
        row["fail_to_pass"] = list(src.reference.fail_to_pass)
        row["pass_to_pass"] = list(src.reference.pass_to_pass)
    return row


def _env(src: TaskSource) -> dict[str, Any] | None:
    env = src.env
    if env is None:
        return None
    pins = {"python": env.python, "torch": env.torch, "triton": env.triton, "cuda": env.cuda}
    base_image = next((p.value for p in env.extra_pins if p.name == "base_image"), None)
    return {
        **{name: pin.value for name, pin in pins.items()},
        "base_image": base_image,
        "recipe": env.recipe,
        "image_tag": env.image_tag,
        "pin_sources": ", ".join(f"{n}: {p.source} ({p.where})" for n, p in pins.items()),
    }


def _reference(src: TaskSource) -> dict[str, Any]:
    ref = src.reference
    if ref is None:
        return {
            **dict.fromkeys(REFERENCE),
            "measured": False,
            "valid": False,
            "note": "no reference run yet",
        }
    base, gold, env = ref.base, ref.gold, ref.environment
    return {
        "measured": True,
        "valid": ref.valid,
        "note": ref.validity_note,
        "gpu": env.gpu,
        "torch": env.torch,
        "triton": env.triton,
        "base_passed_runs": base.passed_runs,
        "gold_passed_runs": gold.passed_runs,
        "runs": gold.runs,
        "base_e2e_s": base.e2e_s,
        "gold_e2e_s": gold.e2e_s,
        "base_kernel_ms": base.kernel_ms,
        "gold_kernel_ms": gold.kernel_ms,
        "base_isolated_ms": base.isolated_ms,
        "gold_isolated_ms": gold.isolated_ms,
    }


COLUMNS: tuple[Column, ...] = (
    Column("task_id", S, _task("task_id"), "`<framework>__<pr>__<kernel>`"),
    Column("framework", S, _task("framework"), "registry name of the framework"),
    Column("repo", S, _task("repo"), "GitHub `owner/name`"),
    Column("pr_id", S, _task("pr_id"),
           "the pull request id (`#N`; `!N` for Megatron-LM's internal merge requests)"),
    Column("pr_number", I, _task("pr_number", I), "the pull request's number"),
    Column("pr_url", S, _task("pr_url"), "the pull request's page, where there is one"),
    Column("title", S, _task("title"), "the PR's title"),
    Column("body", S, _task("body"), "the PR's description"),
    Column("merged_at", S, _task("merged_at"), "ISO date of the merge (decides the split)"),
    Column("base_commit", S, _task("base_commit"), "the PR's parent: the task's start"),
    Column("merge_commit", S, _task("merge_commit"), "the PR's commit"),
    Column("base_tag", S, _task("base_tag"), "the newest tag before the base commit"),
    Column("task_type", S, lambda s: s.task.task_type.type.value,
           "optimization / new_op / feature / bug_fix"),
    Column("type_evidence", [S], lambda s: list(s.task.task_type.evidence),
           "why the type was chosen"),
    Column("difficulty", I, lambda s: s.task.difficulty.level, "level 1-5"),
    Column("difficulty_score", F, lambda s: s.task.difficulty.score,
           "the score the level was cut from"),
    Column("labels", [S], _task("labels", [S]), "the PR's labels"),
    Column("requirement", S, lambda s: s.tdir.read_requirement() or s.task.requirement,
           "what the model reads"),
    Column("requirement_origin", S, _task("requirement_origin"), "template / llm / curator"),
    Column("curation_status", S, _task("curation_status"),
           "pending / approved (rejected tasks are not published)"),
    Column("kernels", [KERNEL], _task("kernels", [KERNEL]),
           "target kernels: file, name, change, kind, role, base and gold source, signatures, "
           "constexpr parameters, launch wrappers"),
    Column("files_changed", [FILE_STAT], _task("files_changed", [FILE_STAT]),
           "every file of the PR with status, line counts, is_test"),
    Column("context", [{"file": S, "imports": [S], "items": [CONTEXT_ITEM]}], _context,
           "per file at the base commit: imports and the functions/classes shown to the model "
           "(wrappers, their callers, related classes) with why each was chosen"),
    Column("targets", [TARGET], _task("targets", [TARGET]),
           "what the model writes: the kernels the PR changes, the wrappers launching them and "
           "the callers whose changed lines call a wrapper whose interface the PR changes, with "
           "role (kernel / helper / wrapper / caller), what the PR does to each (modified / "
           "added / deleted / unchanged), signature and docstring"),
    Column("setup_patch", S, lambda s: s.tdir.read_text(TaskFile.SETUP_PATCH),
           "base commit -> setup state: the PR's whole change with every target at its base "
           "version (a stub for new ones); every variant starts there"),
    Column("gold_patch", S, lambda s: s.tdir.read_text(TaskFile.GOLD_PATCH),
           "the PR's non-test changes"),
    Column("test_patch", S, lambda s: s.tdir.read_text(TaskFile.TEST_PATCH),
           "the PR's test changes"),
    Column("tests", TESTS, _tests,
           "the test node ids the GPU chose (`node_ids`: what the eval runs, base, gold and "
           "predictions alike), their fail-to-pass / pass-to-pass lists, and curation's "
           "candidate files with the pytest command over them (whole files: minutes each)"),
    Column("env", ENV, _env,
           "pinned Python / torch / triton / CUDA, base image, install recipe, image tag, where "
           "each pin came from"),
    Column("requires", REQUIRES, _task("requires", REQUIRES),
           "hardware the tests need: GPUs, NVLink multicast, vendor, with the evidence"),
    Column("verification", VERIFICATION, lambda s: _verification(s),
           "the GPU gate's verdict: verified / unverified / out_of_scope, why, when, on what "
           "(GPU, torch, triton, package-set hash, setup patch hash; a verdict reached on "
           "another setup patch than the row's is unverified); the default config holds the "
           "verified tasks"),
    Column("reference", REFERENCE, _reference,
           "the reference run: validity, GPU and versions, passed runs, median end-to-end and "
           "kernel times of base and gold"),
    Column("dedup", {"cluster": S, "nearest": S, "similarity": F},
           _task("dedup", {"cluster": S, "nearest": S, "similarity": F}),
           "near-duplicate cluster, nearest task and similarity"),
    Column("schema_version", I, lambda s: SCHEMA_VERSION, "version of this row layout"),
)  # fmt: skip


# The `workloads` config: one row per task that has a workload (issue 10), a table of its own
# so the task rows' layout (frozen in released files) does not change. The calls and the result
# stay JSON text: their fields grow with the harness.
WORKLOAD_COLUMNS: dict[str, DType] = {
    "task_id": S, "metric": S, "metric_evidence": S, "sizes": [S], "calls": S,
    "measured": B, "base_total_ms": F, "gold_total_ms": F, "speedup": F, "separated": B,
    "measured_at": S, "environment": S, "result": S,
}  # fmt: skip


def workload_row(tdir: TaskDir) -> dict[str, Any] | None:
    """A task's workload and, when measured, its result (None without workload.json)."""
    import json

    from core.files import read_json

    if not tdir.has(TaskFile.WORKLOAD):
        return None
    plan = read_json(tdir.path(TaskFile.WORKLOAD))
    res = (
        read_json(tdir.path(TaskFile.WORKLOAD_RESULT)) if tdir.has(TaskFile.WORKLOAD_RESULT) else {}
    )
    if res:
        # by today's rule, as the gate judges it (Liger-Kernel #815 was stored `false` under
        # the old per-size rule and published so in 1.7.1 beside its `verified`)
        from eval.workload_model import WorkloadResult, totals_separated

        result = tdir.load(TaskFile.WORKLOAD_RESULT, WorkloadResult)
        res["separated"] = result is not None and totals_separated(result.calls)
    timed = ("base_total_ms", "gold_total_ms", "speedup", "separated", "measured_at", "environment")
    return {
        "task_id": tdir.id,
        "metric": plan.get("metric"),
        "metric_evidence": plan.get("metric_evidence"),
        "sizes": [c.get("label") for c in plan.get("calls") or []],
        "calls": json.dumps(plan.get("calls") or [], sort_keys=True),
        "measured": bool(res),
        **{k: res.get(k) for k in timed},
        "result": json.dumps(res, sort_keys=True) if res else None,
    }


# The `environments` config: one row per task with an env.json, its pins (the task rows' `env`
# column, for every task of the folder: rows released before their directories were pinned
# have none, and released rows are never rewritten).
ENVIRONMENT_COLUMNS: dict[str, DType] = {"task_id": S, **ENV}


def environment_row(tdir: TaskDir) -> dict[str, Any] | None:
    """A task's pinned environment (None without env.json)."""
    env = _env(TaskSource(tdir))
    return None if env is None else {"task_id": tdir.id, **env}


@dataclass(frozen=True)
class SideTable:
    """A config beside the splits with one row per task of the folder that has one: a file of
    its own per version, written only when its rows changed (the card's config shows the newest
    file; the manifest's release entry names it under `name`)."""

    name: str
    row: Callable[[TaskDir], dict[str, Any] | None]
    columns: dict[str, DType]

    def features(self) -> Any:
        from datasets import Features

        return Features({k: _feature(t) for k, t in self.columns.items()})


# every task's workload, and every task's pinned environment (released rows included), as
# their directories held them at the build
SIDE_TABLES = (
    SideTable("workloads", workload_row, WORKLOAD_COLUMNS),
    SideTable("environments", environment_row, ENVIRONMENT_COLUMNS),
)


def _feature(dtype: DType) -> Any:
    from datasets import List, Value

    if isinstance(dtype, str):
        return Value(dtype)
    if isinstance(dtype, list):
        return List(_feature(dtype[0]))
    return {k: _feature(t) for k, t in dtype.items()}


def features() -> Any:
    """The `datasets.Features` of a row (imported lazily: `datasets` is heavy)."""
    from datasets import Features

    return Features({c.name: _feature(c.dtype) for c in COLUMNS})


def row_status(r: Mapping[str, Any]) -> str:
    """A dataset row's verification status (`unverified` for a row that has none)."""
    v = r.get("verification")
    return str(v["status"]) if v else "unverified"


def row(tdir: TaskDir) -> dict[str, Any]:
    """One dataset row from a task directory."""
    src = TaskSource(tdir)
    return {c.name: c.read(src) for c in COLUMNS}


def card_fields() -> str:
    """The card's field table rows: one per column."""
    return "\n".join(f"| `{c.name}` | {c.doc} |" for c in COLUMNS)
