"""Run a task's tests once, sandboxed, and judge the run by what the harness's verdict plugin
streamed over its channel and by exit codes: never by stdout, never by a file the run wrote.

Reads: a prepared source tree, the test files to run. Writes: the run's log (pytest's output)
into the run directory.
Rules: pytest runs in the sandbox (`eval.sandbox`; without one only when the caller says so, for
trusted base/gold runs) with the kernel-watch and verdict plugins loaded before any framework
code. At the timeout the sandbox is killed whole: no process of the run survives it. The test
files, conftest files and pytest configuration, and every importable file of the tree, are
hashed before and after: a change marks the run tampered. Failures are classified: compile
error, CUDA error, timeout, crash, infrastructure (missing dependency, no GPU, nothing collected
or all skipped, a tampered run or a verdict channel with problems) apart from plain test
failures; the classification reads the reported messages and the log's error lines.
`parse_junit` reads recorded junit files (older runs, the classifier's tests); runs no longer
write one.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from eval.model import PYTEST_NO_TESTS, FailureClass, KernelTiming, TestOutcome
from eval.protected import changes, freeze_list, snapshot
from eval.sandbox import (
    PROJECT_ROOT,
    Mounts,
    SandboxPolicy,
    run_environment,
    spawn,
    wait_run,
)
from eval.verdict import KEY_BYTES, PipeReader, Verdict, run_phases
from eval.verdict_plugin.tpb_verdict import SITE_ENV

__all__ = ["PROJECT_ROOT", "RawRun", "classify", "compile_cause", "failure_line", "first_line",
           "import_layout", "parse_junit", "pytest_command", "raw_run", "run_pytest"]  # fmt: skip

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
    ended: bool = True  # pytest finished its session (the `end` frame; recorded runs: assumed)
    session_exit: int | None = None  # pytest's exit status as the plugin reported it
    problems: tuple[str, ...] = ()  # the verdict channel's (forged, duplicate, missing reports)
    tampered: tuple[str, ...] = ()  # test files or pytest internals changed during the run
    missing: tuple[str, ...] = ()  # expected node ids (the reference's) the run did not report
    sandbox: str = ""  # bwrap | docker | none
    phases: Mapping[str, float] = field(default_factory=dict)  # verdict.run_phases


def pytest_command(
    files: Sequence[str], python: str = sys.executable, args: Sequence[str] = ()
) -> list[str]:
    # The kernel watch first: the verdict plugin notes its functions when it is imported.
    return [
        python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
        "-p", "eval.pytest_plugin", "-p", "tpb_verdict",
        # one test file that fails to import must not stop the others (the selection run
        # collects whole files; its collect reports still say which file failed and why)
        "--continue-on-collection-errors", *args, *files,
    ]  # fmt: skip


def import_layout(
    files: Sequence[str], tree: Path | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The pytest arguments and the extra path entries (folders of the tree) for a run of
    `files` (paths, node ids, or folders of `tree`, whose test modules pytest will collect).
    pytest's default import mode imports a test file by its basename: two files of one run with
    the same name in folders without `__init__.py` collide, and the second is refused ("import
    file mismatch"; flash-linear-attention's `tests/layers/test_gla.py` and
    `tests/ops/test_gla.py`, whose op tests then never ran: 12 tasks of the state, 2026-12-07,
    most of them selection runs of the whole `tests` folder). Such a run imports by path
    (`--import-mode=importlib`) with the test files' folders on the path, where the default
    mode had put them, so a test's `from utils import ...` of a helper beside it resolves."""
    paths: list[str] = []
    for f in files:
        path = f.split("::", 1)[0]
        if tree is not None and (tree / path).is_dir():
            # pytest's default `python_files`, in one walk of the folder
            found = (q for q in (tree / path).rglob("*.py")
                     if q.name.startswith("test_") or q.name.endswith("_test.py"))  # fmt: skip
            paths += sorted(q.relative_to(tree).as_posix() for q in found)
        else:
            paths.append(path)
    paths = list(dict.fromkeys(paths))
    names = [PurePosixPath(p).name for p in paths]
    if len(set(names)) == len(names):
        return (), ()
    folders = dict.fromkeys(str(PurePosixPath(p).parent) for p in paths)
    return ("--import-mode=importlib",), tuple(f for f in folders if f != ".")


def channel_env(
    workdir: Path | str,
    plugin_root: Path | str,
    kernels: Sequence[str],
    isolated_timing: bool,
    pythonpath: Sequence[str] = (),
) -> dict[str, str]:
    """The variables the harness sets for a test run (the channel's fds come on top);
    `pythonpath`: directories of the framework's checkout that go first (a src/ layout)."""
    # the harness's own extra site directories (packages installed for the run): on the path
    # last, so nothing there shadows the framework or the plugins, and named to the verdict
    # plugin as installed code
    site = os.environ.get("PYTHONPATH", "")
    return {
        # the verdict plugin's directory first: nothing in the tree can shadow it
        "PYTHONPATH": os.pathsep.join(
            [
                str(Path(plugin_root) / "eval" / "verdict_plugin"),
                *(str(Path(workdir) / p) for p in pythonpath),
                str(workdir),
                str(plugin_root),
                *filter(None, site.split(os.pathsep)),
            ]
        ),
        SITE_ENV: site,
        "TPB_KERNELS": ",".join(kernels),
        "TPB_ISOLATED": "1" if isolated_timing else "0",
    }


def run_pytest(
    workdir: Path,
    files: Sequence[str],
    out_dir: Path,
    *,
    timeout_s: float,
    policy: SandboxPolicy | None,
    kernels: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    isolated_timing: bool = True,
    writable: Sequence[Path] = (),
    readonly: Sequence[Path] = (),
    expected: Sequence[str] = (),
    pythonpath: Sequence[str] = (),
    pytest_args: Sequence[str] = (),
    checker: Sequence[str] = (),
) -> RawRun:
    """Run pytest on `files` inside `workdir`, sandboxed by `policy` (None: not sandboxed);
    the log lands in `out_dir`. `writable`: more directories the run may write (a Triton
    cache); `expected`: node ids the run must report (a prediction run's reference tests);
    `checker`: a command pytest runs under (`eval.memcheck.memcheck_command`), whose output
    goes to the log too."""
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "pytest.log"
    for stale in ("junit.xml", "kernels.json"):  # written by older runs; never read now
        (out_dir / stale).unlink(missing_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    read_fd, write_fd = os.pipe()
    key_read, key_write = os.pipe()
    os.write(key_write, key)
    os.close(key_write)
    mode_args, test_dirs = import_layout(files, workdir)
    extra = channel_env(workdir, PROJECT_ROOT, kernels, isolated_timing, (*pythonpath, *test_dirs))
    extra.update(TPB_VERDICT_FD=str(write_fd), TPB_KEY_FD=str(key_read))
    # Frameworks' tests often start torch.distributed on MASTER_PORT; runs side by side must
    # not share one. A single-process launch, as torchrun would describe it.
    for name, value in (("MASTER_PORT", str(_free_port())), ("MASTER_ADDR", "127.0.0.1"),
                        ("WORLD_SIZE", "1"), ("RANK", "0"), ("LOCAL_RANK", "0")):  # fmt: skip
        extra[name] = os.environ.get(name, value)
    env = run_environment(os.environ, {**extra, **(extra_env or {})})
    mounts = Mounts(workdir, writable=tuple(writable), readonly=tuple(readonly),
                    frozen=tuple(freeze_list(workdir, list(files))))  # fmt: skip
    before = snapshot(workdir)
    reader = PipeReader(read_fd, key)
    reader.start()
    timed_out = False
    t0 = time.perf_counter()
    try:
        with log_path.open("wb") as fh:
            command = [*checker, *pytest_command(files, python, (*mode_args, *pytest_args))]
            proc = spawn(command, mounts, policy, env, timeout_s=timeout_s, stdout=fh,
                         pass_fds=(write_fd, key_read))  # fmt: skip
            os.close(write_fd)
            os.close(key_read)
            write_fd = key_read = -1
            timed_out = wait_run(proc, timeout_s)
    finally:
        for fd in (write_fd, key_read):
            if fd >= 0:
                os.close(fd)
    stop = time.perf_counter()
    verdict = reader.finish().verdict()
    return raw_run(
        verdict,
        exit_code=None if timed_out else proc.returncode,
        timed_out=timed_out,
        wall_s=stop - t0,
        log_text=log_path.read_text(errors="replace"),
        tree_changes=changes(before, snapshot(workdir)),
        expected=expected,
        sandbox="none" if policy is None else "bwrap",
        phases=run_phases(verdict.arrivals, t0, stop),
    )


def raw_run(
    verdict: Verdict,
    *,
    exit_code: int | None,
    timed_out: bool,
    wall_s: float,
    log_text: str,
    tree_changes: Sequence[str],
    expected: Sequence[str],
    sandbox: str,
    phases: Mapping[str, float] | None = None,
) -> RawRun:
    """A run as the harness saw it: the channel's verdict, the exit code, the tree's changes."""
    reported = {t.nodeid for t in verdict.tests}
    return RawRun(
        exit_code=exit_code,
        timed_out=timed_out,
        wall_s=wall_s,
        tests=verdict.tests,
        log_text=log_text,
        kernels=verdict.kernels,
        ended=verdict.ended,
        session_exit=verdict.exitstatus,
        problems=verdict.problems,
        tampered=(*verdict.tampered, *(f"the run changed {c}" for c in tree_changes)),
        missing=tuple(n for n in expected if n not in reported),
        sandbox=sandbox,
        phases=dict(phases or {}),
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    if raw.tampered:
        return FailureClass.INFRA, False, f"tampered: {raw.tampered[0]}"
    if raw.problems:
        return FailureClass.INFRA, False, f"verdict channel: {raw.problems[0]}"
    bad = [t for t in raw.tests if t.outcome in ("failed", "error")]
    ran = [t for t in raw.tests if t.outcome != "skipped"]
    clean_exit = raw.exit_code == 0 and raw.session_exit in (None, 0)
    if clean_exit and raw.ended and ran and not bad and not raw.missing:
        return FailureClass.NONE, True, ""
    text = "\n".join(t.message for t in bad) + "\n" + _error_lines(raw.log_text)
    for pattern, cls in ((_CUDA, FailureClass.CUDA_ERROR), (_COMPILE, FailureClass.COMPILE_ERROR)):
        m = pattern.search(text)
        if m:
            detail = _line_of(text, m.start())
            if cls is FailureClass.COMPILE_ERROR:
                detail = _compile_cause(text, m.start(), detail)
            return cls, False, detail
    if raw.exit_code is not None and raw.exit_code < 0:
        return FailureClass.CRASH, False, f"killed by signal {-raw.exit_code}"
    m = _INFRA.search(text)
    if m and not any(t.outcome == "failed" for t in bad):
        detail = _line_of(text, m.start())
        # "ImportError while importing test module ..." says where; the `E   ...Error:` line
        # under it says what (the missing module or name): keep both
        cause = _IMPORT_CAUSE.search(raw.log_text)
        if cause and cause.group(1) not in detail:
            detail = f"{detail[:160]} {cause.group(1)[:200]}"
        return FailureClass.INFRA, False, detail
    if not raw.ended:
        why = f"the test process ended (exit {raw.exit_code}) before pytest finished its session"
        return FailureClass.CRASH, False, why
    if not raw.tests:
        # pytest's "no tests collected" (old flash-linear-attention commits whose test
        # directory holds none the selection could reach, 2026-12-06; the gate's NO_TEST)
        if raw.exit_code == PYTEST_NO_TESTS:
            return FailureClass.INFRA, False, "pytest collected no test (exit 5)"
        return FailureClass.INFRA, False, f"no test report (pytest exit {raw.exit_code})"
    if not ran:
        return FailureClass.INFRA, False, "every selected test was skipped"
    if bad:
        return FailureClass.TEST_FAILURE, False, failure_line(bad[0])
    if raw.missing:
        return FailureClass.TEST_FAILURE, False, f"{raw.missing[0]} was not reported"
    return FailureClass.TEST_FAILURE, False, f"pytest exit {raw.exit_code} with no failed test"


_E_LINE = re.compile(r"^E\s+(\S.*)$", re.M)


def first_line(test: TestOutcome) -> str:
    """A failed test's message's first line (what the reasons said before `failure_line`)."""
    return test.message.splitlines()[0] if test.message.strip() else ""


def failure_line(test: TestOutcome) -> str:
    """What pytest says went wrong in a failed test: the first `E` line of its report
    ("fixture 'dtype' not found", "AssertionError: ..."), else its message's first line, else
    its node id. The first line alone was often the test's header or its parameters
    (flash-linear-attention #9930c972f7, call 75: "file .../tests/ops/test_nsa.py, line 15"
    for a PR test that takes a `dtype` no parametrize gives; #c805d79a07: "N = 4, T = 500")."""
    m = _E_LINE.search(test.message)
    return (m.group(1).strip() if m else first_line(test)) or f"{test.nodeid} {test.outcome}"


_IMPORT_CAUSE = re.compile(r"^E\s+((?:ModuleNotFound|Import|Attribute)Error: .+)$", re.M)


# Triton's compilation error: "at L:C:", the kernel's source down to the failing line, a caret
# under the column, then what went wrong (pytest's report prefixes each line with "E   ")
_KERNEL_DEF = re.compile(r"^(?:E\s+)?def (\w+)\(", re.M)
_CARET_CAUSE = re.compile(r"^(?:E\s+)?\s*\^\s*\n(?:E\s+)?(\S.*)$", re.M)


def _compile_cause(text: str, pos: int, line: str, window: int = 6000) -> str:
    """`line` (the "CompilationError: at 8:4:" line) with the kernel Triton was compiling and
    the cause under the caret: the line alone said neither (four flash-linear-attention path
    attention tasks of 2026-12-06, whose kernels declare `T: tl.constexpr` and list it in
    `do_not_specialize`, which Triton 3.6 refuses)."""
    after = text[pos : pos + window]
    cause = _CARET_CAUSE.search(after)
    if cause is None:
        return line
    kernel = _KERNEL_DEF.search(after, 0, cause.start())
    where = f" in {kernel.group(1)}" if kernel else ""
    # short enough that the gate's cut of a reason keeps the cause (pytest's "E" and Triton's
    # module path say nothing)
    short = re.sub(r"^E\s+", "", line).replace("triton.compiler.errors.", "").rstrip(":")
    return f"{short}{where}: {cause.group(1).strip()}"[:300]


def compile_cause(tests: Sequence[TestOutcome]) -> str:
    """Triton's compilation error in the failed tests' messages, with the kernel and the cause
    under the caret ("" where there is none, or its cause is not in the messages): what a
    reference judged before `_compile_cause` existed can say again (`eval.reference.rejudge`)."""
    text = "\n".join(t.message for t in tests if t.outcome in ("failed", "error"))
    m = _COMPILE.search(text)
    if m is None:
        return ""
    line = _line_of(text, m.start())
    detail = _compile_cause(text, m.start(), line)
    return "" if detail == line else detail


def _error_lines(log: str, limit: int = 200) -> str:
    lines = [ln for ln in log.splitlines() if re.search(r"Error|error:|CUDA|killed", ln)]
    return "\n".join(lines[-limit:])


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else None].strip()[:300]
