"""Value objects of the environment builder: pins with their provenance, layers, the env spec.

`env.json` in a task directory is `to_json(EnvSpec)` (`core.records`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from core.records import derived, set_derived

ENV_SCHEMA_VERSION = 1


class PinSource(StrEnum):
    FILE = "file"  # read from a file of the repository at the task's base commit
    DATE = "date"  # the newest release published before the base commit
    DEFAULT = "default"  # a fixed default of the recipe (said so in `where`)


@dataclass(frozen=True)
class Pin:
    """One resolved version and where it came from."""

    name: str  # python | torch | triton | cuda | base_image | <package>
    value: str  # "3.12", "2.7.1", "3.3.1", "12.8", "nvcr.io/nvidia/pytorch:25.04-py3"
    source: PinSource
    where: str  # "requirements/cuda.txt:7", "newest torch release before 2025-05-02: ..."
    spec: str = ""  # the requirement as written, e.g. "torch==2.7.1" or "torch>=2.6"


class LayerKind(StrEnum):
    BASE = "base"  # CUDA + Python
    ENV = "env"  # the framework's pinned dependencies
    TASK = "task"  # the framework's source at the base commit and the task's tests


@dataclass(frozen=True)
class Layer:
    kind: LayerKind
    tag: str  # image tag, derived from a hash of the layer's content and its parent's tag
    parent: str | None  # the tag this layer builds FROM (None for a registry base image)
    dockerfile: str
    context_files: tuple[str, ...] = ()  # files the build context must hold, relative paths


@dataclass(frozen=True)
class EnvSpec:
    task_id: str
    framework: str
    recipe: str  # the install recipe's name (see envbuild/recipes.py)
    base_commit: str
    commit_date: str
    python: Pin
    torch: Pin
    triton: Pin
    cuda: Pin
    extra_pins: tuple[Pin, ...]  # other requirements the recipe installs
    layers: tuple[Layer, ...]  # base, env, task in build order
    schema_version: int = ENV_SCHEMA_VERSION
    image_tag: str = derived()  # the task layer's tag: the image to run the task in

    def __post_init__(self) -> None:
        set_derived(self, "image_tag", self.layers[-1].tag)
