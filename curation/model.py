"""Value objects of the curation stage: the task record (`task.json`) and its parts.

`Task.to_dict()` is exactly what `task.json` holds (schema version `TASK_SCHEMA_VERSION`);
`Task.from_dict()` reads it back. The curator's own decisions live in `curation.json`
(`CuratorRecord`), a file the curate command never writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

TASK_SCHEMA_VERSION = 1


class TaskType(StrEnum):
    OPTIMIZATION = "optimization"
    NEW_OP = "new_op"
    FEATURE = "feature"
    BUG_FIX = "bug_fix"


class RejectReason(StrEnum):
    """Why a candidate is not a task; counted in the curation summary."""

    NO_SUBSTANTIVE_KERNEL_CHANGE = "no_substantive_kernel_change"  # formatting, moves, deletions
    TESTS_DOCS_BENCHMARKS_ONLY = "tests_docs_benchmarks_only"
    REVERT = "revert"
    REVERTED_LATER = "reverted_later"
    GIANT_REFACTOR = "giant_refactor"
    TOO_SMALL = "too_small"
    NO_BASE_COMMIT = "no_base_commit"  # a root commit: nothing to start the task from


class CurationStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True)
class TargetKernel:
    """One kernel the task asks for, with its old (base) and new (gold) versions."""

    file: str
    name: str
    change: str  # the mining ChangeKind
    kind: str  # jit | assigned | template
    role: str  # kernel | helper
    old_file: str | None
    before_src: str | None
    after_src: str | None
    signature_before: str | None
    signature_after: str | None
    constexpr_params: tuple[str, ...]
    autotune_configs_before: str | None
    autotune_configs_after: str | None
    wrappers: tuple[str, ...]
    span_before: tuple[int, int] | None  # 1-based inclusive lines at the base commit
    span_after: tuple[int, int] | None  # at the gold commit

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TargetKernel:
        d = dict(d)
        d["constexpr_params"] = tuple(d["constexpr_params"])
        d["wrappers"] = tuple(d["wrappers"])
        for key in ("span_before", "span_after"):
            d[key] = tuple(d[key]) if d[key] else None
        return cls(**d)


@dataclass(frozen=True)
class ContextItem:
    """A function or class shown to the model, with why it was chosen."""

    name: str  # qualified name in its file
    kind: str  # function | method | class
    signature: str
    source: str
    why: str  # e.g. "launches add_kernel", "calls add", "class of wrapper"
    start_line: int
    end_line: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContextItem:
        return cls(**d)


@dataclass(frozen=True)
class FileContext:
    functions: tuple[ContextItem, ...] = ()
    classes: tuple[ContextItem, ...] = ()
    imports: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileContext:
        return cls(
            functions=tuple(ContextItem.from_dict(x) for x in d.get("functions", ())),
            classes=tuple(ContextItem.from_dict(x) for x in d.get("classes", ())),
            imports=tuple(d.get("imports", ())),
        )


@dataclass(frozen=True)
class TestSelection:
    """Which tests judge the task and how to run them (outcome lists come from eval)."""

    command: str
    changed_in_pr: tuple[str, ...]
    selected_existing: tuple[str, ...]
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.changed_in_pr, *self.selected_existing)))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TestSelection:
        return cls(
            command=d["command"],
            changed_in_pr=tuple(d["changed_in_pr"]),
            selected_existing=tuple(d["selected_existing"]),
            fail_to_pass=tuple(d.get("fail_to_pass", ())),
            pass_to_pass=tuple(d.get("pass_to_pass", ())),
        )


@dataclass(frozen=True)
class DedupInfo:
    cluster: str  # task id of the cluster's earliest member
    nearest: str | None
    similarity: float  # 0..1, by `method`
    method: str  # minhash | codebertscore

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DedupInfo:
        return cls(**d)


@dataclass(frozen=True)
class Difficulty:
    level: int  # 1..5
    score: float
    features: dict[str, float]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Difficulty:
        return cls(**d)


@dataclass(frozen=True)
class TypeDecision:
    type: TaskType
    evidence: tuple[str, ...]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TypeDecision:
        return cls(type=TaskType(d["type"]), evidence=tuple(d["evidence"]))


@dataclass(frozen=True)
class FileStat:
    path: str
    status: str
    additions: int | None
    deletions: int | None
    is_test: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileStat:
        return cls(**d)


@dataclass(frozen=True)
class Task:
    task_id: str
    framework: str
    repo: str
    pr_id: str
    pr_number: int | None
    pr_url: str | None
    title: str
    body: str
    merged_at: str
    base_commit: str
    merge_commit: str
    base_tag: str | None
    task_type: TypeDecision
    difficulty: Difficulty
    kernels: tuple[TargetKernel, ...]
    files_changed: tuple[FileStat, ...]
    context: dict[str, FileContext]
    tests: TestSelection
    requirement: str
    requirement_origin: str  # template | llm | curator
    curation_status: CurationStatus = CurationStatus.PENDING
    curator_reason: str | None = None
    dedup: DedupInfo | None = None
    labels: tuple[str, ...] = ()
    schema_version: int = TASK_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["task_type"] = {
            "type": str(self.task_type.type),
            "evidence": list(self.task_type.evidence),
        }
        d["curation_status"] = str(self.curation_status)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        d["task_type"] = TypeDecision.from_dict(d["task_type"])
        d["difficulty"] = Difficulty.from_dict(d["difficulty"])
        d["kernels"] = tuple(TargetKernel.from_dict(k) for k in d["kernels"])
        d["files_changed"] = tuple(FileStat.from_dict(f) for f in d["files_changed"])
        d["context"] = {p: FileContext.from_dict(c) for p, c in d["context"].items()}
        d["tests"] = TestSelection.from_dict(d["tests"])
        d["curation_status"] = CurationStatus(d.get("curation_status", "pending"))
        d["dedup"] = DedupInfo.from_dict(d["dedup"]) if d.get("dedup") else None
        d["labels"] = tuple(d.get("labels", ()))
        return cls(**d)


@dataclass
class CuratorRecord:
    """`curation.json`: what curators decided and edited; only the review tool writes it."""

    status: CurationStatus = CurationStatus.PENDING
    reason: str | None = None
    requirement_edited: bool = False
    curator: str | None = None
    updated_at: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = str(self.status)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CuratorRecord:
        d = dict(d)
        d["status"] = CurationStatus(d.get("status", "pending"))
        return cls(**d)
