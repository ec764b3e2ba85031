"""The reference judge on hand-made runs: fail-to-pass, pass-to-pass, flaky, validity."""

from __future__ import annotations

from types import SimpleNamespace

from curation.model import TaskType
from eval.model import FailureClass, RunResult, TestOutcome, Variant
from eval.reference import judge, summarize


def run(variant: Variant, i: int, outcomes: dict[str, str], failure=FailureClass.NONE):
    tests = tuple(TestOutcome(n, o, 0.1) for n, o in outcomes.items())
    passed = failure is FailureClass.NONE and all(o != "failed" for o in outcomes.values())
    return RunResult("t", variant, i, 0 if passed else 1, failure, passed, tests, 10.0 + i)


def task(kind: TaskType):
    return SimpleNamespace(task_type=SimpleNamespace(type=kind))


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


def test_a_gold_run_that_cannot_be_trusted_makes_the_task_invalid() -> None:
    from dataclasses import replace

    base = [run(Variant.BASE, 0, {"a": "failed"})]
    gold = [run(Variant.GOLD, 0, {"a": "passed"}), run(Variant.GOLD, 1, {"a": "passed"})]
    assert judge(task(TaskType.BUG_FIX), base, gold)[3] is True
    gold[1] = replace(gold[1], failure=FailureClass.INFRA, passed=False, flags=("tampered",))
    assert judge(task(TaskType.BUG_FIX), base, gold)[3] is False
