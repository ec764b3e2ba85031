"""`scripts/release_from_state.sh` (a release from the GPU sessions' state): bad input is one
line naming what is wrong, and nothing is written; a tiny framework's state becomes a release."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "release_from_state.sh"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True)


def test_a_missing_argument_or_state_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    done = _run(cwd=tmp_path)
    assert done.returncode != 0
    assert "usage: release_from_state.sh STATE MIRRORS VERSION" in done.stderr
    done = _run(str(tmp_path / "nope"), str(tmp_path), "1.0.0", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nope'}/tasks does not exist (STATE)"
    ]
    assert list(tmp_path.iterdir()) == []  # no release folder, nothing else


def test_a_release_from_a_state_whose_every_task_passes_the_check(tmp_path: Path) -> None:
    """The whole script on a tiny framework's state: one task referenced on the CPU, pinned,
    rejudged, checked (none held back: the script had stopped there under pipefail, its grep of
    ERROR lines finding none, when release 1.21.0 was first built) and built."""
    pytest.importorskip("triton")
    from eval.__main__ import main as eval_main
    from tests.tinyfw import make_task_env

    _repo, work, tasks = make_task_env(tmp_path)
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--timeout", "120",
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    # (the first release of a dataset names its test split's start; later ones need nothing)
    done = _run(
        str(tmp_path), str(tmp_path / "mirrors"), "0.1.0", "--cutoff=2000-01-01", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "0 with errors" in done.stdout and "held back" not in done.stdout
    assert (tmp_path / "release" / "triton-pr-bench" / "manifest.json").exists()
    assert "tables in" in done.stdout
