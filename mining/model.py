"""Value objects of the mining stage.

Everything that crosses a module boundary in `mining` is one of these frozen dataclasses,
turned into JSON and back by the one record rule (`core.records.to_json` / `from_json`). The
lines of `candidates.jsonl` are `to_json(candidate)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from core.records import derived, set_derived

SCHEMA_VERSION = 1


class ChangeKind(StrEnum):
    """How a kernel differs between a commit's parent and the commit."""

    ADDED = "added"
    DELETED = "deleted"
    MODIFIED = "modified"  # body or signature changed in substance
    MOVED = "moved"  # same tokens, elsewhere: another file, another name, or another place in
    # its file (then file == old_file)
    RENAMED_FILE = "renamed_file"  # same tokens, its file was renamed
    FORMATTING_ONLY = "formatting_only"  # token-identical ignoring whitespace and comments
    LAUNCH_CHANGED = "launch_changed"  # kernel untouched, the calls that launch it changed


class KernelKind(StrEnum):
    """How the kernel is declared."""

    JIT = "jit"  # a def under @triton.jit / @triton.autotune / @triton.heuristics
    ASSIGNED = "assigned"  # name = triton.jit(fn)
    TEMPLATE = "template"  # Triton source in an Inductor-style template string
    GLUON = "gluon"  # a def under @gluon.jit (triton.experimental.gluon)
    GENERATED = "generated"  # code that writes kernel source: a string constant or a builder


class KernelRole(StrEnum):
    KERNEL = "kernel"
    HELPER = "helper"  # a jit function called by another kernel of the same file


class SkipReason(StrEnum):
    """Why a changed file was not analysed; counted in the crawl summary."""

    BINARY = "binary"
    TOO_LARGE = "too_large"
    NON_UTF8 = "non_utf8"
    UNPARSABLE = "unparsable"
    SUBMODULE = "submodule"
    SYMLINK = "symlink"
    MISSING_BLOB = "missing_blob"


@dataclass(frozen=True)
class Span:
    """1-based inclusive line range and 0-based half-open byte range in the file."""

    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


@dataclass(frozen=True)
class LaunchSite:
    """A `kernel[grid](...)` call."""

    line: int
    wrapper: str | None  # qualified name of the enclosing function, None at module level
    grid: str
    text: str


@dataclass(frozen=True)
class Kernel:
    """One Triton kernel as found in one version of one file."""

    name: str
    qualname: str
    file: str
    kind: KernelKind
    role: KernelRole
    span: Span
    decorators: tuple[str, ...]
    signature: str
    params: tuple[str, ...]
    constexpr_params: tuple[str, ...]
    autotune_configs: str | None
    heuristics: str | None
    launch_sites: tuple[LaunchSite, ...]
    wrappers: tuple[str, ...]
    source: str
    token_digest: str  # sha1 of the token stream without comments and whitespace
    body_digest: str = ""  # the same with the kernel's own name blanked: sees renamed kernels


@dataclass(frozen=True)
class KernelChange:
    """A kernel's change between parent (`before`) and commit (`after`)."""

    name: str
    change: ChangeKind
    file: str  # path in the commit (in the parent for deleted kernels)
    old_file: str | None  # path in the parent, None for added kernels
    before: Kernel | None
    after: Kernel | None
    # one version of a file involved does not parse: the change is read from what tree-sitter
    # recovers of it
    uncertain: bool = False

    @property
    def kernel(self) -> Kernel:
        k = self.after or self.before
        assert k is not None
        return k


@dataclass(frozen=True)
class FileChange:
    """One path changed by a commit (against its first parent)."""

    path: str
    old_path: str | None  # set for renames and copies
    status: str  # git's letter: A, M, D, R, C, T
    additions: int | None  # None for binary files
    deletions: int | None
    is_test: bool
    is_python: bool
    skipped: SkipReason | None = None  # set when the file could not be analysed


@dataclass(frozen=True)
class PrRef:
    """Where a commit came from, as read from its message."""

    id: str  # "#123", "!4110" (GitLab merge request), or the commit sha when nothing matched
    number: int | None
    source: str  # squash | merge | trailer | gitlab | none
    url: str | None


@dataclass(frozen=True)
class RevertRef:
    """A revert or re-apply and what it undoes."""

    kind: str  # revert | reapply
    target_subject: str | None
    target_commit: str | None  # resolved sha, when the message or history names it


@dataclass(frozen=True)
class GithubInfo:
    """What the GitHub API adds to a candidate."""

    title: str
    body: str
    labels: tuple[str, ...]
    merged_at: str | None
    author: str | None
    author_association: str | None
    linked_issues: tuple[int, ...]
    url: str


@dataclass(frozen=True)
class Candidate:
    """One PR (or PR-less commit) whose Python changes touch a Triton kernel."""

    schema_version: int = field(default=SCHEMA_VERSION, kw_only=True)  # first in the JSON line
    id: str  # unique in candidates.jsonl: the PR id, or "<pr id>@<sha10>" on a repeat
    framework: str
    repo: str
    pr: PrRef
    commit: str
    parent: str | None
    is_merge: bool
    authored_at: str
    committed_at: str
    author: str
    subject: str
    body: str
    revert: RevertRef | None
    files: tuple[FileChange, ...]
    kernel_changes: tuple[KernelChange, ...]
    # for readers of candidates.jsonl: counts of files, lines and kernel changes by kind
    stats: dict[str, Any] = derived()
    github: GithubInfo | None = None
    root: bool = False  # the history's first commit, diffed against the empty tree (no parent)

    def __post_init__(self) -> None:
        set_derived(
            self,
            "stats",
            {
                "files": len(self.files),
                "additions": sum(f.additions or 0 for f in self.files),
                "deletions": sum(f.deletions or 0 for f in self.files),
                "test_files": sum(f.is_test for f in self.files),
                "kernels": self.change_counts,
            },
        )

    @property
    def change_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kc in self.kernel_changes:
            counts[str(kc.change)] = counts.get(str(kc.change), 0) + 1
        return counts


@dataclass
class CrawlSummary:
    """Counters of one crawl run, printed at the end and written to summary.json."""

    commits_scanned: int = 0
    commits_with_python: int = 0
    candidates: int = 0
    kernel_changes: dict[str, int] = field(default_factory=dict)
    skipped_files: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    kernel_kinds: dict[str, int] = field(default_factory=dict)  # changes by kernel kind
    uncertain_changes: int = 0
    partly_parsed_files: int = 0  # one version did not parse; the other was analysed

    def count_change(self, kind: str) -> None:
        self.kernel_changes[kind] = self.kernel_changes.get(kind, 0) + 1

    def count_kind(self, kind: str) -> None:
        self.kernel_kinds[kind] = self.kernel_kinds.get(kind, 0) + 1

    def count_skip(self, reason: str) -> None:
        self.skipped_files[reason] = self.skipped_files.get(reason, 0) + 1
