"""Builds a task's layers with a Docker engine, through the Docker SDK.

The only module of `envbuild` that talks to Docker. Reads an `EnvSpec` and, per layer to
build, a build-context directory the caller prepared with `prepare_context` (the layer's
Dockerfile and context files). Writes images tagged with the layers' content-hash tags, and
the engine's build output, line by line, into a per-task log file.

Refuses: to rebuild a layer whose tag the engine already holds (the tag is a hash of the
layer's content, so the image is reused); to build from a context whose Dockerfile is not
the layer's; to copy a `.git` into a context (no history after the base commit may reach an
image). Builds run with `network_mode="none"` unless told otherwise: the engine's host
networking is never touched, and it may run with `--bridge=none`.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import docker
import requests
from docker.errors import DockerException, ImageNotFound

from envbuild.errors import BuildFailedError, EnvBuildError, NoEngineError
from envbuild.model import EnvSpec, Layer, LayerKind

logger = logging.getLogger(__name__)

DEFAULT_DOCKER_URL = "unix:///var/run/docker.sock"
TAIL_LINES = 20  # lines of build output quoted in a BuildFailedError
DOCKERFILE = "Dockerfile"


@dataclass(frozen=True)
class BuildResult:
    """What became of one layer: built now, or reused because its tag already existed."""

    kind: LayerKind
    tag: str
    image_id: str
    reused: bool
    seconds: float


def prepare_context(layer: Layer, files: Mapping[str, bytes | Path], dest: Path) -> None:
    """Write `layer`'s Dockerfile and its context files into the empty directory `dest`.

    `files` maps each of `layer.context_files` to its content: bytes, a file, or a directory
    (copied without any `.git`, symlinks inside kept as links, as `digest_files` hashes them).
    """
    wanted = set(layer.context_files)
    if set(files) != wanted:
        raise EnvBuildError(
            f"context of the {layer.kind} layer: files {sorted(files)} "
            f"do not match its context_files {sorted(wanted)}"
        )
    if dest.exists() and any(dest.iterdir()):
        # stale files would enter the build context without being part of the tag's hash
        raise EnvBuildError(f"build context {dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / DOCKERFILE).write_text(layer.dockerfile, encoding="utf-8")
    for name, value in files.items():
        target = dest / name
        if dest.resolve() not in target.resolve().parents:
            raise EnvBuildError(f"context path {name!r} leaves the build context")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, bytes):
            target.write_bytes(value)
        elif value.is_dir():
            shutil.copytree(value, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        else:
            shutil.copy2(value, target)


class Builder:
    """Builds layers in order on one engine, reusing those whose tags it already holds."""

    def __init__(
        self, client: docker.DockerClient | None = None, log_dir: Path | None = None
    ) -> None:
        self.client = client if client is not None else _connect(None)
        self.log_dir = log_dir

    @classmethod
    def connect(cls, base_url: str | None = None, *, log_dir: Path | None = None) -> Builder:
        """A Builder on the engine at `base_url`, or on DOCKER_HOST / the default socket."""
        return cls(_connect(base_url), log_dir)

    def build(
        self,
        spec: EnvSpec,
        context_dirs: Mapping[LayerKind, Path],
        task_log: Path | None = None,
        *,
        network_mode: str = "none",
    ) -> list[BuildResult]:
        """Build (or reuse) every layer of `spec` in order; the engine's output goes to
        `task_log` (default: `<log_dir>/<task_id>.build.log`), appended."""
        if task_log is None:
            if self.log_dir is None:
                raise EnvBuildError("no task_log and no log_dir to put it in", task_id=spec.task_id)
            task_log = self.log_dir / f"{spec.task_id}.build.log"
        task_log.parent.mkdir(parents=True, exist_ok=True)
        results = []
        with task_log.open("a", encoding="utf-8") as log:
            for layer in spec.layers:
                result = self._layer(spec, layer, context_dirs, log, task_log, network_mode)
                results.append(result)
        return results

    def _layer(
        self,
        spec: EnvSpec,
        layer: Layer,
        context_dirs: Mapping[LayerKind, Path],
        log: IO[str],
        log_path: Path,
        network_mode: str,
    ) -> BuildResult:
        start = time.monotonic()
        existing = self._image_id(layer.tag)
        if existing is not None:
            log.write(f"=== {layer.kind} layer {layer.tag}: reused ({existing})\n")
            log.flush()
            logger.info("%s: reusing %s", spec.task_id, layer.tag)
            return BuildResult(layer.kind, layer.tag, existing, True, time.monotonic() - start)
        context = self._check_context(spec, layer, context_dirs)
        log.write(f"=== {layer.kind} layer {layer.tag}: building from {context}\n")
        log.flush()
        logger.info("%s: building %s", spec.task_id, layer.tag)
        try:
            stream = self.client.api.build(
                path=str(context),
                dockerfile=DOCKERFILE,
                tag=layer.tag,
                rm=True,
                forcerm=True,
                pull=False,
                network_mode=network_mode,
                decode=True,
            )
            error, tail, image_id = _follow(stream, log)
        except requests.exceptions.ConnectionError as e:
            raise NoEngineError(
                f"Docker engine lost while building {layer.tag}: {e}", task_id=spec.task_id
            ) from e
        except DockerException as e:
            error, tail, image_id = str(e), deque([str(e)]), None
            log.write(f"ERROR: {e}\n")
        log.flush()
        if error is not None:
            last = "\n".join(tail)
            raise BuildFailedError(
                f"docker build of the {layer.kind} layer {layer.tag} failed: {error}\n"
                f"last lines:\n{last}\nfull log: {log_path}",
                task_id=spec.task_id,
            )
        image_id = image_id or self._image_id(layer.tag)
        if image_id is None:
            raise BuildFailedError(
                f"docker build of the {layer.kind} layer {layer.tag} left no image; "
                f"full log: {log_path}",
                task_id=spec.task_id,
            )
        return BuildResult(layer.kind, layer.tag, image_id, False, time.monotonic() - start)

    def _check_context(
        self, spec: EnvSpec, layer: Layer, context_dirs: Mapping[LayerKind, Path]
    ) -> Path:
        context = context_dirs.get(layer.kind)
        if context is None:
            raise EnvBuildError(
                f"{layer.tag} is not built yet and no context directory was given for the "
                f"{layer.kind} layer",
                task_id=spec.task_id,
            )
        dockerfile = context / DOCKERFILE
        if not dockerfile.is_file() or dockerfile.read_text(encoding="utf-8") != layer.dockerfile:
            # the tag names the rendered text; building other text under it would be a lie
            raise EnvBuildError(
                f"{dockerfile} is not the {layer.kind} layer's Dockerfile (prepare_context)",
                task_id=spec.task_id,
            )
        missing = [f for f in layer.context_files if not (context / f).exists()]
        if missing:
            raise EnvBuildError(
                f"context {context} lacks {', '.join(missing)}", task_id=spec.task_id
            )
        return context

    def _image_id(self, tag: str) -> str | None:
        try:
            return str(self.client.images.get(tag).id)
        except ImageNotFound:
            return None
        except requests.exceptions.ConnectionError as e:
            raise NoEngineError(f"Docker engine unreachable: {e}") from e


def _follow(
    stream: Iterable[dict[str, Any]], log: IO[str]
) -> tuple[str | None, deque[str], str | None]:
    """Copy the build stream into `log`; (error or None, last lines, image id or None)."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    error: str | None = None
    image_id: str | None = None
    for chunk in stream:
        if "stream" in chunk:
            text = str(chunk["stream"])
            log.write(text)
            tail.extend(line for line in text.splitlines() if line.strip())
        elif "error" in chunk:
            error = str(chunk["error"]).strip()
            log.write(f"ERROR: {error}\n")
            tail.append(error)
        elif "aux" in chunk and isinstance(chunk["aux"], dict):
            image_id = chunk["aux"].get("ID", image_id)
        elif "status" in chunk and "progress" not in chunk:
            # pull progress bars would flood the log; their start and end lines suffice
            log.write(f"{chunk.get('id', '')} {chunk['status']}".strip() + "\n")
        log.flush()
    return error, tail, image_id


def _connect(base_url: str | None) -> docker.DockerClient:
    url = base_url or os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_URL
    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        client.ping()
    except (DockerException, requests.exceptions.RequestException, OSError) as e:
        logger.debug("no engine at %s: %s", url, e)
        raise NoEngineError(
            f"no Docker engine reachable at {url}: start dockerd or set DOCKER_HOST"
        ) from e
    return client
