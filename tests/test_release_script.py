"""`scripts/release_from_state.sh` (a release from the GPU sessions' state): bad input is one
line naming what is wrong, and nothing is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
