"""Errors of the mining stage: one base class, each error names the repo and commit it concerns."""

from __future__ import annotations


class MiningError(Exception):
    """Base of every real error in `mining` (reject reasons are data, not errors)."""

    def __init__(self, message: str, *, repo: str | None = None, commit: str | None = None):
        self.repo = repo
        self.commit = commit
        where = ", ".join(x for x in (repo, commit and commit[:12]) if x)
        super().__init__(f"{message} [{where}]" if where else message)


class GitError(MiningError):
    """A git command failed or the repository is not usable."""


class NoNetworkError(MiningError):
    """A clone or fetch needed the network and could not reach it."""


class StateError(MiningError):
    """The crawl state file is corrupt or belongs to another repository."""


class GithubError(MiningError):
    """The GitHub API refused or failed in a way waiting does not fix."""
