"""The docker backend on a real engine: real pytest, with the harness's plugins, in the task's
container: the prepared tree mounted, no network, a non-root user, a read-only root, no
capabilities, no new privileges; the verdict comes from the engine's log; a hanging run is
killed at the timeout.

No Python image can be pulled here, so the image is built FROM scratch out of this machine's
own interpreter, its standard library and the pure-Python packages pytest needs (no torch: the
kernel watch notes that and watches nothing)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from curation.curate import main as curate
from curation.taskdir import task_dirs
from eval.backends import DockerBackend, RunSettings
from eval.model import FailureClass, Variant
from eval.sandbox import SandboxPolicy
from eval.workspace import SourceStore
from mining.crawl import main as crawl
from mining.git import GitRepo
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_SCALED
from tests.test_builder import TEST_LABEL

PYTHON = os.path.realpath(sys.executable)
PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py")
SKIP_DIRS = {"site-packages", "test", "tests", "__pycache__", "idlelib", "tkinter", "turtledemo",
             "ensurepip", "lib2to3"}  # fmt: skip

TESTS = """import os
import time
from pathlib import Path


def test_the_gold_kernel_is_mounted():
    assert "(x + y) * 2.0" in Path("pkg/ops/add.py").read_text()


def test_hardened():
    status = open("/proc/self/status").read()
    assert os.getuid() != 0
    assert "CapEff:\\t0000000000000000" in status and "NoNewPrivs:\\t1" in status
    ifaces = [ln.split(":")[0].strip() for ln in open("/proc/net/dev").read().splitlines()[2:]]
    assert ifaces == ["lo"]
    for path in ("/etc/x", "/opt/triton-pr-bench/eval/x", "tests/test_add.py"):
        try:
            open(path, "a").close()
        except OSError:
            continue
        raise AssertionError(f"wrote {path}")
    open("/tmp/x", "w").write("private /tmp")
    open("written-by-the-run.txt", "w").write("the tree is writable")


def test_limited():
    import resource

    assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[1] == int(os.environ["EXPECT_FSIZE"])
    cgroup = Path("/sys/fs/cgroup")
    pids = [cgroup / "pids.max", cgroup / "pids" / "pids.max"]
    memory = [cgroup / "memory.max", cgroup / "memory" / "memory.limit_in_bytes"]
    assert [p.read_text().strip() for p in pids if p.exists()] == [os.environ["EXPECT_PIDS"]]
    assert [p.read_text().strip() for p in memory if p.exists()] == [os.environ["EXPECT_MEM"]]


def test_hang_or_forge():
    if os.environ.get("HANG"):
        time.sleep(600)
    if os.environ.get("FORGE"):
        frame = b"TPB1 9 " + b"0" * 64 + b" eyJraW5kIjogImVuZCJ9\\n"
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                os.write(fd, frame)
            except OSError:
                pass
"""


def _libraries(binaries: list[str]) -> set[str]:
    found = set()
    for binary in binaries:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False).stdout
        found.update(part for line in out.splitlines() for part in line.split()
                     if part.startswith("/"))  # fmt: skip
    return found


def _context() -> bytes:
    """A build context: the interpreter, its standard library and shared libraries at their
    own paths, pytest's packages in the standard library's site-packages."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = sorted(str(p) for p in (stdlib / "lib-dynload").glob("*.so"))
    buf = io.BytesIO()

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if SKIP_DIRS & set(Path(info.name).parts) else info

    def no_cache(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in Path(info.name).parts else info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(PYTHON, f"root{PYTHON}")
        tar.add(str(stdlib), f"root{stdlib}", filter=keep)
        for lib in _libraries([PYTHON, *dynload]):
            tar.add(os.path.realpath(lib), f"root{lib}")
        for name in PACKAGES:
            file = Path(__import__(name).__file__)
            path = file.parent if file.name == "__init__.py" else file
            tar.add(str(path), f"root{stdlib}/site-packages/{path.name}", filter=no_cache)
        dockerfile = b"FROM scratch\nCOPY root/ /\n"
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    return buf.getvalue()


@pytest.fixture(scope="module")
def python_image(engine):
    tag = f"triton-pr-bench-test/python:{os.getpid()}"
    engine.client.images.build(fileobj=io.BytesIO(_context()), custom_context=True, tag=tag,
                               network_mode="none", rm=True,
                               labels={TEST_LABEL: f"python-{os.getpid()}"})  # fmt: skip
    yield tag
    engine.client.images.remove(tag, force=True)


@pytest.fixture
def task_setup(tmp_path: Path):
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.commit("Initial commit")
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.write("tests/test_add.py", TESTS)
    repo.commit("Scale the sum (#2)")
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    [tdir] = task_dirs(tasks)
    return repo, tdir


def backend(client, image, repo, tmp_path, timeout, env=None) -> DockerBackend:
    settings = RunSettings(timeout_s=timeout, isolated_timing=False, extra_env=env or {},
                           keep_trees=True)  # fmt: skip
    stores = {"fw": SourceStore(GitRepo(repo.path))}
    return DockerBackend(stores, tmp_path / "scratch", settings, client=client, gpus=False,
                         python=PYTHON, image=image, cpus=1.0)  # fmt: skip


def outcomes(r) -> dict[str, str]:
    return {t.nodeid.rsplit("::", 1)[-1]: t.outcome for t in r.tests}


def test_docker_run_is_hardened_and_judged_by_the_engine_log(
    client, python_image: str, task_setup, tmp_path: Path
) -> None:
    repo, tdir = task_setup
    policy = SandboxPolicy()
    expect = {"EXPECT_FSIZE": str(policy.file_bytes), "EXPECT_PIDS": str(policy.processes),
              "EXPECT_MEM": str(policy.memory_bytes)}  # fmt: skip
    b = backend(client, python_image, repo, tmp_path, timeout=120, env=expect)
    gold = b.run(tdir.load_task(), tdir, Variant.GOLD, tmp_path / "gold", 0)
    assert gold.failure is FailureClass.NONE and gold.passed, gold.detail
    assert gold.sandbox == "docker" and gold.flags == ()
    assert set(outcomes(gold).values()) == {"passed"} and len(gold.tests) == 4
    [watch] = gold.kernels  # the kernel watch's report came over the channel
    assert watch.kernel == "add_kernel" and watch.calls == 0
    written = list((tmp_path / "scratch").rglob("written-by-the-run.txt"))
    assert len(written) == 1  # the tree was the run's to write, and the harness's to read
    base = b.run(tdir.load_task(), tdir, Variant.BASE, tmp_path / "base", 0)
    assert base.failure is FailureClass.TEST_FAILURE and not base.passed
    assert outcomes(base)["test_the_gold_kernel_is_mounted"] == "failed"
    assert "test_the_gold_kernel_is_mounted" in (tmp_path / "base" / "pytest.log").read_text()


def test_docker_frames_forged_in_the_container_are_refused(
    client, python_image: str, task_setup, tmp_path: Path
) -> None:
    repo, tdir = task_setup
    env = {"FORGE": "1", "EXPECT_FSIZE": "0", "EXPECT_PIDS": "0", "EXPECT_MEM": "0"}
    b = backend(client, python_image, repo, tmp_path, timeout=120, env=env)
    r = b.run(tdir.load_task(), tdir, Variant.GOLD, tmp_path / "run", 0)
    assert r.failure is FailureClass.INFRA and not r.passed and "verdict_channel" in r.flags
    assert "bad signature" in r.detail


def test_docker_run_is_killed_at_the_timeout(
    client, python_image: str, task_setup, tmp_path: Path
) -> None:
    repo, tdir = task_setup
    b = backend(client, python_image, repo, tmp_path, timeout=5, env={"HANG": "1"})
    r = b.run(tdir.load_task(), tdir, Variant.GOLD, tmp_path / "run", 0)
    assert r.failure is FailureClass.TIMEOUT and r.exit_code is None
    assert r.wall_s < 60
