"""The performance scores (eval.perf_scores), the optimization completion rule and the
modifies_inputs check against the gold runs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from eval.model import FailureClass, KernelTiming, RunResult, Variant
from eval.perf_scores import NOISE, geomean, perf_score, summarize
from eval.score import TaskScore, aggregate, prediction_flags


def test_speedup_pmr_and_fast_flags() -> None:
    s = perf_score(True, t_base=2.0, t_gold=1.0, t_pred=1.0)
    assert (s.speedup, s.pmr, s.fast_1, s.fast_gold, s.gain_met) == (2.0, 1.0, True, True, True)
    slow = perf_score(True, t_base=2.0, t_gold=1.0, t_pred=2.5)
    assert slow.speedup == pytest.approx(0.8) and not slow.fast_1 and not slow.fast_gold
    wrong = perf_score(False, t_base=2.0, t_gold=1.0, t_pred=0.5)
    assert not (wrong.fast_1 or wrong.fast_gold or wrong.gain_met)  # fast but wrong counts 0
    noisy = perf_score(True, t_base=1.0, t_gold=0.5, t_pred=1.0 * (1 + NOISE / 2))
    assert noisy.fast_1 and not noisy.fast_gold  # within the noise band of the base


def test_a_do_nothing_prediction_never_meets_the_optimization_rule() -> None:
    # the setup state as the prediction: T_pred == T_base, the gold 1.5x faster
    nothing = perf_score(True, t_base=1.5, t_gold=1.0, t_pred=1.5)
    assert nothing.fast_1 and not nothing.gain_met
    # half of the gold's gain (1.25x) is the bar: 1.24x misses it, 1.26x meets it
    assert not perf_score(True, 1.5, 1.0, 1.5 / 1.24).gain_met
    assert perf_score(True, 1.5, 1.0, 1.5 / 1.26).gain_met


def score(tid: str, correct: bool, base: float, gold: float, pred: float, opt: bool) -> TaskScore:
    p = perf_score(correct, base, gold, pred)
    passed = correct and (p.gain_met if opt else True)
    return TaskScore(tid, True, passed, True, correct, "none" if correct else "test_failure",
                     (), gold, pred, p.pmr, None, None, None, t_base_ms=base, speedup=p.speedup,
                     fast_1=p.fast_1, fast_gold=p.fast_gold, optimization=opt,
                     gain_met=p.gain_met)  # fmt: skip


def test_report_keeps_every_task_in_the_rates_and_geomeans_over_timed_ones() -> None:
    scores = [
        score("a", True, 2.0, 1.0, 1.0, opt=True),  # gold-like: completed, 2x
        score("b", True, 2.0, 1.0, 2.0, opt=True),  # do-nothing: not completed
        score("c", False, 2.0, 1.0, 0.5, opt=False),  # wrong
        score("d", True, 1.0, 1.0, 0.5, opt=False),  # twice as fast as the gold
    ]
    report = aggregate(scores)
    assert report.completed == 2 and report.tcr == pytest.approx(0.5)
    assert report.fast_1 == pytest.approx(3 / 4) and report.fast_gold == pytest.approx(2 / 4)
    assert report.timed == 3
    assert report.speedup_geomean == pytest.approx(geomean([2.0, 1.0, 2.0]))
    assert report.pmr_geomean == pytest.approx(geomean([1.0, 0.5, 2.0]))


def test_summarize_with_nothing_timed() -> None:
    s = summarize([perf_score(False, None, None, None)], [False])
    assert (s.timed, s.fast_1, s.speedup_geomean) == (0, 0.0, None)


def test_modifies_inputs_holds_a_prediction_to_what_the_gold_wrote_in_any_run() -> None:
    """H200 call 49 (2026-12-06): flash-linear-attention #c538ba6c7a's gold, scored as a
    prediction, was flagged modifies_inputs: the gold run it was compared with had recorded no
    written argument (its autotuning run), the reference's other two gold runs dq, dk, dg."""

    def run(variant: Variant, written: tuple[str, ...]) -> RunResult:
        k = KernelTiming("dqkg_kernel", 1, 0.03, written=written)
        return RunResult("t", variant, 0, 0, FailureClass.NONE, True, (), 1.0, kernels=(k,))

    task = SimpleNamespace(kernels=())
    pred = {"task_id": "t", "kernels": {"dqkg_kernel": "@triton.jit\ndef dqkg_kernel(): pass"}}
    tuned, later = run(Variant.GOLD, ()), run(Variant.GOLD, ("dk", "dq"))
    honest = run(Variant.PREDICTION, ("dk", "dq"))
    assert "modifies_inputs" in prediction_flags(task, pred, honest, [tuned])  # type: ignore[arg-type]
    assert "modifies_inputs" not in prediction_flags(task, pred, honest, [tuned, later])  # type: ignore[arg-type]
    # writing an input the gold only reads is still caught
    clobber = run(Variant.PREDICTION, ("dk", "dq", "q"))
    assert "modifies_inputs" in prediction_flags(task, pred, clobber, [tuned, later])  # type: ignore[arg-type]


def _wall(variant: Variant, i: int, wall: float, passed: bool = True) -> RunResult:
    failure = FailureClass.NONE if passed else FailureClass.TEST_FAILURE
    return RunResult("t", variant, i, 0 if passed else 1, failure, passed, (), wall)


def test_the_end_to_end_baseline_is_like_for_like() -> None:
    from eval.score import e2e_baseline

    # flash-linear-attention #8d255bb26a on an H100 (call 63): the reference's base runs took
    # 16.6 s (run 0, compiling), 11.3 and 11.1 s; the gold as a prediction, one run, 102.5 s
    walls = ((Variant.BASE, 0, 16.6), (Variant.GOLD, 0, 55.8), (Variant.BASE, 1, 11.3),
             (Variant.BASE, 2, 11.1))  # fmt: skip
    ref = SimpleNamespace(runs=tuple(_wall(*w) for w in walls))
    one = [_wall(Variant.GOLD, 0, 102.5)]
    assert e2e_baseline([], ref, one) == 16.6  # run 0 against run 0, not the warm median 11.3
    three = [_wall(Variant.PREDICTION, i, w) for i, w in enumerate((30.0, 12.0, 11.0))]
    assert e2e_baseline([], ref, three) == 11.3
    # an optimization's base timed in the score's own session is its baseline
    session = [_wall(Variant.BASE, 0, 20.0)]
    assert e2e_baseline(session, ref, one) == 20.0
    # a base that fails its tests (every verified feature, new op, bug fix) is no baseline
    failing = SimpleNamespace(runs=(_wall(Variant.BASE, 0, 3.0, passed=False),))
    assert e2e_baseline([], failing, one) is None
    assert e2e_baseline([], None, one) is None


def test_forbidden_api_spares_what_the_gold_itself_does() -> None:
    """H100 call 80 (2026-12-07): flash-linear-attention #e582c2883f's gold, scored as a
    prediction, was flagged forbidden_api: its wrapper calls `breakpoint()` when a gradient is
    NaN. What the expert's targets do is not held against a prediction; anything else still is."""
    kernel = "@triton.jit\ndef k(x):\n    pass\n"
    gold_src = kernel + "def w(x):\n    if x.isnan().any():\n        breakpoint()\n"
    task = SimpleNamespace(kernels=(SimpleNamespace(after_src=gold_src),))
    keeps = {"task_id": "t", "kernels": {"w": gold_src}}
    assert "forbidden_api" not in prediction_flags(task, keeps, None)  # type: ignore[arg-type]
    worse = {"task_id": "t", "kernels": {"w": gold_src + "def v(p):\n    return open(p)\n"}}
    assert "forbidden_api" in prediction_flags(task, worse, None)  # type: ignore[arg-type]
    plain = SimpleNamespace(
        kernels=(SimpleNamespace(after_src="@triton.jit\ndef k(x):\n    pass\n"),)
    )
    assert "forbidden_api" in prediction_flags(plain, keeps, None)  # type: ignore[arg-type]


def test_the_gold_wrappers_own_calls_are_spared_too(tmp_path: Path) -> None:
    """#e582c2883f as it really is: `breakpoint()` sits in a launch wrapper, not in the kernel
    whose source `task.kernels` stores, so the rule above (kernels only) still flagged its gold
    (2 of the state's 827 task directories have such a gold). The expert's version of every
    target comes from the task's `after/` files (`eval.targets.gold_sources`)."""
    from curation.taskdir import TaskDir
    from eval.targets import gold_sources

    kernel = "@triton.jit\ndef k(x):\n    pass\n"
    wrapper = "def w(x):\n    if x.isnan().any():\n        breakpoint()\n    k[(1,)](x)\n"
    tdir = TaskDir(tmp_path / "t")
    (tdir.root / "after" / "pkg").mkdir(parents=True)
    (tdir.root / "after" / "pkg" / "ops.py").write_text(kernel + "\n\n" + wrapper)
    k = SimpleNamespace(file="pkg/ops.py", name="k", role="kernel", wrappers=("w",),
                        after_src=kernel)  # fmt: skip
    task = SimpleNamespace(kernels=(k,), targets=())
    gold = gold_sources(task, tdir)  # type: ignore[arg-type]
    assert any("breakpoint()" in g for g in gold) and kernel in gold
    keeps = {"task_id": "t", "kernels": [{"file": "pkg/ops.py", "name": "w", "source": wrapper}]}
    assert "forbidden_api" in prediction_flags(task, keeps, None)  # type: ignore[arg-type]
    assert "forbidden_api" not in prediction_flags(task, keeps, None, (), gold)  # type: ignore[arg-type]
    opens = wrapper + "    open('/etc/passwd')\n"
    worse = {"task_id": "t", "kernels": [{"file": "pkg/ops.py", "name": "w", "source": opens}]}
    assert "forbidden_api" in prediction_flags(task, worse, None, (), gold)  # type: ignore[arg-type]


def test_a_gluon_kernel_is_a_triton_kernel() -> None:
    """flash-linear-attention #1010 (`scripts/check_oracle.py` over the 827 task directories,
    2026-12-08): its targets are Gluon kernels (`@gluon.jit`, `gl.` language), and its gold,
    scored as a prediction, read `no_triton_kernel`."""
    gluon = "@gluon.jit\ndef k(x_ptr, BLOCK: gl.constexpr):\n    pass\n"
    task = SimpleNamespace(kernels=(SimpleNamespace(after_src=gluon),))
    pred = {"task_id": "t", "kernels": {"k": gluon}}
    assert "no_triton_kernel" not in prediction_flags(task, pred, None)  # type: ignore[arg-type]
    torch_only = {"task_id": "t", "kernels": {"k": "def k(x):\n    return x.sum()\n"}}
    assert "no_triton_kernel" in prediction_flags(task, torch_only, None)  # type: ignore[arg-type]


def test_a_gold_launch_that_reads_as_a_cache_lookup_is_not_memoisation() -> None:
    """flash-linear-attention #384 (verified on an H100, call 89): its gold wrapper launches
    `parallel_path_fwd_kernel_prepare_k_cache[grid](...)`, which the memoisation pattern reads
    as a `_cache[...]` lookup, so its gold scored as a prediction would have been flagged
    `memoised_output` (found on the CPU over the 204 verified tasks' gold predictions: the only
    one). The expert's own lines are spared; a line of the prediction's own is not."""
    launch = "    prepare_k_cache[grid](k=k, h=h)\n"
    wrapper = "def w(k, h):\n    grid = (1,)\n" + launch
    kernel = "@triton.jit\ndef prepare_k_cache(k, h):\n    pass\n"
    task = SimpleNamespace(kernels=(SimpleNamespace(after_src=kernel),))
    gold = [kernel, wrapper]
    keeps = {"task_id": "t", "kernels": {"w": wrapper, "k": kernel}}
    assert "memoised_output" in prediction_flags(task, keeps, None)  # type: ignore[arg-type]
    assert "memoised_output" not in prediction_flags(task, keeps, None, (), gold)  # type: ignore[arg-type]
    memo = wrapper.replace(launch, "    if key in self._cache:\n        return self._cache[key]\n")
    cached = {"task_id": "t", "kernels": {"w": memo, "k": kernel}}
    assert "memoised_output" in prediction_flags(task, cached, None, (), gold)  # type: ignore[arg-type]
