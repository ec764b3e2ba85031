"""The reference judge on hand-made runs: fail-to-pass, pass-to-pass, flaky, validity."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from curation.model import Hardware, TaskType, Vendor
from eval.gate import NAME_COLLISION, decide, hardware_gap, reason_kind
from eval.model import (
    Environment,
    FailureClass,
    Reference,
    RunResult,
    TestOutcome,
    Variant,
    VariantSummary,
)
from eval.reference import judge, rejudge, summarize


def run(variant: Variant, i: int, outcomes: dict[str, str], failure=FailureClass.NONE):
    tests = tuple(TestOutcome(n, o, 0.1) for n, o in outcomes.items())
    passed = failure is FailureClass.NONE and all(o != "failed" for o in outcomes.values())
    return RunResult("t", variant, i, 0 if passed else 1, failure, passed, tests, 10.0 + i)


def task(kind: TaskType, title: str = "Speed up the chunk kernel"):
    return SimpleNamespace(task_type=SimpleNamespace(type=kind, evidence=("code facts",)),
                           target_files=frozenset({"fla/ops/comba/chunk.py"}),
                           title=title, tests=SimpleNamespace(undefined_upstream=()))  # fmt: skip


def test_fail_to_pass_counts_failed_skipped_and_missing_at_base() -> None:
    base = [run(Variant.BASE, i, {"a": "passed", "b": "failed", "c": "skipped"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed", "c": "passed", "d": "passed"})
            for i in range(3)]  # fmt: skip
    f2p, p2p, flaky, valid, note = judge(task(TaskType.BUG_FIX), base, gold)
    assert (f2p, p2p, flaky, valid) == (("b", "c", "d"), ("a",), (), True)
    assert note == "3 fail-to-pass, 1 pass-to-pass"


def test_gold_failing_tests_are_left_out_and_flaky_ones_too() -> None:
    base = [
        run(Variant.BASE, i, {"a": "failed", "f": "passed" if i else "failed"}) for i in range(3)
    ]
    gold = [run(Variant.GOLD, i, {"a": "passed", "env": "failed", "f": "passed"}) for i in range(3)]
    f2p, p2p, flaky, valid, note = judge(task(TaskType.NEW_OP), base, gold)
    assert (f2p, p2p, flaky, valid) == (("a",), (), ("f",), True)
    assert "1 tests fail with the gold too" in note and "1 flaky" in note


def test_new_op_without_fail_to_pass_is_invalid() -> None:
    base = [run(Variant.BASE, i, {"a": "passed"}) for i in range(2)]
    gold = [run(Variant.GOLD, i, {"a": "passed"}) for i in range(2)]
    assert judge(task(TaskType.NEW_OP), base, gold)[3] is False
    assert judge(task(TaskType.OPTIMIZATION), base, gold)[3] is True


def test_a_crashing_gold_is_invalid() -> None:
    base = [run(Variant.BASE, 0, {"a": "failed"})]
    gold = [run(Variant.GOLD, 0, {"a": "passed"}), run(Variant.GOLD, 1, {}, FailureClass.CRASH)]
    assert judge(task(TaskType.BUG_FIX), base, gold)[3] is False


def test_summary_medians_and_spread() -> None:
    runs = [run(Variant.GOLD, i, {"a": "passed"}) for i in range(3)]  # walls 10, 11, 12
    s = summarize(runs)
    assert (s.passed_runs, s.runs, s.e2e_s, s.e2e_spread) == (3, 3, 11.0, round(2 / 11, 4))
    assert s.kernel_ms is None and s.isolated_ms is None


# --- the verification gate (eval.gate) --------------------------------------------------------

ENV = Environment("H200", "580", "13.0", "2.11", "3.6", "3.12", "h", ("torch==2.11",), "ab" * 32)


def gate(kind: TaskType, node_ids, base, gold, selection=None):
    return decide(task(kind), node_ids, base, gold, ENV, selection)


def test_gate_verifies_fail_to_pass_on_the_kept_node_ids_only() -> None:
    base = [run(Variant.BASE, i, {"a": "failed", "b": "passed", "x": "failed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed", "x": "failed"}) for i in range(3)]
    verdict, f2p, p2p, flaky = gate(TaskType.FEATURE, ["a", "b"], base, gold)
    assert verdict.status == "verified" and (f2p, p2p, flaky) == (("a",), ("b",), ())
    assert verdict.environment == "H200; torch 2.11; triton 3.6; packages abababababab"
    # a kept node id whose gold outcome changes between runs is flaky: listed, left out
    gold[1] = run(Variant.GOLD, 1, {"a": "passed", "b": "failed"})
    verdict, f2p, p2p, flaky = gate(TaskType.FEATURE, ["a", "b"], base, gold)
    assert (verdict.status, f2p, p2p, flaky) == ("verified", ("a",), (), ("b",))
    assert verdict.reason == "1 fail-to-pass, 0 pass-to-pass, 1 flaky left out"
    # a kept node id that fails with the gold in every run: not verified, and it is named
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "failed"}) for i in range(3)]
    verdict, *_ = gate(TaskType.FEATURE, ["a", "b"], base, gold)
    assert verdict.status == "unverified" and verdict.reason.endswith(": b")


def test_a_test_a_timed_out_run_never_reached_is_cut_not_flaky() -> None:
    base = [run(Variant.BASE, i, {"a": "failed", "b": "passed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed"}) for i in range(3)]
    # the first gold run was killed at its limit while in b (reported as an error)
    gold[0] = run(Variant.GOLD, 0, {"a": "passed", "b": "error"}, FailureClass.TIMEOUT)
    verdict, f2p, p2p, flaky = gate(TaskType.BUG_FIX, ["a", "b"], base, gold)
    assert (verdict.status, f2p, p2p, flaky) == ("verified", ("a",), (), ())
    assert verdict.reason == "1 fail-to-pass, 0 pass-to-pass, 1 cut by a run's time limit left out"
    # the same error in a run that ended on its own is an outcome: b is flaky
    gold[0] = run(Variant.GOLD, 0, {"a": "passed", "b": "error"})
    verdict, f2p, p2p, flaky = gate(TaskType.BUG_FIX, ["a", "b"], base, gold)
    assert (verdict.status, f2p, flaky) == ("verified", ("a",), ("b",))
    # a test that no gold run finished, each cut by its limit: the gold cannot run it
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "error"}, FailureClass.TIMEOUT)
            for i in range(3)]  # fmt: skip
    verdict, *_ = gate(TaskType.BUG_FIX, ["a", "b"], base, gold)
    assert verdict.status == "unverified" and verdict.reason.endswith("(timeout): b")
    # a test that failed before the kill was observed: it still counts against the gold
    gold[0] = run(Variant.GOLD, 0, {"a": "failed"}, FailureClass.TIMEOUT)
    verdict, f2p, p2p, flaky = gate(TaskType.BUG_FIX, ["a", "b"], base, gold)
    assert flaky == ("a",) and verdict.status == "unverified"


def test_gate_leaves_no_fail_to_pass_and_optimizations_unverified() -> None:
    base = [run(Variant.BASE, i, {"a": "passed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed"}) for i in range(3)]
    verdict, *_ = gate(TaskType.NEW_OP, ["a"], base, gold)
    assert verdict.status == "unverified" and "no test fails at the setup state" in verdict.reason
    verdict, *_ = gate(TaskType.OPTIMIZATION, ["a"], base, gold)
    assert verdict.status == "unverified" and "no workload" in verdict.reason


def test_gate_names_the_missing_package_and_a_gold_that_fails() -> None:
    detail = "E ModuleNotFoundError: No module named 'transformer_engine'"
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.INFRA, False, (), 1.0, detail=detail)
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.reason == "missing package(s) transformer_engine"
    # Liger-Kernel #778 on the H200 (2026-12-02): the host's transformers 5 is there, only
    # older than the task's tests: not a missing package but another version
    detail = (
        "E ModuleNotFoundError: No module named "
        "'transformers.models.gemma.tokenization_gemma_fast'\n"
        "ImportError: cannot import name 'HybridCache' from 'transformers.cache_utils'"
    )
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.INFRA, False, (), 1.0, detail=detail)
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.reason == (
        "installed package version differs from the task's pins: transformers lacks "
        "transformers.cache_utils.HybridCache, transformers.models.gemma.tokenization_gemma_fast"
    )
    base = [run(Variant.BASE, i, {"a": "failed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "failed"}, FailureClass.TEST_FAILURE) for i in range(3)]
    verdict, *_ = gate(TaskType.BUG_FIX, ["a"], base, gold)
    assert verdict.status == "unverified" and verdict.reason.startswith("the gold fails 1 of 1")
    # flash-linear-attention #444 on the H200 (2026-12-03): its merge commit imports a module
    # of its own package that it never added; not an installed package in another version
    detail = ("fla/ops/comba/chunk.py:9: in <module>\n"
              "E   ModuleNotFoundError: No module named 'fla.ops.comba.cumsum'")  # fmt: skip
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.INFRA, False, (), 1.0, detail=detail)
    verdict, *_ = gate(TaskType.NEW_OP, [], [], [], selection=sel)
    assert verdict.reason == (
        "the framework's own code does not import at this commit: fla lacks fla.ops.comba.cumsum"
    )
    # ... but when other tests of the collected directory ran, one module's import of a name
    # its commit lacks is that module's gap, not the verdict (#41f4eed82f on the H200,
    # 2026-12-06: the tests that ran failed to compile)
    gap = TestOutcome("tests/ops/test_retention.py", "error", 0.1,
                      "ImportError: cannot import name 'naive_retention' from "
                      "'fla.ops.triton.retention' (/x/fla/ops/triton/retention.py)")  # fmt: skip
    ran = TestOutcome("tests/ops/test_abc.py::test_chunk[64]", "failed", 0.1, "CompilationError")
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.COMPILE_ERROR, False, (gap, ran), 1.0,
                    detail="E   triton.compiler.errors.CompilationError: at 23:26:")  # fmt: skip
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=sel)
    assert verdict.reason == (
        "the selection run failed (compile_error): E   triton.compiler.errors.CompilationError: "
        "at 23:26: (besides, fla lacks fla.ops.triton.retention.naive_retention)"
    )
    sel = replace(sel, failure=FailureClass.NONE, tests=(gap, replace(ran, outcome="passed")))
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=sel)
    assert verdict.reason == (
        "no test launches a target kernel "
        "(besides, fla lacks fla.ops.triton.retention.naive_retention)"
    )
    # the module that errors is the only one: its gap is the verdict
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=replace(sel, tests=(gap,)))
    assert verdict.reason.startswith("the framework's own code does not import at this commit")
    # ... and when curation found that name undefined at the PR's own commit too, the test
    # module is broken upstream (flash-linear-attention #9043fbf03d on the H100, 2026-12-06)
    broken = task(TaskType.FEATURE)
    broken.tests.undefined_upstream = ("fla.ops.triton.retention.naive_retention",)
    verdict, *_ = decide(broken, [], [], [], ENV, replace(sel, tests=(gap,)))
    assert verdict.reason == (
        "the PR's tests import names that its own commit does not define: "
        "fla.ops.triton.retention.naive_retention"
    )
    # while other tests ran, it is an aside that says so
    verdict, *_ = decide(broken, [], [], [], ENV, sel)
    assert verdict.reason == (
        "no test launches a target kernel (besides, the PR's tests import names that its own "
        "commit does not define: fla.ops.triton.retention.naive_retention)"
    )


def test_hardware_gap() -> None:
    assert hardware_gap(Hardware(), 1) is None
    assert hardware_gap(Hardware(gpus=4), 1) == "needs 4 GPUs (1 here)"
    assert "multicast" in (hardware_gap(Hardware(gpus=2, nvlink_multicast=True), 8) or "")
    assert hardware_gap(Hardware(vendor=Vendor.ASCEND), 1) == "needs a ascend accelerator"


def test_a_gold_run_that_cannot_be_trusted_makes_the_task_invalid() -> None:
    from dataclasses import replace

    base = [run(Variant.BASE, 0, {"a": "failed"})]
    gold = [run(Variant.GOLD, 0, {"a": "passed"}), run(Variant.GOLD, 1, {"a": "passed"})]
    assert judge(task(TaskType.BUG_FIX), base, gold)[3] is True
    gold[1] = replace(gold[1], failure=FailureClass.INFRA, passed=False, flags=("tampered",))
    assert judge(task(TaskType.BUG_FIX), base, gold)[3] is False


def test_gate_refuses_a_flagged_gold_run() -> None:
    from dataclasses import replace

    base = [run(Variant.BASE, i, {"a": "failed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed"}) for i in range(3)]
    assert gate(TaskType.BUG_FIX, ["a"], base, gold)[0].status == "verified"
    gold[2] = replace(gold[2], flags=("tampered",))
    verdict, *_ = gate(TaskType.BUG_FIX, ["a"], base, gold)
    assert verdict.status == "unverified" and "tampered" in verdict.reason


def test_the_selection_run_takes_the_frameworks_cap_unless_the_command_names_one(
    tmp_path,
) -> None:
    # flash-linear-attention's tests compile for minutes: its registry entry caps a selection
    # run at 4 tests; a framework without one gets the command's default
    from eval.reference import SELECT_MAX, SelectionCaps, select_node_ids

    seen: list[dict] = []

    class Backend:
        def run(self, task, tdir, variant, run_dir, index, prediction=None, extra_env=None,
                timeout_s=None):  # fmt: skip
            seen.append(dict(extra_env or {}))
            return run(Variant.GOLD, 0, {})

    def fake(fw: str):
        return SimpleNamespace(framework=fw, task_id="t", targets=(), kernels=(),
                               target_files=frozenset(),
                               tests=SimpleNamespace(changed_in_pr=(), node_ids=()))  # fmt: skip

    for fw, caps in (("flash-linear-attention", None), ("someone__else", None),
                     ("flash-linear-attention", SelectionCaps(total=9))):  # fmt: skip
        tdir = SimpleNamespace(read_bytes=lambda name: None)
        select_node_ids(fake(fw), tdir, Backend(), tmp_path, caps)  # type: ignore[arg-type]
    assert [e["TPB_SELECT_MAX"] for e in seen] == ["4", str(SELECT_MAX), "9"]
    # the selection tunes with the first config that compiles, and keeps that choice out of
    # the task's autotuning cache, which the verdict's fully tuned runs read
    assert all(e["TPB_AUTOTUNE"] == "first" and e["TRITON_CACHE_AUTOTUNING"] == "0" for e in seen)
    select_node_ids(fake("x"), tdir, Backend(), tmp_path, SelectionCaps(autotune="all"))  # type: ignore[arg-type]
    assert "TPB_AUTOTUNE" not in seen[-1] and "TRITON_CACHE_AUTOTUNING" not in seen[-1]


def test_a_selection_is_retried_without_the_tests_it_ran_when_it_kept_none_not_when_cut(
    tmp_path,
) -> None:
    """The retry (call 45, 2026-12-06) deselects what the gold failed and runs once more; a
    selection cut at its time limit or crashed is not retried (the second would be cut too).
    Since the ninth session of 2026-12-07 one whose tests passed without launching a target
    is retried too, without them (flash-linear-attention #702's first `test_chunk` case ran with
    gate=False, under which the op never runs its gate kernel); one whose tests all skipped
    is not."""
    from eval.reference import SelectionCaps, select_node_ids

    def selection(outcomes: dict[str, str], failure: FailureClass, again_passes: bool = True,
                  again_empty: bool = False):  # fmt: skip
        seen: list[dict] = []

        class Backend:
            def run(self, task, tdir, variant, run_dir, index, prediction=None, extra_env=None,
                    timeout_s=None):  # fmt: skip
                seen.append(dict(extra_env or {}))
                ok = failure is FailureClass.NONE
                if "TPB_SELECT_SKIP" in (extra_env or {}):
                    if again_empty:  # every parametrization had run: pytest collects none
                        return replace(run(Variant.GOLD, 0, {}, FailureClass.INFRA), exit_code=5)
                    if not again_passes and ok:  # passed again, and launched nothing again
                        return run(Variant.GOLD, 0, {"t.py::f[2]": "passed"})
                    if not again_passes:
                        again = (
                            "D = 300 again" if failure is FailureClass.TEST_FAILURE else "D = 300"
                        )
                        return replace(run(Variant.GOLD, 0, {"t.py::f[2]": "failed"}, failure),
                                       detail=again)  # fmt: skip
                    passed = run(Variant.GOLD, 0, {"t.py::f[2]": "passed"})
                    return replace(passed, tests=(replace(passed.tests[0], launched=("k",)),))
                return replace(run(Variant.GOLD, 0, outcomes, failure),
                               detail="" if ok else "D = 300")  # fmt: skip

        kernel = SimpleNamespace(name="k", role="kernel")
        fake = SimpleNamespace(framework="x", task_id="t", targets=(kernel,), kernels=(),
                               target_files=frozenset(),
                               tests=SimpleNamespace(changed_in_pr=(), node_ids=()))  # fmt: skip
        tdir = SimpleNamespace(read_bytes=lambda name: None)
        caps = SelectionCaps(per_test=1)
        return select_node_ids(fake, tdir, Backend(), tmp_path, caps), seen  # type: ignore[arg-type]

    (kept, _), seen = selection({"t.py::f[1]": "failed"}, FailureClass.TEST_FAILURE)
    assert [e.get("TPB_SELECT_SKIP") for e in seen] == [None, "t.py::f[1]"]
    # the retry takes each function's next three parametrizations (H100 call 46: the next one
    # alone shared the failing value)
    assert [e["TPB_SELECT_PER_TEST"] for e in seen] == ["1", "3"] and kept == ("t.py::f[2]",)
    # failed again: nothing kept, and the record holds both runs and says so
    (kept, record), seen = selection({"t.py::f[1]": "failed"}, FailureClass.TEST_FAILURE, False)
    assert kept == () and len(seen) == 2
    assert [t.nodeid for t in record.tests] == ["t.py::f[1]", "t.py::f[2]"]
    assert record.detail == "D = 300 | again without them: D = 300 again"
    _, seen = selection({"t.py::f[1]": "failed"}, FailureClass.TIMEOUT)
    assert len(seen) == 1
    _, seen = selection({"t.py::f[1]": "failed"}, FailureClass.CRASH)
    assert len(seen) == 1
    _, seen = selection({"t.py::f[1]": "failed"}, FailureClass.COMPILE_ERROR)
    assert len(seen) == 2
    # failed twice the same way: said once, so that the cause fits the verdict's reason
    (_, record), _ = selection({"t.py::f[1]": "failed"}, FailureClass.COMPILE_ERROR, False)
    assert record.detail == "D = 300 (again without them: the same)"
    # passed without launching a target: the next parametrizations, those that ran left out
    (kept, _), seen = selection({"t.py::f[1]": "passed", "t.py::g[1]": "skipped"},
                                FailureClass.NONE)  # fmt: skip
    assert [e.get("TPB_SELECT_SKIP") for e in seen] == [None, "t.py::f[1]"]
    assert seen[1]["TPB_SELECT_PER_TEST"] == "3" and kept == ("t.py::f[2]",)
    # nothing launched again: both runs in the record, which says so once
    (kept, record), seen = selection({"t.py::f[1]": "passed"}, FailureClass.NONE, False)
    assert kept == () and record.failure is FailureClass.NONE and len(seen) == 2
    assert [t.nodeid for t in record.tests] == ["t.py::f[1]", "t.py::f[2]"]
    assert (
        record.detail == "its tests passed, none launched a target (again without them: the same)"
    )
    # no other parametrization to run (the tiny framework's one test): the first run's record
    # stands, not "the selection run failed (infra): pytest collected no test", and says so
    first = run(Variant.GOLD, 0, {"t.py::f[1]": "passed"})
    (kept, record), seen = selection({"t.py::f[1]": "passed"}, FailureClass.NONE, again_empty=True)
    assert kept == () and len(seen) == 2
    assert record == replace(first, detail="its tests passed, none launched a target (again "
                             "without them: no other parametrization)")  # fmt: skip
    (_, record), _ = selection({"t.py::f[1]": "failed"}, FailureClass.TEST_FAILURE,
                               again_empty=True)  # fmt: skip
    assert record.failure is FailureClass.TEST_FAILURE
    assert record.detail == "D = 300 (again without them: no other parametrization)"
    # every test skipped (a missing package would skip the next ones too): no retry
    _, seen = selection({"t.py::f[1]": "skipped"}, FailureClass.NONE)
    assert len(seen) == 1


def test_a_setup_state_that_ran_out_of_gpu_memory_fails_nothing() -> None:
    """On the H200, twelve memory-heavy Liger-Kernel runs side by side left each 0.4 GiB and
    their tests raised OutOfMemoryError: at the setup state that must not count as the missing
    change failing a test (a false fail-to-pass), whether the test's message or, when the test
    has no outcome, the run's says so."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 500.00 MiB."
    base = [RunResult("t", Variant.BASE, i, 1, FailureClass.CUDA_ERROR, False,
                      (TestOutcome("a", "failed", 0.1, oom), TestOutcome("b", "failed", 0.1)),
                      10.0) for i in range(3)]  # fmt: skip
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed", "c": "passed"}) for i in range(3)]
    verdict, f2p, p2p, _ = gate(TaskType.BUG_FIX, ["a", "b"], base, gold)
    assert verdict.status == "verified" and f2p == ("b",) and p2p == ()
    verdict, f2p, _, _ = gate(TaskType.BUG_FIX, ["a"], base, gold)
    assert verdict.status == "unverified" and f2p == ()
    assert "only by running out of GPU memory (1 tests)" in verdict.reason
    crashed = [RunResult("t", Variant.BASE, i, 1, FailureClass.CUDA_ERROR, False, (), 5.0,
                         detail=f"E   {oom}") for i in range(3)]  # fmt: skip
    verdict, f2p, _, _ = gate(TaskType.BUG_FIX, ["c"], crashed, gold)
    assert verdict.status == "unverified" and f2p == ()
    # an ordinary failure at the setup state still counts
    verdict, f2p, _, _ = gate(TaskType.BUG_FIX, ["b"], base, gold)
    assert verdict.status == "verified" and f2p == ("b",)


def test_rejudging_a_reference_whose_selection_chose_nothing_keeps_why() -> None:
    """flash-linear-attention #660 (H200, 2026-12-03): the selection run timed out, so no
    node id was kept and no base or gold run followed; rejudging it is judging that selection
    run again: "the selection run failed (timeout)", not "no test passes with the gold"."""
    from eval.model import Reference, VariantSummary

    sel = RunResult("t", Variant.GOLD, 0, None, FailureClass.TIMEOUT, False, (), 200.0,
                    detail="killed at the time limit")  # fmt: skip
    empty = VariantSummary(0, 0, 0.0, 0.0, None, None, None)
    note = "the selection run failed (timeout): killed at the time limit"
    ref = Reference("t", ENV, (), empty, empty, (), (), False, note, (), (), selection=sel)
    ran = SimpleNamespace(checked_at="2026-12-03T07:40:00+00:00", setup="0123456789abcdef")
    t = SimpleNamespace(task_type=SimpleNamespace(type=TaskType.NEW_OP), verification=ran,
                        target_files=frozenset(), requires=Hardware(),
                        tests=SimpleNamespace(undefined_upstream=()))  # fmt: skip
    new, verdict = rejudge(t, ref)
    assert verdict is not None and (verdict.status, verdict.reason) == ("unverified", note)
    assert (new.validity_note, new.valid) == (note, False)
    # when and on which setup state it ran, not when it was judged again
    assert (verdict.checked_at, verdict.setup) == ("2026-12-03T07:40:00+00:00", "0123456789abcdef")


def _failed_selection(
    failure: FailureClass, test: TestOutcome, detail: str, kind: TaskType
) -> tuple[SimpleNamespace, Reference]:
    """A task of `kind` that ran, and its reference whose selection run failed with `test`,
    judged before with `detail`."""
    sel = RunResult("t", Variant.GOLD, 0, 1, failure, False, (test,), 30.0, detail=detail)
    empty = VariantSummary(0, 0, 0.0, 0.0, None, None, None)
    ref = Reference("t", ENV, (), empty, empty, (), (), False, detail, (), (), selection=sel)
    ran = SimpleNamespace(checked_at="2026-12-06T07:40:00+00:00", setup="0123456789abcdef")
    task = SimpleNamespace(task_type=SimpleNamespace(type=kind), verification=ran,
                           target_files=frozenset(), requires=Hardware(),
                           tests=SimpleNamespace(undefined_upstream=()))  # fmt: skip
    return task, ref


def test_rejudging_a_compile_error_names_its_cause_from_the_stored_messages() -> None:
    """The 30 references whose selection failed to compile before 2026-12-07 kept "E
    triton.compiler.errors.CompilationError: at 28:27:" and no more; their selection's test
    messages hold Triton's message, so rejudging names the cause (a Triton 2 API here)."""
    message = (
        "E       triton.compiler.errors.CompilationError: at 2:27:\n"
        "E           i_h = i_bh % H\n"
        "E           b_b = tl.math.log2(1 - tl.math.pow(2, -5 - i_h * 1.0))\n"
        "E                                  ^\n"
        "E       AttributeError(\"module 'triton.language.math' has no attribute 'pow'\")\n"
    )
    failed = TestOutcome("tests/ops/test_retention.py::test_chunk[300]", "failed", 1.0, message)
    old = "E       triton.compiler.errors.CompilationError: at 2:27:"
    t, ref = _failed_selection(FailureClass.COMPILE_ERROR, failed, old, TaskType.NEW_OP)
    new, verdict = rejudge(t, ref, None, "2.1.0")
    cause = (
        "CompilationError: at 2:27: AttributeError(\"module 'triton.language.math' has no"
        " attribute 'pow'\")"
    )
    assert verdict is not None and verdict.reason.endswith(cause), verdict
    assert new.selection is not None and new.selection.detail == cause
    # a detail that already names it is kept as it was
    again, _ = rejudge(t, new, None, "2.1.0")
    assert again.selection == new.selection


def test_rejudging_a_test_failure_says_pytests_own_line() -> None:
    """flash-linear-attention #9930c972f7 (H100, call 75): the reason said the test's header
    line, "file .../tests/ops/test_nsa.py, line 15"; pytest's `E` line says why: the PR's test
    takes a `dtype` no parametrize gives. What the retry added is kept."""
    message = (
        "file /tmp/s/gold-0/tests/ops/test_nsa.py, line 15\n"
        '  @pytest.mark.parametrize("T", [256, 1024])\n'
        "  def test_parallel(\n"
        "E       fixture 'dtype' not found\n"
        ">       available fixtures: capsys, tmp_path\n"
    )
    broken = TestOutcome("tests/ops/test_nsa.py::test_parallel[256]", "error", 0.0, message)
    old = "file /tmp/s/gold-0/tests/ops/test_nsa.py, line 15 (again without them: the same)"
    t, ref = _failed_selection(FailureClass.TEST_FAILURE, broken, old, TaskType.FEATURE)
    new, verdict = rejudge(t, ref)
    assert new.selection is not None
    assert new.selection.detail == "fixture 'dtype' not found (again without them: the same)"
    assert verdict is not None and verdict.reason == (
        "the selection run failed (test_failure): fixture 'dtype' not found (again without "
        "them: the same)"
    )
    again, _ = rejudge(t, new)
    assert again.selection == new.selection


def test_a_verdict_judged_on_a_selection_that_lost_files_to_their_names_says_so() -> None:
    """flash-linear-attention #1f52c84c97 (H100, call 75): pytest refused
    `tests/ops/test_gla.py` beside `tests/layers/test_gla.py`, and the verdict came from other
    files' import errors ("missing package(s) lm_eval, ops")."""
    refused = TestOutcome(
        "tests/ops/test_gla.py", "error", 0.0,
        "import file mismatch:\nimported module 'test_gla' has this __file__ attribute:\n"
        "  /s/tests/layers/test_gla.py\nwhich is not the same as the test file we want to "
        "collect:\n  /s/tests/ops/test_gla.py\n",
    )  # fmt: skip
    old = "tests/layers/test_gla.py::test_layer[2048] failed"
    t, ref = _failed_selection(FailureClass.TEST_FAILURE, refused, old, TaskType.FEATURE)
    _, verdict = rejudge(t, ref)
    assert verdict is not None and verdict.status == "unverified"
    assert verdict.reason.startswith(
        "pytest refused test files of the selection for their names (tests/ops/test_gla.py; "
        "run it again): the selection run failed (test_failure)"
    )
    assert reason_kind(verdict.reason) == NAME_COLLISION
    # a selection whose errors are other errors is judged as before
    other = replace(refused, message="E   ModuleNotFoundError: No module named 'lm_eval'")
    t, ref = _failed_selection(FailureClass.TEST_FAILURE, other, old, TaskType.FEATURE)
    assert not rejudge(t, ref)[1].reason.startswith(NAME_COLLISION)  # type: ignore[union-attr]


def test_a_selection_that_collected_no_test_says_so_not_that_it_failed() -> None:
    """flash-linear-attention #d39f1ea7ab (H200, 2026-12-06): at its December 2023 commit the
    only test is a root script run under `if __name__ == "__main__"`; pytest collected nothing
    (exit 5) and the gate had said "the selection run failed (infra)", as if a rerun could
    help. A selection that ran tests and kept none still fails as before."""
    sel = RunResult("t", Variant.GOLD, 0, 5, FailureClass.INFRA, False, (), 17.0,
                    detail="pytest collected no test (exit 5)")  # fmt: skip
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=sel)
    assert (verdict.status, verdict.reason) == (
        "unverified",
        "no test to run: pytest collected none at this commit",
    )
    crashed = replace(sel, exit_code=1, detail="no test report (pytest exit 1)")
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=crashed)
    assert verdict.reason.startswith("the selection run failed (infra)")


def test_a_compile_failure_on_another_triton_than_the_pinned_one_says_so(tmp_path) -> None:
    """Flash-linear-attention of January 2024 (#ccc55cf4b1, H200): its selection run failed to
    compile on Triton 3.6, and its environment pins Triton 2.1.0 (23 of the 30 such tasks are
    pinned to 2.1 or 2.2): the verdict names both versions, what a rerun here cannot change.
    A compile failure on the pinned version, or without a pin, reads as before."""
    from core.files import write_record
    from curation.taskdir import TaskDir, TaskFile
    from envbuild.model import EnvSpec, Layer, LayerKind, Pin, PinSource
    from eval.compat import pinned_triton
    from eval.gate import TRITON_DRIFT

    why = "E   triton.compiler.errors.CompilationError: at 60:14:"
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.COMPILE_ERROR, False, (), 30.0,
                    detail=why)  # fmt: skip
    verdict, *_ = decide(task(TaskType.FEATURE), [], [], [], ENV, sel, None, "2.1.0")
    assert verdict.status == "unverified"
    assert verdict.reason == f"{TRITON_DRIFT} (here 3.6, pinned 2.1.0): {why}"
    for pin in ("3.6.0", None):
        verdict, *_ = decide(task(TaskType.FEATURE), [], [], [], ENV, sel, None, pin)
        assert verdict.reason.startswith("the selection run failed (compile_error)")
    # the pin comes from the task's env.json
    tdir = TaskDir(tmp_path / "t")
    tdir.root.mkdir()
    assert pinned_triton(tdir) is None
    p = Pin("x", "1", PinSource.DEFAULT, "test")
    layers = tuple(Layer(k, f"tag-{k}", None, "FROM scratch\n") for k in LayerKind)
    triton = Pin("triton", "2.1.0", PinSource.DATE, "releases.json")
    spec = EnvSpec("t", "fw", "pip-editable", "c", "2024-01-09", p, p, triton, p, (), layers)
    write_record(tdir.path(TaskFile.ENV), spec)
    assert pinned_triton(tdir) == "2.1.0"


def test_a_selection_whose_every_test_wants_more_gpus_is_out_of_scope() -> None:
    """flash-linear-attention #774 on one H200 (2026-12-03): its context-parallel tests all
    skipped with "At least 2 GPUs required" (or 4); curation had read one GPU from the files
    (the spawn goes through `mp.spawn`). The gate says what it needs, out of scope."""
    skips = {"a": "Skipped: At least 2 GPUs required", "b": "Skipped: At least 4 GPUs required"}
    tests = tuple(TestOutcome(n, "skipped", 0.0, m) for n, m in skips.items())
    sel = RunResult("t", Variant.GOLD, 0, 0, FailureClass.INFRA, False, tests, 30.0,
                    detail="every selected test was skipped")  # fmt: skip
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.status == "out_of_scope"
    assert verdict.reason == (
        "needs 2 GPUs: every selected test skips here (Skipped: At least 2 GPUs required)"
    )
    # one test that skipped for another reason: not a hardware verdict
    other = (*tests, TestOutcome("c", "skipped", 0.0, "Skipped: needs flash_attn"))
    sel = RunResult("t", Variant.GOLD, 0, 0, FailureClass.INFRA, False, other, 30.0,
                    detail="every selected test was skipped")  # fmt: skip
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.status == "unverified" and "selection run failed" in verdict.reason


def test_a_test_module_that_an_installed_package_rejects_names_that_package() -> None:
    """flash-linear-attention #379, #384, #386 on the H200 (2026-12-03): their commits register
    a model type the installed transformers now has itself, so every test module failed to
    import; the gate had said "the selection run failed (test_failure)"."""
    message = (
        "tests/ops/test_x.py:8: in <module>\n    from fla.ops.x import op\n"
        "fla/__init__.py:23: in <module>\n    from fla.models import XConfig\n"
        "fla/models/x/__init__.py:8: in <module>\n    AutoConfig.register('x', XConfig)\n"
        "/venv/lib/python3.12/site-packages/transformers/models/auto/configuration_auto.py:140:"
        " in register\n    raise ValueError(...)\n"
        "E   ValueError: 'x' is already used by a Transformers config, pick another name."
    )
    tests = (TestOutcome("tests/ops/test_x.py", "error", 0.0, message),)
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.TEST_FAILURE, False, tests, 26.0,
                    detail=message[:60])  # fmt: skip
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=sel)
    assert verdict.reason == (
        "the framework does not import with the installed transformers (ValueError: 'x' is "
        "already used by a Transformers config, pick another name.)"
    )
    # the same error raised by the framework's own package is no installed package's doing
    own = message.replace("site-packages/transformers/", "site-packages/fla/")
    tests = (TestOutcome("tests/ops/test_x.py", "error", 0.0, own),)
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.TEST_FAILURE, False, tests, 26.0)
    verdict, *_ = gate(TaskType.FEATURE, [], [], [], selection=sel)
    assert verdict.reason.startswith("the selection run failed (test_failure)")


def test_a_test_module_that_wants_the_network_is_an_aside_not_an_import_failure() -> None:
    """flash-linear-attention #097c1fd23f on the H100 (2026-12-07, call 79): its
    `tests/test_padding.py` loads a model from the hub at import, and the GPU machine has no
    network; the gate said "the framework does not import with the installed transformers
    (OSError: We couldn't connect to 'https://huggingface.co' ...)" while the op tests ran and
    passed without launching the target."""
    message = (
        "tests/test_padding.py:12: in <module>\n    model = AutoModel.from_pretrained(name)\n"
        "/venv/lib/python3.12/site-packages/transformers/utils/hub.py:470: in cached_files\n"
        "    raise EnvironmentError(...)\n"
        "E   OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't"
        " find it in the cached files. Checkout your internet connection or see how to run the"
        " library in offline mode."
    )

    def reason(*tests: TestOutcome) -> str:
        sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.TEST_FAILURE, False, tests, 90.0,
                        detail="requests.exceptions.ConnectionError")  # fmt: skip
        return gate(TaskType.FEATURE, [], [], [], selection=sel)[0].reason

    offline = TestOutcome("tests/test_padding.py", "error", 0.0, message)
    passed = TestOutcome("tests/ops/test_delta.py::test_chunk[1]", "passed", 2.0, "")
    network = "a test module needs the network, which the GPU machine does not have"
    assert reason(passed, offline) == (
        f"no test launches a target kernel (besides, {network}: tests/test_padding.py)"
    )
    assert reason(offline) == f"{network}: tests/test_padding.py"  # the module alone: the reason


def test_a_selection_whose_every_test_skips_for_a_package_names_it() -> None:
    """flash-linear-attention #388 (H200, 2026-12-03): every selected test skipped with
    "causal_conv1d is not installed" (Megatron-LM #4764's say "mamba_ssm not installed": its
    verdict read "every selected test was skipped" until 2026-12-05); a skip among passing
    tests names nothing."""
    skips = ("Skipped: causal_conv1d is not installed", "Skipped: mamba_ssm not installed")
    tests = tuple(TestOutcome(f"t{i}", "skipped", 0.0, m) for i, m in enumerate(skips))
    sel = RunResult("t", Variant.GOLD, 0, 0, FailureClass.INFRA, False, tests, 26.0,
                    detail="every selected test was skipped")  # fmt: skip
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.reason == "missing package(s) causal_conv1d, mamba_ssm"
    mixed = (*tests[1:], TestOutcome("t9", "failed", 3.0, "AssertionError: dg diff"))
    sel = RunResult("t", Variant.GOLD, 0, 1, FailureClass.TEST_FAILURE, False, mixed, 26.0,
                    detail="dg diff")  # fmt: skip
    verdict, *_ = gate(TaskType.BUG_FIX, [], [], [], selection=sel)
    assert verdict.reason == "the selection run failed (test_failure): dg diff"


def test_a_task_now_read_as_another_vendors_is_out_of_scope_when_judged_again(
    tmp_path,
) -> None:
    """flash-linear-attention #1121 (a triton_ascend backend) ran on the H200 on 2026-12-01
    under a curation that read NVIDIA, and its released verdict said "the selection run failed
    (timeout)"; the current curation says Ascend. `eval rejudge` makes such a verdict
    out_of_scope, with or without the reference.json of its runs; a GPU count is not judged
    again (it is the machine's)."""
    import json

    from eval.__main__ import main as eval_main
    from eval.model import Reference, VariantSummary
    from tests.tinyfw import OPS, mine_ops_fix

    _repo, _work, tasks = mine_ops_fix(tmp_path, OPS, OPS.replace("x + y * 0.0", "x + y"),
                                       "Fix add (#3)")  # fmt: skip
    [path] = list(tasks.glob("*/task.json"))
    data = json.loads(path.read_text())
    data["requires"] = {
        "gpus": 1,
        "nvlink_multicast": False,
        "vendor": "ascend",
        "evidence": ["pkg/backends/triton_ascend/ops.py: a ascend backend path"],
    }
    data["verification"] = {"status": "unverified", "reason": "the selection run failed (timeout)",
                            "checked_at": "2026-12-01T06:36:56+00:00", "environment": "NVIDIA H200",
                            "setup": "36cc99c832d47707"}  # fmt: skip
    path.write_text(json.dumps(data))
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0
    verdict = json.loads(path.read_text())["verification"]
    assert (verdict["status"], verdict["reason"]) == ("out_of_scope", "needs a ascend accelerator")
    assert verdict["checked_at"] == "2026-12-01T06:36:56+00:00"  # when its run was made
    # with its runs' reference.json, the reference says so too
    from core.records import from_json
    from curation.model import Task

    task = from_json(Task, {**data, "verification": data["verification"]})
    empty = VariantSummary(0, 0, 0.0, 0.0, None, None, None)
    sel = RunResult("t", Variant.GOLD, 0, None, FailureClass.TIMEOUT, False, (), 180.0)
    ref = Reference("t", ENV, (), empty, empty, (), (), False, "x", (), (), selection=sel)
    new, verdict = rejudge(task, ref)
    assert verdict is not None and verdict.status == "out_of_scope"
    assert (new.valid, new.validity_note, new.verification) == (
        False, "needs a ascend accelerator", "out_of_scope")  # fmt: skip
    # two GPUs wanted is not judged again here: the gate checks it on the machine
    assert hardware_gap(Hardware(gpus=2)) is None


def test_a_no_fail_to_pass_verdict_names_the_packages_its_skipped_tests_wanted() -> None:
    """flash-linear-attention #361 (H200, 2026-12-03): the PR's own tests skipped ("flash-attn
    is not installed") and the verdict "no fail-to-pass" rested on two cumsum tests; it now
    says which selected tests never ran here."""
    skip = "Skipped: Skipping test because flash-attn is not installed"
    tests = (TestOutcome("t/test_attn.py::test_parallel", "skipped", 0.0, skip),
             TestOutcome("t/test_cumsum.py::test_local", "passed", 1.0))  # fmt: skip
    sel = RunResult("t", Variant.GOLD, 0, 0, FailureClass.NONE, True, tests, 25.0)
    node = "t/test_cumsum.py::test_local"
    base = [run(Variant.BASE, i, {node: "passed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {node: "passed"}) for i in range(3)]
    verdict, *_ = gate(TaskType.FEATURE, [node], base, gold, selection=sel)
    assert verdict.reason == (
        "feature: no test fails at the setup state and passes with the gold "
        "(selected tests skip here: flash-attn not installed)"
    )


def test_only_a_kept_test_passing_with_the_gold_and_not_at_the_setup_state_keeps_runs_going() -> (
    None
):
    from eval.gate import fail_to_pass_possible

    ids = ["a", "b"]
    base = run(Variant.BASE, 0, {"a": "passed", "b": "failed"})
    gold_b_fails = run(Variant.GOLD, 0, {"a": "passed", "b": "failed"})
    gold_both = run(Variant.GOLD, 0, {"a": "passed", "b": "passed"})
    assert not fail_to_pass_possible(task(TaskType.BUG_FIX), ids, base, gold_b_fails)
    assert fail_to_pass_possible(task(TaskType.BUG_FIX), ids, base, gold_both)
    # a test the base never reported (its process crashed) is not a pass at the setup state
    gold_a = run(Variant.GOLD, 0, {"a": "passed"})
    assert fail_to_pass_possible(task(TaskType.NEW_OP), ids, run(Variant.BASE, 0, {}), gold_a)
    # an optimization needs every run's passes (and its workload): it never stops early
    base_both = run(Variant.BASE, 0, {"a": "passed", "b": "passed"})
    assert fail_to_pass_possible(task(TaskType.OPTIMIZATION), ids, base_both, gold_both)


def test_a_partial_references_tuning_results_stay_inside_the_tasks_cache(tmp_path) -> None:
    """A partial reference comes back from another machine: what it restores goes under the
    task's Triton cache only, as autotuning results only, and never over one already there."""
    from eval.tuning import restore_tuning, tuning_results

    cache = tmp_path / "cache"
    (cache / "k1").mkdir(parents=True)
    (cache / "k1" / "a.autotune.json").write_text("here")
    restore_tuning(cache, {"k1/a.autotune.json": "theirs", "k2/b.autotune.json": "b",
                           "../escape.autotune.json": "x", "k3/code.py": "x"})  # fmt: skip
    assert tuning_results(cache) == {"k1/a.autotune.json": "here", "k2/b.autotune.json": "b"}
    assert not (tmp_path / "escape.autotune.json").exists()
    assert not (cache / "k3").exists()
    assert tuning_results(tmp_path / "none") == {}


def test_tuning_results_are_restored_only_on_the_gpu_and_triton_they_were_chosen_on(
    monkeypatch,
) -> None:
    """An H100's choice is not an H200's (Triton's key, sm_90 for both, would take it), nor
    one of another Triton; on a machine without a GPU nothing is restored."""
    from eval import tuning
    from eval.machine import GpuStack

    h200 = replace(ENV, gpu="NVIDIA H200", triton="3.6.0")
    monkeypatch.setattr(
        tuning, "gpu_stack", lambda: GpuStack("NVIDIA H200", "13.0", "2.11", "3.6.0")
    )
    assert tuning.same_machine(h200)
    assert not tuning.same_machine(replace(h200, gpu="NVIDIA H100 80GB HBM3"))
    assert not tuning.same_machine(replace(h200, triton="3.5.1"))
    monkeypatch.setattr(
        tuning, "gpu_stack", lambda: GpuStack("unavailable", "13.0", "2.11", "3.6.0")
    )
    assert not tuning.same_machine(replace(h200, gpu="unavailable"))


def test_reasons_are_counted_by_kind_without_the_task_type() -> None:
    from eval.gate import NO_FAIL_TO_PASS, reason_kind

    assert reason_kind(f"bug_fix: {NO_FAIL_TO_PASS} (selected tests skip here)") == NO_FAIL_TO_PASS
    assert reason_kind("the selection run failed (timeout): killed") == "the selection run failed"
    assert reason_kind("missing package(s) wandb") == "missing package(s) wandb"
    assert reason_kind("optimization: no workload measured yet (the gold ...)") == (
        "no workload measured yet"
    )
    # an optimization's workload verdict, whatever number of tests its gold passed (the card's
    # table had "1 tests pass with the gold; gold not faster ..." and "3 tests ..." apart)
    for n in (1, 3):
        why = f"{n} tests pass with the gold; gold not faster enough on the workload: 0.99x"
        assert reason_kind(why) == "gold not faster enough on the workload"


def test_a_setup_state_that_does_not_import_fails_no_test_of_the_kernel() -> None:
    """Flash-linear-attention #466 (H100, 2026-12-05): every base run failed before its tests
    (infra: the restored base imports `safe_exp_comba`, which the PR deleted from another
    module) and every gold run passed; that is a broken setup state, not a fail-to-pass."""
    why = "ImportError: cannot import name 'safe_exp_comba' from 'fla.ops.comba.utils'"
    base = [RunResult("t", Variant.BASE, i, 1, FailureClass.INFRA, False, (), 5.0, detail=why)
            for i in range(3)]  # fmt: skip
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed"}) for i in range(3)]
    verdict, f2p, p2p, _ = gate(TaskType.FEATURE, ["a", "b"], base, gold)
    assert verdict.status == "unverified" and f2p == () and p2p == ()
    assert verdict.reason.startswith("feature: the setup state fails before its tests run")
    assert "safe_exp_comba" in verdict.reason
    # base runs that reach their tests and fail one decide as before
    base = [run(Variant.BASE, i, {"a": "failed", "b": "passed"}) for i in range(3)]
    verdict, f2p, _, _ = gate(TaskType.FEATURE, ["a", "b"], base, gold)
    assert verdict.status == "verified" and f2p == ("a",)


def test_the_golds_launches_for_the_requirement_are_its_tensors() -> None:
    """Issue 9 item 5: the requirement shows the dtypes and shapes the gold's kept tests
    launched each target with. From the largest captured launch of each target kernel: the
    grid, scalars, constexprs and launch options left out (their lines ran to 400 characters
    on flash-linear-attention's kernels: median 356, 166 of 400 cut; now median 196, 22 cut),
    a tuple of one repeated tensor folded, an optional tensor passed as None kept; a kernel
    that is no target, or the base's runs, say nothing."""
    from eval.model import KernelTiming
    from eval.reference import launches_seen

    shapes = ("attn_fwd[grid=(8, 1)](q=float16[4096], res=(float16[1000, 64],float16[1000, 64],"
              "float16[1000, 64]), ow=None, pair=(int32[2],float32[2]), N=1000, eps=1e-06, "
              "BD=64, num_warps=4)")  # fmt: skip
    kernels = (KernelTiming("attn_fwd", 3, 1.0, shapes=shapes),
               KernelTiming("helper", 1, 0.1, shapes="helper[grid=(1,)](x=float32[4])"),
               KernelTiming("attn_bwd", 0, 0.0, shapes=""))  # fmt: skip
    task = SimpleNamespace(kernels=[SimpleNamespace(name="attn_fwd"),
                                    SimpleNamespace(name="attn_bwd")])  # fmt: skip
    gold = RunResult("t", Variant.GOLD, 0, 0, FailureClass.NONE, True, (), 1.0, kernels)
    assert launches_seen(task, [gold]) == (  # type: ignore[arg-type]
        "attn_fwd(q=float16[4096], res=(3 x float16[1000, 64]), ow=None, "
        "pair=(int32[2],float32[2]))",
    )
    assert launches_seen(task, []) == ()  # type: ignore[arg-type]
    base = RunResult("t", Variant.BASE, 0, 0, FailureClass.NONE, True, (), 1.0, kernels)
    assert launches_seen(task, [base]) == ()  # type: ignore[arg-type]
    long = KernelTiming("attn_fwd", 1, 1.0, shapes="attn_fwd(" + ", ".join(
        f"t{i}=float32[{i}]" for i in range(60)) + ")")  # fmt: skip
    run = RunResult("t", Variant.GOLD, 0, 0, FailureClass.NONE, True, (), 1.0, (long,))
    [cut] = launches_seen(task, [run])  # type: ignore[arg-type]
    assert len(cut) == 403 and cut.endswith("...")


def test_an_optimization_whose_tests_fail_at_the_setup_state_is_judged_by_them() -> None:
    # Megatron-LM #6521 on the H200: typed an optimization by its code, 4 tests fail at the
    # setup state and pass with the gold; its gold was not faster on the workload
    from eval.gate import retype

    base = [run(Variant.BASE, i, {"a": "failed", "b": "passed"}) for i in range(3)]
    gold = [run(Variant.GOLD, i, {"a": "passed", "b": "passed"}) for i in range(3)]
    verdict, f2p, p2p, _ = gate(TaskType.OPTIMIZATION, ["a", "b"], base, gold)
    assert verdict.status == "verified" and (f2p, p2p) == (("a",), ("b",))
    assert verdict.reason == (
        "1 fail-to-pass, 1 pass-to-pass; judged as a feature, not an optimization"
    )
    new = retype(task(TaskType.OPTIMIZATION), verdict, f2p, base + gold)
    assert new is not None and new.type is TaskType.FEATURE
    assert new.evidence[-1] == "curation said optimization: code facts"
    fixed = retype(task(TaskType.OPTIMIZATION, "Fix the wrong offsets (#479)"), verdict, f2p,
                   base + gold)  # fmt: skip
    assert fixed is not None and fixed.type is TaskType.BUG_FIX
    assert retype(task(TaskType.BUG_FIX), verdict, f2p, base + gold) is None
    # no fail-to-pass: an optimization still waits for its workload
    quiet = [run(Variant.BASE, i, {"a": "passed", "b": "passed"}) for i in range(3)]
    verdict, f2p, *_ = gate(TaskType.OPTIMIZATION, ["a", "b"], quiet, gold)
    assert verdict.status == "unverified" and verdict.reason.startswith("optimization: no workload")
    assert retype(task(TaskType.OPTIMIZATION), verdict, f2p, quiet + gold) is None
    # nor does a setup state that never ran its tests (infra: the module did not import) say
    # anything of behaviour: its failures are kept for the scorer, the workload still decides
    broken = [run(Variant.BASE, i, {"a": "error", "b": "error"}, FailureClass.INFRA)
              for i in range(3)]  # fmt: skip
    verdict, f2p, *_ = gate(TaskType.OPTIMIZATION, ["a", "b"], broken, gold)
    assert f2p and verdict.reason.startswith("optimization: no workload")
    assert retype(task(TaskType.OPTIMIZATION), verdict, f2p, broken + gold) is None
