"""Builds real images with a real Docker engine: a busybox base made here, env and task layers
rendered by `envbuild.dockerfile`, built by `envbuild.builder`.

The engine: DOCKER_HOST when set (`.ci/run` starts one), else /var/run/docker.sock, else a
private dockerd this module starts (root only) with no bridge and no iptables, stopped at the
end. Without any, the engine tests skip locally and fail under CI=true. Every image a test
makes carries a per-test label and is removed at its end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import docker
import pytest

from envbuild.builder import Builder, BuildResult, prepare_context
from envbuild.dockerfile import digest_files, layer_tag, render_env, render_task
from envbuild.errors import BuildFailedError, EnvBuildError, NoEngineError
from envbuild.model import EnvSpec, Layer, LayerKind, Pin, PinSource
from envbuild.recipes import SRC_DIR, Recipe
from tests.gitrepo import TinyRepo

# busybox-static's binary: it must run FROM scratch, so only a static one will do
BUSYBOX_PLACES = ("/bin/busybox", "/usr/bin/busybox")
TEST_LABEL = "org.triton-pr-bench.test-run"
KERNEL = "import triton\n\n\n@triton.jit\ndef add(x_ptr):\n    pass\n"
REQUIREMENTS = b"torch==2.7.1\ntriton==3.3.1\n"


def pin(name: str, value: str) -> Pin:
    return Pin(name=name, value=value, source=PinSource.DEFAULT, where="test")


PY = pin("python", "3.12")
TORCH = pin("torch", "2.7.1")
TRITON = pin("triton", "3.3.1")
CUDA = pin("cuda", "12.8.1")

# Shell steps busybox can run: no pip in this image.
RECIPE = Recipe(
    name="busybox-test",
    description="shell-only steps for a busybox image",
    env_steps=(
        "mkdir -p /opt && echo {torch} {triton} {cuda_tag} > /opt/pins.txt",
        "cat /proc/net/dev > /opt/netdev.txt",
    ),
    task_steps=("test -f pkg/kernel.py",),
    env_vars={"PYTHONPATH": SRC_DIR},
    test_packages=(),
)


def unavailable(message: str) -> NoReturn:
    """Skip locally, but fail in CI, which installs the system packages and starts an engine
    (see .ci/run)."""
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"CI must run these tests: {message}")
    pytest.skip(message)


def _is_static_elf(path: Path) -> bool:
    """True for a 64-bit ELF with no program interpreter (no PT_INTERP header)."""
    data = path.read_bytes()
    if data[:5] != b"\x7fELF\x02" or len(data) < 64:
        return False
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    return all(struct.unpack_from("<I", data, phoff + i * phentsize)[0] != 3 for i in range(phnum))


@pytest.fixture(scope="session")
def engine() -> Iterator[Builder]:
    """A Builder on a reachable engine; a private dockerd when none is configured."""
    if os.environ.get("DOCKER_HOST") or Path("/var/run/docker.sock").exists():
        try:
            builder = Builder.connect()
        except NoEngineError as e:
            unavailable(str(e))
        yield builder
        return
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        unavailable(
            "no Docker engine: set DOCKER_HOST, or run as root with dockerd installed "
            "(apt-get install docker.io) so that the tests start a private one"
        )
    # a short path under /tmp: unix socket paths are limited to ~107 bytes
    tmp = Path(tempfile.mkdtemp(prefix="tpb-dockerd-"))
    sock = tmp / "docker.sock"
    log = (tmp / "dockerd.log").open("wb")
    # no bridge, no iptables: the host's networking stays as it is
    args = [
        *("--data-root", str(tmp / "data"), "--exec-root", str(tmp / "exec")),
        *("--pidfile", str(tmp / "docker.pid"), "-H", f"unix://{sock}", "--bridge=none"),
        *("--iptables=false", "--ip-forward=false", "--ip-masq=false"),
    ]
    proc = subprocess.Popen(
        ["dockerd", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        private: Builder | None = None
        deadline = time.monotonic() + 30
        while private is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
            if sock.exists():
                with contextlib.suppress(NoEngineError):  # not answering yet
                    private = Builder.connect(f"unix://{sock}")
        if private is None:
            tail = (tmp / "dockerd.log").read_text(errors="replace")[-1500:]
            unavailable(f"the private dockerd did not start:\n{tail}")
        yield private
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def client(engine: Builder) -> docker.DockerClient:
    return engine.client


@pytest.fixture
def run_id(client: docker.DockerClient) -> Iterator[str]:
    """A label value unique to the test; its images (intermediate ones too) go at the end."""
    run = uuid.uuid4().hex[:12]
    yield run
    images = client.images.list(all=True, filters={"label": f"{TEST_LABEL}={run}"})
    # children before parents: an image with children cannot go
    pending = sorted(images, key=lambda i: str(i.attrs["Created"]), reverse=True)
    for _ in range(3):
        left = []
        for image in pending:
            try:
                client.images.remove(str(image.id), force=True)
            except docker.errors.ImageNotFound:
                pass
            except docker.errors.APIError:
                left.append(image)
        pending = left


def find_busybox() -> Path | None:
    """A static busybox on PATH or in its usual places, None when there is none."""
    found = shutil.which("busybox")
    for place in (*([found] if found else []), *BUSYBOX_PLACES):
        path = Path(place)
        if path.is_file() and _is_static_elf(path):
            return path
    return None


@pytest.fixture
def busybox() -> Path:
    path = find_busybox()
    if path is None:
        unavailable(
            "no static busybox on PATH or in /bin, /usr/bin: the test images are built FROM "
            "scratch around it (apt-get install busybox-static)"
        )
    return path


def busybox_base(run_id: str, busybox: Path) -> tuple[Layer, dict[str, bytes | Path]]:
    """The test base layer: busybox on scratch, its applets installed as /bin links."""
    files: dict[str, bytes | Path] = {"busybox": busybox}
    dockerfile = (
        "FROM scratch\n"
        f'LABEL {TEST_LABEL}="{run_id}"\n'
        "COPY busybox /bin/busybox\n"
        'RUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
    )
    tag = layer_tag(LayerKind.BASE, None, dockerfile, digest_files(files))
    layer = Layer(LayerKind.BASE, tag, None, dockerfile, context_files=("busybox",))
    return layer, files


def source_repo(path: Path) -> TinyRepo:
    repo = TinyRepo(path)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/kernel.py", KERNEL)
    repo.commit("kernel")
    return repo


def make_spec(
    tmp: Path, run_id: str, busybox: Path, repo: TinyRepo, recipe: Recipe = RECIPE
) -> tuple[EnvSpec, dict[LayerKind, Path]]:
    """Render the three layers and prepare their build contexts under `tmp`."""
    base, base_files = busybox_base(run_id, busybox)
    env_files: dict[str, bytes | Path] = {"reqs/requirements.txt": REQUIREMENTS}
    env = render_env(
        base,
        recipe,
        TORCH,
        TRITON,
        CUDA,
        PY,
        (),
        ["requirements.txt"],
        pip=False,
        context_digest=digest_files(env_files),
    )
    task_files: dict[str, bytes | Path] = {"src": repo.path}
    task_id = f"busybox-{run_id}"
    base_commit = repo.head()
    task = render_task(
        env, recipe, task_id, base_commit=base_commit, context_digest=digest_files(task_files)
    )
    contexts = {}
    for layer, files in ((base, base_files), (env, env_files), (task, task_files)):
        contexts[layer.kind] = tmp / f"ctx-{layer.kind}-{layer.tag.rsplit(':', 1)[1]}"
        prepare_context(layer, files, contexts[layer.kind])
    spec = EnvSpec(
        task_id=task_id,
        framework="busybox",
        recipe=recipe.name,
        base_commit=base_commit,
        commit_date="2023-11-14",
        python=PY,
        torch=TORCH,
        triton=TRITON,
        cuda=CUDA,
        extra_pins=(),
        layers=(base, env, task),
    )
    return spec, contexts


def sh(client: docker.DockerClient, tag: str, command: str) -> str:
    out = client.containers.run(tag, ["sh", "-c", command], remove=True, network_mode="none")
    return bytes(out).decode()


def reused(results: list[BuildResult]) -> list[bool]:
    return [r.reused for r in results]


# --- with an engine ---------------------------------------------------------------------


def test_build_runs_the_rendered_layers(
    engine: Builder, client: docker.DockerClient, run_id: str, busybox: Path, tmp_path: Path
):
    repo = source_repo(tmp_path / "repo")
    spec, contexts = make_spec(tmp_path, run_id, busybox, repo)
    log = tmp_path / "logs" / "task.log"
    results = engine.build(spec, contexts, log)
    assert [r.kind for r in results] == [LayerKind.BASE, LayerKind.ENV, LayerKind.TASK]
    assert reused(results) == [False, False, False]
    assert [r.tag for r in results] == [layer.tag for layer in spec.layers]
    tag = spec.image_tag
    assert sh(client, tag, "cat /opt/pins.txt") == "2.7.1 3.3.1 cu128\n"
    assert sh(client, tag, "cat /opt/reqs/requirements.txt").encode() == REQUIREMENTS
    assert sh(client, tag, 'echo "$PYTHONPATH"; pwd') == f"{SRC_DIR}\n{SRC_DIR}\n"
    assert sh(client, tag, f"ls -A {SRC_DIR}").split() == ["pkg"]  # no .git
    assert sh(client, tag, f"cat {SRC_DIR}/pkg/kernel.py") == KERNEL
    # the build's RUN steps had no network but loopback
    netdev = sh(client, tag, "cat /opt/netdev.txt")
    interfaces = [line.split(":")[0].strip() for line in netdev.splitlines() if ":" in line]
    assert interfaces == ["lo"]
    labels = client.images.get(tag).labels
    assert labels["org.triton-pr-bench.task-id"] == spec.task_id
    assert labels["org.triton-pr-bench.base-commit"] == repo.head()
    text = log.read_text()
    assert "mkdir -p /opt && echo 2.7.1 3.3.1 cu128 > /opt/pins.txt" in text
    assert f"Successfully tagged {tag}" in text


def test_existing_tags_are_reused_and_a_changed_source_rebuilds_only_the_task(
    engine: Builder, run_id: str, busybox: Path, tmp_path: Path
):
    repo = source_repo(tmp_path / "repo")
    spec, contexts = make_spec(tmp_path, run_id, busybox, repo)
    log = tmp_path / "task.log"
    first = engine.build(spec, contexts, log)
    assert reused(first) == [False, False, False]
    again = engine.build(spec, {}, log)  # nothing to build: no contexts needed
    assert reused(again) == [True, True, True]
    assert [r.image_id for r in again] == [r.image_id for r in first]

    repo.write("pkg/kernel.py", KERNEL + "# changed\n")
    repo.commit("change the kernel")
    changed, contexts2 = make_spec(tmp_path / "second", run_id, busybox, repo)
    assert changed.layers[:2] == spec.layers[:2] and changed.image_tag != spec.image_tag
    results = engine.build(changed, {LayerKind.TASK: contexts2[LayerKind.TASK]}, log)
    assert reused(results) == [True, True, False]
    assert "reused" in log.read_text()


def test_failing_step_raises_with_the_log(
    engine: Builder, run_id: str, busybox: Path, tmp_path: Path
):
    broken = Recipe(
        name="broken",
        description="a task step that fails",
        env_steps=RECIPE.env_steps,
        task_steps=("echo kernel-broke >&2 && exit 3",),
        test_packages=(),
    )
    spec, contexts = make_spec(tmp_path, run_id, busybox, source_repo(tmp_path / "r"), broken)
    log = tmp_path / "task.log"
    with pytest.raises(BuildFailedError) as err:
        engine.build(spec, contexts, log)
    message = str(err.value)
    assert f"task layer {spec.image_tag}" in message
    assert str(log) in message and "non-zero code: 3" in message
    assert spec.task_id in message
    text = log.read_text()
    assert "kernel-broke" in text and "returned a non-zero code: 3" in text


def test_context_must_hold_the_layers_dockerfile(
    engine: Builder, run_id: str, busybox: Path, tmp_path: Path
):
    spec, contexts = make_spec(tmp_path, run_id, busybox, source_repo(tmp_path / "r"))
    (contexts[LayerKind.BASE] / "Dockerfile").write_text("FROM scratch\n")
    with pytest.raises(EnvBuildError, match="not the base layer's Dockerfile"):
        engine.build(spec, contexts, tmp_path / "task.log")


# --- without an engine ------------------------------------------------------------------


def test_no_engine_is_a_clear_error(tmp_path: Path):
    url = f"unix://{tmp_path}/no/docker.sock"
    with pytest.raises(NoEngineError) as err:
        Builder.connect(url)
    assert str(err.value) == (
        f"no Docker engine reachable at {url}: start dockerd or set DOCKER_HOST"
    )
    # a client made without contacting the engine fails on first use, just as clearly; no
    # engine runs anything, so the base layer's binary is a stand-in (no busybox needed)
    builder = Builder(docker.DockerClient(base_url=url, version="1.41"), tmp_path)
    stand_in = tmp_path / "busybox"
    stand_in.write_bytes(b"\x7fELF never run: no engine is reached\n")
    spec, _ = make_spec(tmp_path, "x", stand_in, source_repo(tmp_path / "r"))
    with pytest.raises(NoEngineError):
        builder.build(spec, {})


def test_prepare_context_leaves_git_out_and_checks_files(tmp_path: Path):
    repo = source_repo(tmp_path / "repo")
    (repo.path / "run.sh").write_text("#!/bin/sh\n")
    (repo.path / "run.sh").chmod(0o755)
    layer = Layer(LayerKind.TASK, "t", "p", "FROM p\nCOPY src/ /s/\n", context_files=("src",))
    dest = tmp_path / "ctx"
    prepare_context(layer, {"src": repo.path}, dest)
    assert (dest / "Dockerfile").read_text() == layer.dockerfile
    assert sorted(p.name for p in (dest / "src").iterdir()) == ["pkg", "run.sh"]
    assert os.access(dest / "src" / "run.sh", os.X_OK)
    assert digest_files({"src": dest / "src"}) == digest_files({"src": repo.path})
    with pytest.raises(EnvBuildError, match="not empty"):
        prepare_context(layer, {"src": repo.path}, dest)
    with pytest.raises(EnvBuildError, match="do not match"):
        prepare_context(layer, {"src": repo.path, "extra": b""}, tmp_path / "ctx2")
