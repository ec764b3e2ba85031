"""The verification gate: which tasks enter the benchmark's default configuration.

Reads: a task (its type and hardware needs), the node ids chosen for it, and its reference
runs. Writes nothing; `eval.reference` stores the verdict in task.json and reference.json.

The rule (DESIGN.md, "Validity"):
- a task whose hardware is not one NVIDIA GPU without NVLink multicast is `out_of_scope` and
  never run where its needs are not met (multicast is never turned on);
- otherwise it is `verified` when the gold passes every kept node id in every run, and at least
  one node id fails at the setup state and passes with the gold in every run (new_op, bug_fix,
  feature). An optimization task is verified by its workload (`workload_verdict`: the gold at
  least `MIN_SPEEDUP` times faster than the setup state on the workload's metric (its total over
  the sizes), the totals' spreads apart (sum of gold p75 < sum of base p25; a size where the
  gold is slower is named in the reason), the gold at least `MIN_GOLD_US` in all, the base's
  outputs within tolerance of the gold's, no gold call above `MAX_EFFICIENCY` times the GPU's
  measured peak); until it has one it stays `unverified: no workload`;
- every other task is `unverified` with the reason: no test launches a target, a package the
  tests import is missing (named), the gold fails (which tests, which failure class), flaky
  tests, no fail-to-pass test. A test that failed at the setup state by running out of GPU
  memory is not a fail-to-pass test: the machine's load failed it, not the missing change.
Flaky node ids (outcomes differ between runs of one variant) are listed and left out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from curation.classify import BEHAVIOUR_CHANGED, behaviour_type
from curation.hardware import BLACKWELL_EVIDENCE
from curation.imports import UNDEFINED_UPSTREAM
from curation.model import Hardware, Task, TaskType, TypeDecision, Verification, VerificationStatus
from curation.testsel import module_name
from eval.launch_capture import kernel_name, same_kernel
from eval.model import (
    OUT_OF_MEMORY,
    PYTEST_NO_TESTS,
    Environment,
    FailureClass,
    RunResult,
    Variant,
)
from eval.targets import watched_kernels
from eval.workload_model import MAX_EFFICIENCY, MIN_GOLD_US, WorkloadResult, totals_separated

MIN_SPEEDUP = 1.10  # the gold over the setup state, on the workload's metric

# the openings of verdict reasons that tools read back (scripts/rerun_candidates.py)
PINS_DIFFER = "installed package version differs from the task's pins"
HOST_REJECTS = "the framework does not import with the installed"
SELECTION_FAILED = "the selection run failed"
NO_FAIL_TO_PASS = "no test fails at the setup state and passes with the gold"
NOT_FASTER = "gold not faster enough on the workload"
SETUP_UNRUNNABLE = "the setup state fails before its tests run (infra), not in them"
NO_LAUNCH = "no test launches a target kernel"
# a selection run that failed to compile on another Triton than the task's environment pins
# (2026-12-06: 23 of the 30 such tasks are pinned to Triton 2.1 or 2.2, flash-linear-attention of
# January and February 2024; the device has 3.6): what it would take is that Triton
TRITON_DRIFT = "the code does not compile on this Triton, not the task's pinned one"
# pytest collected nothing where the selection looked (its exit 5): the commit has no pytest
# test for it, only scripts (flash-linear-attention of December 2023: `test_retention.py` at the
# root runs under `if __name__ == "__main__"`; #d39f1ea7ab, #bdf762f839, #bd99ba2e72 had read
# "the selection run failed (infra)", as if a rerun could help)
NO_TEST = "no test to run: pytest collected none at this commit"
# pytest refused test files of the selection for sharing a basename with another file of the run
# (no `__init__.py`; its "import file mismatch"): the tests that reach the targets may be among
# them. Runs since 2026-12-07 import such files by path (`eval.runner.import_layout`); a verdict
# judged on a run before says so (12 flash-linear-attention selections, e.g. #1f52c84c97)
NAME_COLLISION = "pytest refused test files of the selection for their names"
_MISMATCH = "which is not the same as the test file we want to collect"
# a test module that downloads at import (flash-linear-attention's `tests/test_padding.py` loads
# `fla-hub/gla-340M-15B` from the hub): the GPU machine has no network, so the module errors at
# collection; not the framework failing to import (#097c1fd23f read "does not import with the
# installed transformers (OSError: We couldn't connect to 'https://huggingface.co' ...)")
NEEDS_NETWORK = "a test module needs the network, which the GPU machine does not have"
_NETWORK = re.compile(
    r"couldn't connect to|ConnectionError|NameResolutionError|Failed to resolve|"
    r"Temporary failure in name resolution|Network is unreachable|offline mode"
)
OWN_CODE_GAP = "the framework's own code does not import at this commit"
# an own-code gap whose every missing name is one the PR's tests import though its own commit
# does not define it (curation's `tests.undefined_upstream`): a test module broken upstream, which
# no rerun or pin mends (flash-linear-attention #9043fbf03d: `fused_recurrent_simple_gla`, which
# its `fla.ops.simple_gla` does not export); `curation.check` warns of it in the same words
BROKEN_UPSTREAM = UNDEFINED_UPSTREAM

_MISSING = re.compile(r"No module named '([\w.]+)'")
_NO_NAME = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")
# a test's own skip for want of a package: "Skipped: causal_conv1d is not installed", and
# Megatron-LM's "Skipped: causal_conv1d not installed"
_NOT_INSTALLED = re.compile(
    r"Skipped: (?:.*?\s)?'?(?!is\b)([A-Za-z_][\w.-]*)'? (?:is )?not installed"
)
# a frame of an installed package in pytest's traceback, and the error it ends with
_SITE_FRAME = re.compile(r"site-packages/([A-Za-z_]\w*)/[^\n:]*:\d+: in \w+")
_ERROR_LINE = re.compile(r"^E\s+(\w+(?:Error|Exception)\b.*)$", re.M)
# a Blackwell GPU's name (B200, GB200, B300, RTX 5090, RTX PRO 6000 Blackwell)
_BLACKWELL_GPU = re.compile(r"blackwell|\bG?B[123]\d\d\b|RTX 50\d0", re.I)
# a test's own skip for want of devices: "At least 2 GPUs required", "requires 4 GPUs"
_FEW_GPUS = re.compile(r"(?:at least|requires?|needs?)\s+(\d+)\s+(?:GPUs|CUDA devices|devices)\b",
                       re.I)  # fmt: skip


def hardware_gap(
    needs: Hardware, gpus_here: int | None = None, allow_multicast: bool = False
) -> str | None:
    """Why this machine cannot run a task with `needs`; None when it can. Without `gpus_here`
    only what rules out any NVIDIA machine of this harness (another vendor, multicast)."""
    if needs.vendor.value != "nvidia":
        return f"needs a {needs.vendor.value} accelerator"
    if needs.nvlink_multicast and not allow_multicast:
        return "needs NVLink multicast (never enabled by this harness)"
    if gpus_here is not None and needs.gpus > gpus_here:
        return f"needs {needs.gpus} GPUs ({gpus_here} here)"
    return None


def arch_gap(needs: Hardware, gpu: str) -> str | None:
    """Why the GPU named `gpu` cannot show the gain of a gold whose change tests for a newer
    GPU generation (`Hardware.arch`, read by curation from the lines the gold adds); None when
    it can, or when the change tests for none."""
    if needs.arch != "blackwell" or _BLACKWELL_GPU.search(gpu):
        return None
    where = next((e.split(": ", 1)[0] for e in needs.evidence if BLACKWELL_EVIDENCE in e), "?")
    return (
        f"the gold's change tests for a Blackwell GPU ({where}) and this GPU ({gpu}) is not "
        f"one: its gain may show only there"
    )


def optimization_verdict(
    task: Task, workload: WorkloadResult, gpu: str
) -> tuple[VerificationStatus, str]:
    """An optimization's status by its workload on the GPU named `gpu`: verified when the
    workload shows the gold's gain (`workload_verdict`); out of scope when it shows none and
    the gold's change tests for a GPU generation this one is not (Liger-Kernel #1267 on an
    H100: 1.00x, its warps chosen anew only on Blackwell); unverified otherwise."""
    kernels = watched_kernels(task)  # `name@path`: another file's kernel of a name is not it
    named = task.named_kernel
    ok, why = workload_verdict(
        workload, kernels, kernels[task.kernels.index(named)] if named else None
    )
    if ok:
        return VerificationStatus.VERIFIED, why
    gap = arch_gap(task.requires, gpu) if why.startswith(NOT_FASTER) else None
    if gap:
        return VerificationStatus.OUT_OF_SCOPE, f"{why}; {gap}"
    return VerificationStatus.UNVERIFIED, why


def released_tests_verdict(task: Task, workload: WorkloadResult, gpu: str) -> Verification | None:
    """An optimization's verdict by a new workload measurement where its directory has no
    reference runs, only the tests' lists its verdict was restored with from a release
    (`scripts/restore_verdicts.py`): when those lists say the gold passed every kept node id at
    both states (all of them pass-to-pass, none fail-to-pass), the tests' part is the release's
    and the workload decides, as `decide` would, dated and placed as the measurement. None when
    the lists do not say so (the caller keeps "its tests have no reference run yet"). Found on
    2026-12-07 (eighth session): the H100 remeasure of Liger-Kernel #1112, verified on the H200
    with day-2 runs no state keeps, took it back to unverified."""
    tests = task.tests
    if task.task_type.type is not TaskType.OPTIMIZATION or tests.fail_to_pass:
        return None
    if not tests.node_ids or not set(tests.node_ids) <= set(tests.pass_to_pass):
        return None
    status, why = optimization_verdict(task, workload, gpu)
    why = f"{len(tests.node_ids)} tests pass with the gold; {why}"
    return Verification(status, why, workload.measured_at, workload.environment)


def gpus_wanted(selection: RunResult | None) -> tuple[int, str] | None:
    """(fewest GPUs, a skip message) when every test of the selection run skipped itself for
    want of devices (flash-linear-attention #774's context-parallel tests on one H200): the
    task needs more GPUs than this machine has, whatever curation read from its files."""
    if selection is None or not selection.tests:
        return None
    found = []
    for t in selection.tests:
        m = _FEW_GPUS.search(t.message or "") if t.outcome == "skipped" else None
        if m is None:
            return None
        found.append((int(m.group(1)), t.message.strip()))
    return min(found)


def import_gap(
    runs: Sequence[RunResult], own: Collection[str] = (), upstream: Collection[str] = ()
) -> str | None:
    """Why the runs' imports failed, from their logs: packages that are missing, the
    framework's own packages (`own`) lacking a module or name at this commit (flash-linear-
    attention #444's merge commit imports `fla.ops.comba.cumsum`, which it never added), or
    installed packages there in another version than the task's (Python names the deepest
    module it could not find, so `No module named 'a.b'` means `a` was found; `cannot import
    name 'X' from 'a.b'` too), a test module whose import failed inside an installed package
    (flash-linear-attention's older models register a name `transformers` now has itself: "'bitnet'
    is already used by a Transformers config"; that task wants its own transformers), a test
    module that wanted the network at import (NEEDS_NETWORK), or a selection whose every test
    skipped for a package "is not installed". An own-code gap whose
    every missing name is in `upstream` (names the PR's own commit does not define either,
    curation's `tests.undefined_upstream`) is BROKEN_UPSTREAM. None when no import failed."""
    missing: set[str] = set()
    lacks: dict[str, set[str]] = {}
    rejected: dict[str, str] = {}  # installed package -> the error it raised at import
    offline: dict[str, None] = {}  # test modules that wanted the network at import
    for r in runs:
        if r.tests and all(t.outcome == "skipped" for t in r.tests):
            missing.update(skipped_for_packages([r]))
        for t in r.tests:
            if t.outcome == "error" and _NETWORK.search(t.message or ""):
                offline[t.nodeid.split("::")[0]] = None
            elif t.outcome == "error" and " in <module>" in (t.message or ""):
                frames, err = _SITE_FRAME.findall(t.message), _ERROR_LINE.findall(t.message)
                if frames and err and frames[-1] not in own:
                    rejected.setdefault(frames[-1], err[-1].strip()[:120])
        for text in (r.detail, *(t.message for t in r.tests)):
            for mod in _MISSING.findall(text or ""):
                top, _, rest = mod.partition(".")
                if rest:
                    lacks.setdefault(top, set()).add(mod)
                else:
                    missing.add(top)
            for name, mod in _NO_NAME.findall(text or ""):
                lacks.setdefault(mod.split(".")[0], set()).add(f"{mod}.{name}")
    if missing:
        return f"missing package(s) {', '.join(sorted(missing))}"

    def lacking(tops: dict[str, set[str]]) -> str:
        return "; ".join(f"{top} lacks {', '.join(sorted(names)[:3])}" for top, names in
                         sorted(tops.items()))  # fmt: skip

    mine = {top: names for top, names in lacks.items() if top in own}
    if mine:
        names = sorted({n for ns in mine.values() for n in ns})
        if set(names) <= set(upstream):
            return f"{BROKEN_UPSTREAM}: {', '.join(names)}"
        return f"{OWN_CODE_GAP}: {lacking(mine)}"
    if lacks:
        return f"{PINS_DIFFER}: {lacking(lacks)}"
    if rejected:
        return f"{HOST_REJECTS} " + "; ".join(
            f"{pkg} ({err})" for pkg, err in sorted(rejected.items())
        )
    if offline:
        return f"{NEEDS_NETWORK}: {', '.join(list(offline)[:3])}"
    return None


def offline_only(run: RunResult) -> bool:
    """Whether every test of `run` that failed or errored did so for want of the network: the
    run's failure is the machine's, and the verdict rests on the tests that ran."""
    bad = [t for t in run.tests if t.outcome in ("failed", "error")]
    return bool(bad) and all(_NETWORK.search(t.message or "") for t in bad)


def ran_any(run: RunResult | None) -> bool:
    """Whether any test of `run` ran to an outcome (passed or failed), rather than erroring at
    collection or skipping."""
    return run is not None and any(t.outcome in ("passed", "failed") for t in run.tests)


def skipped_for_packages(runs: Sequence[RunResult]) -> list[str]:
    """The packages the runs' tests skipped for ("Skipped: causal_conv1d is not installed")."""
    return sorted(
        {
            m.split(".")[0]
            for r in runs
            for t in r.tests
            if t.outcome == "skipped"
            for m in _NOT_INSTALLED.findall(t.message or "")
        }
    )


def target_modules(task: Task) -> list[str]:
    """The modules the task's targets live in (`fla.ops.utils.op`), sorted."""
    return sorted(m for f in task.target_files if (m := module_name(f)))


def own_packages(task: Task) -> set[str]:
    """The framework's top-level packages the task's targets live in (`fla`, `liger_kernel`)."""
    return {m.split(".")[0] for m in target_modules(task)}


def out_of_memory(nodeid: str, runs: Sequence[RunResult]) -> bool:
    """Whether a run failed `nodeid` by running out of GPU memory (its message says so, or the
    run's when the test has no outcome): a failure of the machine's load, not of the kernel."""
    for r in runs:
        test = next((t for t in r.tests if t.nodeid == nodeid), None)
        text = test.message if test is not None else r.detail
        if OUT_OF_MEMORY.search(text or ""):
            return True
    return False


def _versions(packages: Sequence[str]) -> dict[str, str]:
    out = {}
    for p in packages:
        name, _, version = p.partition("==")
        out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def package_gap(pins: Sequence[str], recorded: Sequence[str], here: Sequence[str]) -> str | None:
    """The task's pinned packages (`name==version`) whose version in the package set `here`
    (the interpreter a run would use) differs from the one the reference ran on (`recorded`):
    runs on two package sets never meet in one verdict or score. None when they agree, or when
    the reference recorded no package set."""
    if not recorded:
        return None
    was, now = _versions(recorded), _versions(here)
    pinned = [name for name in sorted(_versions(pins)) if name in was]
    gaps = [f"{n} {was[n]} (here {now.get(n, 'missing')})" for n in pinned if now.get(n) != was[n]]
    return ", ".join(gaps) or None


def environment_label(env: Environment) -> str:
    return f"{env.gpu}; torch {env.torch}; triton {env.triton}; packages {env.packages_sha[:12]}"


def _launch_names(entries: Sequence[str]) -> str:
    """A launch log's kernels for a reason: each name once, without the files of its
    `name@file` entries."""
    return ", ".join(sorted({kernel_name(e) for e in entries}))


def workload_verdict(
    result: WorkloadResult, kernels: Sequence[str] = (), named: str | None = None
) -> tuple[bool, str]:
    """Whether an optimization's workload shows the gold's gain, and the measured ratio. With
    the task's kernels (`name`, or `name@path` to tell a target from another file's kernel of
    its name: `eval.launch_capture.same_kernel`), a size whose gold call launched none of them
    does not time the task (on the H200, Liger-Kernel #1000's largest size tied to 0.1%); with
    the kernel the task is named after (`Task.named_kernel`), a workload none of whose gold
    calls launched it does not time the PR's main change (flash-linear-attention #8d8bfcd4d0
    and #368, 1.00x on `chunk_gla` and `l2_norm`, which launch only a side target or none of
    the PR's kernels)."""
    broken = [f"{c.label}: {c.error}" for c in result.calls if c.error]
    if broken:
        # the sizes that ran on both say what the failure hides (Liger-Kernel #1208 on the
        # H100: 1.02x and 1.01x, its large size beyond the base's grid limit)
        ran = [f"{c.label} {c.base.median_ms / c.gold.median_ms:.2f}x" for c in result.calls
               if c.base is not None and c.gold is not None and c.gold.median_ms]  # fmt: skip
        also = f"; the sizes both ran: {', '.join(ran)}" if ran else ""
        return False, f"workload failed ({broken[0][:200]}){also}"

    def reaches(launched: Sequence[str], wanted: Sequence[str]) -> bool:
        return any(same_kernel(e, w) for e in launched for w in wanted)

    missed = [
        c
        for c in result.calls
        if kernels and c.gold_launched is not None and not reaches(c.gold_launched, kernels)
    ]
    if missed:
        seen = _launch_names(missed[0].gold_launched or ()) or "no Triton kernel"
        return False, (
            f"the workload's gold launches no target kernel: its {missed[0].label} call "
            f"launches no target kernel (it launched {seen[:200]})"
        )
    recorded = [c.gold_launched for c in result.calls if c.gold_launched is not None]
    if named and recorded and not any(reaches(launched, [named]) for launched in recorded):
        seen = _launch_names([k for launched in recorded for k in launched]) or "none"
        return False, (
            f"the workload's gold never launches the kernel the task is named after "
            f"({kernel_name(named)}; it launched {seen[:200]})"
        )
    # a gold call faster than the GPU can move its tensors did not do its sizes' work (its
    # grid or scalars were the test's): none of its times or outputs says anything
    # (flash-linear-attention #449's first plan on the H200: 98-107x the copy peak)
    skipped = [c for c in result.calls if (c.gold_efficiency or 0) > MAX_EFFICIENCY]
    if skipped:
        c = skipped[0]
        return False, (
            f"the workload's gold did not do its sizes' work: its {c.label} call ran at "
            f"{c.gold_efficiency:.3g}x the GPU's measured peak for its sizes (a grid or scalar "
            f"not scaled with its tensors?)"
        )
    base, gold = result.base_total_ms, result.gold_total_ms
    if not base or not gold:
        return False, "the workload's base or gold was not timed"
    ratio = base / gold
    unit = "ms" if str(result.metric) == "cold_wall_time" else "ms kernel time"
    measured = f"gold {gold:.4g} vs base {base:.4g} {unit}, {ratio:.2f}x"
    mismatched = [c for c in result.calls if c.base_matches is False]
    if mismatched:
        return (
            False,
            f"the workload's base outputs differ from the gold's ({mismatched[0].mismatch})",
        )
    if gold * 1e3 < MIN_GOLD_US:
        return False, f"workload too small: {measured} (the gold needs >= {MIN_GOLD_US:.0f} us)"
    if ratio < MIN_SPEEDUP:
        return False, f"{NOT_FASTER}: {measured} (needs {MIN_SPEEDUP}x)"
    if not totals_separated(result.calls):
        return False, f"workload spreads overlap: {measured} (gold p75 >= base p25 in total)"
    slower = [
        f"{c.label}: gold {c.gold.median_ms:.4g} vs base {c.base.median_ms:.4g} ms"
        for c in result.calls
        if c.base is not None and c.gold is not None and c.gold.p25_ms > c.base.p75_ms
    ]
    tail = f"; slower on {', '.join(slower)}" if slower else ""
    return True, f"workload ({result.metric}, {len(result.calls)} sizes): {measured}{tail}"


def fail_to_pass_possible(
    task: Task, node_ids: Sequence[str], base: RunResult, gold: RunResult
) -> bool:
    """Whether more runs could still give a fail-to-pass test after the first base and gold
    runs: a kept test that passed with the gold and not at the setup state. When none did, no
    test can pass with the gold and fail at the setup state in every run, so a task that needs
    one (new_op, bug_fix, feature) is unverified whatever the other runs say (call 15's
    flash-linear-attention #1107, #1135, #714, #717, #795 ran four more runs each, about 100 s
    of a slot, to say "no fail-to-pass" again). An optimization needs every run's passes."""
    if task.task_type.type is TaskType.OPTIMIZATION:
        return True
    return any(gold.outcome_of(n) == "passed" and base.outcome_of(n) != "passed" for n in node_ids)


def setup_unrunnable(base: Sequence[RunResult]) -> bool:
    """Whether every run of the setup state failed before its tests ("infra": the test module
    does not import): its failures are no kernel's (flash-linear-attention #466's restored base
    imports a helper from a module whose copy the PR deleted, 2026-12-05)."""
    return bool(base) and all(r.failure is FailureClass.INFRA for r in base)


def behaviour_changed(task: Task, fail_to_pass: Sequence[str], base: Sequence[RunResult]) -> bool:
    """Whether an optimization by its code has tests that fail at a runnable setup state and
    pass with the gold: its change is one of behaviour, which an optimization keeps."""
    return (
        task.task_type.type is TaskType.OPTIMIZATION
        and bool(fail_to_pass)
        and not setup_unrunnable([r for r in base if r.variant is Variant.BASE])
    )


def retype(
    task: Task, verdict: Verification, fail_to_pass: Sequence[str], runs: Sequence[RunResult]
) -> TypeDecision | None:
    """The type a verified optimization by its code takes when `decide` judged it by its
    fail-to-pass tests (`behaviour_changed`; `curation.classify.behaviour_type`): a feature, or
    a bug fix when its title says so. None for any other task, which keeps curation's type; the
    verdict's recorders (`reference`, `rejudge`, `workload`) store it with the verdict."""
    if verdict.status is not VerificationStatus.VERIFIED:
        return None
    if not behaviour_changed(task, fail_to_pass, runs):
        return None
    return behaviour_type(task)


_TESTS_PASSED = re.compile(r"^\d+ tests pass with the gold; ")


def reason_kind(reason: str) -> str:
    """A verdict's reason without its particulars, to count reasons by: the text before any
    colon or parenthesis, after the task type that some reasons start with ("bug_fix: no test
    fails at the setup state ..." counts as "no test fails at the setup state ...") and the
    count of tests an optimization's gold passed before its workload's verdict ("3 tests pass
    with the gold; gold not faster enough ..." counts as "gold not faster enough ...")."""
    head, _, rest = reason.partition(": ")
    if rest and head in {str(t) for t in TaskType}:
        reason = rest
    reason = _TESTS_PASSED.sub("", reason)
    return reason.split(":", 1)[0].split(" (", 1)[0].strip()


def observed(run: RunResult, node_ids: Sequence[str]) -> dict[str, str]:
    """What `run` says about each kept test. A test it did not report is "absent", unless the
    run was killed at its time limit: then that test and the one under way when it was killed
    (reported as an error) were not observed at all (2026-12-04, H200: seven
    flash-linear-attention gold runs cut at 420 s while compiling, each with its last test in
    error, had made those tests look flaky)."""
    got = {t.nodeid: t.outcome for t in run.tests}
    if run.failure is FailureClass.TIMEOUT:
        return {n: got[n] for n in node_ids if got.get(n, "error") != "error"}
    return {n: got.get(n, "absent") for n in node_ids}


def _other_minor(a: str, b: str) -> bool:
    """Whether two versions differ in major.minor (`envbuild.versions.major_minor`, imported
    here: the release table it loads would cost every importer of the gate 40 ms)."""
    from envbuild.versions import major_minor

    return major_minor(a) != major_minor(b)


def name_collisions(selection: RunResult | None) -> tuple[str, ...]:
    """The test files pytest refused in `selection` for a name another file of the run had."""
    tests = selection.tests if selection is not None else ()
    return tuple(
        dict.fromkeys(t.nodeid for t in tests if t.outcome == "error" and _MISMATCH in t.message)
    )


def decide(
    task: Task,
    node_ids: Sequence[str],
    base: Sequence[RunResult],
    gold: Sequence[RunResult],
    env: Environment,
    selection: RunResult | None = None,
    workload: WorkloadResult | None = None,
    triton_pin: str | None = None,
) -> tuple[Verification, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(verdict, fail_to_pass, pass_to_pass, flaky) over the kept node ids. `triton_pin`:
    the Triton version the task's environment pins (env.json), when known."""
    when = datetime.now(UTC).isoformat(timespec="seconds")

    def verdict(status: VerificationStatus, reason: str) -> Verification:
        return Verification(status, reason, when, environment_label(env))

    if not node_ids:
        wanted = gpus_wanted(selection)
        if wanted is not None:
            why = f"needs {wanted[0]} GPUs: every selected test skips here ({wanted[1][:80]})"
            return verdict(VerificationStatus.OUT_OF_SCOPE, why), (), (), ()
        gap = import_gap([selection] if selection is not None else [], own_packages(task),
                         task.tests.undefined_upstream)  # fmt: skip
        aside = ""
        if (
            gap
            and gap.startswith((OWN_CODE_GAP, BROKEN_UPSTREAM, NEEDS_NETWORK))
            and ran_any(selection)
        ):
            # a test module of the collected directory imports a name its own commit lacks,
            # while other tests ran: that module's gap, not why nothing was kept (2026-12-06,
            # H200: 13 old flash-linear-attention tasks, e.g. #41f4eed82f, whose
            # tests/ops/test_retention.py imports `naive_retention`, while the tests that ran
            # failed to compile or launched no target)
            aside = f" (besides, {gap.removeprefix(OWN_CODE_GAP + ': ')})"
            gap = None
        if gap:
            why = gap
        elif (
            selection is not None and selection.exit_code == PYTEST_NO_TESTS and not selection.tests
        ):
            why = NO_TEST + aside
        elif (
            selection is not None
            and selection.failure is FailureClass.COMPILE_ERROR
            and triton_pin
            and _other_minor(triton_pin, env.triton)
        ):
            why = (
                f"{TRITON_DRIFT} (here {env.triton}, pinned {triton_pin}): "
                f"{selection.detail[:160]}{aside}"
            )
        elif (
            selection is not None
            and selection.failure is not FailureClass.NONE
            and not offline_only(selection)
        ):
            why = f"{SELECTION_FAILED} ({selection.failure}): {selection.detail[:160]}{aside}"
        else:
            why = NO_LAUNCH + aside
        return verdict(VerificationStatus.UNVERIFIED, why), (), (), ()
    outcome = {
        v: [observed(r, node_ids) for r in runs] for v, runs in (("base", base), ("gold", gold))
    }
    flaky = sorted(
        n for n in node_ids if any(len({o[n] for o in outcome[v] if n in o}) > 1 for v in outcome)
    )
    # not seen in some run that its time limit cut: too few observations, but not flaky
    cut = [n for n in node_ids if n not in flaky and any(n not in o for v in outcome
                                                         for o in outcome[v])]  # fmt: skip
    steady = [n for n in node_ids if n not in flaky and n not in cut]
    gold_ok = [n for n in steady if all(o.get(n) == "passed" for o in outcome["gold"])]
    # a test no gold run finished (each cut by its limit in it or before it) is the gold's
    # failure, as a test the gold fails is: the gold cannot run it
    never = [n for n in cut if gold and all(n not in o for o in outcome["gold"])]
    gold_bad = [n for n in steady if n not in gold_ok] + never
    f2p = tuple(n for n in gold_ok if all(o.get(n) != "passed" for o in outcome["base"]))
    starved = tuple(n for n in f2p if out_of_memory(n, base))  # not a failure of the setup state
    f2p = tuple(n for n in f2p if n not in starved)
    # a setup state whose every run fails before its tests (infra: the test module does not
    # import) fails them for a reason no kernel fixes: flash-linear-attention #466's restored
    # base imports `safe_exp_comba` from a module whose copy the PR deleted (2026-12-05)
    unrunnable = setup_unrunnable(base)
    if unrunnable and task.task_type.type is not TaskType.OPTIMIZATION:
        f2p = ()
    p2p = tuple(n for n in gold_ok if all(o.get(n) == "passed" for o in outcome["base"]))
    lists = f2p, p2p, tuple(flaky)
    if not gold:
        return verdict(VerificationStatus.UNVERIFIED, "no gold run"), *lists
    flagged = sorted({f for r in (*base, *gold) for f in r.flags})
    if flagged:  # a run whose verdict cannot be trusted decides nothing
        why = f"a reference run was flagged ({', '.join(flagged)})"
        return verdict(VerificationStatus.UNVERIFIED, why), *lists
    if gold_bad or not gold_ok:
        gap = import_gap(gold, own_packages(task), task.tests.undefined_upstream)
        if gap:
            why = gap
        else:
            classes = sorted({str(r.failure) for r in gold if r.failure is not FailureClass.NONE})
            why = (
                f"the gold fails {len(gold_bad)} of {len(steady) + len(never)} kept tests "
                f"({', '.join(classes) or 'test_failure'}): {', '.join(gold_bad[:3])}"
            )
            if not steady:
                why = f"every kept test is flaky ({len(flaky)}) or cut ({len(cut)})"
        return verdict(VerificationStatus.UNVERIFIED, why), *lists
    by_tests = behaviour_changed(task, f2p, base)
    if task.task_type.type is TaskType.OPTIMIZATION and not by_tests:
        if workload is None:
            why = "optimization: no workload measured yet (the gold must be faster on a workload)"
            return verdict(VerificationStatus.UNVERIFIED, why), *lists
        status, why = optimization_verdict(task, workload, env.gpu)
        why = f"{len(p2p) + len(f2p)} tests pass with the gold; {why}"
        return verdict(status, why), *lists
    if not f2p:
        why = f"{task.task_type.type}: {NO_FAIL_TO_PASS}"
        # the selection's tests that never ran here (flash-linear-attention #361: the PR's own
        # tests skip without flash-attn): the verdict rests on the others
        absent = skipped_for_packages([selection] if selection is not None else [])
        if absent:
            why += f" (selected tests skip here: {', '.join(absent)} not installed)"
        if starved:
            why = (
                f"{task.task_type.type}: the setup state failed only by running out of GPU "
                f"memory ({len(starved)} tests); run it with fewer tasks side by side"
            )
        if unrunnable:
            why = f"{task.task_type.type}: {SETUP_UNRUNNABLE} ({base[0].detail[:160]})"
        return verdict(VerificationStatus.UNVERIFIED, why), *lists
    # the same words when judged again, once the recorder has stored the type (`retype`)
    again = task.task_type.evidence[:1] == (BEHAVIOUR_CHANGED,)
    judged = behaviour_type(task).type if by_tests else (task.task_type.type if again else None)
    why = (
        f"{len(f2p)} fail-to-pass, {len(p2p)} pass-to-pass"
        + (f", {len(flaky)} flaky left out" if flaky else "")
        + (f", {len(cut)} cut by a run's time limit left out" if cut else "")
        + (f"; judged as a {judged}, not an optimization" if judged else "")
    )
    return verdict(VerificationStatus.VERIFIED, why), *lists
