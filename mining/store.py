"""The crawl's work directory for one framework: candidates.jsonl, state.json, summary.json.

Rules: records are appended and fsynced before the state that covers them is replaced
(atomically), so a run killed at any point loses nothing and duplicates nothing: on the next
open, whole records past the checkpoint are adopted and a torn last line is cut off.
A state file that cannot be read is an error; it is never overwritten.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mining.errors import StateError
from mining.model import Candidate

log = logging.getLogger(__name__)

STATE_VERSION = 1
_UMASK = os.umask(0)
os.umask(_UMASK)


@dataclass
class CrawlState:
    framework: str
    repo: str
    branch: str
    root_commit: str | None = None  # first commit of the history: tells repositories apart
    last_commit: str | None = None  # newest first-parent commit fully scanned
    candidates_bytes: int = 0  # size of candidates.jsonl covered by this state
    recorded: dict[str, str] = field(default_factory=dict)  # candidate id -> commit
    updated_at: str = ""
    version: int = STATE_VERSION

    @classmethod
    def load(cls, path: Path) -> CrawlState:
        try:
            data = json.loads(path.read_text())
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"version {data.get('version')!r}, expected {STATE_VERSION}")
            state = cls(**data)
            if not isinstance(state.recorded, dict) or not isinstance(state.candidates_bytes, int):
                raise ValueError("bad field types")
        except (OSError, ValueError, TypeError) as exc:
            raise StateError(
                f"state file {path} is unreadable ({exc}); it was left untouched: move it away "
                "to rescan from scratch (candidates.jsonl is kept and deduplicated)"
            ) from exc
        return state

    def save(self, path: Path) -> None:
        self.updated_at = datetime.now(UTC).isoformat(timespec="seconds")
        _atomic_write(path, json.dumps(asdict(self), indent=1, sort_keys=True))


class WorkDir:
    """`<out>/<framework>/`: the append-only candidate log and the state that checkpoints it."""

    def __init__(self, root: Path, framework: str, repo: str, branch: str):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.candidates_path = root / "candidates.jsonl"
        self.state_path = root / "state.json"
        self.summary_path = root / "summary.json"
        self.orphans_path = root / "orphaned.jsonl"
        if self.state_path.exists():
            self.state = CrawlState.load(self.state_path)
            if (self.state.framework, self.state.branch) != (framework, branch):
                raise StateError(
                    f"{self.state_path} belongs to {self.state.framework}@{self.state.branch}, "
                    f"not {framework}@{branch}; use another --out"
                )
        else:
            self.state = CrawlState(framework=framework, repo=repo, branch=branch)
        self._reconcile()
        self._fh = self.candidates_path.open("ab")

    # -- opening -----------------------------------------------------------------------------

    def _reconcile(self) -> None:
        """Adopt whole records written after the last checkpoint; cut a torn last line."""
        path = self.candidates_path
        size = path.stat().st_size if path.exists() else 0
        covered = self.state.candidates_bytes
        if size < covered:
            raise StateError(
                f"{path} is shorter ({size} B) than the state says ({covered} B): it was edited "
                "or truncated; restore it, or move state.json away to rescan"
            )
        if size == covered:
            return
        with path.open("rb") as fh:
            fh.seek(covered)
            tail = fh.read()
        keep = tail.rfind(b"\n") + 1
        adopted = 0
        for line in tail[:keep].splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            self.state.recorded[rec["id"]] = rec["commit"]
            adopted += 1
        if keep < len(tail):
            log.warning("cut a torn record (%d bytes) from the end of %s", len(tail) - keep, path)
            with path.open("r+b") as fh:
                fh.truncate(covered + keep)
        if adopted:
            log.info("adopted %d records written after the last checkpoint", adopted)
        self.state.candidates_bytes = covered + keep

    # -- writing -----------------------------------------------------------------------------

    @property
    def recorded_commits(self) -> set[str]:
        return set(self.state.recorded.values())

    def unique_id(self, pr_id: str, commit: str) -> str:
        """The PR id, unless another commit already holds it."""
        holder = self.state.recorded.get(pr_id)
        return pr_id if holder in (None, commit) else f"{pr_id}@{commit[:10]}"

    def append(self, cand: Candidate) -> None:
        line = json.dumps(cand.to_dict(), ensure_ascii=False).encode() + b"\n"
        self._fh.write(line)
        self.state.recorded[cand.id] = cand.commit

    def checkpoint(self, last_commit: str | None) -> None:
        """Make every appended record durable, then move the state past `last_commit`."""
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.state.candidates_bytes = self._fh.tell()
        self.state.last_commit = last_commit
        self.state.save(self.state_path)

    def drop_orphans(self, reachable: set[str]) -> int:
        """Move records whose commit left the history (rewritten) to orphaned.jsonl."""
        self._fh.flush()
        kept: list[bytes] = []
        orphans: list[bytes] = []
        with self.candidates_path.open("rb") as fh:
            for line in fh:
                rec = json.loads(line)
                (kept if rec["commit"] in reachable else orphans).append(line)
        if not orphans:
            return 0
        with self.orphans_path.open("ab") as fh:
            fh.writelines(orphans)
            fh.flush()
            os.fsync(fh.fileno())
        self._fh.close()
        _atomic_write(self.candidates_path, b"".join(kept).decode())
        self._fh = self.candidates_path.open("ab")
        self.state.recorded = {k: v for k, v in self.state.recorded.items() if v in reachable}
        self.state.candidates_bytes = self._fh.tell()
        self.state.save(self.state_path)
        return len(orphans)

    def write_summary(self, summary: dict[str, Any]) -> None:
        _atomic_write(self.summary_path, json.dumps(summary, indent=1, sort_keys=True))

    def close(self) -> None:
        self._fh.close()


def read_candidates(path: Path) -> list[Candidate]:
    """All whole records of a candidates.jsonl (a torn last line is ignored)."""
    out = []
    with path.open("rb") as fh:
        for line in fh:
            if line.endswith(b"\n") and line.strip():
                out.append(Candidate.from_dict(json.loads(line)))
    return out


def _atomic_write(path: Path, text: str) -> None:
    # A temporary name of its own: two writers of one directory never share a half-written file.
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would create it; mkstemp's is 0600
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def repo_paths(work: Path, overrides: Iterable[str] = ()) -> dict[str, Path]:
    """framework -> repository path: what each crawl's summary.json recorded under `work`,
    then `NAME=PATH` overrides (the later stages' `--repo-path`)."""
    paths: dict[str, Path] = {}
    for summary in sorted(work.glob("*/summary.json")):
        recorded = json.loads(summary.read_text()).get("repo_path")
        if recorded:
            paths[summary.parent.name] = Path(recorded)
    for item in overrides:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--repo-path wants NAME=PATH, got {item!r}")
        paths[name] = Path(path)
    return paths
