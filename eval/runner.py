"""Run a task's tests once and judge the run by exit codes and pytest's junit XML, never stdout.

Reads: a prepared source tree, the test files to run. Writes: the run's junit XML, its log and
the kernel-watch plugin's JSON into the run directory.
Rules: pytest runs in its own process group and the whole group is killed at the timeout (a
hanging kernel leaves no orphan). Failures are classified: compile error, CUDA error, timeout,
crash, infrastructure (missing dependency, no GPU, nothing collected) apart from plain test
failures; the classification reads the junit messages and the log's error lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.model import FailureClass, KernelTiming, TestOutcome

PROJECT_ROOT = Path(__file__).resolve().parents[1]

_COMPILE = re.compile(
    r"CompilationError|CompileTimeAssertionFailure|triton\.compiler\.errors|"
    r"at \d+:\d+:.*\n.*\^|PassManager::run failed|MLIR|UnsupportedLanguageConstruct",
)
_CUDA = re.compile(
    r"illegal memory access|an illegal instruction|misaligned address|device-side assert|"
    r"CUDA error|CUDA out of memory|OutOfMemoryError|out of resource|unspecified launch failure",
    re.IGNORECASE,
)
_INFRA = re.compile(
    r"ModuleNotFoundError|No module named|ImportError while importing|cannot import name|"
    r"Found no NVIDIA driver|no CUDA GPUs are available|CUDA driver version is insufficient|"
    r"Torch not compiled with CUDA|requires? (a )?(GPU|CUDA)",
)


@dataclass(frozen=True)
class RawRun:
    exit_code: int | None
    timed_out: bool
    wall_s: float
    tests: tuple[TestOutcome, ...]
    log_text: str
    kernels: tuple[KernelTiming, ...]


def pytest_command(
    files: Sequence[str], junit: Path, python: str = sys.executable, args: Sequence[str] = ()
) -> list[str]:
    return [
        python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
        "-p", "eval.pytest_plugin", f"--junitxml={junit}", "-o", "junit_family=xunit1",
        *args, *files,
    ]  # fmt: skip


def run_pytest(
    workdir: Path,
    files: Sequence[str],
    out_dir: Path,
    *,
    timeout_s: float,
    kernels: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    isolated_timing: bool = True,
    pythonpath: Sequence[str] = (),
    pytest_args: Sequence[str] = (),
) -> RawRun:
    """Run pytest on `files` inside `workdir`; results land in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    junit, log, watch = out_dir / "junit.xml", out_dir / "pytest.log", out_dir / "kernels.json"
    for f in (junit, watch):
        f.unlink(missing_ok=True)
    env = dict(os.environ)
    # The framework's source first, then this project (for the kernel-watch plugin).
    # (`pythonpath`: directories of the framework's checkout that go first, e.g. a src/ layout)
    env["PYTHONPATH"] = os.pathsep.join(
        [
            *(str(workdir / p) for p in pythonpath),
            str(workdir),
            str(PROJECT_ROOT),
            *filter(None, [env.get("PYTHONPATH")]),
        ]
    )
    env.update(
        TPB_KERNELS=",".join(kernels),
        TPB_OUT=str(watch),
        TPB_ISOLATED="1" if isolated_timing else "0",
        PYTHONDONTWRITEBYTECODE="1",
    )
    # Frameworks' tests often start torch.distributed on MASTER_PORT; runs side by side must
    # not share one.
    env.setdefault("MASTER_PORT", str(_free_port()))
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    # a single-process launch, as torchrun would describe it
    for key, value in (("WORLD_SIZE", "1"), ("RANK", "0"), ("LOCAL_RANK", "0")):
        env.setdefault(key, value)
    env.update(extra_env or {})
    t0 = time.perf_counter()
    timed_out = False
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            pytest_command(files, junit, python, pytest_args),
            cwd=workdir,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
    wall = time.perf_counter() - t0
    tests = parse_junit(junit) if junit.exists() else ()
    timings = read_watch(watch)
    return RawRun(
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        wall_s=wall,
        tests=tests,
        log_text=log.read_text(errors="replace"),
        kernels=timings,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def read_watch(path: Path) -> tuple[KernelTiming, ...]:
    """The kernel-watch plugin's timings of one run (none when it wrote no report)."""
    if not path.exists():
        return ()
    from eval.pytest_plugin import read_plugin_output

    return tuple(read_plugin_output(path).values())


def parse_junit(path: Path) -> tuple[TestOutcome, ...]:
    """Per-test outcomes from pytest's junit XML (xunit1: classname, name, file)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return ()
    out = []
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        name = case.get("name", "")
        file = case.get("file") or (classname.replace(".", "/") + ".py" if classname else "")
        cls = _class_part(classname, file)
        nodeid = "::".join(x for x in (file, cls, name) if x)
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (el.get("message") or el.text or "").strip()
                if tag != "skipped" and el.text:
                    message = f"{message}\n{el.text.strip()}"
                break
        out.append(TestOutcome(nodeid, outcome, float(case.get("time") or 0.0), message[:4000]))
    return tuple(out)


def _class_part(classname: str, file: str) -> str:
    """`tests.unit.test_x.TestFoo` with file `tests/unit/test_x.py` -> `TestFoo`."""
    module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
    if module and classname.startswith(module):
        return classname[len(module) :].lstrip(".").replace(".", "::")
    return ""


def classify(raw: RawRun) -> tuple[FailureClass, bool, str]:
    """(failure class, passed, the message that decided)."""
    if raw.timed_out:
        return FailureClass.TIMEOUT, False, "killed at the time limit"
    bad = [t for t in raw.tests if t.outcome in ("failed", "error")]
    ran = [t for t in raw.tests if t.outcome != "skipped"]
    if raw.exit_code == 0 and ran and not bad:
        return FailureClass.NONE, True, ""
    text = "\n".join(t.message for t in bad) + "\n" + _error_lines(raw.log_text)
    for pattern, cls in ((_CUDA, FailureClass.CUDA_ERROR), (_COMPILE, FailureClass.COMPILE_ERROR)):
        m = pattern.search(text)
        if m:
            return cls, False, _line_of(text, m.start())
    if raw.exit_code is not None and raw.exit_code < 0:
        return FailureClass.CRASH, False, f"killed by signal {-raw.exit_code}"
    m = _INFRA.search(text)
    if m and not any(t.outcome == "failed" for t in bad):
        return FailureClass.INFRA, False, _line_of(text, m.start())
    if not raw.tests:
        return FailureClass.INFRA, False, f"no junit report (pytest exit {raw.exit_code})"
    if not ran:
        return FailureClass.INFRA, False, "every selected test was skipped"
    if raw.exit_code == 0:
        return FailureClass.NONE, True, ""
    first = bad[0] if bad else None
    return FailureClass.TEST_FAILURE, False, first.message.splitlines()[0] if first else ""


def _error_lines(log: str, limit: int = 200) -> str:
    lines = [ln for ln in log.splitlines() if re.search(r"Error|error:|CUDA|killed", ln)]
    return "\n".join(lines[-limit:])


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else None].strip()[:300]
