"""Which candidates are kernel tasks: the reject reasons, decided from code facts.

Reads: `Candidate` records of the mining stage. Writes nothing. Each reject is a
`RejectReason` with a one-line detail, never an exception; the summary counts them.

A task needs a *substantive* kernel change: a kernel added or modified (not only reformatted,
moved, renamed with its file, deleted, or changed only by renaming identifiers) in a file that
is not a test, benchmark or document.
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from curation.model import RejectReason
from mining.model import Candidate, ChangeKind, KernelChange
from mining.paths import is_benchmark_path, is_doc_path, is_test_path

SUBSTANTIVE = (ChangeKind.ADDED, ChangeKind.MODIFIED)

# Words on a changed line that make even a one-line edit a performance task.
_PERF_WORDS = re.compile(r"BLOCK|num_warps|num_stages|num_ctas|maxnreg|Config\(|configs|GROUP_SIZE")
_NUMBER = re.compile(r"\b\d+(\.\d*)?([eE][-+]?\d+)?\b")


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the giant-refactor and too-small filters (TOML `[filters]`)."""

    max_files: int = 60  # non-test files changed
    max_changed_lines: int = 4000  # non-test lines added + deleted
    max_kernels: int = 24  # substantive kernel changes
    min_changed_kernel_lines: int = 2  # below this, a modified kernel is "too small"


@dataclass(frozen=True)
class Verdict:
    reason: RejectReason | None
    detail: str

    @property
    def kept(self) -> bool:
        return self.reason is None


def is_kernel_source_path(path: str) -> bool:
    return not (is_test_path(path) or is_benchmark_path(path) or is_doc_path(path))


def substantive_changes(cand: Candidate) -> list[KernelChange]:
    """Kernel changes a task can be made of, in source files (a pure renaming is not one)."""
    return [
        kc
        for kc in cand.kernel_changes
        if kc.change in SUBSTANTIVE and is_kernel_source_path(kc.file) and not is_rename_only(kc)
    ]


def changed_kernel_lines(kc: KernelChange) -> list[tuple[str, str]]:
    """(old line, new line) pairs that differ, whitespace-insensitive; '' for a missing side."""
    before = [ln.strip() for ln in (kc.before.source if kc.before else "").splitlines()]
    after = [ln.strip() for ln in (kc.after.source if kc.after else "").splitlines()]
    before = [ln for ln in before if ln and not ln.startswith("#")]
    after = [ln for ln in after if ln and not ln.startswith("#")]
    pairs: list[tuple[str, str]] = []
    sm = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        old, new = before[i1:i2], after[j1:j2]
        for k in range(max(len(old), len(new))):
            pairs.append((old[k] if k < len(old) else "", new[k] if k < len(new) else ""))
    return pairs


def is_perf_parameter_change(kc: KernelChange) -> bool:
    """Autotune configs, block sizes, warps or stages changed."""
    if kc.before and kc.after and kc.before.autotune_configs != kc.after.autotune_configs:
        return True
    return any(_PERF_WORDS.search(a + " " + b) for a, b in changed_kernel_lines(kc))


_CODE_TOKEN = re.compile(
    r"#[^\n]*|(?P<str>[rbfuRBFU]*(\"\"\"[\s\S]*?\"\"\"|'\'\'[\s\S]*?'\'\'|\"[^\"\n]*\"|'[^'\n]*'))"
    r"|(?P<name>[A-Za-z_]\w*)|(?P<other>\d[\w.]*|\S)"
)
_KEYWORDS = frozenset(keyword.kwlist)


def _shape(source: str) -> list[str]:
    """Tokens with every identifier replaced by the order of its first appearance."""
    seen: dict[str, str] = {}
    out = []
    for m in _CODE_TOKEN.finditer(source):
        if m.group(0).startswith("#"):
            continue
        name = m.group("name")
        if name is not None and name not in _KEYWORDS:
            out.append(seen.setdefault(name, f"${len(seen)}"))
        else:
            out.append(m.group(0))
    return out


def is_rename_only(kc: KernelChange) -> bool:
    """The kernel changed only by renaming identifiers (parameters, variables, the kernel)."""
    if kc.change is not ChangeKind.MODIFIED or not (kc.before and kc.after):
        return False
    return _shape(kc.before.source) == _shape(kc.after.source)


def _is_trivial(kc: KernelChange, cfg: FilterConfig) -> bool:
    if kc.change is not ChangeKind.MODIFIED or is_perf_parameter_change(kc):
        return False
    pairs = changed_kernel_lines(kc)
    if len(pairs) >= cfg.min_changed_kernel_lines:
        return False
    # one changed line that differs only in a number literal is a constant tweak
    return all(_NUMBER.sub("0", a) == _NUMBER.sub("0", b) for a, b in pairs)


def reverted_commits(cands: Iterable[Candidate]) -> set[str]:
    """Commits some later candidate reverts."""
    return {
        c.revert.target_commit
        for c in cands
        if c.revert and c.revert.kind == "revert" and c.revert.target_commit
    }


def judge(cand: Candidate, reverted: set[str], cfg: FilterConfig | None = None) -> Verdict:
    """Keep the candidate, or say why not."""
    cfg = cfg or FilterConfig()
    if cand.parent is None:
        return Verdict(RejectReason.NO_BASE_COMMIT, "a root commit has no base to start from")
    if cand.revert is not None and cand.revert.kind == "revert":
        return Verdict(RejectReason.REVERT, f"reverts {cand.revert.target_subject!r}")
    if cand.commit in reverted:
        return Verdict(RejectReason.REVERTED_LATER, "a later commit reverts it")
    subst = substantive_changes(cand)
    if not subst:
        in_sources = [kc for kc in cand.kernel_changes if is_kernel_source_path(kc.file)]
        if in_sources:
            kinds = sorted(
                {
                    "identifiers renamed" if is_rename_only(kc) else str(kc.change)
                    for kc in in_sources
                }
            )
            return Verdict(
                RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE, "kernel changes: " + ", ".join(kinds)
            )
        return Verdict(
            RejectReason.TESTS_DOCS_BENCHMARKS_ONLY,
            "kernels changed only in tests, benchmarks or docs",
        )
    source_files = [f for f in cand.files if is_kernel_source_path(f.path)]
    lines = sum((f.additions or 0) + (f.deletions or 0) for f in source_files)
    if (
        len(source_files) > cfg.max_files
        or lines > cfg.max_changed_lines
        or len(subst) > cfg.max_kernels
    ):
        return Verdict(
            RejectReason.GIANT_REFACTOR,
            f"{len(source_files)} source files, {lines} lines, {len(subst)} kernels",
        )
    if all(_is_trivial(kc, cfg) for kc in subst):
        return Verdict(RejectReason.TOO_SMALL, "only a constant changed in the kernels")
    return Verdict(None, f"{len(subst)} kernel(s) added or modified")


def judge_all(
    cands: Sequence[Candidate], cfg: FilterConfig | None = None
) -> list[tuple[Candidate, Verdict]]:
    reverted = reverted_commits(cands)
    return [(c, judge(c, reverted, cfg)) for c in cands]
