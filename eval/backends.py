"""Where a run happens: `local` (a scratch tree on this Python environment) or `docker` (the
task's image, GPU passed through, network off). Both prepare the same tree and judge the same
junit XML; only the process that runs pytest differs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from core.frameworks import framework
from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from eval.errors import EvalError
from eval.model import FailureClass, RunResult, Variant
from eval.runner import (
    PROJECT_ROOT,
    RawRun,
    classify,
    parse_junit,
    pytest_command,
    read_watch,
    run_pytest,
)
from eval.workspace import SourceStore, prepare, test_files

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSettings:
    timeout_s: float = 900.0
    max_test_files: int = 4
    isolated_timing: bool = True
    keep_trees: bool = False
    # added to every run's environment (e.g. TRITON_INTERPRET=1, a framework's test switches)
    extra_env: Mapping[str, str] = field(default_factory=dict)


class Backend(Protocol):
    name: str

    def run(
        self,
        task: Task,
        tdir: TaskDir,
        variant: Variant,
        run_dir: Path,
        run_index: int,
        prediction: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> RunResult: ...


def run_targets(task: Task, max_files: int, tree: Path) -> list[str]:
    """What pytest is given: the task's chosen node ids, else its test files (ranked)."""
    return list(task.tests.node_ids) or test_files(task, max_files, tree)


def framework_env(task: Task) -> dict[str, str]:
    """The framework's test hints (its registry entry's `tests.env`), multicast kept off."""
    return {**framework(task.framework).tests.env, **MULTICAST_OFF}


# NVLink multicast can put a shared host's GPUs out of service: every test process runs with
# it off, whatever the caller's environment says.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def _result(
    task: Task, variant: Variant, idx: int, raw: RawRun, run_dir: Path, extra_detail: str = ""
) -> RunResult:
    failure, passed, detail = classify(raw)
    return RunResult(
        task_id=task.task_id,
        variant=variant,
        run=idx,
        exit_code=raw.exit_code,
        failure=failure,
        passed=passed,
        tests=raw.tests,
        wall_s=round(raw.wall_s, 3),
        kernels=raw.kernels,
        log=str(run_dir / "pytest.log"),
        detail=extra_detail or detail,
    )


def _splice_failure(task: Task, variant: Variant, idx: int, exc: Exception) -> RunResult:
    return RunResult(task.task_id, variant, idx, None, FailureClass.SPLICE_ERROR, False, (), 0.0,
                     detail=str(exc))  # fmt: skip


def _tree(
    stores: Mapping[str, SourceStore],
    scratch: Path,
    task: Task,
    tdir: TaskDir,
    variant: Variant,
    run_index: int,
    prediction: Mapping[str, Any] | None,
) -> Path | RunResult:
    """The prepared tree of one run, or the run's result when a prediction cannot be spliced
    (a failure of the prediction, not of the harness: base and gold errors are raised)."""
    store = stores.get(task.framework)
    if store is None:
        raise EvalError(f"no repository for {task.framework}", task_id=task.task_id)
    tree = scratch / task.task_id / f"{variant}-{run_index}"
    try:
        return prepare(task, tdir, store, tree, variant, prediction)
    except EvalError as exc:
        if variant is Variant.PREDICTION:
            return _splice_failure(task, variant, run_index, exc)
        raise


class LocalBackend:
    """The framework at the base commit in a scratch tree, run on the current Python."""

    name = "local"

    def __init__(self, stores: Mapping[str, SourceStore], scratch: Path, settings: RunSettings):
        self.stores = stores
        self.scratch = scratch
        self.settings = settings

    def run(
        self,
        task: Task,
        tdir: TaskDir,
        variant: Variant,
        run_dir: Path,
        run_index: int,
        prediction: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> RunResult:
        tree = _tree(self.stores, self.scratch, task, tdir, variant, run_index, prediction)
        if isinstance(tree, RunResult):
            return tree
        files = run_targets(task, self.settings.max_test_files, tree)
        kernels = [k.name for k in task.kernels]
        hints = framework(task.framework).tests
        raw = run_pytest(
            tree,
            files,
            run_dir,
            timeout_s=self.settings.timeout_s,
            kernels=kernels,
            extra_env={**framework_env(task), **self.settings.extra_env, **(extra_env or {})},
            isolated_timing=self.settings.isolated_timing,
            pythonpath=hints.pythonpath,
            pytest_args=hints.pytest_args,
        )
        if not self.settings.keep_trees:
            import shutil

            shutil.rmtree(tree, ignore_errors=True)
        return _result(task, variant, run_index, raw, run_dir)


class DockerBackend:
    """The task's image (from envbuild's env.json), the prepared tree mounted over its source,
    GPUs passed through, no network."""

    name = "docker"

    def __init__(
        self,
        stores: Mapping[str, SourceStore],
        scratch: Path,
        settings: RunSettings,
        client: Any = None,
        gpus: bool = True,
        python: str = "python",
        image: str | None = None,
    ):
        import docker

        self.client = client or docker.from_env()
        self.stores = stores
        self.scratch = scratch
        self.settings = settings
        self.gpus = gpus
        self.python = python
        self.image = image

    def _image(self, tdir: TaskDir) -> str:
        if self.image:
            return self.image
        from envbuild.model import EnvSpec

        env = tdir.load(TaskFile.ENV, EnvSpec)
        if env is None:
            raise EvalError(
                "env.json missing: run `python -m envbuild --build` first", task_id=tdir.id
            )
        return env.image_tag

    def run(
        self,
        task: Task,
        tdir: TaskDir,
        variant: Variant,
        run_dir: Path,
        run_index: int,
        prediction: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> RunResult:
        import docker

        tree = _tree(self.stores, self.scratch, task, tdir, variant, run_index, prediction)
        if isinstance(tree, RunResult):
            return tree
        run_dir.mkdir(parents=True, exist_ok=True)
        files = run_targets(task, self.settings.max_test_files, tree)
        hints = framework(task.framework).tests
        cmd = pytest_command(files, Path("/out/junit.xml"), self.python, hints.pytest_args)
        env = {
            "PYTHONPATH": ":".join(
                [
                    *(f"/workspace/src/{p}" for p in hints.pythonpath),
                    "/workspace/src",
                    "/opt/triton-pr-bench",
                ]
            ),
            "TPB_KERNELS": ",".join(k.name for k in task.kernels),
            "TPB_OUT": "/out/kernels.json",
            "TPB_ISOLATED": "1" if self.settings.isolated_timing else "0",
            **framework_env(task),
            **self.settings.extra_env,
            **(extra_env or {}),
        }
        requests = (
            [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if self.gpus else []
        )
        t0 = time.perf_counter()
        container = self.client.containers.run(
            self._image(tdir),
            cmd,
            detach=True,
            network_mode="none",
            working_dir="/workspace/src",
            environment=env,
            volumes={
                str(tree.resolve()): {"bind": "/workspace/src", "mode": "rw"},
                str(run_dir.resolve()): {"bind": "/out", "mode": "rw"},
                str(PROJECT_ROOT): {"bind": "/opt/triton-pr-bench", "mode": "ro"},
            },
            device_requests=requests,
        )
        timed_out = False
        try:
            status = container.wait(timeout=self.settings.timeout_s)
            code: int | None = int(status.get("StatusCode", -1))
        except Exception:  # the SDK raises a requests timeout: kill the whole container
            timed_out, code = True, None
            container.kill()
        wall = time.perf_counter() - t0
        (run_dir / "pytest.log").write_bytes(container.logs())
        container.remove(force=True)
        timings = read_watch(run_dir / "kernels.json")
        junit = run_dir / "junit.xml"
        raw = RawRun(
            exit_code=code,
            timed_out=timed_out,
            wall_s=wall,
            tests=parse_junit(junit) if junit.exists() else (),
            log_text=(run_dir / "pytest.log").read_text(errors="replace"),
            kernels=timings,
        )
        return _result(task, variant, run_index, raw, run_dir)
