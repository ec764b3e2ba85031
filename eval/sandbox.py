"""Run an untrusted command (a test run, a workload script) inside a bubblewrap sandbox.

Reads: the harness's environment (through an allowlist), the Python installation's paths.
Writes: nothing itself. The sandboxed command may write its work tree, the writable directories
it is given (a Triton cache) and a private, size-limited /tmp and /dev/shm; nothing else.
Refuses (`SandboxUnavailable`, one line): to build a sandbox without `bwrap` (package bubblewrap),
`prlimit` and, for a root harness, `setpriv` (package util-linux). Whether a run may go without a
sandbox is the caller's decision (`--no-sandbox`: trusted base/gold reference runs only).

How a sandboxed command runs:
- harness running as root: `bwrap` (stage 1, privileged: new mount and PID namespaces and the
  filesystem view below) -> `setpriv` (to `SandboxPolicy.uid`, groups cleared, no new privileges,
  killed with its parent) -> `bwrap` (stage 2, unprivileged: new user, network, IPC and UTS
  namespaces, no nested user namespaces, new session) -> `prlimit` -> the command. Sandboxed code
  is never uid 0 on the host: the kernel exempts uid 0 from the process limit, and files the host
  keeps for root stay unreadable.
- harness not root: one unprivileged `bwrap` with all of these namespaces -> `prlimit` -> command.
Killing the outermost `bwrap` (the harness does at the timeout) ends the PID namespace's first
process, and with it every process inside, daemons that called setsid included.

The filesystem view: /usr, /bin, /sbin, /lib*, /etc, /opt and /sys read-only; the Python
installation and library paths of this interpreter and the harness's `eval` package read-only; a
minimal /dev plus the GPU device nodes; a fresh /proc; the work tree and the writable directories
read-write, with chosen files inside the tree read-only again. Home directories, task
directories, other runs' trees, the repository stores and sockets under /run do not exist
inside. The environment is rebuilt from an allowlist (no tokens), and NVLink multicast stays off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from eval.errors import EvalError

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = PROJECT_ROOT / "eval"
VERDICT_PLUGIN_DIR = EVAL_DIR / "verdict_plugin"
GIB = 1 << 30
SANDBOX_UID = 1000  # the uid the sandboxed command sees (mapped to the host uid it runs as)

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
               "/sys")  # fmt: skip
GPU_DEVICES = ("nvidia*", "nvidia-caps", "nvidia-caps-imex-channels", "dri", "kfd")

# Always set inside: NVLink multicast is never enabled (DESIGN.md, hardware requirements).
FORCED_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}
ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
    "PYTHONFAULTHANDLER", "PYTHONWARNINGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
    "LOCAL_RANK", "LOCAL_WORLD_SIZE",
})  # fmt: skip
ENV_PREFIXES = ("LC_", "CUDA_", "TRITON_", "TORCH_", "PYTORCH_", "NCCL_", "NVSHMEM_", "CUBLAS",
                "CUDNN_", "NVTE_", "HIP_", "ROCM_", "HSA_")  # fmt: skip
# Even an allowed prefix never carries these (TRITON_..._TOKEN would still be a credential).
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|AUTH|COOKIE|SESSION", re.I)
# Paths that environment variables may name and the run needs to read.
ENV_PATHS = ("CUDA_HOME", "CUDA_PATH", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH",
             "TRITON_NVDISASM_PATH", "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH")  # fmt: skip


class SandboxUnavailable(EvalError):
    """A tool the sandbox needs is missing."""


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError):
        return 16 * GIB


def _default_memory() -> int:
    """Half the RAM, at most 64 GiB, in whole MiB (cgroups count in pages)."""
    return min(_physical_memory() // 2, 64 * GIB) >> 20 << 20


@dataclass(frozen=True)
class SandboxPolicy:
    """Limits of one sandboxed command. Memory and CPU time are per process; processes counts
    every process and thread inside the sandbox."""

    memory_bytes: int = field(default_factory=_default_memory)
    processes: int = field(default_factory=lambda: max(1024, 32 * (os.cpu_count() or 1)))
    file_bytes: int = 16 * GIB  # largest file the command may write
    tmp_bytes: int = 4 * GIB  # size of the private /tmp (and of /dev/shm)
    cpu_seconds: int | None = None  # None: the run's timeout times the number of CPUs
    full_dev: bool = False  # the host's whole /dev instead of a minimal one plus GPU nodes
    uid: int = 65534  # host uid (and gid) sandboxed code runs as when the harness is root


@dataclass(frozen=True)
class Mounts:
    """What a sandboxed command sees besides the system directories and the Python paths."""

    workdir: Path  # read-write, the command's working directory
    writable: tuple[Path, ...] = ()  # more read-write directories (a Triton cache)
    readonly: tuple[Path, ...] = ()  # more host paths to show read-only
    frozen: tuple[Path, ...] = ()  # paths inside `workdir` made read-only again


@dataclass(frozen=True)
class Tools:
    bwrap: str
    prlimit: str
    setpriv: str | None  # only needed when the harness is root
    features: frozenset[str] = frozenset()  # bwrap options this bwrap knows (--size, ...)


def tools() -> Tools:
    """The sandbox's programs, or `SandboxUnavailable` naming what to install."""
    root = os.geteuid() == 0
    found = {name: shutil.which(name) for name in ("bwrap", "prlimit", "setpriv")}
    missing = [n for n, p in found.items() if p is None and (n != "setpriv" or root)]
    if missing:
        packages = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}
        need = sorted({packages[n] for n in missing})
        raise SandboxUnavailable(
            f"cannot sandbox test runs: {', '.join(missing)} not found (apt-get install "
            f"{' '.join(need)}); --no-sandbox runs trusted base/gold reference runs without one"
        )
    bwrap = str(found["bwrap"])
    return Tools(bwrap, str(found["prlimit"]), found["setpriv"], _features(bwrap))


_FEATURES: dict[str, frozenset[str]] = {}


def _features(bwrap: str) -> frozenset[str]:
    """Options of this bwrap that older releases lack (Ubuntu 22.04 has 0.6)."""
    if bwrap not in _FEATURES:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
        known = {o for o in ("--size", "--disable-userns", "--perms") if o in text.stdout}
        missing = {"--size", "--disable-userns", "--perms"} - known
        if missing:
            log.warning("%s lacks %s: the sandbox runs without them", bwrap, sorted(missing))
        _FEATURES[bwrap] = frozenset(known)
    return _FEATURES[bwrap]


def run_environment(
    source: Mapping[str, str], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a run: allowlisted names from `source` (never a secret-like name),
    then `extra` (the harness's own variables and the operator's explicit ones), then the
    variables that keep NVLink multicast off."""
    env = {
        k: v
        for k, v in source.items()
        if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not SECRET_NAME.search(k)
    }
    env.update(extra or {})
    env.update(FORCED_ENV)
    return env


def sandbox_home(env: dict[str, str]) -> dict[str, str]:
    """`env` for the inside: HOME and TMPDIR on the private /tmp."""
    return {**env, "HOME": "/tmp", "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox"}


# --- the filesystem view ----------------------------------------------------------------------


def python_paths() -> list[Path]:
    """This interpreter's installation and library directories (not the working directory or
    a project checkout on sys.path: those may hold task files)."""
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    out = [Path(p) for p in prefixes]
    out.append(Path(os.path.realpath(sys.executable)).parent)
    out.append(Path(sys.executable).parent)
    for entry in sys.path:
        if not entry or not os.path.exists(entry):
            continue
        p = Path(entry).resolve()
        library = p.name in ("site-packages", "dist-packages") or p.suffix in (".zip", ".egg")
        if library or any(p.is_relative_to(x) for x in prefixes):
            out.append(p)
    return out


def site_paths() -> list[Path]:
    """The harness's own PYTHONPATH directories (packages installed for the run, e.g. wheels
    unpacked into /tmp/site on a lent machine, which the sandbox's private /tmp would hide);
    the project checkout, which holds task directories, is not one of them."""
    out = []
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        p = Path(entry).resolve()
        if not (p.is_relative_to(PROJECT_ROOT) or PROJECT_ROOT.is_relative_to(p)):
            out.append(p)
    return out


def _env_paths(env: Mapping[str, str]) -> list[Path]:
    out = [env[k] for k in ENV_PATHS if env.get(k)]
    out += env.get("LD_LIBRARY_PATH", "").split(":")
    return [Path(p) for p in out if os.path.isabs(p)]  # "." would be the harness's directory


class _View:
    """bwrap arguments that build a new root: each bind's missing parent directories are made
    (mode 0755) first, and paths already visible through an earlier bind are not bound again."""

    def __init__(self, features: frozenset[str]) -> None:
        self.args: list[str] = []
        self.bound: list[Path] = []  # destinations, in order
        self.made: set[Path] = {Path("/")}
        self.features = features

    def opt(self, option: str, value: object) -> list[str]:
        """`option value` when this bwrap knows the option, else nothing."""
        return [option, str(value)] if option in self.features else []

    def _covered(self, path: Path) -> bool:
        return any(path.is_relative_to(b) for b in self.bound)

    def _parents(self, path: Path) -> None:
        for parent in reversed(path.parents):
            if parent in self.made or self._covered(parent):
                continue
            self.args += [*self.opt("--perms", "0755"), "--dir", str(parent)]
            self.made.add(parent)

    def bind(self, path: Path, how: str = "--ro-bind", *, again: bool = False) -> None:
        """Show host `path` at the same place; `again` binds it even inside an earlier bind (a
        writable directory inside a read-only one, a read-only file inside the work tree).
        The root and the harness's home are never shown whole (a Python installed with prefix
        `/` or in the home directory is shown through its library paths only)."""
        if path in (Path("/"), Path.home()) and not again:
            return
        if not os.path.lexists(path) or (self._covered(path) and not again):
            return
        if path.is_symlink() and not again:
            target = os.readlink(path)
            self._parents(path)
            self.args += ["--symlink", target, str(path)]
            self.made.add(path)
            resolved = Path(os.path.realpath(path))
            if resolved != path:
                self.bind(resolved, how)
            return
        self._parents(path)
        self.args += [how, str(path), str(path)]
        self.bound.append(path)

    def tmpfs(self, path: str, size: int, mode: str = "1777") -> None:
        self._parents(Path(path))
        self.args += [*self.opt("--perms", mode), *self.opt("--size", size), "--tmpfs", path]
        self.made.add(Path(path))  # an empty directory: what goes inside needs its parents made


def _devices(view: _View, policy: SandboxPolicy) -> None:
    if policy.full_dev:
        view.args += ["--dev-bind", "/dev", "/dev"]
        view.bound.append(Path("/dev"))
        return
    view.args += ["--dev", "/dev"]
    view.made.add(Path("/dev"))
    nodes = {node for pattern in GPU_DEVICES for node in Path("/dev").glob(pattern)}
    for node in sorted(nodes):  # nvidia* also matches nvidia-caps: each node once
        view.args += ["--dev-bind", str(node), str(node)]
    view.tmpfs("/dev/shm", policy.tmp_bytes)


def view_args(
    mounts: Mounts, policy: SandboxPolicy, env: Mapping[str, str], features: frozenset[str]
) -> list[str]:
    """The bwrap arguments of the filesystem view (see the module docstring)."""
    view = _View(features)
    for d in SYSTEM_DIRS:
        view.bind(Path(d))
    _devices(view, policy)
    view.args += ["--proc", "/proc"]
    view.tmpfs("/tmp", policy.tmp_bytes)
    for p in (*python_paths(), *site_paths(), *_env_paths(env), EVAL_DIR, *mounts.readonly):
        view.bind(Path(os.path.abspath(p)))
    for p in mounts.writable:
        view.bind(p.resolve(), "--bind", again=True)
    view.bind(mounts.workdir.resolve(), "--bind", again=True)
    for p in mounts.frozen:
        view.bind(p.resolve(), "--ro-bind", again=True)
    return view.args


def limit_args(tools_: Tools, policy: SandboxPolicy, cpu_seconds: int) -> list[str]:
    return [tools_.prlimit, f"--nproc={policy.processes}", f"--data={policy.memory_bytes}",
            f"--fsize={policy.file_bytes}", f"--cpu={cpu_seconds}", "--core=0", "--"]  # fmt: skip


def command(
    inner: Sequence[str],
    mounts: Mounts,
    policy: SandboxPolicy,
    env: Mapping[str, str],
    *,
    timeout_s: float,
    tools_: Tools | None = None,
) -> list[str]:
    """The whole argv that runs `inner` sandboxed."""
    t = tools_ or tools()
    cpu = policy.cpu_seconds or int(timeout_s * (os.cpu_count() or 1)) + 60
    isolate = ["--unshare-user", "--unshare-net", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent",
               "--new-session", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]  # fmt: skip
    if "--disable-userns" in t.features:
        isolate.append("--disable-userns")
    chdir = ["--chdir", str(mounts.workdir.resolve())]
    # The programs the view runs after stage 1 (bwrap, setpriv, prlimit) may live outside the
    # system directories (a bubblewrap unpacked from its .deb under /tmp on a machine where
    # nothing can be installed): show them, or stage 2 cannot start.
    own = [Path(p) for p in (t.bwrap, t.prlimit, t.setpriv) if p]
    mounts = replace(mounts, readonly=(*mounts.readonly, *own))
    view = view_args(mounts, policy, env, t.features)
    inside = [*limit_args(t, policy, cpu), *inner]
    if os.geteuid() != 0:
        return [t.bwrap, *isolate, "--unshare-pid", *view, *chdir, "--", *inside]
    uid = str(policy.uid)
    return [
        t.bwrap, "--die-with-parent", "--unshare-pid", *view,
        "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
        str(t.setpriv), "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs",
        "--pdeathsig", "KILL", "--",
        t.bwrap, *isolate, "--dev-bind", "/", "/", *chdir, "--", *inside,
    ]  # fmt: skip


def grant(paths: Iterable[Path], policy: SandboxPolicy) -> None:
    """Make `paths` (recursively) writable by the sandbox's uid; a no-op unless the harness is
    root (otherwise the sandbox runs as the harness's own uid, which owns them already)."""
    if os.geteuid() != 0:
        return
    uid = policy.uid
    for top in paths:
        if not top.exists():
            continue
        os.lchown(top, uid, uid)
        for dirpath, dirnames, filenames in os.walk(top):
            for name in (*dirnames, *filenames):
                p = os.path.join(dirpath, name)
                if os.lstat(p).st_uid != uid:
                    os.lchown(p, uid, uid)


def spawn(
    inner: Sequence[str],
    mounts: Mounts,
    policy: SandboxPolicy | None,
    env: Mapping[str, str],
    *,
    timeout_s: float,
    stdout: IO[bytes] | int | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start `inner` in the sandbox (`policy` None: unsandboxed, for trusted runs only), in a
    new session so that `stop` can kill the whole group."""
    if policy is None:
        argv, run_env = list(inner), dict(env)
    else:
        grant((mounts.workdir, *mounts.writable), policy)
        argv = command(inner, mounts, policy, env, timeout_s=timeout_s)
        run_env = sandbox_home(dict(env))
    log.debug("spawning %s", " ".join(argv))
    with _LIVE_LOCK:
        if _INTERRUPTED.is_set():
            raise Interrupted("interrupted: no run starts any more")
        proc = subprocess.Popen(
            argv,
            cwd=mounts.workdir,
            env=run_env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
        )
        _LIVE.add(proc)
    return proc


def stop(proc: subprocess.Popen[Any]) -> None:
    """Kill the process group of `proc` (the outer bwrap: its death ends the PID namespace)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with _LIVE_LOCK:
        _LIVE.discard(proc)


class Interrupted(KeyboardInterrupt):
    """The command was interrupted (Ctrl-C, or the INT or TERM a time limit sends): no run
    starts any more and the runs under way were killed. A KeyboardInterrupt, so that no
    `except Exception` that turns one task's failure into a result can record it: an
    interrupted run is no verdict."""


# Every run is started in its own session (so that `stop` can kill its group): an interrupt
# reaches none of them. The processes alive now, to stop them all when the command is
# interrupted; once it is, `spawn` refuses to start another.
_LIVE: set[subprocess.Popen[Any]] = set()
_LIVE_LOCK = threading.Lock()
_INTERRUPTED = threading.Event()


def wait_run(proc: subprocess.Popen[Any], timeout_s: float) -> bool:
    """Wait for a run started by `spawn`; True when it was killed at `timeout_s`. Raises
    `Interrupted` when the command was interrupted meanwhile (the run was killed: its exit is
    no result), and kills the run when the interrupt reaches this thread itself."""
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except KeyboardInterrupt:
        stop(proc)
        raise
    if timed_out:
        stop(proc)
    with _LIVE_LOCK:
        _LIVE.discard(proc)
    if _INTERRUPTED.is_set():
        raise Interrupted("interrupted: the run was stopped")
    return timed_out


def accept_runs() -> None:
    """Runs may start again (a new command in a process whose earlier one was interrupted)."""
    _INTERRUPTED.clear()


def interrupt_runs() -> int:
    """Stop every run under way and refuse new ones (the command was interrupted); how many
    were killed."""
    _INTERRUPTED.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    # every group is killed before any is waited for: a GPU process can take seconds to go
    # (its CUDA context torn down), and killing then waiting one by one took twelve
    # flash-linear-attention runs past the 20 s between a time limit's INT and its KILL (H200,
    # call 20)
    for proc in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in live:
        stop(proc)
    return len(live)


@contextlib.contextmanager
def stopping_runs_on_interrupt() -> Iterator[None]:
    """Inside a thread pool's `with`: an interrupt kills the runs of every worker before the
    pool waits for its threads (they were waiting on runs no signal reaches)."""
    try:
        yield
    except KeyboardInterrupt:
        n = interrupt_runs()
        log.warning("interrupted: %d run(s) under way stopped", n)
        raise


@dataclass(frozen=True)
class ScriptRun:
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    wall_s: float
    output: bytes | None  # the output file's bytes; None when absent or not a regular file
    log: str

    def last_words(self, width: int = 300) -> str:
        """What the log says of how the run ended, in a line: for a crash the interpreter's
        fatal error and its innermost Python frame (faulthandler's report ends in a list of
        extension modules, a useless last line: #479's FLOP count, exit 139), else the last
        line."""
        fatal = _FATAL.search(self.log)
        if fatal is not None:
            frame = _FRAME.search(self.log, fatal.end())
            where = f" in {frame[1]}, line {frame[2]}, {frame[3]}" if frame else ""
            return f"{fatal[1].strip()}{where}"[:width]
        return (self.log.strip().splitlines()[-1:] or ["no output"])[0][:width]


# faulthandler's report of a crash: its first line, and the innermost frame of the thread that
# crashed (the first listed after "most recent call first")
_FATAL = re.compile(r"^(Fatal Python error: [^\n]*)", re.M)
_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+) in (\S+)', re.M)


def read_back(path: Path, limit: int = 256 << 20) -> bytes | None:
    """A file the sandbox wrote, read without following a link and only when it is a regular
    file of at most `limit` bytes (it could be a FIFO, a device or a link to a host file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return fh.read(limit + 1)[:limit]


def run_script(
    script: Path,
    workdir: Path,
    output: str,
    *,
    timeout_s: float,
    policy: SandboxPolicy | None = None,
    python: str = sys.executable,
    extra_env: Mapping[str, str] | None = None,
    readonly: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    sandboxed: bool = True,
    prefix: Sequence[str] = (),
) -> ScriptRun:
    """Run the Python `script` in the sandbox with `workdir` as its writable working directory
    and read back `workdir/output` (the workload check's entry point: the script loads the
    prediction from the tree, runs it on the task's inputs and writes its outputs there).
    `readonly` and `writable`: more host paths to show (inputs, a Triton cache).
    `sandboxed=False` runs it directly (trusted base and gold code only, as `--no-sandbox`).
    `prefix`: a command the interpreter runs under (compute-sanitizer)."""
    policy = (policy or SandboxPolicy()) if sandboxed else None
    out = workdir / output
    out.unlink(missing_ok=True)
    env = run_environment(os.environ, {"PYTHONPATH": str(workdir), **(extra_env or {})})
    if policy is None:  # unsandboxed: HOME and TMPDIR stay the harness's
        env = {**env, **{k: os.environ[k] for k in ("HOME", "TMPDIR") if k in os.environ}}
    mounts = Mounts(workdir, writable=tuple(writable), readonly=(script, *readonly))
    logfile = workdir.parent / f".{workdir.name}.script.log"
    t0 = time.perf_counter()
    timed_out = False
    with logfile.open("wb") as fh:
        argv = [*prefix, python, "-X", "faulthandler", str(script)]
        proc = spawn(argv, mounts, policy, env, timeout_s=timeout_s, stdout=fh)
        timed_out = wait_run(proc, timeout_s)
    wall = time.perf_counter() - t0
    text = logfile.read_text(errors="replace")
    logfile.unlink(missing_ok=True)
    return ScriptRun(None if timed_out else proc.returncode, timed_out, wall, read_back(out), text)
