"""tpb_verdict: the harness's pytest plugin; it streams each test report to the harness the moment
the test phase ends, signed with a key that only the harness and this plugin hold.

Loaded as `-p tpb_verdict` from a directory that holds nothing else (put first on PYTHONPATH),
so pytest imports it before any conftest or test module, hence before any of the framework's or
the prediction's code. Standard library and pytest only.

Reads, at import: TPB_VERDICT_FD (the write end of the harness's pipe; "1" means this process's
stdout, which is then moved onto stderr so that only frames go to the real stdout: the docker
backend reads them from the engine's log) and TPB_KEY_FD (an fd holding the run's key; read to
the end and closed here, so nothing imported later can read it from the fd).
Writes: one line per frame to the verdict fd, `TPB1 <seq> <hmac-sha256> <base64 json>`; kinds:
`hello`, `collect` (a collector that failed or was skipped), `collected` (the node ids that will
run), `report` (one phase of one test), `tampered` (watched functions replaced), `kernels` (the
kernel-watch plugin's report), `end` (pytest's exit status).
Checks: at import it notes the identity of pytest's and pluggy's functions, the builtins, its own
and the kernel-watch plugin's; after every test's teardown (when fixtures such as monkeypatch
have undone their changes) and at the end it sends `tampered` when one of them was removed or
replaced by code from outside the Python installation (pytest's legacypath plugin replaces one
with its own), or when a comparison or timing function of torch, numpy, triton or math now runs
such code (say, a lambda defined in the prediction's file).
Limits: this defends against files rewritten after the fact, reports forged without the key,
lost or duplicated reports, and blunt monkeypatching. Code running in this same process can in
principle read the key from memory and replace the plugin; docs/security.md says what is and is
not defended.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import hmac
import json
import os
import site
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import pytest

MAGIC = "TPB1"
KEY_BYTES = 32
MAX_MESSAGE = 4000
SITE_ENV = "TPB_SITE"  # the harness's own package directories (installed code, like site-packages)
WATCH_PLUGIN = "tpb-kernel-watch"  # eval.pytest_plugin's name in pytest's plugin manager

_IDENTITY_MODULES = (
    "_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.main", "_pytest.outcomes",
    "_pytest.skipping", "_pytest.nodes", "_pytest.fixtures", "_pytest.unittest", "_pytest.config",
    "pluggy._callers", "pluggy._hooks", "pluggy._manager", "pluggy._result", "pytest",
    "eval.pytest_plugin", "eval.timing", "eval.launch_capture", "eval.model", __name__,
)  # fmt: skip
# Builtins a test suite may legitimately replace for a while (captured output, prompts).
_BUILTINS_FREE = frozenset({"print", "input", "help", "_", "exit", "quit", "copyright", "credits",
                            "license", "breakpoint"})  # fmt: skip
# Functions of libraries imported after this plugin that verdicts and timings rest on.
_ORIGIN_CHECKS = {
    "torch": (
        "testing.assert_close", "allclose", "equal", "isclose", "Tensor.allclose", "Tensor.equal",
        "Tensor.__eq__", "Tensor.eq", "Tensor.all", "Tensor.any", "Tensor.item", "Tensor.tolist",
        "cuda.synchronize", "cuda.Event.record", "cuda.Event.elapsed_time",
        "cuda.Event.synchronize",
    ),
    "numpy": (
        "testing.assert_allclose", "testing.assert_array_equal", "testing.assert_equal",
        "testing.assert_array_almost_equal", "allclose", "array_equal", "isclose",
    ),
    "triton": ("testing.do_bench", "testing.assert_close"),
    "math": ("isclose",),
}  # fmt: skip
_C_KINDS = (
    types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodWrapperType,
    types.MethodDescriptorType, types.ClassMethodDescriptorType,
)  # fmt: skip


# --- frames (the harness decodes with the same functions) -------------------------------------


def frame_mac(key: bytes, seq: int, body: str) -> str:
    return hmac.new(key, f"{seq} {body}".encode(), hashlib.sha256).hexdigest()


def encode_frame(key: bytes, seq: int, payload: dict[str, Any]) -> bytes:
    body = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    return f"{MAGIC} {seq} {frame_mac(key, seq, body)} {body}\n".encode()


def decode_frame(key: bytes, line: bytes) -> tuple[int, dict[str, Any]]:
    """(sequence number, payload) of one frame line; ValueError when it is not one of ours."""
    parts = line.strip().split(b" ")
    if len(parts) != 4 or parts[0] != MAGIC.encode() or not parts[1].isdigit():
        raise ValueError("not a frame")
    seq, mac, body = int(parts[1]), parts[2].decode("ascii", "replace"), parts[3].decode("ascii")
    if not hmac.compare_digest(mac, frame_mac(key, seq, body)):
        raise ValueError(f"frame {seq}: bad signature")
    payload = json.loads(base64.b64decode(body, validate=True))
    if not isinstance(payload, dict) or not isinstance(payload.get("kind"), str):
        raise ValueError(f"frame {seq}: no kind")
    return seq, payload


# --- the channel ----------------------------------------------------------------------------


class _Channel:
    def __init__(self, fd: int, key: bytes):
        self._fd = fd
        self._key = key
        self._seq = 0
        self._lock = threading.Lock()
        self.broken = False

    def send(self, kind: str, **fields: Any) -> None:
        with self._lock:
            if self.broken:
                return
            data = memoryview(encode_frame(self._key, self._seq, {"kind": kind, **fields}))
            self._seq += 1
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:  # the harness is gone; the tests must still run to their end
                self.broken = True


def _read_key(fd: int) -> bytes:
    key = b""
    while len(key) < KEY_BYTES:
        chunk = os.read(fd, KEY_BYTES - len(key))
        if not chunk:
            break
        key += chunk
    if fd == 0:  # docker: the key came on stdin, which the tests should see empty
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    else:
        os.close(fd)
    return key


def _open_channel(env: MutableMapping[str, str]) -> _Channel | None:
    fd_text, key_text = env.pop("TPB_VERDICT_FD", ""), env.pop("TPB_KEY_FD", "")
    if not fd_text.isdigit() or not key_text.isdigit():
        return None
    key = _read_key(int(key_text))
    fd = int(fd_text)
    if fd == 1:
        # Frames keep the real stdout; everything else printed to fd 1 goes to stderr.
        fd = os.dup(1)
        os.dup2(2, 1)
    os.set_inheritable(fd, False)  # an exec'd child cannot write to the channel
    return _Channel(fd, key)


# --- integrity ------------------------------------------------------------------------------


def _members(module: Any) -> Iterator[tuple[str, Any]]:
    """Callables and classes of a module, and the functions and descriptors of its classes."""
    for name, value in list(vars(module).items()):
        if module is builtins:
            if name not in _BUILTINS_FREE and callable(value):
                yield name, value
            continue
        if isinstance(value, type) and value.__module__ == module.__name__:
            yield name, value
            for attr, member in list(vars(value).items()):
                if callable(member) or isinstance(member, (classmethod, staticmethod, property)):
                    yield f"{name}.{attr}", member
        elif callable(value):
            yield name, value


def _identity(obj: Any) -> tuple[int, int]:
    code = getattr(obj, "__code__", None)
    return id(obj), id(code) if code is not None else 0


class Integrity:
    """What was loaded when the plugin was imported, and checks that it is still in place."""

    def __init__(self) -> None:
        self.modules = {n: sys.modules[n] for n in (*_IDENTITY_MODULES, "builtins")
                        if n in sys.modules}  # fmt: skip
        self.snapshot = {
            (n, attr): _identity(v) for n, m in self.modules.items() for attr, v in _members(m)
        }
        self.roots = _installation_roots()

    def changes(self) -> list[str]:
        out = [f"sys.modules[{n!r}] replaced" for n, m in self.modules.items()
               if sys.modules.get(n) is not m]  # fmt: skip
        current = {(n, a): v for n, m in self.modules.items() for a, v in _members(m)}
        for key, ident in self.snapshot.items():
            if key not in current:
                out.append(f"{key[0]}.{key[1]} removed")
            elif _identity(current[key]) != ident and not self._installed(current[key]):
                # pytest's own plugins patch some of these (legacypath does); their code lives in
                # the installation, a prediction's does not
                out.append(f"{key[0]}.{key[1]} replaced")
        return out + self._foreign()

    def _installed(self, obj: Any) -> bool:
        """Whether `obj` is Python code from the Python installation."""
        target = getattr(obj, "__func__", None) or getattr(obj, "fget", None) or obj
        code = getattr(target, "__code__", None)
        if code is None:
            return False
        path = os.path.realpath(code.co_filename)
        return any(path.startswith(root + os.sep) for root in self.roots)

    def _foreign(self) -> list[str]:
        out = []
        for top, paths in _ORIGIN_CHECKS.items():
            module = sys.modules.get(top)
            if module is None:
                continue
            for path in paths:
                obj: Any = module
                for part in path.split("."):
                    obj = getattr(obj, part, None)
                    if obj is None:
                        break
                if obj is not None and self._outside(obj):
                    out.append(f"{top}.{path} runs code from outside the installation")
        return out

    def _outside(self, obj: Any) -> bool:
        target = getattr(obj, "__func__", obj)
        if getattr(target, "__code__", None) is not None:
            return not self._installed(target)
        if isinstance(target, _C_KINDS):
            return False
        # a callable object without code of its own (functools.partial, an instance of some
        # class): fine only when its type belongs to the checked library
        module = type(target).__module__
        return not any(module == t or module.startswith(f"{t}.") for t in _ORIGIN_CHECKS)


def _installation_roots() -> tuple[str, ...]:
    paths = {*sysconfig.get_paths().values(), *site.getsitepackages()}
    # site directories the interpreter's start-up put on the path (a task's virtual environment
    # sees the host's packages through a path file): installed code too
    paths |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    # the harness's own package directories (wheels installed for the run with --target): set
    # by the harness, read-only in the sandbox, read before any code of the tree runs
    paths |= set(filter(None, os.environ.get(SITE_ENV, "").split(os.pathsep)))
    for top in _ORIGIN_CHECKS:
        file = getattr(sys.modules.get(top), "__file__", None)
        if file:
            paths.add(os.path.dirname(file))
    return tuple(sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)}))


# --- pytest hooks ---------------------------------------------------------------------------


def _message(report: Any) -> str:
    if report.passed:
        return ""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        text = str(getattr(report, "longreprtext", "") or longrepr or "")
    return text[-MAX_MESSAGE:] if len(text) > MAX_MESSAGE else text


def _hooks(send: Callable[..., None], changes: Callable[[], list[str]]) -> dict[str, Any]:
    """The plugin's hook functions, closed over the channel's `send` and the integrity check as
    they were at import: replacing a class's or this module's attributes later changes nothing
    pytest calls (pluggy holds these functions), and the check reports the replacement."""
    reported: set[str] = set()
    configs: list[Any] = []

    def check() -> None:
        new = [c for c in changes() if c not in reported]
        if new:
            reported.update(new)
            send("tampered", changes=new)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config: Any) -> None:
        # One process runs the tests: a framework's `addopts = -n auto` would hand them to
        # pytest-xdist workers, whose reports reach this channel as the controller's, for node
        # ids it never collected. xdist decides on `dist` in its own (trylast) configure.
        if getattr(config.option, "dist", "no") != "no":
            config.option.dist = "no"
        configs.append(config)

    def launched(nodeid: str) -> list[str]:
        watcher = configs[0].pluginmanager.get_plugin(WATCH_PLUGIN) if configs else None
        try:
            return list(watcher.launched_by(nodeid)) if watcher is not None else []
        except Exception:  # a broken watch must not hide the verdict
            return []

    def pytest_collectreport(report: Any) -> None:
        if not report.passed:
            send("collect", nodeid=report.nodeid, outcome=report.outcome,
                 message=_message(report))  # fmt: skip

    def pytest_collection_finish(session: Any) -> None:
        send("collected", nodeids=[item.nodeid for item in session.items])

    def pytest_runtest_logreport(report: Any) -> None:
        if report.outcome == "rerun":  # pytest-rerunfailures: the final attempt reports again
            return
        send(
            "report",
            nodeid=report.nodeid,
            when=report.when,
            outcome=report.outcome,
            xfail=bool(getattr(report, "wasxfail", "")),
            seconds=round(float(report.duration), 6),
            message=_message(report),
            **({"launched": launched(report.nodeid)} if report.when == "teardown" else {}),
        )
        if report.when == "teardown":  # fixtures (monkeypatch) have undone their changes
            check()

    @pytest.hookimpl(trylast=True)  # after the kernel watch's profiler and isolated timing
    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        check()
        watcher = session.config.pluginmanager.get_plugin(WATCH_PLUGIN)
        if watcher is not None and hasattr(watcher, "report"):
            try:
                send("kernels", report=watcher.report())
            except Exception as exc:  # a broken watch must not hide the verdict
                send("kernels", report=None, error=repr(exc)[:MAX_MESSAGE])
        send("end", exitstatus=int(exitstatus))

    hooks = (pytest_configure, pytest_collectreport, pytest_collection_finish,
             pytest_runtest_logreport, pytest_sessionfinish)  # fmt: skip
    return {f.__name__: f for f in hooks}


_CHANNEL = _open_channel(os.environ)
if _CHANNEL is not None:
    _CHANNEL.send("hello", pid=os.getpid(), python=sys.version.split()[0])
    # pytest registers this module right after importing it, before any conftest
    globals().update(_hooks(_CHANNEL.send, Integrity().changes))
