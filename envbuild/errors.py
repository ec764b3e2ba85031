"""Errors of the environment builder; each names the task it concerns."""

from __future__ import annotations


class EnvBuildError(Exception):
    """Base of every real error in `envbuild`."""

    def __init__(self, message: str, *, task_id: str | None = None):
        self.task_id = task_id
        super().__init__(f"{message} [{task_id}]" if task_id else message)


class NoEngineError(EnvBuildError):
    """No Docker engine is reachable."""


class BuildFailedError(EnvBuildError):
    """`docker build` of a layer failed; the log file has the details."""


class LintError(EnvBuildError):
    """hadolint reported problems that are neither fixed nor justified inline."""
