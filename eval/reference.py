"""Reference runs: the verification gate's evidence, on one machine.

Reads: task directories through a `Backend`. Writes: `reference.json` (every run, the package
set, the node ids) and the verdict into task.json (`verification`, `tests.node_ids`); run logs
under the run directory.
Steps: a task whose hardware this machine lacks is `out_of_scope` and nothing runs. Otherwise a
selection run (the gold, once, capped, with the launch capture) keeps the test node ids that
launch a target kernel and pass; then the setup state (base) and the gold run on exactly those,
`runs` times each, alternating which goes first; `eval.gate` decides. Tests whose outcome
changes between runs of one variant are flaky and kept out of both lists.
"""

from __future__ import annotations

import hashlib
import logging
import platform
import re
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import RecordError
from core.frameworks import framework
from curation.model import (
    TargetRole,
    Task,
    TaskType,
    Verification,
    VerificationStatus,
)
from curation.targets import new_side_lines
from curation.taskdir import TaskDir, TaskFile, patch_digest
from eval.backends import Backend
from eval.compat import pinned_triton
from eval.gate import (
    NAME_COLLISION,
    decide,
    environment_label,
    fail_to_pass_possible,
    hardware_gap,
    name_collisions,
    retype,
    target_modules,
)
from eval.machine import gpu_stack
from eval.model import (
    PYTEST_NO_TESTS,
    Environment,
    FailureClass,
    PartialReference,
    Reference,
    RunResult,
    Variant,
    VariantSummary,
)
from eval.pytest_plugin import format_line_ranges
from eval.runner import compile_cause, failure_line, first_line
from eval.sandbox import Interrupted
from eval.tuning import restore_tuning, tuning_results
from eval.workload_model import WorkloadResult

log = logging.getLogger(__name__)


def environment(python: str | None = None) -> Environment:
    """GPU, driver, CUDA, torch and triton of this process's machine; the package set of
    `python` (the tests' interpreter, a task's virtual environment) when given."""
    gpu, cuda, torch_v, triton_v = gpu_stack()
    driver = "unavailable"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
        driver = out.stdout.strip().splitlines()[0] if out.stdout.strip() else driver
    except (OSError, subprocess.TimeoutExpired):
        pass
    packages = package_set(python)
    digest = hashlib.sha256("\n".join(packages).encode()).hexdigest()
    return Environment(gpu, driver, cuda, torch_v, triton_v, platform.python_version(),
                       platform.node(), packages, digest)  # fmt: skip


_LIST = (
    "import importlib.metadata as m\n"
    "for d in m.distributions(): print(f\"{d.metadata['Name']}=={d.version}\")\n"
)


def package_set(python: str | None = None) -> tuple[str, ...]:
    """`name==version` of every distribution an interpreter sees, sorted: this one, or the
    tests' own (`python`, a virtual environment over this one's packages)."""
    from importlib import metadata

    if python is not None and python != sys.executable:
        out = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, check=False)
        found: dict[str, str] = {}
        for line in out.stdout.splitlines():
            name, _, version = line.partition("==")
            key = name.lower().replace("_", "-")
            if key and key not in found:
                found[key] = version
        return tuple(f"{n}=={v}" for n, v in sorted(found.items()))

    seen = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name and name not in seen:
            seen[name] = dist.version
    return tuple(f"{n}=={v}" for n, v in sorted(seen.items()))


def summarize(runs: Sequence[RunResult]) -> VariantSummary:
    walls = [r.wall_s for r in runs]
    med = statistics.median(walls) if walls else 0.0
    # 0.0 means the profiler did not run (no CUDA): unknown, not free
    in_test = [t for r in runs if (t := sum(k.total_ms for k in r.kernels)) > 0]
    isolated = [
        sum(k.isolated_ms for k in r.kernels if k.isolated_ms is not None)
        for r in runs
        if any(k.isolated_ms is not None for k in r.kernels)
    ]
    kmed = statistics.median(in_test) if in_test else None
    failures: dict[str, int] = {}
    for r in runs:
        if r.failure is not FailureClass.NONE:
            failures[str(r.failure)] = failures.get(str(r.failure), 0) + 1
    return VariantSummary(
        passed_runs=sum(r.passed for r in runs),
        runs=len(runs),
        e2e_s=round(med, 3),
        e2e_spread=round((max(walls) - min(walls)) / med, 4) if med else 0.0,
        kernel_ms=round(kmed, 6) if kmed is not None else None,
        kernel_spread=(round((max(in_test) - min(in_test)) / kmed, 4) if kmed else None),
        isolated_ms=round(statistics.median(isolated), 6) if isolated else None,
        failures=failures,
    )


def _outcomes(runs: Sequence[RunResult]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for r in runs:
        for t in r.tests:
            seen.setdefault(t.nodeid, set()).add(t.outcome)
    return seen


def judge(task: Task, base: Sequence[RunResult], gold: Sequence[RunResult]) -> tuple[
    tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, str
]:  # fmt: skip
    """(fail_to_pass, pass_to_pass, flaky, valid, note).

    As in SWE-bench, the task is judged on the tests that pass with the gold kernel in every
    run: those that also pass with the base are pass-to-pass, those that fail (or do not exist)
    with the base are fail-to-pass. Tests that fail with the gold in every run (a feature this
    machine lacks, a broken test) are left out and counted in the note.
    """
    b, g = _outcomes(base), _outcomes(gold)
    flaky = sorted({n for n, o in (*b.items(), *g.items()) if len(o) > 1})
    ok = {"passed"}
    # failing, erroring, skipped or absent with the base kernel all mean "not passing"
    f2p = sorted(n for n, o in g.items() if o == ok and n not in flaky and b.get(n) != ok)
    p2p = sorted(n for n, o in g.items() if o == ok and b.get(n) == ok and n not in flaky)
    gold_failing = sorted(n for n, o in g.items() if o <= {"failed", "error"})
    # a gold run that timed out, crashed, or whose verdict cannot be trusted (tampered, a
    # channel problem: on a trusted kernel, a harness or framework problem to look at)
    broken = [r for r in gold if r.flags or r.failure in (FailureClass.TIMEOUT, FailureClass.CRASH,
                                                          FailureClass.CUDA_ERROR)]  # fmt: skip
    lists = tuple(f2p), tuple(p2p), tuple(flaky)
    if not gold or broken or not (f2p or p2p):
        classes = sorted({str(r.failure) for r in gold if not r.passed})
        details = "; ".join(sorted({r.detail for r in gold if r.detail}))[:300]
        return (*lists, False,
                f"no test passes with the gold kernel in every run ({', '.join(classes)}): "
                f"{details}")  # fmt: skip
    if task.task_type.type in (TaskType.NEW_OP, TaskType.BUG_FIX) and not f2p:
        return (*lists, False,
                f"{task.task_type.type}: no test fails with the base kernel and passes with "
                "the gold")  # fmt: skip
    note = f"{len(f2p)} fail-to-pass, {len(p2p)} pass-to-pass"
    if gold_failing:
        note += f"; {len(gold_failing)} tests fail with the gold too and are left out"
    if flaky:
        note += f"; {len(flaky)} flaky"
    return (*lists, True, note)


# The selection run: at most this many parametrizations of each test function and this many
# tests in all (a full parametrized file of a kernel library compiles for minutes), then at
# most MAX_NODE_IDS of the tests that launched a target and passed are kept.
SELECT_PER_TEST = 2
SELECT_MAX = 24
MAX_NODE_IDS = 8


_KERNEL_ROLES = (TargetRole.KERNEL, TargetRole.HELPER)


def target_kernel_names(task: Task) -> set[str]:
    """The kernel (and helper) names whose launches make a test exercise the task."""
    names = {t.name.rsplit(".", 1)[-1] for t in task.targets if t.role in _KERNEL_ROLES}
    return names or {k.name for k in task.kernels}


@dataclass(frozen=True)
class SelectionCaps:
    per_test: int = SELECT_PER_TEST  # parametrizations of one test function
    total: int = 0  # tests in the selection run (0: the framework's `select_max`, else SELECT_MAX)
    keep: int = MAX_NODE_IDS  # node ids kept for the reference runs
    timeout_s: float | None = None  # the selection run's limit (None: a run's)
    # "first": each autotuned kernel takes its first config that compiles (the verdict's runs
    # tune fully); "all": the selection tunes as Triton does
    autotune: str = "first"
    # a selection that kept nothing runs once more without the node ids it ran: those the
    # gold failed, or those that passed without launching a target
    retry_empty: bool = True


# the retry of a selection that kept nothing from the parametrizations the cap took (the gold
# failed them, or they passed without launching a target): RETRY_PER_TEST times `per_test` of
# each test function's others, those least like the ones that ran first (the plugin's
# `novel_first`)
RETRY_PER_TEST = 3
RETRIED = "again without them"
UNLAUNCHED = "its tests passed, none launched a target"
NOTHING_LEFT = "no other parametrization"


def run_cold(
    backend: Backend,
    task: Task,
    tdir: TaskDir,
    variant: Variant,
    run_dir: Path,
    retry: Callable[[RunResult], bool] = lambda _: True,
    **kwargs: Any,
) -> RunResult:
    """A run that compiles and autotunes from a cold cache (the selection, a variant's first
    run): on a busy machine that alone can outlast the limit (2026-12-04: seven
    flash-linear-attention gold runs cut at 420 s, the next ones took 20-60 s). When it is
    killed at its time limit and `retry` says so, it runs once more (`<run_dir>-again`) on
    what it compiled, and that run is the one kept. Both are run number 0."""
    result = backend.run(task, tdir, variant, run_dir, 0, **kwargs)
    if result.failure is FailureClass.TIMEOUT and retry(result):
        again = run_dir.with_name(f"{run_dir.name}-again")
        result = backend.run(task, tdir, variant, again, 0, **kwargs)
    return result


def select_node_ids(
    task: Task, tdir: TaskDir, backend: Backend, run_root: Path, caps: SelectionCaps | None = None
) -> tuple[tuple[str, ...], RunResult]:
    """One gold run over the task's test files, capped, with the launch capture: the node ids
    that launched a target kernel and passed, the PR's own tests first. A run that hit its time
    limit still gives the tests that finished before."""
    caps = caps or SelectionCaps()
    # the run collects the task's test files: node ids chosen before would be all it ran
    # (`--reselect` on flash-linear-attention #714, H200 calls 15 and 19: the three old node ids
    # ran again, never the test its PR adds)
    if task.tests.node_ids:
        task = replace(task, tests=replace(task.tests, node_ids=()))
    total = caps.total or framework(task.framework).tests.select_max or SELECT_MAX
    modules = target_modules(task)
    lines = new_side_lines(tdir.read_bytes(TaskFile.TEST_PATCH) or b"")
    env = {"TPB_SELECT_PER_TEST": str(caps.per_test), "TPB_SELECT_MAX": str(total),
           "TPB_SELECT_MODULES": ",".join(modules), "TPB_ISOLATED": "0",
           "TPB_SELECT_LINES": format_line_ranges(lines)}  # fmt: skip
    if caps.autotune == "first":
        # nor does its choice reach the verdict's runs through the task's autotuning cache
        # (the plugin also keeps kernels declared with cache_results=True from caching it)
        env |= {"TPB_AUTOTUNE": "first", "TRITON_CACHE_AUTOTUNING": "0"}

    def selection(name: str, extra: dict[str, str]) -> tuple[tuple[str, ...], RunResult]:
        # cut before any test ended (five flash-linear-attention selections of 2026-12-02/03)
        run = run_cold(backend, task, tdir, Variant.GOLD, run_root / task.task_id / name,
                       lambda r: not r.tests, extra_env=env | extra,
                       timeout_s=caps.timeout_s)  # fmt: skip
        return _kept_node_ids(task, run, caps.keep), run

    kept, run = selection("select", {})
    # Nothing kept because the gold failed the parametrization the cap took (H200 call 45,
    # 2026-12-06: flash-linear-attention #36dedac3ab, #6bf991d107, #cce7a2fc0b each ran only
    # `test_chunk[...]` with D=300, a size the gold misses its tolerance at, and ended "the
    # selection run failed"): once more without those node ids, so that each function's next
    # parametrization runs. The gate still keeps only what the gold passes.
    # (a run cut at its limit or crashed is not retried: the second would be cut the same way)
    # The retry takes RETRY_PER_TEST parametrizations a function, not one, least like those
    # that ran: the next one in collection order often shares the value the gold fails (H100
    # call 46, 2026-12-06: all 11 retried selections failed again, #36dedac3ab's next case
    # still had D=300).
    # Nothing kept because the tests the cap took passed without launching a target (a flag or
    # size of their first parametrizations takes another path: flash-linear-attention #702's
    # `test_chunk` case had gate=False, under which the op never runs the gate kernel): once
    # more without them too. Not after a run whose tests all skipped (a missing package skips
    # the next parametrizations as well).
    failed = [t.nodeid for t in run.tests if t.outcome == "failed"]
    passed = [t.nodeid for t in run.tests if t.outcome == "passed"]
    retry = run.failure in (FailureClass.TEST_FAILURE, FailureClass.COMPILE_ERROR)
    unlaunched = run.failure is FailureClass.NONE and bool(passed)
    if not kept and ((failed and retry) or unlaunched) and caps.retry_empty:
        wider = {"TPB_SELECT_SKIP": "\n".join(failed + passed),
                 "TPB_SELECT_PER_TEST": str(max(caps.per_test, 1) * RETRY_PER_TEST)}  # fmt: skip
        kept_again, again = selection("select-skip", wider)
        if kept_again:
            return kept_again, again
        first = run.detail.strip() or (UNLAUNCHED if unlaunched else "")
        if again.exit_code == PYTEST_NO_TESTS and not again.tests:
            # no other parametrization to run: the first run's record stands, saying so
            return kept, replace(run, detail=f"{first} ({RETRIED}: {NOTHING_LEFT})")
        # both runs in the record (their tests, kernels and time), the retry's failure last:
        # the verdict's reason says the selection failed twice and how (once, when both failed
        # the same way: a compile error's cause then fits the reason's cut, call 73)
        second = again.detail.strip() or (UNLAUNCHED if again.failure is FailureClass.NONE else "")
        detail = (f"{second} ({RETRIED}: the same)" if first == second
                  else f"{first[:70]} | {RETRIED}: {second}")  # fmt: skip
        return kept, replace(
            again, tests=run.tests + again.tests, kernels=run.kernels + again.kernels,
            wall_s=run.wall_s + again.wall_s, detail=detail)  # fmt: skip
    return kept, run


def _kept_node_ids(task: Task, run: RunResult, keep: int) -> tuple[str, ...]:
    """The node ids of a selection run that launched a target kernel and passed, the PR's own
    test files first, at most `keep`."""
    names = target_kernel_names(task)
    # the session's kernel report, and each test's own report (all there is when the run was
    # killed at its time limit: the tests that finished before still count)
    launched = {n for k in run.kernels if k.kernel in names for n in k.nodes}
    launched |= {t.nodeid for t in run.tests if names.intersection(t.launched)}
    passed = [t.nodeid for t in run.tests if t.outcome == "passed" and t.nodeid in launched]
    own = set(task.tests.changed_in_pr)
    ranked = sorted(passed, key=lambda n: (n.split("::", 1)[0] not in own, passed.index(n)))
    return tuple(ranked[:keep])


def run_reference(
    task: Task,
    tdir: TaskDir,
    backend: Backend,
    run_root: Path,
    runs: int = 3,
    *,
    reselect: bool = False,
    gpus_here: int = 1,
    caps: SelectionCaps | None = None,
    all_runs: bool = False,
    resume: bool = True,
) -> Reference | None:
    """Choose the node ids (once), run base and gold `runs` times each on them, alternating
    which goes first; the gate's verdict goes into task.json, the runs into reference.json.
    After the first pair, a task that can no longer have a fail-to-pass test stops there
    (`fail_to_pass_possible`; its verdict is unverified either way) unless `all_runs`.
    The selection and each finished run are kept in reference.partial.json as they end; with
    `resume` an interrupted reference on the same environment and patches goes on from there.
    None when the task's hardware is not here (its verdict says so; nothing ran)."""
    interpreter = getattr(backend, "interpreter", None)
    env = environment(interpreter(tdir)[0] if interpreter is not None else None)
    gap = hardware_gap(task.requires, gpus_here)
    if gap is not None:
        when = datetime.now(UTC).isoformat(timespec="seconds")
        verdict = Verification(VerificationStatus.OUT_OF_SCOPE, gap, when, environment_label(env))
        tdir.record_verification(verdict)
        return None
    key = resume_key(tdir, env)
    partial = resumable(tdir) if resume else None
    cache_of = getattr(backend, "tuning_cache", None)
    cache = cache_of(task) if cache_of is not None else None
    base_tuned: dict[str, str] = {}
    if partial is not None and partial.key == key:
        node_ids, selection, results = partial.node_ids, partial.selection, list(partial.runs)
        base_tuned = dict(partial.autotune_base)
        if cache is not None:
            restore_tuning(cache, partial.autotune)
    else:
        selection = None
        node_ids = task.tests.node_ids
        if reselect or not node_ids:
            node_ids, selection = select_node_ids(task, tdir, backend, run_root, caps)
        results = []

    before_base: set[str] = set()

    def checkpoint() -> None:
        tuned = tuning_results(cache) if cache is not None else {}
        # the base's own tuning: what the first base run added to the cache, before any gold
        # run (the first pair runs the base first); what was there before it (a selection that
        # tuned all configs: the gold's) is never the base's
        if not any(r.variant is Variant.BASE for r in results):
            before_base.update(tuned)
        elif not base_tuned and not any(r.variant is Variant.GOLD for r in results):
            base_tuned.update({k: v for k, v in tuned.items() if k not in before_base})
        saved = datetime.now(UTC).isoformat(timespec="seconds")
        kept = PartialReference(task.task_id, key, node_ids, selection, tuple(results),
                                autotune=tuned, autotune_base=dict(base_tuned),
                                saved_at=saved)  # fmt: skip
        tdir.store(TaskFile.REFERENCE_PARTIAL, kept)

    checkpoint()
    task = replace(task, tests=replace(task.tests, node_ids=node_ids))
    try:
        _make_runs(task, tdir, backend, run_root, runs, node_ids, results, checkpoint, all_runs)
    except Interrupted:
        checkpoint()  # the run cut short leaves no result, but what Triton tuned meanwhile
        raise
    base = [r for r in results if r.variant is Variant.BASE]
    gold = [r for r in results if r.variant is Variant.GOLD]
    workload = tdir.load(TaskFile.WORKLOAD_RESULT, WorkloadResult)
    verdict, f2p, p2p, flaky = decide(task, node_ids, base, gold, env, selection, workload,
                                      pinned_triton(tdir))  # fmt: skip
    ref = Reference(
        task_id=task.task_id,
        environment=env,
        tests=tuple(sorted({n.split("::")[0] for n in node_ids})),
        base=summarize(base),
        gold=summarize(gold),
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        valid=verdict.status is VerificationStatus.VERIFIED,
        validity_note=verdict.reason,
        flaky=flaky,
        runs=tuple(results),
        node_ids=node_ids,
        selection=selection,
        verification=str(verdict.status),
        autotune=tuning_results(cache) if cache is not None else {},
        autotune_base=base_tuned,
    )
    tdir.store(TaskFile.REFERENCE, ref)
    tdir.record_verification(verdict, node_ids, launches_seen(task, results),
                             retype(task, verdict, f2p, results))  # fmt: skip
    tdir.path(TaskFile.REFERENCE_PARTIAL).unlink(missing_ok=True)
    return ref


def _make_runs(
    task: Task,
    tdir: TaskDir,
    backend: Backend,
    run_root: Path,
    runs: int,
    node_ids: tuple[str, ...],
    results: list[RunResult],
    checkpoint: Callable[[], None],
    all_runs: bool,
) -> None:
    """The base and gold runs `results` lacks, alternating which goes first, each kept as it
    ends (a first run cut by its time limit is run once more); after the first pair, none
    more when no fail-to-pass test is possible any longer."""
    if not node_ids:
        return
    for i in range(runs):
        order = (Variant.BASE, Variant.GOLD) if i % 2 == 0 else (Variant.GOLD, Variant.BASE)
        for variant in order:
            if any(r.variant is variant and r.run == i for r in results):
                continue  # resumed: this run ended in an earlier command
            run_dir = run_root / task.task_id / f"{variant}-{i}"
            # only a variant's first run compiles every kernel: a later timeout is an outcome
            results.append(run_cold(backend, task, tdir, variant, run_dir)
                           if i == 0 else backend.run(task, tdir, variant, run_dir, i))  # fmt: skip
            checkpoint()
        if i == 0 and not all_runs:
            first = {r.variant: r for r in results}
            if not fail_to_pass_possible(task, node_ids, first[Variant.BASE],
                                         first[Variant.GOLD]):  # fmt: skip
                return


def resumable(tdir: TaskDir) -> PartialReference | None:
    """The task's partial reference, None when there is none or it cannot be read (it is only
    a shortcut: the reference then starts over, and says so in the log)."""
    try:
        return tdir.load(TaskFile.REFERENCE_PARTIAL, PartialReference)
    except RecordError as exc:
        log.warning("%s: not resumed, starting over: %s", tdir.id, exc)
        return None


def resume_key(tdir: TaskDir, env: Environment) -> str:
    """What a partial reference must share with this command to be resumed: the environment
    (GPU, torch, Triton, package set) and the task's patches."""
    files = (TaskFile.GOLD_PATCH, TaskFile.SETUP_PATCH, TaskFile.TEST_PATCH)
    patches = b"\0".join(tdir.read_bytes(f) or b"-" for f in files)
    return f"{environment_label(env)}; patches {patch_digest(patches)}"


def hardware_verdict(task: Task) -> Verification | None:
    """`out_of_scope` for a task judged by a run though its curation now says it needs another
    vendor's accelerator or NVLink multicast (flash-linear-attention #1121, an Ascend backend,
    ran on the H200 on 2026-12-01 under an older curation that read NVIDIA, and kept "the
    selection run failed (timeout)"); None when its needs do not rule the run out (a GPU count
    is the machine's: the gate checks it before running)."""
    gap = hardware_gap(task.requires)
    was = task.verification
    if gap is None or was.status is VerificationStatus.OUT_OF_SCOPE:
        return None
    return replace(was, status=VerificationStatus.OUT_OF_SCOPE, reason=gap)


_GRID = re.compile(r"\[grid=[^\]]*\]")
_TUPLE = re.compile(r"\(([^()]*)\)")  # a tuple argument: items joined by "," (dims by ", ")
LAUNCH_CHARS = 400  # a launch line of the requirement is cut here (kernels of 30 parameters)


def _fold(m: re.Match[str]) -> str:
    """A tuple of one repeated item as `(8 x float16[1000, 4096])`."""
    items = re.split(r",(?! )", m.group(1))
    return f"({len(items)} x {items[0]})" if len(items) > 2 and len(set(items)) == 1 else m[0]


def _tensors_only(line: str) -> str:
    """`kernel(a=..., b=...)` with the tensor arguments (and tuples of them, and those passed
    as None) alone: scalars, constexprs and launch options follow from the shapes or are the
    implementation's choice, and a requirement is a specification, not a dump."""
    name, _, rest = line.partition("(")
    body = rest.removesuffix(")")
    args, depth, start = [], 0, 0
    for i, c in enumerate(body):  # split at the ", " outside brackets
        depth += (c in "[(") - (c in "])")
        if depth == 0 and body.startswith(", ", i):
            args.append(body[start:i])
            start = i + 2
    args.append(body[start:])
    kept = [a for a in args if "=" in a and ("[" in a.split("=", 1)[1] or a.endswith("=None"))]
    return f"{name}({', '.join(kept)})"


def launches_seen(task: Task, runs: Sequence[RunResult]) -> tuple[str, ...]:
    """One line per target kernel the gold's `runs` launched, from its largest captured launch
    (`KernelTiming.shapes`): its tensor arguments as dtype[shape] (a tuple of one repeated
    tensor folded, an optional one passed as None named so); scalars, constexprs, launch
    options and the grid left out. Sorted by kernel."""
    names = {k.name for k in task.kernels}
    seen: dict[str, str] = {}
    for run in (r for r in runs if r.variant is Variant.GOLD):
        for k in run.kernels:
            if k.kernel in names and k.shapes and k.kernel not in seen:
                line = _tensors_only(_TUPLE.sub(_fold, _GRID.sub("", k.shapes)))
                seen[k.kernel] = line if len(line) <= LAUNCH_CHARS else line[:LAUNCH_CHARS] + "..."
    return tuple(seen[n] for n in sorted(seen))


def rejudge(
    task: Task,
    ref: Reference,
    workload: WorkloadResult | None = None,
    triton_pin: str | None = None,
) -> tuple[Reference, Verification | None]:
    """Recompute the lists and the verdict from the stored runs (no rerun: judging rules may
    change after an expensive GPU session). References of runs before node-id selection are
    judged by the old rule and get no verdict; a reference whose selection run chose no node id
    (it failed, timed out, or no test launched a target) is judged from that selection run, as
    the gate does."""
    hardware = hardware_verdict(task)
    if hardware is not None:
        new = replace(ref, valid=False, validity_note=hardware.reason,
                      verification=str(hardware.status))  # fmt: skip
        return new, hardware
    base = [r for r in ref.runs if r.variant is Variant.BASE]
    gold = [r for r in ref.runs if r.variant is Variant.GOLD]
    if not ref.node_ids and ref.selection is None:
        f2p, p2p, flaky, valid, note = judge(task, base, gold)
        new = replace(ref, fail_to_pass=f2p, pass_to_pass=p2p, flaky=flaky, valid=valid,
                      validity_note=note)  # fmt: skip
        return new, None
    selection = ref.selection
    if selection is not None and selection.failure is FailureClass.COMPILE_ERROR:
        # a compile error judged before its reason named the cause (2026-12-07): named now
        cause = compile_cause(selection.tests)
        if cause and cause not in selection.detail:
            selection = replace(selection, detail=cause)
    if selection is not None and selection.failure is FailureClass.TEST_FAILURE:
        # a test failure judged before its reason said pytest's own line (2026-12-07)
        bad = next((t for t in selection.tests if t.outcome in ("failed", "error")), None)
        old, new_line = (first_line(bad), failure_line(bad)) if bad else ("", "")
        if old and new_line != old and selection.detail.startswith(old):
            selection = replace(selection, detail=new_line + selection.detail[len(old) :])
    verdict, f2p, p2p, flaky = decide(task, ref.node_ids, base, gold, ref.environment,
                                      selection, workload, triton_pin)  # fmt: skip
    # when and on which setup state the runs were made, not when they were judged again
    verdict = replace(verdict, checked_at=task.verification.checked_at or verdict.checked_at,
                      setup=task.verification.setup)  # fmt: skip
    lost = name_collisions(selection)
    if lost and verdict.status is VerificationStatus.UNVERIFIED:
        # judged on a run that lacked those files' tests: what it said is not the task's verdict
        why = f"{NAME_COLLISION} ({', '.join(lost)}; run it again): {verdict.reason[:120]}"
        verdict = replace(verdict, reason=why)
    new = replace(ref, fail_to_pass=f2p, pass_to_pass=p2p, flaky=flaky, selection=selection,
                  valid=verdict.status is VerificationStatus.VERIFIED,
                  validity_note=verdict.reason, verification=str(verdict.status))  # fmt: skip
    return new, verdict
