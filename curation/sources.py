"""The candidates curation reads, checked against the repository they are said to come from.

Reads: `<work>/<framework>/candidates.jsonl`, the crawl's `state.json` (repository name and
first commit), and the repository named for the framework (`--repo-path NAME=PATH` or the
crawl's summary.json) through the git gateway.
Writes nothing.
Refuses (`CurationError`, one line naming the file and line; nothing is curated): a
candidates.jsonl line that is not a candidate or repeats an id or a commit, a candidate of
another framework or repository than the crawl recorded, and candidates whose commits (or
whose parents, or the history's first commit) the repository does not have: the framework was
given another repository's candidates, or the repository another framework's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import CoreError
from curation.errors import CurationError
from mining.errors import MiningError
from mining.git import GitRepo
from mining.model import Candidate


@dataclass(frozen=True)
class Source:
    """The candidates of one framework and the repository they came from."""

    framework: str
    candidates: list[Candidate]
    repo_path: Path


def load_sources(work: Path, only: Sequence[str], repo_paths: dict[str, Path]) -> list[Source]:
    """Every framework's candidates under `work` (only those named in `only`, when given), each
    checked against its repository."""
    from mining.store import read_candidate_lines

    sources = []
    for cand_file in sorted(work.glob("*/candidates.jsonl")):
        name = cand_file.parent.name
        if only and name not in only:
            continue
        path = repo_paths.get(name)
        if path is None:
            raise CurationError(
                f"{cand_file.parent / 'summary.json'} names no repository: "
                f"pass --repo-path {name}=PATH"
            )
        try:
            rows = read_candidate_lines(cand_file)
            repo = GitRepo(path)
        except (CoreError, MiningError) as exc:
            raise CurationError(str(exc)) from None
        check_source(cand_file, name, rows, repo)
        sources.append(Source(name, [c for _, c in rows], path))
    if not sources:
        raise CurationError(f"no candidates.jsonl under {work}: run `python -m mining.crawl` first")
    return sources


def check_source(
    cand_file: Path, name: str, rows: Sequence[tuple[int, Candidate]], repo: GitRepo
) -> None:
    """Refuse candidates that do not belong to framework `name` and its repository `repo`."""
    recorded_repo, root_commit = _crawl_state(cand_file.parent)
    for number, cand in rows:
        if cand.framework != name:
            raise CurationError(
                f"{cand_file}:{number}: candidate {cand.id} is of framework "
                f"{cand.framework!r}, not {name!r}"
            )
        if recorded_repo and cand.repo and cand.repo != recorded_repo:
            raise CurationError(
                f"{cand_file}:{number}: candidate {cand.id} comes from {cand.repo!r}, but the "
                f"crawl of {name} recorded {recorded_repo!r}"
            )
    if root_commit and repo.missing_commits([root_commit]):
        raise CurationError(
            f"{repo.path} is not the repository crawled into {cand_file.parent} (its history "
            f"starts at {root_commit[:12]}, which {repo.path} does not have): pass "
            f"--repo-path {name}=PATH of the right repository"
        )
    wanted = [c.commit for _, c in rows] + [c.parent for _, c in rows if c.parent]
    missing = set(repo.missing_commits(wanted))
    if not missing:
        return
    bad = [(n, c) for n, c in rows if c.commit in missing or (c.parent or "") in missing]
    number, first = bad[0]
    sha = first.commit if first.commit in missing else first.parent
    raise CurationError(
        f"{cand_file}:{number}: {len(bad)} of {len(rows)} candidates name commits that "
        f"{repo.path} does not have (first: {first.id}, {str(sha)[:12]}): pass --repo-path "
        f"{name}=PATH of the repository they were crawled from, or crawl again"
    )


def _crawl_state(work_dir: Path) -> tuple[str | None, str | None]:
    """The repository name and first commit the crawl's state.json recorded (None: unknown)."""
    from mining.store import CrawlState

    path = work_dir / "state.json"
    if not path.exists():
        return None, None
    try:
        state = CrawlState.load(path)
    except MiningError as exc:
        raise CurationError(str(exc)) from None
    return state.repo or None, state.root_commit
