"""Task type (optimization, new_op, feature, bug_fix) from code facts and PR text.

Reads: a kept `Candidate` and its substantive kernel changes. Writes nothing.
Each type collects points from evidence; the evidence that decided is stored with the task so a
curator can see (and overrule) why. Code facts weigh more than words (3 points against 1.5 for
a title word): PR titles say "fix" or "fused" for many things, and a PR that only adds kernels
is a new op or a feature whatever it says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from curation.filters import is_perf_parameter_change
from curation.model import Task, TaskType, TypeDecision
from mining.model import Candidate, ChangeKind, KernelChange, KernelRole

_TEXT_SIGNALS: dict[TaskType, re.Pattern[str]] = {
    TaskType.BUG_FIX: re.compile(
        r"\b(fix(es|ed)?|bug|incorrect|wrong|crash|nan|overflow|underflow|race|illegal "
        r"(memory|address)|hotfix|regression|mismatch|broken)\b",
        re.IGNORECASE,
    ),
    # ("fused" is not among them: a PR that adds a fused kernel is a new op)
    TaskType.OPTIMIZATION: re.compile(
        r"\b(optimi[sz]\w*|speed\w*|faster|perf\w*|tun(e|ed|ing)|latency|"
        r"throughput|efficien\w*|avoid (redundant|extra|unnecessary)|reduce|bandwidth|"
        r"recompil\w*)\b",
        re.IGNORECASE,
    ),
    TaskType.NEW_OP: re.compile(
        r"\b(new (op|kernel)|add(s|ed)? (a |an )?(triton )?(kernel|op)s?|implement\w*)\b",
        re.IGNORECASE,
    ),
    TaskType.FEATURE: re.compile(
        r"\b(support|enable|feature|allow|extend|add(s|ed)? (support|option))\b", re.IGNORECASE
    ),
}

# A kernel file of a second implementation of an op (a vendor or DSL backend).
_BACKEND_PATH = re.compile(r"(^|/)backends?/|(^|/|_)(ascend|npu|gluon|cutile|rocm|xpu)(/|_|\.py$)")

_MERGE_BRANCH = re.compile(r"^Merge branch '(?P<branch>[^']+)' into '[^']+'")
_CONVENTIONAL = re.compile(r"^(?P<kind>feat|fix|perf|refactor)(\([^)]*\))?!?:", re.IGNORECASE)
_CONVENTIONAL_TYPE = {
    "feat": TaskType.FEATURE,
    "fix": TaskType.BUG_FIX,
    "perf": TaskType.OPTIMIZATION,
}


def pr_title(cand: Candidate) -> str:
    """The PR's title: GitHub's, else the subject; for a GitLab-era `Merge branch 'x' into
    'main'` commit, the merge request title on the body's first line, else the branch name."""
    if cand.github:
        return cand.github.title
    m = _MERGE_BRANCH.match(cand.subject)
    if not m:
        return cand.subject
    first = cand.body.strip().splitlines()[0].strip() if cand.body.strip() else ""
    if first and not first.lower().startswith("see merge request"):
        return first
    return re.sub(r"[_/-]+", " ", m.group("branch"))


# Break ties toward the type whose evidence is hardest to fake.
_TIE_ORDER = (TaskType.BUG_FIX, TaskType.OPTIMIZATION, TaskType.NEW_OP, TaskType.FEATURE)


def classify(cand: Candidate, targets: Sequence[KernelChange]) -> TypeDecision:
    """The task's type and the evidence for it."""
    points = dict.fromkeys(TaskType, 0.0)
    evidence: dict[TaskType, list[str]] = {t: [] for t in TaskType}

    def add(t: TaskType, pts: float, why: str) -> None:
        points[t] += pts
        evidence[t].append(f"{why} (+{pts:g} {t})")

    added = [kc for kc in targets if kc.change is ChangeKind.ADDED]
    modified = [kc for kc in targets if kc.change is ChangeKind.MODIFIED]
    main_added = [kc for kc in added if kc.kernel.role is KernelRole.KERNEL]
    tests_changed = any(f.is_test for f in cand.files)

    backend = [kc for kc in added if _BACKEND_PATH.search(kc.file)]
    if backend:
        add(
            TaskType.FEATURE,
            3,
            "adds kernels of a backend of an existing op: "
            + ", ".join(k.name for k in backend[:3]),
        )
    # an op that existed: a wrapper that launched a kernel the PR deletes or rewrites now
    # launches the added kernels (a rewrite of the op, not a new one)
    old_wrappers = {
        w
        for kc in cand.kernel_changes  # deletions too, which are no targets
        if kc.before is not None and kc.change in (ChangeKind.DELETED, ChangeKind.MODIFIED)
        for w in kc.before.wrappers
    }
    rewrite = [kc for kc in added if set(kc.kernel.wrappers) & old_wrappers]
    if rewrite:
        add(
            TaskType.OPTIMIZATION,
            3,
            "an existing op's wrapper launches new kernels: "
            + ", ".join(k.name for k in rewrite[:3]),
        )
    if added and not modified and not backend:
        add(TaskType.NEW_OP, 3, f"only adds kernels: {', '.join(k.name for k in added[:4])}")
        existing = {kc.file for kc in cand.kernel_changes if kc.before is not None}
        if existing & {kc.file for kc in added}:
            add(TaskType.FEATURE, 1, "adds kernels next to existing ones in the same file")
    if modified and main_added:
        add(TaskType.FEATURE, 2, "adds kernels and modifies existing ones")
    sig_changed = [
        kc for kc in modified if kc.before and kc.after and kc.before.params != kc.after.params
    ]
    if sig_changed:
        add(TaskType.FEATURE, 2, f"signature changed: {', '.join(k.name for k in sig_changed[:4])}")
    launch = [kc for kc in targets if kc.change is ChangeKind.LAUNCH_CHANGED]
    if launch:
        add(
            TaskType.OPTIMIZATION,
            3,
            f"only launch parameters changed for: {', '.join(k.name for k in launch[:4])}",
        )
    perf = [kc for kc in modified if is_perf_parameter_change(kc)]
    if perf:
        add(
            TaskType.OPTIMIZATION,
            3,
            f"launch/autotune parameters changed: {', '.join(k.name for k in perf[:4])}",
        )
    if modified and not sig_changed and not added:
        add(TaskType.OPTIMIZATION, 1, "modifies kernel bodies, interface unchanged")
        add(TaskType.BUG_FIX, 1, "modifies kernel bodies, interface unchanged")
    if modified and tests_changed:
        add(TaskType.BUG_FIX, 0.5, "changes tests along with the kernel")

    title = pr_title(cand)
    body = cand.github.body if cand.github else cand.body
    conventional = _CONVENTIONAL.match(title)
    if conventional and conventional.group("kind").lower() in _CONVENTIONAL_TYPE:
        kind = conventional.group("kind").lower()
        add(_CONVENTIONAL_TYPE[kind], 3, f"title is a conventional {kind!r} commit")
    for t, pattern in _TEXT_SIGNALS.items():
        m = pattern.search(title)
        if m:
            add(t, 1.5, f"title says {m.group(0)!r}")
        elif (m := pattern.search(body[:2000])) is not None:
            add(t, 0.5, f"description says {m.group(0)!r}")
    labels = cand.github.labels if cand.github else ()
    for label in labels:
        low = label.lower()
        if "bug" in low or "fix" in low:
            add(TaskType.BUG_FIX, 1.5, f"label {label!r}")
        elif "perf" in low or "optim" in low:
            add(TaskType.OPTIMIZATION, 1.5, f"label {label!r}")
        elif "feature" in low or "enhancement" in low:
            add(TaskType.FEATURE, 1.5, f"label {label!r}")

    best = max(_TIE_ORDER, key=lambda t: (points[t], -_TIE_ORDER.index(t)))
    only_new = added and not modified and not rewrite
    if only_new and best in (TaskType.BUG_FIX, TaskType.OPTIMIZATION):
        # words cannot outvote the code: a PR that only adds kernels is new code, whatever its
        # title says ("fix", "fast", "optimized"); the fix or the speed-up is the new kernel
        best = max((TaskType.NEW_OP, TaskType.FEATURE), key=lambda t: points[t])
    return TypeDecision(type=best, evidence=tuple(evidence[best]))


BEHAVIOUR_CHANGED = (
    "on the GPU its tests fail at the setup state and pass with the gold: the change is one of "
    "behaviour, which an optimization keeps"
)


def behaviour_type(task: Task) -> TypeDecision:
    """The type of an optimization by its code whose tests the GPU saw fail at the setup state
    and pass with the gold (Megatron-LM #6521, "batch-invariance generation": 4 such tests):
    a bug fix when its title says so, else a feature; the code's evidence is kept after."""
    was = f"curation said {task.task_type.type}: " + "; ".join(task.task_type.evidence)
    m = _TEXT_SIGNALS[TaskType.BUG_FIX].search(task.title)
    if m:
        return TypeDecision(
            TaskType.BUG_FIX, (BEHAVIOUR_CHANGED, f"title says {m.group(0)!r}", was)
        )
    return TypeDecision(TaskType.FEATURE, (BEHAVIOUR_CHANGED, was))
