"""Errors of the curation stage: one base class, each error names the task it concerns.

Reject reasons (`curation.model.RejectReason`) are data, not errors; only failures that stop a
step for one task are raised, and the caller decides whether to fall back or give up.
"""

from __future__ import annotations


class CurationError(Exception):
    """Base of every real error in `curation`."""

    def __init__(self, message: str, *, task_id: str | None = None):
        self.task_id = task_id
        super().__init__(f"{message} [{task_id}]" if task_id else message)


class RequirementError(CurationError):
    """A requirement draft could not be produced or is unusable (e.g. it leaks the gold kernel)."""


class SpliceError(CurationError):
    """A definition could not be put into its file (it does not parse, or the result does not)."""
