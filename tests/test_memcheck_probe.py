"""`eval.memcheck` (what compute-sanitizer's log says) and `scripts/memcheck_probe.py` (a task's
kept tests under the tool, setup state and gold) on a tiny framework whose bug fix masks a
load: the tests pass at both, the checker tells them apart. The real tool needs a GPU; here a
stand-in takes its arguments, runs the tests and prints a log by what the tree's kernel does
(tests/test_workload.py's GPU test runs the real one)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from eval.__main__ import main as eval_main
from eval.memcheck import MEMCHECK_EXIT, Findings, memcheck_command, read_log
from tests.test_builder import unavailable
from tests.tinyfw import OPS, mine_ops_fix

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import memcheck_bounds
import memcheck_probe

CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
ERRORS = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at add_kernel+0x1d0 in ops.py:12
=========     by thread (31,0,0) in block (1,0,0)
=========     Address 0x7f3a00002000 is out of bounds
========= ERROR SUMMARY: 3 errors
"""


def test_a_log_gives_its_error_count_first_finding_and_the_function_it_names() -> None:
    assert read_log(CLEAN) == Findings(0)
    assert read_log(ERRORS) == Findings(3, "Invalid __global__ read of size 4 bytes", "add_kernel")
    # a host frame's address first ("at 0x2b0 in kernel_name"), as some versions print it
    host = ERRORS.replace("at add_kernel+0x1d0 in ops.py:12", "at 0x1d0 in add_kernel")
    assert read_log(host).where == "add_kernel"
    # no summary: the tool did not run to its end (no GPU, killed)
    assert read_log("Error: Target application terminated before first instrumented API call")\
        == Findings(None)  # fmt: skip
    assert memcheck_command("cs")[:5] == ["cs", "--tool", "memcheck", "--error-exitcode",
                                          str(MEMCHECK_EXIT)]  # fmt: skip


# the base reads both inputs unmasked (past the end where n is not a multiple of the block: the
# tests' n is), the fix masks them; under the interpreter both give the same sums
BASE_OPS = OPS.replace("x_ptr + offs, mask=mask", "x_ptr + offs").replace(
    "y_ptr + offs, mask=mask", "y_ptr + offs").replace("x + y * 0.0", "x + y")  # fmt: skip
FIXED_OPS = OPS.replace("x + y * 0.0", "x + y")
TEST_BLOCKS = """import torch

from pkg.ops import add


def test_whole_blocks():
    x = torch.arange(128, dtype=torch.float32)
    torch.testing.assert_close(add(x, x), 2 * x)
"""


def _stand_in(path: Path) -> Path:
    """compute-sanitizer's stand-in: notes its arguments (PATH.args), skips its options, runs
    the command, prints an error log naming add_kernel where the tree's kernel loads unmasked,
    else a clean one."""
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {path}.args\n'
        'while [ "$1" != "${1#-}" ]; do shift; shift; done\n'
        '"$@"\nrc=$?\n'
        "if grep -q 'x_ptr + offs)' pkg/ops.py; then\n"
        f"  printf '%s' '{ERRORS}'; exit {MEMCHECK_EXIT}\nfi\n"
        f"printf '%s' '{CLEAN}'\nexit $rc\n"
    )
    path.chmod(0o755)
    return path


def test_the_probe_runs_the_kept_tests_under_the_checker_and_tells_the_fix_apart(
    tmp_path: Path, capsys
) -> None:
    if shutil.which("bwrap") is None:
        unavailable("the reference runs are sandboxed: apt-get install bubblewrap")
    _repo, work, tasks = mine_ops_fix(tmp_path, BASE_OPS, FIXED_OPS,
                                      "Fix out-of-bounds loads in add (#9)",
                                      {"tests/test_blocks.py": TEST_BLOCKS})  # fmt: skip
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--timeout", "120",
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    [tdir] = [p for p in tasks.iterdir() if (p / "reference.json").exists()]
    ref = json.loads((tdir / "reference.json").read_text())
    # the situation the probe is for: the tests pass at the setup state and with the gold
    assert ref["node_ids"] and not ref["fail_to_pass"], ref["validity_note"]
    out = tmp_path / "probe.jsonl"
    sanitizer = _stand_in(tmp_path / "cs")
    argv = ["--tasks", str(tasks), "--work", str(work), "--no-sandbox", "--sanitizer",
            str(sanitizer), "--timeout", "120", "--scratch", str(tmp_path / "scratch"),
            "--out", str(out), "--logs", str(tmp_path / "logs"), "--padding", "4096"]  # fmt: skip
    assert memcheck_probe.main(argv) == 0
    assert "--padding 4096" in Path(f"{sanitizer}.args").read_text()
    rows = {r["variant"]: r for r in map(json.loads, out.read_text().splitlines())}
    base, gold = rows["base"], rows["gold"]
    assert (base["errors"], base["where"], base["in_target"]) == (3, "add_kernel", True)
    assert (gold["errors"], gold["passed"]) == (0, True), gold
    # the tests themselves passed at the setup state too: the checker is what tells
    assert base["passed"], base
    assert "separates the setup state from the gold on 1 of 1 tasks" in capsys.readouterr().out
    # the sanitizer's findings in full, a log a variant
    assert "Invalid __global__ read" in (tmp_path / "logs" / tdir.name / "base.log").read_text()
    assert "ERROR SUMMARY: 0 errors" in (tmp_path / "logs" / tdir.name / "gold.log").read_text()


def test_the_probe_says_when_there_is_no_sanitizer(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(memcheck_probe, "find_sanitizer", lambda: None)
    assert memcheck_probe.main(["--tasks", str(tmp_path)]) == 1
    assert "compute-sanitizer not found" in capsys.readouterr().err


def test_the_probe_has_help(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        memcheck_probe.main(["--help"])
    assert exc.value.code == 0
    assert "--max-node-ids" in capsys.readouterr().out


def test_the_bounds_measurement_runs_each_offset_with_the_allocator_on_and_off_at_each_padding(
    tmp_path: Path,
) -> None:
    """scripts/memcheck_bounds.py (the GPU measurement of where memcheck sees a read past a
    tensor): its cases, each case's command and environment, and how a log reads as seen or
    not; the masked load is call 88's test kernel, the unmasked one call 89's."""
    from eval.backends import MULTICAST_OFF
    from eval.memcheck import CHECKED_ENV, PADDING

    grid = memcheck_bounds.cases([16, 4096], [0, 256])
    assert len(grid) == 8 and len(set(grid)) == 8 and not any(c.masked for c in grid)
    both = memcheck_bounds.cases([16, 4096], [0, 256], [0, 1])
    assert len(both) == 16 and len(set(both)) == 16 and sum(c.masked for c in both) == 8
    first = grid[0]
    assert (first.offset, first.caching, first.padding, first.bytes_past_end) == (16, True, 0, 0)
    assert memcheck_bounds.Case(4096, False, 0).bytes_past_end == (4096 - 16) * 4
    script = tmp_path / "read_past.py"
    plain = memcheck_bounds.command("cs", first, script)
    padded = memcheck_bounds.command("cs", memcheck_bounds.Case(16, True, 256, True), script)
    unpadded = memcheck_command("cs", padding=0)
    assert plain[: len(unpadded)] == unpadded
    assert "--padding" not in plain and plain[-3:] == [str(script), "16", "0"]
    assert padded[padded.index("--padding") + 1] == "256" and padded[-1] == "1"
    # the measured padding is what every checked process gets unless told otherwise
    assert memcheck_command("cs")[-2:] == ["--padding", str(PADDING)] and PADDING > 448
    on = memcheck_bounds.environment(first, tmp_path / "c")
    off = memcheck_bounds.environment(memcheck_bounds.Case(16, False, 0), tmp_path / "c")
    assert not set(CHECKED_ENV) & set(on) and off.items() >= CHECKED_ENV.items()
    assert on.items() >= MULTICAST_OFF.items() and off["TRITON_CACHE_DIR"] == str(tmp_path / "c")
    seen = memcheck_bounds.outcome(first, MEMCHECK_EXIT, ERRORS)
    assert seen.seen and seen.errors == 3 and seen.first.startswith("Invalid __global__ read")
    assert not memcheck_bounds.outcome(first, 0, CLEAN).seen
    assert not memcheck_bounds.outcome(first, 1, "Traceback ...").seen  # no summary: not seen
    # the kernel the cases run reads exactly the block at the offset, unmasked or masked with
    # every lane on
    text = memcheck_bounds.READ_PAST.format(n=memcheck_bounds.ELEMENTS)
    assert "tl.load(x_ptr + i + OFFSET)" in text and "torch.ones(16" in text
    assert "tl.load(x_ptr + i + OFFSET, mask=i < n)" in text and 'sys.argv[2] == "1"' in text
    assert "MASKED=" in text and "read_at[(1,)](x, out, 16," in text
    rows = memcheck_bounds.table([seen, memcheck_bounds.outcome(both[-1], 0, CLEAN)])
    assert rows.row_count == 2


def test_the_bounds_measurement_says_what_it_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    if memcheck_bounds.find_sanitizer() is None:
        assert memcheck_bounds.main([]) == 1
        assert "compute-sanitizer not found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        memcheck_bounds.main(["--offsets", "16,x"])
    assert "not a comma-separated list of integers: 16,x" in capsys.readouterr().err
