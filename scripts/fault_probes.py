"""Bad-input and fault probes: real commands on broken input, each checked for its exit code,
a one-line error and no data lost.

    python scripts/fault_probes.py [--write docs/reliability.md] [--keep DIR] [--only NAME]

Builds its own tiny repositories in a temporary directory (a framework with a CRLF kernel
file and a bug-fix PR, a second repository, and one with 60 commits of many kernels that takes
long enough to crawl to be killed or raced), crawls and curates them with the real commands,
then runs each probe: a command on bad input (or a crash) and the checks of what it must do.
Prints one table row per probe (probe, expected, observed, data lost, verdict); `--write`
replaces the table between the `probes` markers of the given Markdown file. Exits 1 when a
probe fails. The CRLF and eval-score probes run real Triton kernels on the CPU
(TRITON_INTERPRET=1) and need torch and triton; without them they are reported as skipped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_lab import ENV, FIXED, Lab, Outcome, Probe, ids_of, lost, one_line, snapshot

# -- the probes -------------------------------------------------------------------------------


def two_crawls_one_out(lab: Lab) -> Outcome:
    out = lab.root / "race"
    cmd = [sys.executable, "-m", "mining.crawl", str(lab.big()), "--out", str(out), "--quiet",
           "--no-github"]  # fmt: skip
    first = subprocess.Popen(cmd, cwd=lab.root, env=ENV, stderr=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL)  # fmt: skip
    lock = out / "big" / ".lock"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (lock.exists() and lock.stat().st_size):
        time.sleep(0.01)
    second = lab.cmd("mining.crawl", *cmd[3:])
    first.wait(300)
    observed, ok = one_line(second, lab, needle="is in use by pid")
    ids_ok = first.returncode == 0 and ids_of(out / "big" / "candidates.jsonl") == lab.big_ids()
    return Outcome(observed + f"; first crawl exit {first.returncode}",
                   "none" if ids_ok else "records differ from an uninterrupted crawl",
                   ok and ids_ok)  # fmt: skip


def sigkill_mid_crawl(lab: Lab) -> Outcome:
    out = lab.root / "killed"
    cmd = [sys.executable, "-m", "mining.crawl", str(lab.big()), "--out", str(out), "--quiet",
           "--no-github", "--jobs", "2", "--checkpoint-every", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=lab.root, env=ENV, stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    state = out / "big" / "state.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if json.loads(state.read_text()).get("last_commit"):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.01)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cands = out / "big" / "candidates.jsonl"
    at_kill = len(cands.read_bytes().splitlines()) if cands.exists() else 0
    deadline = time.monotonic() + 10
    while (orphans := _alive_in_group(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    rerun = lab.cmd("mining.crawl", *cmd[3:])
    same = rerun.rc == 0 and ids_of(out / "big" / "candidates.jsonl") == lab.big_ids()
    observed = (f"killed with {'SIGKILL' if proc.returncode == -9 else proc.returncode} "
                f"after {at_kill} of {len(lab.big_ids())} records, {len(orphans)} workers left; "
                f"rerun exit {rerun.rc}")  # fmt: skip
    mid = 0 < at_kill < len(lab.big_ids())
    return Outcome(observed, "none" if same else "records lost or doubled",
                   proc.returncode == -9 and mid and not orphans and same)  # fmt: skip


def _alive_in_group(pgid: int) -> list[int]:
    """Processes of a process group that still run (zombies waiting to be reaped do not)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                alive.append(int(entry.name))
    return alive


def corrupt_state(lab: Lab) -> Outcome:
    work = lab.copy(lab.work, "corrupt-state")
    state = work / "fw" / "state.json"
    state.write_text("[]")
    before = snapshot(work)
    run = lab.cmd("mining.crawl", str(lab.fw.path), "--out", str(work), "--quiet", "--no-github")
    observed, ok = one_line(run, lab, needle="state.json")
    return Outcome(observed, lost(before, snapshot(work)), ok and snapshot(work) == before)


def candidates_line(lab: Lab, name: str, damage: Callable[[bytes], bytes], needle: str) -> Outcome:
    work = lab.copy(lab.work, name)
    cands = work / "fw" / "candidates.jsonl"
    cands.write_bytes(damage(cands.read_bytes()))
    before = snapshot(work)
    run = lab.cmd("mining.crawl", str(lab.fw.path), "--out", str(work), "--quiet", "--no-github")
    observed, ok = one_line(run, lab, needle=needle)
    return Outcome(observed, lost(before, snapshot(work)), ok and snapshot(work) == before)


def non_json_line(lab: Lab) -> Outcome:
    return candidates_line(lab, "non-json", lambda b: b + b"{not json\n", ":3: not valid JSON")


def duplicated_line(lab: Lab) -> Outcome:
    return candidates_line(
        lab,
        "duplicated",
        lambda b: b + b.splitlines(keepends=True)[-1],
        ":3: duplicate id '#7' (first on line 2)",
    )


def another_repository(lab: Lab) -> Outcome:
    tasks = lab.root / "tasks-other"
    run = lab.cmd("curation.curate", "--work", str(lab.work), "--out", str(tasks), "--quiet",
                  "--repo-path", f"fw={lab.other.path}")  # fmt: skip
    observed, ok = one_line(run, lab, needle="is not the repository crawled into")
    written = [p.name for p in tasks.iterdir() if p.name != ".lock"] if tasks.exists() else []
    return Outcome(observed, "none" if not written else f"wrote {written}", ok and not written)


def only_new_corrupt_task(lab: Lab) -> Outcome:
    tasks = lab.copy(lab.tasks, "tasks-corrupt")
    (tasks / lab.task / "task.json").write_text('{"task_id": ')
    before = snapshot(tasks)
    run = lab.cmd("curation.curate", "--work", str(lab.work), "--out", str(tasks), "--quiet",
                  "--only-new")  # fmt: skip
    observed, ok = one_line(run, lab, needle="task.json:1: not valid JSON")
    return Outcome(observed, lost(before, snapshot(tasks)), ok and snapshot(tasks) == before)


def _needs_kernels() -> str | None:
    probe = subprocess.run([sys.executable, "-c", "import torch, triton"], capture_output=True)
    return None if probe.returncode == 0 else "skipped: torch and triton are not installed"


def crlf_patch(lab: Lab) -> Outcome:
    gold = (lab.tasks / lab.task / "gold.patch").read_bytes()
    keeps = b"x + y, mask=mask)\r\n" in gold
    if (why := _needs_kernels()) is not None:
        return Outcome(why, "-", keeps)
    tasks = lab.copy(lab.tasks, "tasks-crlf")
    run = lab.cmd(
        "eval",
        "reference",
        "--tasks",
        str(tasks),
        "--work",
        str(lab.work),
        "--runs",
        "1",
        "--no-isolated-timing",
        "--out",
        str(lab.root / "ref"),
    )
    ref = tasks / lab.task / "reference.json"
    data = json.loads(ref.read_text()) if ref.exists() else {}
    gold_ok = data.get("gold", {}).get("passed_runs") == 1
    observed = (
        f"gold.patch keeps CRLF: {keeps}; `eval reference` exit {run.rc}, gold passed "
        f"{data.get('gold', {}).get('passed_runs', 0)}/1, valid={data.get('valid')}"
    )
    return Outcome(observed, "none", keeps and run.rc == 0 and gold_ok and bool(data["valid"]))


def score_with_a_broken_task(lab: Lab) -> Outcome:
    if (why := _needs_kernels()) is not None:
        return Outcome(why, "-", True)
    tasks = lab.copy(lab.tasks, "tasks-score")
    ghost = tasks / "fw__8__ghost_kernel"
    shutil.copytree(tasks / lab.task, ghost)
    data = json.loads((ghost / "task.json").read_text())
    data.update(task_id=ghost.name, framework="ghost")
    (ghost / "task.json").write_text(json.dumps(data))
    preds = lab.root / "preds-fixed.jsonl"
    preds.write_text("".join(json.dumps({"task_id": t, "kernels": {"add_kernel": FIXED.replace(
        "\r", "").split("\n\n\n")[1]}}) + "\n" for t in (lab.task, ghost.name)))  # fmt: skip
    out = lab.root / "score-run"
    run = lab.cmd("eval", "score", str(preds), "--tasks", str(tasks), "--work", str(lab.work),
                  "--out", str(out), "--no-isolated-timing")  # fmt: skip
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    rows = {r["task_id"]: r for r in report.get("tasks", [])}
    ok = run.rc == 0 and rows.get(lab.task, {}).get("passed") is True
    ok = ok and rows.get(ghost.name, {}).get("failure") == "infra"
    observed = (
        f"exit {run.rc}; {lab.task} passed={rows.get(lab.task, {}).get('passed')}; "
        f"ghost task failure={rows.get(ghost.name, {}).get('failure')}"
    )
    return Outcome(observed, "none", ok)


def build_nonexistent_tasks(lab: Lab) -> Outcome:
    dist = lab.root / "dist-none"
    run = lab.cmd("benchmark", "build", "--tasks", str(lab.root / "nope"), "--out", str(dist),
                  "--version", "1.0.0", "--cutoff", "2023-11-15")  # fmt: skip
    observed, ok = one_line(run, lab, needle="does not exist")
    return Outcome(observed, "none (no version recorded)" if not dist.exists() else "dist written",
                   ok and not dist.exists())  # fmt: skip


def _released(lab: Lab, name: str) -> Path:
    dist = lab.root / name
    lab.check(lab.cmd("benchmark", "build", "--tasks", str(lab.tasks), "--out", str(dist),
                      "--version", "1.0.0", "--cutoff", "2023-11-15"), "build")  # fmt: skip
    return dist


def build_without_new_tasks(lab: Lab) -> Outcome:
    dist = _released(lab, "dist-again")
    before = snapshot(dist)
    run = lab.cmd("benchmark", "build", "--tasks", str(lab.tasks), "--out", str(dist),
                  "--version", "1.1.0")  # fmt: skip
    observed, ok = one_line(run, lab, needle="would add no task")
    return Outcome(observed, lost(before, snapshot(dist)), ok and snapshot(dist) == before)


def truncated_manifest(lab: Lab) -> Outcome:
    dist = _released(lab, "dist-truncated")
    manifest = dist / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:80])
    before = snapshot(dist)
    run = lab.cmd("benchmark", "build", "--tasks", str(lab.tasks), "--out", str(dist),
                  "--version", "1.1.0")  # fmt: skip
    observed, ok = one_line(run, lab, needle="manifest.json:")
    return Outcome(observed, lost(before, snapshot(dist)), ok and snapshot(dist) == before)


def malformed_predictions(lab: Lab) -> Outcome:
    preds = lab.root / "preds.jsonl"
    preds.write_text(json.dumps({"task_id": lab.task, "kernels": {}}) + "\nnot json\n")
    out = lab.root / "score-bad"
    run = lab.cmd("eval", "score", str(preds), "--tasks", str(lab.tasks), "--work",
                  str(lab.work), "--out", str(out))  # fmt: skip
    observed, ok = one_line(run, lab, needle="preds.jsonl:2: not valid JSON")
    return Outcome(observed, "none" if not out.exists() else "run dir written",
                   ok and not out.exists())  # fmt: skip


def _serve(lab: Lab, name: str) -> tuple[subprocess.Popen[str], int, str, Path]:
    tasks = lab.copy(lab.tasks, name)
    proc = subprocess.Popen([sys.executable, "-m", "curation.review", "--tasks", str(tasks),
                             "--port", "0"], cwd=lab.root, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    url = proc.stdout.readline().split(" at ")[1].strip()
    port = int(re.findall(r":(\d+)/", url)[0])
    return proc, port, url.partition("?token=")[2], tasks


def _post(port: str | int, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
    body = json.dumps({"status": "approved"})
    conn.request("POST", "/api/task/fw__7__add_kernel/decision", body=body,
                 headers={"Content-Type": "application/json", **headers})  # fmt: skip
    status = conn.getresponse().status
    conn.close()
    return status


def review_post_without_token(lab: Lab) -> Outcome:
    proc, port, token, tasks = _serve(lab, "tasks-review")
    try:
        before = snapshot(tasks)
        without = _post(port, {})
        after = snapshot(tasks)
        with_token = _post(port, {"X-Review-Token": token})
    finally:
        proc.terminate()
        proc.wait(10)
    observed = f"HTTP {without} without the token (HTTP {with_token} with it)"
    return Outcome(observed, lost(before, after), without == 403 and after == before
                   and with_token == 200)  # fmt: skip


def idle_connections(lab: Lab) -> Outcome:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1500 and (hard == resource.RLIM_INFINITY or hard >= 1500):
        resource.setrlimit(resource.RLIMIT_NOFILE, (1500, hard))
    proc, port, _, _ = _serve(lab, "tasks-flood")
    idle = []
    try:
        started = time.monotonic()
        for _ in range(1000):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        opened = time.monotonic() - started
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/")
        status = conn.getresponse().status
        answered = time.monotonic() - started
        poller = select.poll()
        for s in idle:
            poller.register(s, select.POLLIN)
        by_fd = {s.fileno(): s for s in idle}
        closed = sum(1 for fd, _ in poller.poll(2000) if not by_fd[fd].recv(1))
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        proc.wait(10)
    observed = (
        f"1000 connections opened in {opened:.2f} s (the server closed the {closed} oldest to "
        f"stay within its cap); then `GET /` answered HTTP {status} in {answered:.2f} s"
    )
    return Outcome(observed, "none", status == 200 and answered < 3 and opened < 30)


PROBES = (
    Probe("two crawls into one `--out`", "the second exits 1 naming the holder; the first "
          "finishes with every record once", two_crawls_one_out),
    Probe("SIGKILL mid-crawl, then rerun", "no worker outlives the crawl; the rerun ends with "
          "the records of an uninterrupted crawl, none doubled", sigkill_mid_crawl),
    Probe("`state.json` holding `[]`", "exit 1, one line; state left as it is", corrupt_state),
    Probe("non-JSON line in `candidates.jsonl`", "exit 1, one line with file:line; nothing "
          "adopted or cut", non_json_line),
    Probe("duplicated line in `candidates.jsonl`", "exit 1, one line naming both lines",
          duplicated_line),
    Probe("curation of another repository's candidates", "exit 1, one line; no task, reject or "
          "summary written", another_repository),
    Probe("`curate --only-new` on a corrupt task directory", "exit 1, one line; tasks left as "
          "they are", only_new_corrupt_task),
    Probe("CRLF kernel file", "gold.patch keeps `\\r`; the gold applies and passes "
          "(`eval reference`)", crlf_patch),
    Probe("`eval score` with a task of no repository", "that task is an `infra` failure; the "
          "others are scored; exit 0", score_with_a_broken_task),
    Probe("`benchmark build --tasks <nonexistent>`", "exit 1, one line; no version recorded",
          build_nonexistent_tasks),
    Probe("`benchmark build` with no new task", "exit 1, one line (`--allow-empty` records it); "
          "dataset unchanged", build_without_new_tasks),
    Probe("truncated `manifest.json`", "exit 1, one line with file:line; dataset unchanged",
          truncated_manifest),
    Probe("malformed `predictions.jsonl`", "exit 1, one line with file:line; nothing run",
          malformed_predictions),
    Probe("review page: POST without the token", "403; no file changed",
          review_post_without_token),
    Probe("review page: 1000 idle connections", "a normal request still answers within 3 s",
          idle_connections),
)  # fmt: skip


def table(rows: list[tuple[Probe, Outcome]]) -> str:
    out = ["| probe | expected | observed | data lost | verdict |", "|---|---|---|---|---|"]
    for probe, o in rows:
        cells = (probe.name, probe.expected, o.observed, o.lost, "pass" if o.ok else "FAIL")
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def write_into(doc: Path, text: str) -> None:
    begin, end = "<!-- probes -->\n", "<!-- /probes -->"
    old = doc.read_text()
    if begin not in old or end not in old:
        raise SystemExit(f"error: {doc} has no `<!-- probes -->` ... `<!-- /probes -->` markers")
    head, rest = old.split(begin, 1)
    doc.write_text(head + begin + text + end + rest.split(end, 1)[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--write", type=Path, help="put the table into this Markdown file")
    p.add_argument("--keep", type=Path, help="work in this (new) directory and keep it")
    p.add_argument("--only", action="append", default=[], help="probes whose name has this")
    args = p.parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="fault-probes-"))
    try:
        lab = Lab(root)
        rows = []
        for probe in PROBES:
            if args.only and not any(o in probe.name for o in args.only):
                continue
            started = time.monotonic()
            try:
                outcome = probe.run(lab)
            except Exception as exc:  # a probe that breaks is a failed probe, not a crash
                outcome = Outcome(f"probe failed: {type(exc).__name__}: {exc}", "?", False)
            rows.append((probe, outcome))
            verdict = "pass" if outcome.ok else "FAIL"
            print(f"{verdict} {probe.name} ({time.monotonic() - started:.1f} s)", file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    text = table(rows)
    if args.write:
        write_into(args.write, text)
    print(text)
    return 0 if all(o.ok for _, o in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
