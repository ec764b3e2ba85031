"""The review page under hostile local clients: a per-run token for every state-changing request,
and bounded connections (real sockets, a real server process for the flood)."""

from __future__ import annotations

import http.client
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from curation.review import TOKEN_HEADER, ReviewServer, make_server
from tests.test_review import make_task, write_task

REPO = Path(__file__).resolve().parents[1]
DECISION = "/api/task/vllm-1001/decision"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ReviewServer]:
    root = tmp_path / "tasks"
    write_task(root, make_task("vllm-1001"))
    srv = make_server(root)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(5)


def request(
    srv: ReviewServer, method: str, path: str, body: dict | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        headers.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


def test_review_post_without_token_is_refused(server: ReviewServer) -> None:
    approve = {"status": "approved"}
    status, _, body = request(server, "POST", DECISION, approve)
    assert status == 403 and "token" in json.loads(body)["error"]
    assert request(server, "POST", DECISION, approve, **{TOKEN_HEADER: "guess"})[0] == 403
    # refused before anything else is looked at: no endpoint, no task, no body
    assert request(server, "POST", "/api/nothing", approve)[0] == 403
    assert not (server.tasks_root / "vllm-1001" / "curation.json").exists()
    status, _, body = request(server, "POST", DECISION, approve, **{TOKEN_HEADER: server.token})
    assert status == 200 and json.loads(body)["status"] == "approved"


def test_review_token_url_sets_a_cookie_that_authorises_posts(server: ReviewServer) -> None:
    status, headers, _ = request(server, "GET", "/task/vllm-1001?token=wrong")
    assert status == 403 and "set-cookie" not in headers
    status, headers, _ = request(server, "GET", "/task/vllm-1001?token=" + server.token)
    assert status == 303 and headers["location"] == "/task/vllm-1001"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert server.login_url.endswith("/?token=" + server.token)
    jar = cookie.split(";")[0]
    status, _, _ = request(server, "POST", DECISION, {"status": "approved"}, Cookie=jar)
    assert status == 200
    other = f"review-token-{server.server_port + 1}={server.token}"  # another port's cookie
    assert request(server, "POST", DECISION, {"status": "pending"}, Cookie=other)[0] == 403
    # the pages themselves are readable without the token
    assert request(server, "GET", "/task/vllm-1001")[0] == 200


def test_review_closes_connections_that_send_no_request_head_in_time(
    server: ReviewServer,
) -> None:
    server.head_timeout = 1.0
    threads = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", server.server_port)) for _ in range(50)]
    trickle = socket.create_connection(("127.0.0.1", server.server_port))
    started = time.monotonic()
    cut = None
    try:
        for ch in b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " * 10:  # never ends its head
            trickle.sendall(bytes([ch]))
            time.sleep(0.05)
    except OSError:  # reset or broken pipe: the server closed it
        cut = time.monotonic() - started
    assert cut is not None and cut < 3, "a trickling client kept its connection"
    # no thread per connection: only the fixed worker pool can have grown
    assert threading.active_count() <= threads + server.workers
    for s in idle:
        s.settimeout(5)
        assert s.recv(1) == b""  # closed by the server
        s.close()
    trickle.close()
    assert time.monotonic() - started < 5
    assert server.waiting == 0
    assert request(server, "GET", "/")[0] == 200


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < need:
        message = f"needs {need} open files; the hard limit is {hard}"
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(message)
        pytest.skip(message)


def test_review_answers_within_seconds_while_1000_connections_stay_idle(tmp_path: Path) -> None:
    _raise_fd_limit(1500)
    root = tmp_path / "tasks"
    write_task(root, make_task("vllm-1001"))
    cmd = [sys.executable, "-m", "curation.review", "--tasks", str(root), "--port", "0"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    idle: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].strip()
        base, _, token = url.partition("?token=")
        port = int(base.rsplit(":", 1)[1].strip("/"))
        started = time.monotonic()
        for i in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 2:
                s.sendall(b"POST /api/task/vllm-1001/decision HTTP/1.1\r\n")  # never finished
            idle.append(s)
        opened = time.monotonic() - started
        started = time.monotonic()
        with urllib.request.urlopen(base + "task/vllm-1001", timeout=10) as r:
            assert r.status == 200 and "add_kernel" in r.read().decode()
        answered = time.monotonic() - started
        req = urllib.request.Request(
            base + DECISION.lstrip("/"),
            data=json.dumps({"status": "approved"}).encode(),
            headers={"Content-Type": "application/json", TOKEN_HEADER: token},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read())["status"] == "approved"
        assert opened < 30, f"opening 1000 connections took {opened:.1f}s"
        assert answered < 3, f"a normal request took {answered:.1f}s"
        # the server holds a bounded number of them: the oldest were closed to make room
        poller = select.poll()
        for s in idle:
            poller.register(s, select.POLLIN)
        by_fd = {s.fileno(): s for s in idle}
        closed = sum(1 for fd, _ in poller.poll(2000) if by_fd[fd].recv(1) == b"")
        assert closed >= 1000 - 256
    finally:
        for s in idle:
            s.close()
        proc.terminate()
        proc.wait(10)
