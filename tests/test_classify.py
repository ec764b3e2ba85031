"""`runner.classify` on recorded runs (tests/data/runs: real pytest processes, their junit XML,
log and exit code; `record.py` there rerecords them), and on the verdict channel's states."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from eval.model import FailureClass, TestOutcome
from eval.runner import RawRun, classify, parse_junit

RUNS = Path(__file__).parent / "data" / "runs"

EXPECTED = {
    "passed": (FailureClass.NONE, ""),
    "test_failure": (FailureClass.TEST_FAILURE, "Tensor-likes are not close"),
    "compile_error": (
        FailureClass.COMPILE_ERROR,
        "CompilationError: at 4:31 in scale_kernel: NameError('scale is not defined')",
    ),
    "cuda_error": (FailureClass.CUDA_ERROR, "illegal memory access"),
    "timeout": (FailureClass.TIMEOUT, "killed at the time limit"),
    "crash": (FailureClass.CRASH, "killed by signal 9"),
    "infra_missing_module": (FailureClass.INFRA, "ImportError while importing test module"),
    "infra_no_gpu": (FailureClass.INFRA, "Found no NVIDIA driver"),
    "infra_all_skipped": (FailureClass.INFRA, "every selected test was skipped"),
    "infra_nothing_collected": (FailureClass.INFRA, "pytest collected no test (exit 5)"),
}


def recorded(name: str) -> RawRun:
    d = RUNS / name
    meta = json.loads((d / "meta.json").read_text())
    junit = d / "junit.xml"
    return RawRun(
        exit_code=meta["exit_code"],
        timed_out=meta["timed_out"],
        wall_s=1.0,
        tests=parse_junit(junit) if junit.exists() else (),
        log_text=(d / "pytest.log").read_text(),
        kernels=(),
    )


def test_every_recorded_run_has_an_expectation() -> None:
    assert {d.name for d in RUNS.iterdir() if d.is_dir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_run_is_classified(name: str) -> None:
    failure, passed, detail = classify(recorded(name))
    want, text = EXPECTED[name]
    assert failure is want, detail
    assert passed is (want is FailureClass.NONE)
    assert text in detail


def test_an_all_skipped_run_with_exit_zero_never_passes() -> None:
    raw = recorded("infra_all_skipped")
    assert raw.exit_code == 0 and raw.tests and all(t.outcome == "skipped" for t in raw.tests)
    assert classify(raw)[:2] == (FailureClass.INFRA, False)
    # nor with the channel's end frame saying pytest exited cleanly
    assert classify(replace(raw, ended=True, session_exit=0))[:2] == (FailureClass.INFRA, False)


def test_nothing_collected_never_passes_even_with_exit_zero() -> None:
    raw = replace(recorded("infra_nothing_collected"), exit_code=0)
    assert classify(raw) == (FailureClass.INFRA, False, "no test report (pytest exit 0)")


# --- the verdict channel's states -----------------------------------------------------------

PASSING = recorded("passed")


def test_a_passing_run_passes_only_with_its_session_ended_cleanly() -> None:
    assert classify(PASSING)[:2] == (FailureClass.NONE, True)
    died = classify(replace(PASSING, ended=False))
    assert died[:2] == (FailureClass.CRASH, False)
    assert "before pytest finished its session" in died[2]
    # exit 0 (an os._exit at exit) over a session pytest saw fail
    assert classify(replace(PASSING, session_exit=1))[1] is False


def test_tampering_and_channel_problems_are_infra_and_never_pass() -> None:
    tampered = classify(replace(PASSING, tampered=("tests/conftest.py added",)))
    assert tampered == (FailureClass.INFRA, False, "tampered: tests/conftest.py added")
    forged = classify(replace(PASSING, problems=("frame 3: bad signature",)))
    assert forged == (FailureClass.INFRA, False, "verdict channel: frame 3: bad signature")


def test_an_expected_test_left_unreported_fails_the_run() -> None:
    raw = replace(PASSING, missing=("tests/test_values.py::test_values",))
    assert classify(raw) == (
        FailureClass.TEST_FAILURE,
        False,
        "tests/test_values.py::test_values was not reported",
    )


def test_a_failed_test_under_exit_zero_is_a_failure() -> None:
    """Per-test outcomes decide: exit 0 does not wash out a reported failure."""
    bad = TestOutcome("t.py::test_x", "failed", 0.1, "AssertionError: 1 != 2")
    raw = replace(PASSING, tests=(*PASSING.tests, bad))
    assert classify(raw) == (FailureClass.TEST_FAILURE, False, "AssertionError: 1 != 2")


def test_a_failed_tests_reason_is_pytests_error_line_not_its_header() -> None:
    """A report's first line is often the test's header or its parameters ("N = 4, T = 500"):
    the `E` line says what went wrong."""
    params = (
        "N = 4, T = 500\n\n    def test_x(N, T):\n>       assert_close(a, b)\n"
        "E   AssertionError: dq diff: 0.125\n"
    )
    bad = TestOutcome("t.py::test_x[4-500]", "failed", 0.1, params)
    raw = replace(PASSING, tests=(*PASSING.tests, bad), exit_code=1, session_exit=1)
    assert classify(raw) == (FailureClass.TEST_FAILURE, False, "AssertionError: dq diff: 0.125")
    silent = replace(bad, message="")
    raw = replace(raw, tests=(*PASSING.tests, silent))
    assert classify(raw)[2] == "t.py::test_x[4-500] failed"


def test_an_import_error_keeps_what_could_not_be_imported() -> None:
    log = (
        "ImportError while importing test module '/t/test/test_ce.py'.\n"
        "Hint: make sure your test modules/packages have valid Python names.\n"
        "Traceback:\n"
        "E   ImportError: cannot import name 'libdevice' from 'triton.language.math'\n"
    )
    raw = RawRun(exit_code=2, timed_out=False, wall_s=1.0, tests=(), log_text=log, kernels=())
    failure, passed, detail = classify(raw)
    assert (failure, passed) == (FailureClass.INFRA, False)
    assert "test_ce.py" in detail and "cannot import name 'libdevice'" in detail


def test_a_compile_error_names_its_kernel_and_cause() -> None:
    """flash-linear-attention's path attention tasks (#503, #581, #721a205a1b, #a8aff14cea)
    ended "CompilationError: at 8:4:" and no more: the kernel and the cause sit under the
    caret of Triton's message (here as pytest's junit message holds it, no "E" prefixes)."""
    message = (
        "triton.compiler.errors.CompilationError: at 3:4:\n"
        "def householder_bwd_kernel(\n"
        "    x, y,\n"
        "    T: tl.constexpr,\n"
        "    ^\n"
        "T marked as constexpr and listed in do_not_specialize. Remove constexpr designation.\n"
    )
    failed = TestOutcome("tests/test_h.py::test_bwd[1]", "failed", 0.1, message)
    raw = replace(PASSING, exit_code=1, tests=(failed,), log_text="")
    failure, _, detail = classify(raw)
    assert failure is FailureClass.COMPILE_ERROR
    assert detail == (
        "CompilationError: at 3:4 in householder_bwd_kernel: T marked as constexpr"
        " and listed in do_not_specialize. Remove constexpr designation."
    )
    # without the caret (a message cut short) the line stays as it was
    cut = replace(failed, message=message.split("    ^")[0])
    assert classify(replace(raw, tests=(cut,)))[2] == (
        "triton.compiler.errors.CompilationError: at 3:4:"
    )
