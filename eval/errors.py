"""Errors of the eval stage; each names the task it concerns.

A failing kernel is not an error: it is a `RunResult` with a `FailureClass`. These are for what
stops a run from happening at all (a patch that does not apply, a missing repository, no engine).
"""

from __future__ import annotations

from curation.errors import SpliceError as CurationSpliceError


class EvalError(Exception):
    """Base of every real error in `eval`."""

    def __init__(self, message: str, *, task_id: str | None = None):
        self.task_id = task_id
        super().__init__(f"{message} [{task_id}]" if task_id else message)


class SpliceError(EvalError, CurationSpliceError):
    """A prediction could not be put into its files (it does not parse, or the result does not,
    or it reaches outside the task's targets)."""


class ExtensionError(EvalError):
    """The framework's compiled extensions did not build (its tests run without them: those
    that import one fail naming it)."""
