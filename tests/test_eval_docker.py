"""The docker backend on a real engine: the prepared tree is mounted into the task's image, the
run has no network, its junit XML comes back, and a hanging run is killed at the timeout.

The image is a static busybox with a shell script standing in for `python -m pytest` (no Python
image can be pulled here); what is tested is the backend's plumbing, not pytest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from curation.curate import main as curate
from curation.taskdir import task_dirs
from eval.backends import DockerBackend, RunSettings
from eval.model import FailureClass, Variant
from eval.workspace import SourceStore
from mining.crawl import main as crawl
from mining.git import GitRepo
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_SCALED

FAKE_PYTEST = r"""#!/bin/sh
# Stands in for `python -m pytest ... --junitxml=/out/junit.xml`: checks what the backend set up.
out=/out/junit.xml
if grep -q 'x + y) \* 2.0' /workspace/src/pkg/ops/add.py; then kernel=gold; else kernel=base; fi
ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')
if [ -n "$HANG" ]; then sleep 600; fi
cat > "$out" <<EOF
<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_add" name="test_$kernel" time="0.1"/>
<testcase classname="tests.test_add" name="test_net_${ifaces% }" time="0.1"/>
</testsuite></testsuites>
EOF
echo "kernels watched: $TPB_KERNELS"
"""


@pytest.fixture
def image(client, run_id: str, busybox: Path, tmp_path: Path):
    ctx = tmp_path / "image"
    ctx.mkdir()
    shutil.copy2(busybox, ctx / "busybox")  # keeps the executable bit
    (ctx / "fakepytest").write_text(FAKE_PYTEST)
    (ctx / "Dockerfile").write_text(
        "FROM scratch\nCOPY busybox /bin/busybox\n"
        'RUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
        "COPY fakepytest /bin/fakepytest\nRUN chmod +x /bin/fakepytest\n"
    )
    tag = f"triton-pr-bench-test/eval:{run_id}"
    client.images.build(path=str(ctx), tag=tag, network_mode="none", rm=True)
    yield tag
    client.images.remove(tag, force=True)


@pytest.fixture
def task_setup(tmp_path: Path):
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.write("tests/test_add.py", "def test_add():\n    pass\n")
    repo.commit("Initial commit")
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Scale the sum (#2)")
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    [tdir] = task_dirs(tasks)
    return repo, tdir


def backend(client, image, repo, tmp_path, timeout, env=None) -> DockerBackend:
    settings = RunSettings(timeout_s=timeout, isolated_timing=False, extra_env=env or {})
    stores = {"fw": SourceStore(GitRepo(repo.path))}
    return DockerBackend(stores, tmp_path / "scratch", settings, client=client, gpus=False,
                         python="/bin/fakepytest", image=image)  # fmt: skip


def test_docker_run_mounts_the_variant_without_network(
    client,
    image: str,
    task_setup,
    tmp_path: Path,
) -> None:
    repo, tdir = task_setup
    b = backend(client, image, repo, tmp_path, timeout=60)
    for variant in (Variant.BASE, Variant.GOLD):
        r = b.run(tdir.load_task(), tdir, variant, tmp_path / f"run-{variant}", 0)
        assert r.failure is FailureClass.NONE and r.passed, r.detail
        names = {t.nodeid.rsplit("::", 1)[-1] for t in r.tests}
        assert f"test_{variant}" in names  # the gold tree carries the PR's kernel
        assert "test_net_lo" in names  # only the loopback interface inside the container
        assert (
            "kernels watched: add_kernel"
            in (tmp_path / f"run-{variant}" / "pytest.log").read_text()
        )


def test_docker_run_is_killed_at_the_timeout(
    client,
    image: str,
    task_setup,
    tmp_path: Path,
) -> None:
    repo, tdir = task_setup
    b = backend(client, image, repo, tmp_path, timeout=3, env={"HANG": "1"})
    r = b.run(tdir.load_task(), tdir, Variant.GOLD, tmp_path / "run", 0)
    assert r.failure is FailureClass.TIMEOUT and r.exit_code is None
    assert r.wall_s < 60
