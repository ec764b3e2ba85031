"""The bubblewrap sandbox on this machine: what a sandboxed process sees, may write and may do;
the environment allowlist; the workload entry point (`run_script`); a missing bwrap."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from eval.backends import LocalBackend, RunSettings
from eval.sandbox import (
    EVAL_DIR,
    FORCED_ENV,
    GIB,
    PROJECT_ROOT,
    Mounts,
    SandboxPolicy,
    SandboxUnavailable,
    python_paths,
    read_back,
    run_environment,
    run_script,
    spawn,
    tools,
)

PROBE = r"""
import json, os, socket, subprocess, sys
out = {"uid": os.getuid(), "cwd": os.getcwd(), "root": sorted(os.listdir("/"))}
status = open("/proc/self/status").read()
out["caps"] = status.split("CapEff:")[1].split()[0]
out["nnp"] = status.split("NoNewPrivs:")[1].split()[0]
out["limits"] = open("/proc/self/limits").read()
out["visible"] = {p: os.path.exists(p) for p in sys.argv[1:]}
out["listed"] = {p: sorted(os.listdir(p)) for p in sys.argv[1:] if os.path.isdir(p)}
def can_write(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return True
    except OSError:
        return False
out["write"] = {p: can_write(p) for p in ("here.txt", "/tmp/x", "/usr/x", "/etc/x",
                                           "frozen.txt", "/dev/shm/x")}
out["nested_userns"] = subprocess.run(["unshare", "-U", "true"]).returncode
out["hostname"] = socket.gethostname()
out["interfaces"] = sorted(line.split(":")[0].strip()
                           for line in open("/proc/net/dev").read().splitlines()[2:])
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["env"] = dict(os.environ)
with open("probe.json", "w") as fh:
    json.dump(out, fh)
"""


@pytest.fixture
def probe(tmp_path: Path) -> dict:
    """What the probe script saw from inside the sandbox: its work tree holds a frozen file,
    and next to the tree lies another run's (which must not be visible)."""
    work, other = tmp_path / "work", tmp_path / "other-run"
    work.mkdir()
    other.mkdir()
    (work / "frozen.txt").write_text("as prepared")
    (work / "probe.py").write_text(PROBE)
    looked_for = [str(Path.home()), str(other), "/root", "/home", "/run", "/work",
                  str(PROJECT_ROOT / "tests"),
                  str(PROJECT_ROOT / "eval" / "sandbox.py")]  # fmt: skip
    mounts = Mounts(work, frozen=(work / "frozen.txt",))
    env = run_environment({**os.environ, "GITHUB_TOKEN": "t"})
    proc = spawn([sys.executable, "probe.py", *looked_for], mounts, SandboxPolicy(), env,
                 timeout_s=120)  # fmt: skip
    assert proc.wait(timeout=120) == 0
    data = read_back(work / "probe.json")
    assert data is not None
    return json.loads(data)


def test_what_a_sandboxed_process_sees_and_may_do(probe: dict, tmp_path: Path) -> None:
    assert probe["uid"] == 1000 and probe["caps"] == "0000000000000000" and probe["nnp"] == "1"
    assert probe["cwd"] == str(tmp_path / "work")
    visible = probe["visible"]
    assert visible[str(PROJECT_ROOT / "eval" / "sandbox.py")]  # the harness's plugins
    assert not visible[str(PROJECT_ROOT / "tests")]  # nothing else of the project
    assert not any(visible[p] for p in ("/home", "/run", str(tmp_path / "other-run")))
    # a home or project directory is there only as the way to a path the run needs
    needed = [str(p) for p in (*python_paths(), EVAL_DIR)]
    for d in ("/root", "/work", str(Path.home())):
        for entry in probe["listed"].get(d, []):
            assert any(n.startswith(f"{d}/{entry}") for n in needed), f"{d}/{entry}"
    assert probe["write"] == {"here.txt": True, "/tmp/x": True, "/usr/x": False,
                              "/etc/x": False, "frozen.txt": False, "/dev/shm/x": True}  # fmt: skip
    assert (tmp_path / "work" / "frozen.txt").read_text() == "as prepared"
    assert probe["nested_userns"] != 0
    assert probe["hostname"] == "sandbox" and probe["interfaces"] == ["lo"]
    assert max(probe["pids"]) < 50  # its own PID namespace


def test_limits_inside(probe: dict) -> None:
    limits = {line[:26].strip(): line[26:].split() for line in probe["limits"].splitlines()[1:]}
    policy = SandboxPolicy()
    assert limits["Max processes"][:2] == [str(policy.processes)] * 2
    assert limits["Max data size"][:2] == [str(policy.memory_bytes)] * 2
    assert limits["Max file size"][:2] == [str(policy.file_bytes)] * 2
    assert limits["Max core file size"][:2] == ["0", "0"]
    assert limits["Max cpu time"][0] != "unlimited"


def test_environment_inside_is_the_allowlist(probe: dict) -> None:
    env = probe["env"]
    for name, value in FORCED_ENV.items():
        assert env[name] == value
    assert env["HOME"] == "/tmp" and "GITHUB_TOKEN" not in env


def test_run_environment_keeps_what_runs_need_and_no_secret() -> None:
    source = {
        "PATH": "/usr/bin", "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": "/c",
        "CUDA_VISIBLE_DEVICES": "0", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "NCCL_NVLS_ENABLE": "1", "GITHUB_TOKEN": "t", "HF_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s",
        "OPENAI_API_KEY": "k", "TRITON_UPLOAD_TOKEN": "t", "SSH_AUTH_SOCK": "/run/ssh",
        "HOME": "/root", "PYTHONPATH": "/root/project", "DOCKER_HOST": "unix:///x",
    }  # fmt: skip
    env = run_environment(source, {"TPB_KERNELS": "add_kernel"})
    assert env == {
        "PATH": "/usr/bin", "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": "/c",
        "CUDA_VISIBLE_DEVICES": "0", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
        "TPB_KERNELS": "add_kernel", **FORCED_ENV,
    }  # fmt: skip
    assert env["NCCL_NVLS_ENABLE"] == "0"  # multicast stays off whatever the host says


def test_run_script_reads_back_only_a_regular_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text("import os\nos.symlink('/etc/hostname', 'out.bin')\n")
    run = run_script(script, work, "out.bin", timeout_s=60)
    assert run.exit_code == 0 and run.output is None  # a link to a host file is not followed
    script.write_text("open('out.bin', 'wb').write(b'\\x00result')\n")
    assert run_script(script, work, "out.bin", timeout_s=60).output == b"\x00result"


def test_a_crashed_script_says_where_it_crashed(tmp_path: Path) -> None:
    # #479's FLOP count died of a segmentation fault in Triton's interpreter and its error
    # named only the log's last line, faulthandler's list of extension modules
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text("import ctypes\n\ndef load(n):\n    ctypes.memset(1, 0, n)\n\nload(8)\n")
    run = run_script(script, work, "out.bin", timeout_s=60, sandboxed=False)
    assert run.exit_code not in (0, None) and run.output is None
    words = run.last_words()
    assert words.startswith("Fatal Python error: Segmentation fault")
    assert "line 4, load" in words and "s.py" in words
    script.write_text("raise SystemExit('bad input: x.json:3')\n")
    assert run_script(script, work, "out.bin", timeout_s=60, sandboxed=False).last_words() == (
        "bad input: x.json:3"
    )


def test_run_script_is_killed_at_the_timeout(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text("import time\nopen('out.bin', 'w').write('early')\ntime.sleep(600)\n")
    run = run_script(script, work, "out.bin", timeout_s=3)
    assert run.timed_out and run.exit_code is None and run.wall_s < 30
    assert run.output == b"early"


def test_a_memory_limit_stops_an_allocation(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text(
        "try:\n    b = bytearray(3 << 30)\n    r = b'allocated'\n"
        "except MemoryError:\n    r = b'refused'\nopen('out.bin', 'wb').write(r)\n"
    )
    policy = replace(SandboxPolicy(), memory_bytes=1 * GIB)
    assert run_script(script, work, "out.bin", timeout_s=60, policy=policy).output == b"refused"


def test_a_bwrap_outside_the_system_directories_runs(tmp_path: Path, monkeypatch) -> None:
    """The H200 regression: bubblewrap unpacked from its .deb under /tmp (nothing can be
    installed there) was hidden by the sandbox's own /tmp, so stage 2 could not start and every
    sandboxed run crashed in 0.1 s ("setpriv: failed to execute .../bwrap")."""
    unpacked = tmp_path / "bw" / "usr" / "bin"
    unpacked.mkdir(parents=True)
    bwrap = shutil.which("bwrap")
    assert bwrap
    shutil.copy2(bwrap, unpacked / "bwrap")
    monkeypatch.setenv("PATH", f"{unpacked}:{os.environ['PATH']}")
    assert tools().bwrap == str(unpacked / "bwrap")
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text("open('out.bin', 'w').write('ran')\n")
    run = run_script(script, work, "out.bin", timeout_s=60)
    assert (run.exit_code, run.output) == (0, b"ran"), run.log


def test_the_harness_site_directories_are_visible_and_the_checkout_is_not(
    tmp_path: Path, monkeypatch
) -> None:
    """The H200 regression: wheels unpacked into /tmp/site (the harness's PYTHONPATH) were
    hidden by the sandbox's private /tmp, so Liger-Kernel #778's tests found no `datasets`."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tpbsitemod.py").write_text("VALUE = 'from the site'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(PROJECT_ROOT)]))
    work = tmp_path / "work"
    work.mkdir()
    script = work / "s.py"
    script.write_text(
        "import os, tpbsitemod\n"
        f"seen = os.path.exists({str(PROJECT_ROOT / 'tests')!r})\n"
        "open('out.bin', 'w').write(f'{tpbsitemod.VALUE} {seen}')\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(work), str(site)])}
    run = run_script(script, work, "out.bin", timeout_s=60, extra_env=env)
    assert run.output == b"from the site False", run.log


def test_a_missing_bwrap_is_one_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    with pytest.raises(SandboxUnavailable) as err:
        tools()
    message = str(err.value)
    assert "\n" not in message and "bwrap" in message and "bubblewrap" in message
    assert "--no-sandbox" in message
    with pytest.raises(SandboxUnavailable):
        LocalBackend({}, tmp_path / "scratch", RunSettings())
    LocalBackend({}, tmp_path / "scratch", RunSettings(sandbox=None))  # trusted runs only


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_an_unprivileged_harness_builds_the_same_sandbox() -> None:
    """A harness that is not root runs one unprivileged bwrap: same view, same limits."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 for the unprivileged harness")
    work = Path(tempfile.mkdtemp(prefix="tpb-unprivileged-"))
    os.chown(work, 65534, 65534)
    harness = f"""
import sys
sys.path.insert(0, {str(PROJECT_ROOT)!r})
from pathlib import Path
from eval import sandbox
mounts = sandbox.Mounts(Path({str(work)!r}))
env = sandbox.run_environment({{"PATH": "/usr/bin:/bin"}})
cmd = "id -u > out; grep -E 'CapEff|NoNewPrivs' /proc/self/status >> out; ls / >> out; "
cmd += "grep 'Max processes' /proc/self/limits >> out; touch /usr/x 2>> out || true"
proc = sandbox.spawn(["/bin/sh", "-c", cmd], mounts, sandbox.SandboxPolicy(), env, timeout_s=30)
sys.exit(proc.wait())
"""
    try:
        done = subprocess.run([python, "-c", harness], user=65534, group=65534, extra_groups=[],
                              capture_output=True, text=True, timeout=60, cwd="/")  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = (work / "out").read_text()
    finally:
        shutil.rmtree(work)
    lines = out.splitlines()
    assert lines[0] == "1000" and "CapEff:\t0000000000000000" in lines and "NoNewPrivs:\t1" in lines
    assert "usr" in lines and "home" not in lines and "root" not in lines
    assert re.search(rf"Max processes\s+{SandboxPolicy().processes}\s", out)
    assert "Read-only file system" in out


@pytest.fixture(scope="module")
def tiny_task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    pytest.importorskip("triton")

    from tests.tinyfw import make_task_env

    root = tmp_path_factory.mktemp("tiny")
    _, work, tasks = make_task_env(root)
    return root, work, tasks


def test_the_cli_without_bwrap_is_one_error_line(tiny_task, monkeypatch, capsys) -> None:
    from eval.__main__ import main as eval_main

    root, work, tasks = tiny_task
    bin_dir = root / "bin"  # a machine with git but without bubblewrap
    bin_dir.mkdir(exist_ok=True)
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").unlink(missing_ok=True)
    (bin_dir / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(bin_dir))
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--out", str(root / "r")]
    assert eval_main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: cannot sandbox test runs: bwrap")


def test_a_reference_without_sandbox_is_recorded_as_such(tiny_task, tmp_path: Path) -> None:
    from eval.__main__ import main as eval_main

    _root, work, tasks = tiny_task
    copy = tmp_path / "tasks"
    shutil.copytree(tasks, copy)
    argv = ["reference", "--tasks", str(copy), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--no-sandbox",
            "--triton-cache", str(tmp_path / "cache"), "--env", "TPB_SEEN=1"]  # fmt: skip
    assert eval_main(argv) == 0
    [ref_path] = copy.rglob("reference.json")
    ref = json.loads(ref_path.read_text())
    assert ref["valid"] and {r["sandbox"] for r in ref["runs"]} == {"none"}


def test_an_interrupt_kills_every_run_before_waiting_for_any(monkeypatch) -> None:
    """H200, call 20: twelve flash-linear-attention runs were killed and waited for one by one
    on a time limit's INT; a GPU process takes seconds to go (its CUDA context torn down), and
    the command was still waiting when the KILL came 20 s later. Every group is now killed
    first, then each is waited for."""
    import subprocess
    import sys

    from eval import sandbox

    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              start_new_session=True) for _ in range(3)]  # fmt: skip
    events: list[tuple[str, int]] = []
    real_killpg = sandbox.os.killpg

    def killpg(pid: int, sig: int) -> None:
        events.append(("kill", pid))
        real_killpg(pid, sig)

    monkeypatch.setattr(sandbox.os, "killpg", killpg)
    for p in procs:
        real_wait = p.wait

        def wait(timeout=None, _p=p, _w=real_wait):  # type: ignore[no-untyped-def]
            events.append(("wait", _p.pid))
            return _w(timeout)

        monkeypatch.setattr(p, "wait", wait)
    monkeypatch.setattr(sandbox, "_LIVE", set(procs))
    try:
        assert sandbox.interrupt_runs() == 3
    finally:
        sandbox.accept_runs()
        for p in procs:
            if p.poll() is None:
                p.kill()
    first_wait = next(i for i, (k, _) in enumerate(events) if k == "wait")
    assert {pid for k, pid in events[:first_wait] if k == "kill"} == {p.pid for p in procs}
    assert all(p.returncode is not None for p in procs)
