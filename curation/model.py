"""Value objects of the curation stage: the task record (`task.json`) and its parts.

`task.json` is `to_json(Task)` (schema version `TASK_SCHEMA_VERSION`), read back with
`from_json(Task, ...)` (`core.records`). The curator's own decisions live in `curation.json`
(`CuratorRecord`), a file the curate command never writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TASK_SCHEMA_VERSION = 2  # 2: targets, setup state, hardware, verification, node ids


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
    UNPARSABLE_SOURCE = "unparsable_source"  # a kernel file does not parse at base or PR commit


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


class TargetRole(StrEnum):
    KERNEL = "kernel"  # a Triton kernel the PR changes
    HELPER = "helper"  # a jit helper called by kernels
    WRAPPER = "wrapper"  # a Python function that launches one of them
    CALLER = "caller"  # a function whose changed lines call a wrapper whose interface changed


class TargetStatus(StrEnum):
    """What the PR does to a target; it decides the target's setup-state version."""

    MODIFIED = "modified"  # the setup state has the base version
    ADDED = "added"  # the setup state has a stub (decorators, signature, docstring)
    DELETED = "deleted"  # the setup state has the base version; the gold has none
    UNCHANGED = "unchanged"  # a wrapper the PR leaves as it is (the model may change it)


@dataclass(frozen=True)
class Target:
    """A function the model writes: one of the PR's kernels, or a wrapper launching one."""

    file: str  # path at the gold commit
    name: str  # qualified name in that file (`Class.method` for methods)
    role: TargetRole
    status: TargetStatus
    signature: str  # at the gold commit (the base one for a deleted kernel)
    docstring: str | None


class Vendor(StrEnum):
    NVIDIA = "nvidia"
    ASCEND = "ascend"
    AMD = "amd"
    INTEL = "intel"


@dataclass(frozen=True)
class Hardware:
    """What a task's tests need; the default configuration holds one NVIDIA GPU without
    NVLink multicast. `arch`: a GPU generation newer than the reference machine's (Hopper)
    that the gold's change tests for ("blackwell"): its tests run anywhere, but its gain may
    show only there. `evidence` says which file and line decided each fact."""

    gpus: int = 1
    nvlink_multicast: bool = False
    vendor: Vendor = Vendor.NVIDIA
    evidence: tuple[str, ...] = ()
    arch: str = ""

    @property
    def single_nvidia_gpu(self) -> bool:
        return self.gpus <= 1 and not self.nvlink_multicast and self.vendor is Vendor.NVIDIA


class VerificationStatus(StrEnum):
    VERIFIED = "verified"  # the GPU showed the gate's rule holds
    UNVERIFIED = "unverified"  # not (yet) shown: `reason` says why
    OUT_OF_SCOPE = "out_of_scope"  # needs hardware or software the reference machine lacks


@dataclass(frozen=True)
class Verification:
    """The gate's verdict on a task, with when and where it was reached."""

    status: VerificationStatus = VerificationStatus.UNVERIFIED
    reason: str = "no reference run yet"
    checked_at: str | None = None
    environment: str | None = None  # GPU, torch, triton and the package set's hash
    # sha256 (16 hex) of the setup.patch the verdict was reached on (TaskDir.record_verification)
    setup: str | None = None


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


@dataclass(frozen=True)
class FileContext:
    functions: tuple[ContextItem, ...] = ()
    classes: tuple[ContextItem, ...] = ()
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestSelection:
    """Which tests judge the task and how to run them (outcome lists come from eval)."""

    command: str
    changed_in_pr: tuple[str, ...]
    selected_existing: tuple[str, ...]
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    # the test node ids that launch a target, chosen on the GPU (`eval reference`); once set,
    # runs execute exactly these
    node_ids: tuple[str, ...] = ()
    # `module.name`s the PR's tests import that the setup state does not define
    # (curation.imports); `curation.check` fails a task whose requirement does not name them
    unresolved_imports: tuple[str, ...] = ()
    # `module.name`s the PR's tests import that the PR's own commit does not define either: the
    # tests importing them fail with the gold (never kept on the GPU); `curation.check` warns
    undefined_upstream: tuple[str, ...] = ()
    # one line per target kernel the gold launched in the kept tests on the GPU: its largest
    # captured launch, `kernel(q=bfloat16[2, 64, 4, 64], ..., BT=64)` (`eval reference`); the
    # requirement's Interface shows them
    launches: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.changed_in_pr, *self.selected_existing)))


@dataclass(frozen=True)
class DedupInfo:
    cluster: str  # task id of the cluster's earliest member
    nearest: str | None
    similarity: float  # 0..1, by `method`
    method: str  # minhash | codebertscore


@dataclass(frozen=True)
class Difficulty:
    level: int  # 1..5
    score: float
    features: dict[str, float]


@dataclass(frozen=True)
class TypeDecision:
    type: TaskType
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class FileStat:
    path: str
    status: str
    additions: int | None
    deletions: int | None
    is_test: bool


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
    targets: tuple[Target, ...] = ()  # what the model writes (curation.targets)
    requires: Hardware = Hardware()
    # the GPU gate's verdict: written by `eval reference`, kept across curate reruns
    verification: Verification = Verification()

    @property
    def named_kernel(self) -> TargetKernel | None:
        """The kernel the task is named after (`curation.build.primary`: its most-changed
        kernel), where its id ends with that kernel's name."""
        return next((k for k in self.kernels if self.task_id.endswith("__" + k.name)), None)

    @property
    def target_files(self) -> frozenset[str]:
        """The files of the targets and of the PR's kernels (paths at the gold commit)."""
        return frozenset({t.file for t in self.targets} | {k.file for k in self.kernels})


@dataclass
class CuratorRecord:
    """`curation.json`: what curators decided and edited; only the review tool writes it."""

    status: CurationStatus = CurationStatus.PENDING
    reason: str | None = None
    requirement_edited: bool = False
    curator: str | None = None
    updated_at: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
