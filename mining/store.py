"""The crawl's work directory for one framework: candidates.jsonl, state.json, summary.json.

Rules: records are appended and fsynced before the state that covers them is replaced
(atomically), so a run killed at any point loses nothing and duplicates nothing: on the next
open, whole records past the checkpoint are adopted and a torn last line is cut off.
Refuses (`StateError`, one line naming the file and line; nothing is changed): a state file
that cannot be read (it is never overwritten), a candidates.jsonl line that is not JSON, a
second record of an id or a commit, records before the checkpoint that the state does not list.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import RecordError
from core.files import (
    jsonl_line,
    line_starts,
    read_json,
    read_jsonl,
    read_record,
    write_atomic,
    write_json,
)
from core.records import from_json, to_json
from mining.errors import StateError
from mining.model import Candidate

log = logging.getLogger(__name__)

STATE_VERSION = 1


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
            state = read_record(cls, path)
            if state.version != STATE_VERSION:
                raise RecordError(f"{path}: version {state.version!r}, expected {STATE_VERSION}")
        except (OSError, RecordError) as exc:
            raise StateError(
                f"state file unreadable ({exc}); it was left untouched: move it away "
                "to rescan from scratch (candidates.jsonl is kept and deduplicated)"
            ) from None
        return state

    def save(self, path: Path) -> None:
        self.updated_at = datetime.now(UTC).isoformat(timespec="seconds")
        write_json(path, asdict(self), sort_keys=True)


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
        """Adopt whole records written after the last checkpoint; cut a torn last line.

        Every line, before the checkpoint or after it, must be a record with an id and a commit
        that no other line has, and the records before the checkpoint must be the ones the
        state lists; anything else is a `StateError` naming the line, and nothing is changed.
        """
        path = self.candidates_path
        size = path.stat().st_size if path.exists() else 0
        covered = self.state.candidates_bytes
        if size < covered:
            raise StateError(
                f"{path} is shorter ({size} B) than the state says ({covered} B): it was edited "
                "or truncated; restore it, or move state.json away to rescan"
            )
        if size == covered == 0:
            return
        with path.open("rb") as fh:
            data = fh.read()
        keep = data.rfind(b"\n", covered) + 1 or covered
        adopted = self._check_records(path, line_starts(data[:keep]), covered)
        if keep < len(data):
            log.warning("cut a torn record (%d bytes) from the end of %s", len(data) - keep, path)
            with path.open("r+b") as fh:
                fh.truncate(keep)
        for rec_id, commit in adopted:
            self.state.recorded[rec_id] = commit
        if adopted:
            log.warning(
                "adopted %d whole records written after the last checkpoint of %s",
                len(adopted), path,
            )  # fmt: skip
        if self.state.candidates_bytes != keep:
            self.state.candidates_bytes = keep
            self.state.save(self.state_path)  # the file and its state agree again

    def _check_records(self, path: Path, starts: list[int], covered: int) -> list[tuple[str, str]]:
        """(id, commit) of the records past the checkpoint, after checking every line."""
        try:
            rows = read_jsonl(path, id_key="id", skip_torn_tail=True)
        except RecordError as exc:
            raise StateError(f"{exc}; nothing was changed: repair or remove that line") from None
        if covered not in set(starts):
            raise StateError(
                f"{path}: the checkpoint ({covered} B) falls inside a line: the file was edited; "
                "restore it, or move state.json away to rescan"
            )
        known = dict(self.state.recorded)
        commits: dict[str, int] = {}
        adopted: list[tuple[str, str]] = []
        for number, rec in rows:
            rec_id, commit = rec["id"], rec.get("commit")
            if not isinstance(rec_id, str) or not isinstance(commit, str):
                raise StateError(f"{path}:{number}: a candidate needs a string id and commit")
            if commit in commits:
                raise StateError(
                    f"{path}:{number}: duplicate record of commit {commit[:12]} (first on line "
                    f"{commits[commit]}); nothing was changed: remove one of them"
                )
            commits[commit] = number
            if starts[number - 1] >= covered:
                if rec_id in known:
                    raise StateError(f"{path}:{number}: id {rec_id!r} is already recorded")
                adopted.append((rec_id, commit))
            elif known.pop(rec_id, None) != commit:
                raise StateError(
                    f"{path}:{number}: record {rec_id!r} is not one the state file lists: the "
                    "file was edited; restore it, or move state.json away to rescan"
                )
        if known:
            first = next(iter(known))
            raise StateError(
                f"{path} lacks {len(known)} records the state lists (first {first!r}): it was "
                "edited; restore it, or move state.json away to rescan"
            )
        return adopted

    # -- writing -----------------------------------------------------------------------------

    @property
    def recorded_commits(self) -> set[str]:
        return set(self.state.recorded.values())

    def unique_id(self, pr_id: str, commit: str) -> str:
        """The PR id, unless another commit already holds it."""
        holder = self.state.recorded.get(pr_id)
        return pr_id if holder in (None, commit) else f"{pr_id}@{commit[:10]}"

    def append(self, cand: Candidate) -> None:
        self._fh.write(jsonl_line(to_json(cand)))
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
        write_atomic(self.candidates_path, b"".join(kept))
        self._fh = self.candidates_path.open("ab")
        self.state.recorded = {k: v for k, v in self.state.recorded.items() if v in reachable}
        self.state.candidates_bytes = self._fh.tell()
        self.state.save(self.state_path)
        return len(orphans)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.summary_path, summary, sort_keys=True)

    def close(self) -> None:
        self._fh.close()


def read_candidates(path: Path) -> list[Candidate]:
    """Every whole record of a candidates.jsonl (see `read_candidate_lines`)."""
    return [cand for _, cand in read_candidate_lines(path)]


def read_candidate_lines(path: Path) -> list[tuple[int, Candidate]]:
    """(line number, record) for every whole record of a candidates.jsonl; a torn last line (a
    crawl still appending) is left out. A line that is not a candidate, or a second record of
    an id or a commit, is a one-line `RecordError` naming the file and the line."""
    out = []
    commits: dict[str, int] = {}
    for number, data in read_jsonl(path, id_key="id", skip_torn_tail=True):
        cand = from_json(Candidate, data, where=f"{path}:{number}")
        if cand.commit in commits:
            raise RecordError(
                f"{path}:{number}: duplicate record of commit {cand.commit[:12]} (first on line "
                f"{commits[cand.commit]})"
            )
        commits[cand.commit] = number
        out.append((number, cand))
    return out


def repo_paths(work: Path, overrides: Iterable[str] = ()) -> dict[str, Path]:
    """framework -> repository path: what each crawl's summary.json recorded under `work`,
    then `NAME=PATH` overrides (the later stages' `--repo-path`)."""
    paths: dict[str, Path] = {}
    for summary in sorted(work.glob("*/summary.json")):
        data = read_json(summary)
        recorded = data.get("repo_path") if isinstance(data, dict) else None
        if recorded:
            paths[summary.parent.name] = Path(recorded)
    for item in overrides:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--repo-path wants NAME=PATH, got {item!r}")
        paths[name] = Path(path)
    return paths
