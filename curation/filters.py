"""Which candidates are kernel tasks: the reject reasons, decided from code facts.

Reads: `Candidate` records of the mining stage. Writes nothing. Each reject is a
`RejectReason` with a one-line detail, never an exception; the summary counts them.

A task needs a *substantive* kernel change: a kernel added or modified (not only reformatted,
moved, renamed with its file, deleted, or changed only in its docstring or by renaming
identifiers) in a file that is not a test, benchmark or document.
"""

from __future__ import annotations

import ast
import difflib
import keyword
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from curation.model import RejectReason
from mining.model import Candidate, ChangeKind, KernelChange
from mining.paths import is_benchmark_path, is_doc_path, is_test_path

SUBSTANTIVE = (ChangeKind.ADDED, ChangeKind.MODIFIED)

# Words on a changed line that make even a one-line edit a performance task.
_PERF_WORDS = re.compile(r"BLOCK|num_warps|num_stages|num_ctas|maxnreg|Config\(|configs|GROUP_SIZE")
# Keyword arguments of a launch that only tune it (grid changes may change semantics too).
_LAUNCH_WORDS = re.compile(r"\b[A-Z_]*(BLOCK|TILE|SIZE|WARPS|STAGES)[A-Z_0-9]*\s*=")
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
        if is_kernel_source_path(kc.file)
        and (
            (kc.change in SUBSTANTIVE and not cosmetic_kind(kc))
            or (kc.change is ChangeKind.LAUNCH_CHANGED and is_perf_parameter_change(kc))
        )
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


def launch_changes(kc: KernelChange) -> list[str]:
    """Launch-site texts of the commit that the parent did not have."""
    old = {s.text for s in kc.before.launch_sites} if kc.before else set()
    return [s.text for s in (kc.after.launch_sites if kc.after else ()) if s.text not in old]


def is_perf_parameter_change(kc: KernelChange) -> bool:
    """Autotune configs, block sizes, warps or stages changed (in the kernel or at a launch)."""
    if kc.before and kc.after and kc.before.autotune_configs != kc.after.autotune_configs:
        return True
    if kc.change is ChangeKind.LAUNCH_CHANGED:
        return any(_PERF_WORDS.search(t) or _LAUNCH_WORDS.search(t) for t in launch_changes(kc))
    return any(_PERF_WORDS.search(a + " " + b) for a, b in changed_kernel_lines(kc))


_CODE_TOKEN = re.compile(
    r"#[^\n]*|(?P<str>[rbfuRBFU]*(\"\"\"[\s\S]*?\"\"\"|'\'\'[\s\S]*?'\'\'|\"[^\"\n]*\"|'[^'\n]*'))"
    r"|(?P<name>[A-Za-z_]\w*)|(?P<other>\d[\w.]*|\S)"
)
_KEYWORDS = frozenset(keyword.kwlist)


def _tokens(source: str) -> list[tuple[str, str]]:
    """(kind, text) tokens without comments; kind is str, name or other."""
    out = []
    for m in _CODE_TOKEN.finditer(source):
        kind = m.lastgroup
        if kind is None:  # a comment
            continue
        text = m.group(0)
        out.append(("other" if kind == "name" and text in _KEYWORDS else kind, text))
    return out


def is_rename_only(kc: KernelChange) -> bool:
    """The kernel changed only by renaming identifiers, consistently, docstrings included."""
    if kc.change is not ChangeKind.MODIFIED or not (kc.before and kc.after):
        return False
    old, new = _tokens(kc.before.source), _tokens(kc.after.source)
    if len(old) != len(new):
        return False
    renames: dict[str, str] = {}
    reverse: dict[str, str] = {}
    strings: list[tuple[str, str]] = []
    for (ka, ta), (kb, tb) in zip(old, new, strict=True):
        if ka != kb:
            return False
        if ka == "name":
            if renames.setdefault(ta, tb) != tb or reverse.setdefault(tb, ta) != ta:
                return False
        elif ka == "str":
            strings.append((ta, tb))
        elif ta != tb:
            return False
    if all(a == b for a, b in renames.items()):
        return False  # nothing was renamed: the change is elsewhere (strings)
    # A docstring that names the renamed identifiers is renamed with them.
    return all(
        re.sub(r"\w+", lambda m: renames.get(m.group(0), m.group(0)), a) == b for a, b in strings
    )


def _ast_without_docstrings(source: str) -> str | None:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def is_docstring_only(kc: KernelChange) -> bool:
    """The kernel's code is unchanged; only its docstring (or comments) differ."""
    if kc.change is not ChangeKind.MODIFIED or not (kc.before and kc.after):
        return False
    old = _ast_without_docstrings(kc.before.source)
    return old is not None and old == _ast_without_docstrings(kc.after.source)


def cosmetic_kind(kc: KernelChange) -> str | None:
    """Why a modification is cosmetic (no change to what the kernel computes), or None."""
    if is_docstring_only(kc):
        return "docstring only"
    if is_rename_only(kc):
        return "identifiers renamed"
    return None


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
            kinds = sorted({cosmetic_kind(kc) or str(kc.change) for kc in in_sources})
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
    broken = sorted({kc.file for kc in subst if kc.uncertain})
    if broken:  # a file that does not parse at one side: no setup state can be built from it
        return Verdict(
            RejectReason.UNPARSABLE_SOURCE, "does not parse on one side: " + ", ".join(broken)
        )
    return Verdict(None, f"{len(subst)} kernel(s) added or modified")


def judge_all(
    cands: Sequence[Candidate], cfg: FilterConfig | None = None
) -> list[tuple[Candidate, Verdict]]:
    reverted = reverted_commits(cands)
    return [(c, judge(c, reverted, cfg)) for c in cands]
