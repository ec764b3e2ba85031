"""Layered Dockerfiles of a task's environment, each tagged by a hash of its content.

Three layers, each a Dockerfile that builds FROM the previous one's tag:
- base: CUDA + Python (an `nvidia/cuda` devel image with a venv at /opt/venv), or a given
  image that already holds them (an NGC PyTorch container) plus a few tools;
- env: the pinned torch and triton, the extra pins, the test runner, the repository's
  requirement files at the base commit, then the recipe's env steps;
- task: the framework's source at the base commit (`src/`, no `.git`), the recipe's task
  steps and environment variables.

A layer's tag is `triton-pr-bench/<kind>:<hash>`, the hash covering the parent's tag, the
Dockerfile text and the contents of the build context's files: equal inputs give equal tags
(tasks share their base and env layers), any change gives a new tag.

Reads nothing but its arguments (and, in `digest_files`, the files it is given). Writes the
rendered Dockerfiles into a task directory (`write_layers`). Refuses versions it cannot read,
steps spanning several lines, placeholders left unfilled, context paths leaving the context,
and a layer with context files but no digest of their contents.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from curation.taskdir import TaskDir, TaskFile
from envbuild.errors import EnvBuildError
from envbuild.model import EnvSpec, Layer, LayerKind, Pin
from envbuild.recipes import PLACEHOLDERS, SRC_DIR, Recipe

logger = logging.getLogger(__name__)

IMAGE_REPO = "triton-pr-bench"
LABEL_PREFIX = "org.triton-pr-bench"
VENV = "/opt/venv"
REQS_DIR = "reqs"  # requirement files, under their repository paths, in the env context
REQS_IN_IMAGE = "/opt/reqs"
SRC_CONTEXT = "src"  # the framework's source tree in the task context
TORCH_INDEX = "https://download.pytorch.org/whl/{cuda_tag}"
# nvidia/cuda publishes Ubuntu 24.04 images from CUDA 12.8 on for every release we target;
# older CUDA releases are served on 22.04.
UBUNTU_2404_FROM = (12, 8)
# Shell of the RUN steps: bash with pipefail so a failing command on the left of a pipe fails
# the step (hadolint DL4006). Only for images that have bash: every Ubuntu-based one does.
BASH_PIPEFAIL = '["/bin/bash", "-o", "pipefail", "-c"]'

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def cuda_version(cuda: str) -> tuple[int, int, int | None]:
    """(major, minor, patch or None) of a CUDA version such as "12.8" or "12.8.1"."""
    m = _VERSION.match(cuda.strip())
    if not m:
        raise EnvBuildError(f"unreadable CUDA version {cuda!r}: expected x.y or x.y.z")
    return int(m[1]), int(m[2]), int(m[3]) if m[3] is not None else None


def cuda_image_tag(cuda: str) -> str:
    """The x.y.z version of `nvidia/cuda` image tags for `cuda`.

    `nvidia/cuda` tags always carry three parts. Callers should pass the full version; when
    only major.minor is known we use the minor's first release, x.y.0, which is published for
    every minor release, rather than guess a later patch release that may not exist.
    """
    major, minor, patch = cuda_version(cuda)
    return f"{major}.{minor}.{0 if patch is None else patch}"


def cuda_tag(cuda: str) -> str:
    """The PyTorch wheel tag of a CUDA version: "12.8.1" -> "cu128"."""
    major, minor, _ = cuda_version(cuda)
    return f"cu{major}{minor}"


def python_minor(python: str) -> str:
    """ "3.12" of "3.12" or "3.12.3": the name of the interpreter's packages and binary."""
    m = _VERSION.match(python.strip())
    if not m or m[1] != "3":
        raise EnvBuildError(f"unreadable Python version {python!r}: expected 3.y or 3.y.z")
    return f"3.{m[2]}"


def layer_tag(
    kind: LayerKind | str, parent: str | None, dockerfile: str, context_digest: str
) -> str:
    """`triton-pr-bench/<kind>:<16 hex digits>` of the layer's parent, text and context."""
    # JSON framing keeps the parts apart: no two different inputs hash the same text.
    payload = json.dumps([parent or "", dockerfile, context_digest])
    digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
    return f"{IMAGE_REPO}/{LayerKind(kind).value}:{digest}"


def digest_files(files: Mapping[str, bytes | Path]) -> str:
    """sha256 over the names, contents and modes of build-context files.

    A `Path` may be a directory: its tree is walked, `.git` excluded and symlinks inside kept
    as links, exactly as `builder.prepare_context` copies it, so the digest covers what the
    image receives. A `Path` given directly is followed when it is a symlink.
    """
    entries: list[str] = []
    for name in sorted(files):
        _check_context_name(name)
        value = files[name]
        if isinstance(value, bytes):
            entries.append(_entry(name, "f", hashlib.sha256(value).hexdigest()))
            continue
        value = value.resolve()
        if value.is_dir():
            entries.append(_entry(name, "d", ""))
            for path in sorted(_walk(value)):
                entries.append(_path_entry(f"{name}/{path.relative_to(value).as_posix()}", path))
        else:
            entries.append(_path_entry(name, value))
    return hashlib.sha256("".join(entries).encode()).hexdigest()


def _walk(root: Path) -> list[Path]:
    out: list[Path] = []
    for path in root.iterdir():
        if path.name == ".git":
            continue
        out.append(path)
        if path.is_dir() and not path.is_symlink():
            out.extend(_walk(path))
    return out


def _path_entry(rel: str, path: Path) -> str:
    if path.is_symlink():
        return _entry(rel, "l", str(path.readlink()))
    if path.is_dir():
        return _entry(rel, "d", "")
    # the executable bit travels into the image with COPY, so it is part of the content
    kind = "x" if path.stat().st_mode & 0o111 else "f"
    return _entry(rel, kind, hashlib.sha256(path.read_bytes()).hexdigest())


def _entry(name: str, kind: str, content: str) -> str:
    return f"{name}\0{kind}\0{content}\n"


def _check_context_name(name: str) -> None:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts or "\\" in name:
        raise EnvBuildError(f"context path {name!r} must be relative and stay in the context")


def _quote(value: str) -> str:
    """A double-quoted LABEL/ENV value; `$` escaped so Docker does not expand it."""
    if "\n" in value or "\r" in value:
        raise EnvBuildError(f"label or environment value spans lines: {value!r}")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def _labels(pairs: Sequence[tuple[str, str]]) -> str:
    parts = [f"{LABEL_PREFIX}.{key}={_quote(value)}" for key, value in pairs]
    return "LABEL " + " \\\n      ".join(parts)


def _run(commands: Sequence[str]) -> str:
    for command in commands:
        if "\n" in command or "\r" in command:
            raise EnvBuildError(f"a RUN step must be one line: {command!r}")
    return "RUN " + " \\\n && ".join(commands)


def _pip_install(*args: str) -> str:
    return "python -m pip install --no-cache-dir " + " ".join(args)


def _dockerfile(blocks: Sequence[str]) -> str:
    return "\n".join(blocks) + "\n"


def render_base(python: str, cuda: str, base_image: str | None = None) -> Layer:
    """The base layer: `base_image` plus a few tools, or nvidia/cuda with Python in a venv.

    `cuda` should be a full x.y.z version (see `cuda_image_tag`); `python` is 3.y.
    """
    py = python_minor(python)
    labels = [("layer", "base"), ("python", python), ("cuda", cuda)]
    # The reason travels with the ignore into the rendered file, where a reader meets it.
    apt_ignore = (
        "# Apt versions are not pinned (DL3008): the archives of the Ubuntu releases and base\n"
        "# images drop old versions, so a pinned line stops building. CUDA, Python, torch and\n"
        "# triton are pinned by the image tag and the env layer.\n"
        "# hadolint ignore=DL3008"
    )
    if base_image:
        # An NGC container holds CUDA, Python, torch and triton in the system interpreter;
        # a venv there would hide them, so its interpreter is the environment.
        blocks = [
            f"FROM {base_image}",
            _labels([*labels, ("base-image", base_image)]),
            f"SHELL {BASH_PIPEFAIL}",
            "ARG DEBIAN_FRONTEND=noninteractive",
            apt_ignore,
            _run(
                [
                    "apt-get update",
                    "apt-get install -y --no-install-recommends ca-certificates git",
                    "rm -rf /var/lib/apt/lists/*",
                ]
            ),
        ]
    else:
        image_version = cuda_image_tag(cuda)
        major, minor, _ = cuda_version(cuda)
        ubuntu = "24.04" if (major, minor) >= UBUNTU_2404_FROM else "22.04"
        # The deadsnakes PPA serves every CPython minor the distro lacks; for the distro's own
        # minor (3.10 on 22.04, 3.12 on 24.04) the same package names come from the distro, so
        # one command works for every version. -dev: Triton compiles its launcher against
        # Python.h at run time.
        packages = f"python{py} python{py}-dev python{py}-venv"
        blocks = [
            f"FROM nvidia/cuda:{image_version}-devel-ubuntu{ubuntu}",
            _labels(labels),
            f"SHELL {BASH_PIPEFAIL}",
            "ARG DEBIAN_FRONTEND=noninteractive",
            apt_ignore,
            _run(
                [
                    "apt-get update",
                    "apt-get install -y --no-install-recommends"
                    " build-essential ca-certificates git software-properties-common",
                    "add-apt-repository -y ppa:deadsnakes/ppa",
                    "apt-get update",
                    f"apt-get install -y --no-install-recommends {packages}",
                    "rm -rf /var/lib/apt/lists/*",
                ]
            ),
            # The venv isolates the pins from the distro's Python packages; on PATH, `python`
            # and `pip` of every later step are the venv's.
            _run([f"python{py} -m venv {VENV}"]),
            f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:$PATH",
            # A floor, not a pin: pip picks its newest release that supports this Python.
            _run([_pip_install("--upgrade", shlex.quote("pip>=24"))]),
        ]
    dockerfile = _dockerfile(blocks)
    tag = layer_tag(LayerKind.BASE, None, dockerfile, "")
    logger.debug("base layer %s (python %s, cuda %s, image %s)", tag, python, cuda, base_image)
    return Layer(kind=LayerKind.BASE, tag=tag, parent=None, dockerfile=dockerfile)


def placeholder_values(
    torch: Pin, triton: Pin, cuda: Pin, python: Pin, values: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Placeholder name (without braces) -> value: the pins', then `values` over them."""
    out = {
        "python": python.value,
        "torch": torch.value,
        "triton": triton.value,
        "cuda": cuda.value,
        "cuda_tag": cuda_tag(cuda.value),
    }
    for key, value in (values or {}).items():
        out[key.strip("{}")] = value
    return out


def fill_placeholders(step: str, values: Mapping[str, str]) -> str:
    """`step` with each `{name}` of PLACEHOLDERS replaced; an unfilled one is an error."""
    # str.replace, not str.format: steps are shell, where other braces (`${VAR}`) are literal.
    for placeholder in PLACEHOLDERS:
        if placeholder in step:
            name = placeholder.strip("{}")
            if name not in values:
                raise EnvBuildError(f"no value for {placeholder} in step {step!r}")
            step = step.replace(placeholder, values[name])
    return step


def render_env(
    base: Layer,
    recipe: Recipe,
    torch: Pin,
    triton: Pin,
    cuda: Pin,
    python: Pin,
    extra: Sequence[Pin] = (),
    requirement_files: Sequence[str] = (),
    *,
    values: Mapping[str, str] | None = None,
    torch_in_base: bool = False,
    pip: bool = True,
    context_digest: str = "",
) -> Layer:
    """The env layer: pinned dependencies over `base`, then the recipe's env steps.

    `requirement_files` are repository paths at the base commit; the build context holds them
    under `reqs/<path>` and `context_digest` must be `digest_files` of those files.
    `torch_in_base`: the base image (NGC) already holds torch and triton. `pip=False` leaves
    out every pip step (for images without Python); the requirement files are still copied.
    """
    filled = placeholder_values(torch, triton, cuda, python, values)
    context_files = tuple(f"{REQS_DIR}/{p}" for p in requirement_files)
    for name in context_files:
        _check_context_name(name)
    if context_files and not context_digest:
        raise EnvBuildError("the env layer copies requirement files: pass their context_digest")
    blocks = [
        f"FROM {base.tag}",
        _labels(
            [
                ("layer", "env"),
                ("recipe", recipe.name),
                ("torch", torch.value),
                ("triton", triton.value),
            ]
        ),
    ]
    if context_files:
        blocks.append(f"COPY {REQS_DIR}/ {REQS_IN_IMAGE}/")
    # A recipe whose steps install a nightly torch brings the matching triton with it
    # (pytorch-triton); installing the release pins first would only be overwritten.
    recipe_installs_torch = any("{torch_nightly}" in s for s in recipe.env_steps)
    if pip and not torch_in_base and not recipe_installs_torch:
        index = TORCH_INDEX.format(cuda_tag=filled["cuda_tag"])
        blocks.append(_run([_pip_install(f"torch=={torch.value}", "--index-url", index)]))
        # From PyPI, after torch: the task's triton pin wins over the one torch requires.
        blocks.append(_run([_pip_install(f"triton=={triton.value}")]))
    if pip and extra:
        blocks.append(_run([_pip_install(*(shlex.quote(f"{p.name}=={p.value}") for p in extra))]))
    if pip and recipe.test_packages:
        blocks.append(
            "# The test runner is not part of the environment under test: pip picks its newest\n"
            "# release for this Python rather than a pin of ours (DL3013).\n"
            "# hadolint ignore=DL3013"
        )
        blocks.append(_run([_pip_install(*(shlex.quote(p) for p in recipe.test_packages))]))
    if pip and requirement_files:
        args = " ".join(f"-r {shlex.quote(f'{REQS_IN_IMAGE}/{p}')}" for p in requirement_files)
        blocks.append(_run([_pip_install(args)]))
    for step in recipe.env_steps:
        blocks.append(_run([fill_placeholders(step, filled)]))
    dockerfile = _dockerfile(blocks)
    tag = layer_tag(LayerKind.ENV, base.tag, dockerfile, context_digest if context_files else "")
    logger.debug("env layer %s over %s (recipe %s)", tag, base.tag, recipe.name)
    return Layer(
        kind=LayerKind.ENV,
        tag=tag,
        parent=base.tag,
        dockerfile=dockerfile,
        context_files=context_files,
    )


def render_task(
    env: Layer, recipe: Recipe, task_id: str, *, base_commit: str, context_digest: str
) -> Layer:
    """The task layer: the source at the base commit over `env`, the recipe's task steps.

    The build context holds the source tree as `src/` without `.git` (no history after the
    base commit can reach the image); `context_digest` is `digest_files({"src": tree})`.

    No USER: the image runs as root. Evaluation runs each container throwaway and without a
    network; the recipes' steps and the harness write into the venv and site-packages
    (editable installs, overlays), which a non-root user would not own, and NGC images expect
    root.
    """
    if not context_digest:
        raise EnvBuildError("the task layer copies the source tree: pass its context_digest")
    blocks = [
        f"FROM {env.tag}",
        _labels([("layer", "task"), ("task-id", task_id), ("base-commit", base_commit)]),
        f"COPY {SRC_CONTEXT}/ {SRC_DIR}/",
        f"WORKDIR {SRC_DIR}",
    ]
    blocks.extend(_run([step]) for step in recipe.task_steps)
    if recipe.env_vars:
        for name in recipe.env_vars:
            if not _ENV_NAME.match(name):
                raise EnvBuildError(f"invalid environment variable name {name!r}")
        blocks.append(
            "ENV "
            + " \\\n    ".join(f"{k}={_quote(v)}" for k, v in sorted(recipe.env_vars.items()))
        )
    dockerfile = _dockerfile(blocks)
    tag = layer_tag(LayerKind.TASK, env.tag, dockerfile, context_digest)
    logger.debug("task layer %s over %s (task %s)", tag, env.tag, task_id)
    return Layer(
        kind=LayerKind.TASK,
        tag=tag,
        parent=env.tag,
        dockerfile=dockerfile,
        context_files=(SRC_CONTEXT,),
    )


LAYER_FILES = {
    LayerKind.TASK: TaskFile.DOCKERFILE,
    LayerKind.BASE: TaskFile.BASE_DOCKERFILE,
    LayerKind.ENV: TaskFile.ENV_DOCKERFILE,
}


def write_layers(spec: EnvSpec, tdir: TaskDir) -> None:
    """Write the task layer as `Dockerfile` and the others as `docker/<kind>.Dockerfile`."""
    by_kind = {layer.kind: layer for layer in spec.layers}
    missing = [k.value for k in LAYER_FILES if k not in by_kind]
    if missing:
        raise EnvBuildError(
            f"env spec lacks the {', '.join(missing)} layer(s)", task_id=spec.task_id
        )
    for kind, name in LAYER_FILES.items():
        tdir.write(name, by_kind[kind].dockerfile)


def parse_dockerfile(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs; continuation lines joined, comments and blanks dropped.

    Enough for checking rendered files; no heredocs, no escape-directive other than `\\`.
    """
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        # Docker drops comment lines even inside a continued instruction.
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending.append(line[:-1].strip())
            continue
        pending.append(line)
        joined = " ".join(p for p in pending if p)
        pending = []
        instruction, _, args = joined.partition(" ")
        out.append((instruction.upper(), args.strip()))
    if pending:
        joined = " ".join(p for p in pending if p)
        instruction, _, args = joined.partition(" ")
        out.append((instruction.upper(), args.strip()))
    return out
