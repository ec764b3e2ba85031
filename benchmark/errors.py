"""Errors of the dataset build and publishing."""

from __future__ import annotations


class BenchmarkError(Exception):
    """Base of every real error in `benchmark`."""


class PublishError(BenchmarkError):
    """The dataset could not be pushed to the Hub (no token, rejected, unreachable)."""
