"""Where a run happens: `local` (a scratch tree on this Python environment, in a bubblewrap
sandbox) or `docker` (the task's image, GPU passed through, network off, hardened). Both prepare
the same tree and judge the same verdict frames; only the process that runs pytest differs.

Reads: task directories (a prediction run reads `reference.json` for the node ids it must
report). Writes: the run's log; a Triton cache per trust level (base and gold share one, each
task's predictions have their own) under `RunSettings.cache_root`.
Refuses: to run a prediction unsandboxed (`RunSettings.sandbox` None is for trusted base and gold
runs only), and, without bwrap, to build a local backend that sandboxes (`SandboxUnavailable`).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from core.frameworks import TestHints, framework
from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from eval.compat import task_compat_env
from eval.errors import EvalError, ExtensionError
from eval.extensions import install_extensions
from eval.model import FailureClass, RunResult, Variant
from eval.protected import changes, freeze_list, snapshot
from eval.runner import (
    PROJECT_ROOT,
    RawRun,
    channel_env,
    classify,
    import_layout,
    pytest_command,
    raw_run,
    run_pytest,
)
from eval.sandbox import SandboxPolicy, grant, run_environment, tools
from eval.targets import watched_kernels
from eval.verdict import KEY_BYTES, FrameReader
from eval.workspace import SourceStore, prepare, test_files

log = logging.getLogger(__name__)


def default_cache() -> Path:
    """Where sandboxed runs keep their Triton caches unless told otherwise."""
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return home / "triton-pr-bench" / "sandbox"


@dataclass(frozen=True)
class RunSettings:
    timeout_s: float = 900.0
    max_test_files: int = 4
    isolated_timing: bool = True
    keep_trees: bool = False
    # added to every run's environment (e.g. TRITON_INTERPRET=1, a framework's test switches)
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # the local backend's sandbox (None: --no-sandbox, trusted base/gold runs only); the docker
    # backend takes its limits from it
    sandbox: SandboxPolicy | None = field(default_factory=SandboxPolicy)
    cache_root: Path | None = None  # Triton caches the runs may write; default_cache() if None
    # pinned packages per task environment (envbuild.wheelhouse): a task whose env.json pins
    # have a wheelhouse here runs in a virtual environment made from it over the host's torch
    wheelhouse: Path | None = None


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
        timeout_s: float | None = None,
        checker: Sequence[str] = (),
    ) -> RunResult: ...


# where a framework's own tests live, when a task names no test file
TEST_DIRS = ("tests", "test")


def run_targets(task: Task, max_files: int, tree: Path) -> list[str]:
    """What pytest is given: the task's chosen node ids, else its test files (ranked), else the
    tree's test directories: a selection run of a task without test files collects those, not
    the whole tree (flash-linear-attention's `benchmarks/cp/test_gdn_with_cp.py` is a script
    whose `test_ops(args)` pytest collects and errors on: #789 and #720 on the H200,
    2026-12-03, where it took two of the four tests of their selection runs)."""
    return (list(task.tests.node_ids) or test_files(task, max_files, tree)
            or [d for d in TEST_DIRS if (tree / d).is_dir()])  # fmt: skip


def time_limit(settings: RunSettings, hints: TestHints, timeout_s: float | None) -> float:
    """A run's limit: the one asked for (a selection run's), else the settings' raised to the
    framework's floor."""
    return timeout_s if timeout_s is not None else max(settings.timeout_s, hints.min_timeout_s)


def framework_env(task: Task, tdir: TaskDir) -> dict[str, str]:
    """The framework's test hints (its registry entry's `tests.env`), Triton's switches for
    the Triton the task pins (`eval.compat`), multicast kept off."""
    return {**framework(task.framework).tests.env, **task_compat_env(tdir), **MULTICAST_OFF}


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
    flags = [name for name, hit in (("tampered", raw.tampered), ("verdict_channel", raw.problems),
                                    ("unreported_tests", raw.missing)) if hit]  # fmt: skip
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
        flags=tuple(flags),
        sandbox=raw.sandbox,
        phases=dict(raw.phases),
    )


def _expected(tdir: TaskDir, variant: Variant) -> tuple[str, ...]:
    """The node ids a prediction run must report: the valid reference's fail-to-pass and
    pass-to-pass tests."""
    from eval.model import Reference

    if variant is not Variant.PREDICTION:
        return ()
    ref = tdir.load(TaskFile.REFERENCE, Reference)
    return (*ref.fail_to_pass, *ref.pass_to_pass) if ref is not None and ref.valid else ()


def _cache(settings: RunSettings, task: Task, variant: Variant) -> Path:
    """A prediction's writes to the Triton cache never reach a trusted run's cache, and tasks
    run side by side never share one: on the H200, five tasks compiling into one shared cache
    lost a run to a `FileNotFoundError` on Triton's `tmp.pid_*` directory (the runs of one task
    are sequential, so a cache per task and trust level has one writer at a time)."""
    root = settings.cache_root or default_cache()
    trusted = variant is not Variant.PREDICTION
    path = root / ("trusted" if trusted else "predictions") / task.task_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_env(
    task: Task,
    tdir: TaskDir,
    settings: RunSettings,
    cache: Path,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """What a test run adds to its environment: the framework's switches, the settings', the
    Triton cache, the caller's. Autotuning results are kept in that cache too (Triton keys them
    by the kernel's source, so base, gold and prediction never share one): a task's second and
    third runs no longer benchmark every config again."""
    return {
        **framework_env(task, tdir),
        **settings.extra_env,
        "TRITON_CACHE_DIR": str(cache),
        "TRITON_CACHE_AUTOTUNING": "1",
        **(extra or {}),
    }


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
    """The framework at the base commit in a scratch tree, run on the current Python inside a
    bubblewrap sandbox."""

    name = "local"

    def __init__(self, stores: Mapping[str, SourceStore], scratch: Path, settings: RunSettings):
        self.stores = stores
        self.scratch = scratch
        self.settings = settings
        if settings.sandbox is not None:
            tools()  # a missing bwrap is one clear error before any run

    def interpreter(self, tdir: TaskDir) -> tuple[str, Path | None]:
        """The Python the task's tests run on (its wheelhouse's venv, or this one)."""
        return interpreter_for(self.settings, tdir)

    def tuning_cache(self, task: Task, variant: Variant = Variant.GOLD) -> Path:
        """The Triton cache the variant's runs use, autotuning results included: one the
        task's trusted runs share, another for its predictions."""
        return _cache(self.settings, task, variant)

    def run(
        self,
        task: Task,
        tdir: TaskDir,
        variant: Variant,
        run_dir: Path,
        run_index: int,
        prediction: Mapping[str, Any] | None = None,
        extra_env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        checker: Sequence[str] = (),
    ) -> RunResult:
        if variant is Variant.PREDICTION and self.settings.sandbox is None:
            raise EvalError("a prediction always runs sandboxed: --no-sandbox is for trusted "
                            "base and gold reference runs", task_id=task.task_id)  # fmt: skip
        tree = _tree(self.stores, self.scratch, task, tdir, variant, run_index, prediction)
        if isinstance(tree, RunResult):
            return tree
        files = run_targets(task, self.settings.max_test_files, tree)
        cache = _cache(self.settings, task, variant)
        hints = framework(task.framework).tests
        python, venv = self.interpreter(tdir)
        # the framework's compiled extensions, built once; never in a prediction's tree (a
        # miss builds in a tree of the setup state, made only then)
        trusted = self.scratch / task.task_id / f"setup-state-{run_index}"
        setup_state = None
        if variant is Variant.PREDICTION:
            setup_state = partial(prepare, task, tdir, self.stores[task.framework], trusted,
                                  Variant.BASE)  # fmt: skip
        try:
            install_extensions(tree, python, self.settings.cache_root or default_cache(),
                               setup_state)  # fmt: skip
        except ExtensionError as exc:  # tests that need them fail naming the module
            log.warning("%s: %s; the tests run without them", task.task_id, exc)
        finally:
            if setup_state is not None:
                shutil.rmtree(trusted, ignore_errors=True)
        raw = run_pytest(
            tree,
            files,
            run_dir,
            timeout_s=time_limit(self.settings, hints, timeout_s),
            policy=self.settings.sandbox,
            kernels=watched_kernels(task),
            extra_env=run_env(task, tdir, self.settings, cache, extra_env),
            isolated_timing=self.settings.isolated_timing,
            writable=(cache,),
            expected=_expected(tdir, variant),
            pythonpath=hints.pythonpath,
            pytest_args=hints.pytest_args,
            python=python,
            readonly=(venv,) if venv is not None else (),
            checker=checker,
        )
        if not self.settings.keep_trees:
            shutil.rmtree(tree, ignore_errors=True)
        return _result(task, variant, run_index, raw, run_dir)


SRC = "/workspace/src"
TOOLS = "/opt/triton-pr-bench"


def interpreter_for(settings: RunSettings, tdir: TaskDir) -> tuple[str, Path | None]:
    """The Python a task's tests run on, and its virtual environment: the task's wheelhouse
    (by the key of its env.json pins) made into a venv over the host's packages, else this
    interpreter."""
    import sys

    if settings.wheelhouse is None:
        return sys.executable, None
    from envbuild.model import EnvSpec
    from envbuild.wheelhouse import env_key, package_pins, prepare_venv

    spec = tdir.load(TaskFile.ENV, EnvSpec)
    pins = package_pins(spec) if spec is not None else ()
    house = settings.wheelhouse / env_key(pins) if pins else None
    if house is None or not house.is_dir():
        return sys.executable, None
    python = prepare_venv(house, (settings.cache_root or default_cache()) / "venvs")
    return str(python), python.parent.parent


class DockerBackend:
    """The task's image (from envbuild's env.json), the prepared tree mounted over its source,
    GPUs passed through; no network, a non-root user, a read-only root with a private /tmp, no
    capabilities, no new privileges, limits on processes, memory and CPU. Verdict frames come
    from the engine's log of the container's stdout, which the container cannot alter."""

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
        cpus: float | None = None,
    ):
        import docker

        self.client = client or docker.from_env()
        self.cpus = cpus or max(1.0, (os.cpu_count() or 2) / 2)
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
        timeout_s: float | None = None,
        checker: Sequence[str] = (),
    ) -> RunResult:
        if checker:
            raise EvalError("a checked run (compute-sanitizer) runs on the local backend only",
                            task_id=task.task_id)  # fmt: skip
        tree = _tree(self.stores, self.scratch, task, tdir, variant, run_index, prediction)
        if isinstance(tree, RunResult):
            return tree
        run_dir.mkdir(parents=True, exist_ok=True)
        files = run_targets(task, self.settings.max_test_files, tree)
        hints = framework(task.framework).tests
        policy = self.settings.sandbox or SandboxPolicy()
        key = secrets.token_bytes(KEY_BYTES)
        kernels = [k.name for k in task.kernels]
        mode_args, test_dirs = import_layout(files, tree)
        env = run_environment({}, {
            **channel_env(SRC, TOOLS, kernels, self.settings.isolated_timing,
                          (*hints.pythonpath, *test_dirs)),
            # frames on the container's stdout (the engine keeps its log), the key on stdin
            "TPB_VERDICT_FD": "1", "TPB_KEY_FD": "0", "HOME": "/tmp", "TMPDIR": "/tmp",
            **framework_env(task, tdir),
            **self.settings.extra_env,
            **(extra_env or {}),
        })  # fmt: skip
        grant([tree], policy)
        before = snapshot(tree)
        container = self._create(tdir, tree, files, env, policy, (*mode_args, *hints.pytest_args))
        t0 = time.perf_counter()
        timed_out = False
        try:
            self._start_with_key(container, key)
            try:
                status = container.wait(timeout=time_limit(self.settings, hints, timeout_s))
                code: int | None = int(status.get("StatusCode", -1))
            except Exception:  # the SDK raises a requests timeout: kill the whole container
                timed_out, code = True, None
                container.kill()
                container.wait(timeout=60)
            wall = time.perf_counter() - t0
            # The engine kept both streams as they came: the container cannot rewrite them.
            frames = FrameReader(key)
            frames.feed(container.logs(stdout=True, stderr=False))
            frames.close()
            log_bytes = container.logs(stdout=False, stderr=True)
        finally:
            container.remove(force=True)
        (run_dir / "pytest.log").write_bytes(log_bytes)
        raw = raw_run(
            frames.verdict(),
            exit_code=code,
            timed_out=timed_out,
            wall_s=wall,
            log_text=log_bytes.decode(errors="replace"),
            tree_changes=changes(before, snapshot(tree)),
            expected=_expected(tdir, variant),
            sandbox="docker",
        )
        if not self.settings.keep_trees:
            shutil.rmtree(tree, ignore_errors=True)
        return _result(task, variant, run_index, raw, run_dir)

    def _create(
        self, tdir: TaskDir, tree: Path, files: list[str], env: Mapping[str, str],
        policy: SandboxPolicy, pytest_args: Sequence[str] = (),
    ) -> Any:  # fmt: skip
        import docker

        requests = (
            [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if self.gpus else []
        )
        root = tree.resolve()
        volumes = {
            str(root): {"bind": SRC, "mode": "rw"},
            str(PROJECT_ROOT / "eval"): {"bind": f"{TOOLS}/eval", "mode": "ro"},
            # the tests it runs, the conftests and pytest's configuration stay as prepared
            **{str(p.resolve()): {"bind": f"{SRC}/{p.relative_to(tree)}", "mode": "ro"}
               for p in freeze_list(tree, files)},
        }  # fmt: skip
        uid = os.geteuid() if os.geteuid() != 0 else policy.uid
        tmp = f"rw,nosuid,nodev,size={policy.tmp_bytes},mode=1777"
        return self.client.containers.create(
            self._image(tdir),
            pytest_command(files, self.python, pytest_args),
            stdin_open=True,
            network_mode="none",
            working_dir=SRC,
            environment=dict(env),
            user=f"{uid}:{uid}",
            read_only=True,
            tmpfs={"/tmp": tmp, "/dev/shm": tmp},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=policy.processes,
            mem_limit=policy.memory_bytes,
            memswap_limit=policy.memory_bytes,
            nano_cpus=int(self.cpus * 1e9),
            ulimits=[
                docker.types.Ulimit(name="fsize", soft=policy.file_bytes, hard=policy.file_bytes),
                docker.types.Ulimit(name="core", soft=0, hard=0),
            ],
            volumes=volumes,
            device_requests=requests,
        )

    @staticmethod
    def _start_with_key(container: Any, key: bytes) -> None:
        """Start the container and write the run's key to its stdin, then close it."""
        sock = container.attach_socket(params={"stdin": 1, "stream": 1})
        try:
            container.start()
            raw = getattr(sock, "_sock", sock)
            raw.sendall(key)
        finally:
            sock.close()
