"""Fixtures shared across test modules: the Docker engine ones live with the builder tests."""

from tests.test_builder import busybox, client, engine, run_id  # noqa: F401
