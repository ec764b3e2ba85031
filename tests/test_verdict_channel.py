"""The verdict channel: frames signed with the run's key, checked by the harness against what
was collected; and a real pytest run through it reporting what its junit XML would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eval.runner import import_layout, parse_junit, run_pytest
from eval.sandbox import SandboxPolicy
from eval.verdict import PHASES, FrameReader, _combine, run_phases
from eval.verdict_plugin.tpb_verdict import KEY_BYTES, decode_frame, encode_frame

KEY = bytes(range(KEY_BYTES))


def frames(*payloads: dict, key: bytes = KEY, start: int = 0) -> bytes:
    return b"".join(encode_frame(key, start + i, p) for i, p in enumerate(payloads))


def report(nodeid: str, when: str, outcome: str = "passed", message: str = "") -> dict:
    return {"kind": "report", "nodeid": nodeid, "when": when, "outcome": outcome,
            "seconds": 0.1, "message": message}  # fmt: skip


def passing(nodeid: str) -> list[dict]:
    return [report(nodeid, w) for w in ("setup", "call", "teardown")]


def read(data: bytes, chunk: int = 7) -> FrameReader:
    reader = FrameReader(KEY)
    for i in range(0, len(data), chunk):  # frames arrive in arbitrary pieces
        reader.feed(data[i : i + chunk])
    reader.close()
    return reader


def test_frames_round_trip_and_refuse_another_key_or_an_edit() -> None:
    line = encode_frame(KEY, 3, {"kind": "end", "exitstatus": 0})
    assert decode_frame(KEY, line) == (3, {"kind": "end", "exitstatus": 0})
    with pytest.raises(ValueError, match="bad signature"):
        decode_frame(bytes(KEY_BYTES), line)
    magic, _seq, mac, body = line.split(b" ")
    with pytest.raises(ValueError, match="bad signature"):
        decode_frame(KEY, b" ".join((magic, b"4", mac, body)))  # replayed under another number
    with pytest.raises(ValueError, match="not a frame"):
        decode_frame(KEY, b"PASSED tests/test_x.py::test_x")


def test_a_clean_session() -> None:
    data = frames({"kind": "hello"}, {"kind": "collected", "nodeids": ["a", "b"]},
                  *passing("a"), *passing("b"), {"kind": "end", "exitstatus": 0})  # fmt: skip
    v = read(data).verdict()
    assert [(t.nodeid, t.outcome) for t in v.tests] == [("a", "passed"), ("b", "passed")]
    assert v.ended and v.exitstatus == 0 and v.problems == () and v.tampered == ()


def test_duplicate_extra_and_missing_reports_are_problems() -> None:
    v = read(frames(
        {"kind": "collected", "nodeids": ["a", "b", "c"]},
        *passing("a"),
        report("a", "call", "failed"),  # a second call report of a
        *passing("x"),  # never collected
        *passing("b"),
        {"kind": "end", "exitstatus": 0},  # c never reported
    )).verdict()  # fmt: skip
    assert v.problems == (
        "a second call report of 'a'",
        "a report of 'x', which was not collected",
        "a report of 'x', which was not collected",
        "a report of 'x', which was not collected",
        "1 collected tests were never reported: c",
    )
    assert [t.outcome for t in v.tests] == ["passed", "passed"]  # the first report counts


def test_forged_reordered_and_late_frames_are_problems() -> None:
    good = frames({"kind": "collected", "nodeids": ["a"]}, *passing("a"),
                  {"kind": "end", "exitstatus": 0})  # fmt: skip
    forged = frames(report("a", "call", "passed"), key=bytes(KEY_BYTES), start=5)
    late = frames({"kind": "tampered", "changes": ["x"]}, start=5)
    replayed = encode_frame(KEY, 2, report("a", "call", "failed"))
    v = read(good + forged + b"garbage\n" + replayed + late + b"TPB1 6 0").verdict()
    assert v.problems == (
        "not a frame of this run (frame 5: bad signature)",
        "not a frame of this run (not a frame)",
        "frame 2 out of sequence (expected 5)",
        "frame 5 after the session's end",
        "the channel ended inside a line",
    )
    assert v.tampered == ()


def test_a_session_that_stops_early_has_no_end_and_no_missing_problem() -> None:
    v = read(frames({"kind": "collected", "nodeids": ["a", "b"]}, report("a", "setup"),
                    report("a", "call"))).verdict()  # fmt: skip
    assert not v.ended and v.problems == ()
    assert [(t.nodeid, t.outcome) for t in v.tests] == [("a", "error")]  # no teardown seen


def test_phases_combine_as_junit_reports_them() -> None:
    def outcome(*phases: tuple[str, str]) -> str:
        return _combine("t", {w: report("t", w, o) for w, o in phases}).outcome

    assert outcome(("setup", "passed"), ("call", "passed"), ("teardown", "passed")) == "passed"
    assert outcome(("setup", "failed"), ("teardown", "passed")) == "error"
    assert outcome(("setup", "passed"), ("call", "failed"), ("teardown", "passed")) == "failed"
    assert outcome(("setup", "passed"), ("call", "passed"), ("teardown", "failed")) == "error"
    assert outcome(("setup", "skipped"), ("teardown", "passed")) == "skipped"
    assert outcome(("setup", "passed"), ("call", "skipped"), ("teardown", "passed")) == "skipped"


def test_a_runs_phases_come_from_when_its_frames_arrived() -> None:
    """Where a base or gold run's time goes (flash-linear-attention on the H200: 21-35 s for
    about 1 s of tests): startup to the plugin's hello, collection, the tests, the session's
    end, the exit; a run killed before its end keeps the phases it reached."""
    arrivals = {"hello": 2.0, "collected": 9.5, "report": 10.5, "kernels": 11.0, "end": 12.0}
    assert run_phases(arrivals, 0.0, 14.0) == {
        "startup": 2.0, "collect": 7.5, "tests": 1.0, "finish": 1.5, "exit": 2.0}  # fmt: skip
    assert run_phases({"hello": 2.0, "collected": 9.5, "end": 9.6}, 0.0, 10.0) == {
        "startup": 2.0, "collect": 7.5, "finish": 0.1, "exit": 0.4}  # fmt: skip
    # killed in a test: the rest is unfinished; crashed while collecting (a conftest's import
    # error on 2026-12-03, CPU): startup, then unfinished
    assert run_phases({"hello": 2.0, "collected": 9.5, "report": 10.0}, 0.0, 30.0) == {
        "startup": 2.0, "collect": 7.5, "tests": 0.5, "unfinished": 20.0}  # fmt: skip
    assert run_phases({"hello": 0.3}, 0.0, 7.8) == {"startup": 0.3, "unfinished": 7.5}
    assert run_phases({}, 0.0, 30.0) == {"unfinished": 30.0}
    v = read(frames({"kind": "collected", "nodeids": ["a"]}, report("a", "setup"),
                    report("a", "call"), report("a", "teardown"),
                    {"kind": "end", "exitstatus": 0})).verdict()  # fmt: skip
    assert set(v.arrivals) == {"collected", "report", "end"}
    assert v.arrivals["collected"] <= v.arrivals["report"] <= v.arrivals["end"]


def test_tampered_frames_are_kept() -> None:
    tampered = {"kind": "tampered", "changes": ["builtins.all replaced"]}
    data = frames({"kind": "collected", "nodeids": []}, tampered, {"kind": "end", "exitstatus": 5})
    v = read(data).verdict()
    assert v.tampered == ("builtins.all replaced",)


def test_an_oversized_channel_is_a_problem() -> None:
    reader = FrameReader(KEY)
    reader.feed(b"x" * (65 << 20))
    assert reader.verdict().problems == ("a line longer than any frame",)


SUITE = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("no device")


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown")


def test_pass():
    pass


def test_fail():
    assert 1 == 2


@pytest.mark.skip(reason="later")
def test_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


def test_setup_error(broken):
    pass


def test_teardown_error(bad_teardown):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1


class TestGroup:
    def test_method(self):
        pass
"""


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
def test_a_real_run_reports_what_junit_would(tmp_path: Path, sandboxed: bool) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_suite.py").write_text(SUITE)
    policy = SandboxPolicy() if sandboxed else None
    raw = run_pytest(tree, ["test_suite.py"], tmp_path / "out", timeout_s=120, policy=policy,
                     isolated_timing=False)  # fmt: skip
    assert raw.ended and raw.session_exit == 1 and raw.exit_code == 1
    assert raw.problems == () and raw.tampered == ()
    assert raw.sandbox == ("bwrap" if sandboxed else "none")
    # where the process's time went, from when its frames arrived: every phase, in all the wall
    assert list(raw.phases) == [p for p in PHASES if p != "unfinished"]
    assert abs(sum(raw.phases.values()) - raw.wall_s) < 0.05 and raw.phases["collect"] > 0
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", "-o", "junit_family=xunit1", "test_suite.py"],
                   cwd=tree, capture_output=True, check=False)  # fmt: skip
    want = {t.nodeid: t.outcome for t in parse_junit(junit)}
    assert {t.nodeid: t.outcome for t in raw.tests} == want
    assert want["test_suite.py::test_teardown_error"] == "error"
    assert want["test_suite.py::TestGroup::test_method"] == "passed"


def test_a_framework_config_asking_for_xdist_workers_still_reports_every_test(
    tmp_path: Path,
) -> None:
    # Liger-Kernel's pyproject once said `addopts = ["-n", "auto"]`: its tests then ran in xdist
    # workers and reached the channel as reports of node ids the controller never collected
    pytest.importorskip("xdist")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_suite.py").write_text(SUITE)
    (tree / "pytest.ini").write_text("[pytest]\naddopts = -n 2 --dist=load\n")
    raw = run_pytest(tree, ["test_suite.py"], tmp_path / "out", timeout_s=120, policy=None,
                     isolated_timing=False)  # fmt: skip
    assert raw.problems == () and raw.ended
    assert len(raw.tests) == 9 and raw.missing == ()


def test_packages_the_harness_installed_beside_the_interpreter_count_as_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # wheels carried to the GPU host go into a --target directory on PYTHONPATH: a test that
    # compares with numpy from there is not "code from outside the installation"
    site_dir = tmp_path / "site"
    (site_dir / "numpy" / "testing").mkdir(parents=True)
    (site_dir / "numpy" / "__init__.py").write_text("from numpy import testing\n")
    (site_dir / "numpy" / "testing" / "__init__.py").write_text(
        "def assert_allclose(a, b):\n    assert a == b\n"
    )
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_np.py").write_text(
        "def test_np():\n    import numpy.testing\n\n    numpy.testing.assert_allclose(1, 1)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(site_dir))
    raw = run_pytest(tree, ["test_np.py"], tmp_path / "out", timeout_s=120, policy=None,
                     isolated_timing=False)  # fmt: skip
    assert raw.tampered == () and [t.outcome for t in raw.tests] == ["passed"]


def test_test_files_with_one_name_in_two_folders_both_run(tmp_path: Path) -> None:
    # flash-linear-attention (2025): tests/layers/test_gla.py and tests/ops/test_gla.py, no
    # __init__.py in either folder; pytest's default import mode refused the second file
    # ("import file mismatch") and the op tests that reach the kernels never ran. The op tests
    # import a helper beside them (`from utils import assert_close`).
    tree = tmp_path / "tree"
    for folder in ("layers", "ops"):
        (tree / "tests" / folder).mkdir(parents=True)
    (tree / "tests" / "layers" / "test_gla.py").write_text("def test_layer():\n    pass\n")
    (tree / "tests" / "ops" / "utils.py").write_text("def assert_close(a, b):\n    assert a == b\n")
    (tree / "tests" / "ops" / "test_gla.py").write_text(
        "from utils import assert_close\n\n\ndef test_op():\n    assert_close(1, 1)\n"
    )
    files = ["tests/layers/test_gla.py", "tests/ops/test_gla.py::test_op"]
    raw = run_pytest(tree, files, tmp_path / "out", timeout_s=120, policy=None,
                     isolated_timing=False)  # fmt: skip
    assert {t.nodeid: t.outcome for t in raw.tests} == {
        "tests/layers/test_gla.py::test_layer": "passed",
        "tests/ops/test_gla.py::test_op": "passed",
    }
    assert raw.exit_code == 0 and raw.problems == ()
    # the selection run of a task without test files collects the whole folder (#1f52c84c97)
    raw = run_pytest(tree, ["tests"], tmp_path / "out2", timeout_s=120, policy=None,
                     isolated_timing=False)  # fmt: skip
    assert sorted(t.nodeid for t in raw.tests if t.outcome == "passed") == [
        "tests/layers/test_gla.py::test_layer",
        "tests/ops/test_gla.py::test_op",
    ]


def test_a_run_without_shared_names_keeps_pytests_default_import_mode() -> None:
    assert import_layout(["tests/test_a.py", "tests/ops/test_b.py::test_x[1]"]) == ((), ())
    # node ids of one file are one file, not a collision
    assert import_layout(["tests/test_a.py::t1", "tests/test_a.py::t2"]) == ((), ())
    assert import_layout(["test_a.py", "sub/test_a.py"]) == (("--import-mode=importlib",), ("sub",))
