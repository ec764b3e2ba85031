"""The curator's review page: its JSON API over HTTP, and the page in a real headless Chromium."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from curation.model import (
    ContextItem,
    DedupInfo,
    Difficulty,
    FileContext,
    FileStat,
    TargetKernel,
    Task,
    TaskType,
    TypeDecision,
)
from curation.model import TestSelection as Selection  # not `Test*`: pytest would collect it
from curation.review import MAX_BODY, TOKEN_HEADER, main, make_server
from curation.taskdir import TaskDir

OLD_KERNEL = """\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""

NEW_KERNEL = """\
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + alpha * y, mask=mask)
"""

HELPER_NEW = """\
@triton.jit
def _scale(x, s):
    return x * s if s > 0 else x
"""


def make_task(task_id: str = "vllm-1001", **overrides: Any) -> Task:
    """A task with a modified kernel, an added helper, context and tests."""
    kernel = TargetKernel(
        file="ops/add.py",
        name="add_kernel",
        change="modified",
        kind="jit",
        role="kernel",
        old_file="ops/add.py",
        before_src=OLD_KERNEL,
        after_src=NEW_KERNEL,
        signature_before="add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK)",
        signature_after="add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK)",
        constexpr_params=("BLOCK",),
        autotune_configs_before=None,
        autotune_configs_after=None,
        wrappers=("add",),
        span_before=(10, 17),
        span_after=(10, 17),
    )
    helper = replace(
        kernel,
        name="_scale",
        change="added",
        role="helper",
        old_file=None,
        before_src=None,
        after_src=HELPER_NEW,
        wrappers=(),
        span_before=None,
        span_after=(20, 22),
    )
    wrapper = ContextItem(
        name="add",
        kind="function",
        signature="def add(x, y, alpha=1.0)",
        source="def add(x, y, alpha=1.0):\n    return launch(add_kernel, x, y, alpha)\n",
        why="launches add_kernel",
        start_line=25,
        end_line=26,
    )
    task = Task(
        task_id=task_id,
        framework="vllm",
        repo="vllm-project/vllm",
        pr_id="1001",
        pr_number=1001,
        pr_url="https://github.com/vllm-project/vllm/pull/1001",
        title="Add alpha scaling to add_kernel",
        body="Scales y by alpha.\n\n<script>alert('pwned')</script> & more",
        merged_at="2024-05-01T12:00:00Z",
        base_commit="a" * 40,
        merge_commit="b" * 40,
        base_tag="v0.4.2",
        task_type=TypeDecision(TaskType.FEATURE, ("new parameter alpha",)),
        difficulty=Difficulty(level=2, score=0.31, features={"kernel_lines": 8.0}),
        kernels=(kernel, helper),
        files_changed=(
            FileStat("ops/add.py", "modified", 6, 3, False),
            FileStat("tests/test_add.py", "modified", 12, 0, True),
        ),
        context={"ops/add.py": FileContext(functions=(wrapper,), imports=("import triton",))},
        tests=Selection(
            command="pytest -x tests/test_add.py",
            changed_in_pr=("tests/test_add.py",),
            selected_existing=("tests/test_ops.py",),
        ),
        requirement="Add an alpha parameter to add_kernel.",
        requirement_origin="template",
        labels=("performance", "kernel"),
    )
    return replace(task, **overrides)


def write_task(root: Path, task: Task) -> TaskDir:
    td = TaskDir(root / task.task_id)
    td.write_task(task)
    td.write_draft(task.requirement + "\n")
    return td


class Served:
    def __init__(self, root: Path, url: str, token: str):
        self.root = root
        self.url = url
        self.token = token

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(
        self, path: str, payload: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        hdrs = {"Content-Type": "application/json", TOKEN_HEADER: self.token, **(headers or {})}
        hdrs = {k: v for k, v in hdrs.items() if v is not None}
        req = urllib.request.Request(self.url + path, data=data, headers=hdrs, method="POST")
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "tasks"
    write_task(root, make_task("vllm-1001"))
    dedup = DedupInfo(cluster="vllm-1001", nearest="vllm-1001", similarity=0.9, method="minhash")
    write_task(root, make_task("vllm-1002", title="Second task", pr_number=1002, dedup=dedup))
    server = make_server(root, curator="alice")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(root, f"http://127.0.0.1:{server.server_port}", server.token)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def curation_json(root: Path, task_id: str) -> dict[str, Any]:
    return json.loads((root / task_id / "curation.json").read_text())


def task_json(root: Path, task_id: str) -> dict[str, Any]:
    return json.loads((root / task_id / "task.json").read_text())


# -- API and pages over HTTP --------------------------------------------------------------------


def test_index_lists_tasks_with_status_counts(served: Served) -> None:
    status, page = served.get("/")
    assert status == 200
    assert 'href="/task/vllm-1001"' in page and 'href="/task/vllm-1002"' in page
    assert "https://github.com/vllm-project/vllm/pull/1001" in page
    assert "feature" in page and "pending</span> 2" in page
    assert page.count('href="/task/vllm-1001"') == 2  # its own row, and 1002's dedup cluster


def test_index_survives_a_broken_task(served: Served) -> None:
    (served.root / "broken-1").mkdir()
    (served.root / "broken-1" / "task.json").write_text("{not json")
    status, page = served.get("/")
    assert status == 200 and "broken-1" in page and "unreadable" in page
    assert 'href="/task/vllm-1001"' in page


def test_task_page_shows_old_and_new_kernel_escaped(served: Served) -> None:
    status, page = served.get("/task/vllm-1001")
    assert status == 200
    for line in (*OLD_KERNEL.splitlines(), *NEW_KERNEL.splitlines(), *HELPER_NEW.splitlines()):
        assert html.escape(line) in page
    assert "offs &lt; n" in page and "offs < n" not in page
    assert 'class="sbs"' in page and "OLD (base)" in page and "NEW (gold)" in page
    assert 'id="requirement"' in page and "Add an alpha parameter to add_kernel." in page
    assert "launches add_kernel" in page and "pytest -x tests/test_add.py" in page
    assert 'href="/task/vllm-1002"' in page  # next task


def test_pr_body_script_is_escaped(served: Served) -> None:
    _, page = served.get("/task/vllm-1001")
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt; &amp; more" in page


def test_save_requirement_writes_files(served: Served) -> None:
    text = "Add an `alpha` scale to add_kernel: out = x + alpha * y.\n"
    status, reply = served.post("/api/task/vllm-1001/requirement", {"text": text})
    assert status == 200
    assert reply == {
        "ok": True,
        "status": "pending",
        "reason": None,
        "requirement_edited": True,
        "updated_at": reply["updated_at"],
    }
    assert (served.root / "vllm-1001" / "requirement.md").read_text() == text
    rec = curation_json(served.root, "vllm-1001")
    assert rec["requirement_edited"] is True and rec["curator"] == "alice"
    assert task_json(served.root, "vllm-1001")["requirement_origin"] == "curator"


def test_reject_needs_a_reason(served: Served) -> None:
    for reason in (None, "", "   "):
        status, reply = served.post(
            "/api/task/vllm-1001/decision", {"status": "rejected", "reason": reason}
        )
        assert status == 400 and reply["ok"] is False and "reason" in reply["error"]
    assert not (served.root / "vllm-1001" / "curation.json").exists()


def test_reject_with_reason_updates_curation_and_task(served: Served) -> None:
    status, reply = served.post(
        "/api/task/vllm-1001/decision", {"status": "rejected", "reason": "  flaky test  "}
    )
    assert status == 200 and reply["status"] == "rejected" and reply["reason"] == "flaky test"
    rec = curation_json(served.root, "vllm-1001")
    assert rec["status"] == "rejected" and rec["reason"] == "flaky test"
    assert task_json(served.root, "vllm-1001")["curation_status"] == "rejected"
    status, reply = served.post("/api/task/vllm-1001/decision", {"status": "approved"})
    assert status == 200 and reply["status"] == "approved" and reply["reason"] is None
    assert task_json(served.root, "vllm-1001")["curation_status"] == "approved"


def test_bad_decision_payloads_are_400(served: Served) -> None:
    for payload in (
        {"status": "maybe"},
        {"status": ["approved"]},
        {"status": "approved", "reason": 3},
    ):
        status, reply = served.post("/api/task/vllm-1001/decision", payload)
        assert status == 400 and reply["ok"] is False
    assert served.post("/api/task/vllm-1001/requirement", {"text": " \n"})[0] == 400
    assert served.post("/api/task/vllm-1001/requirement", [1, 2])[0] == 400
    assert served.post("/api/task/vllm-1001/requirement", b"{not json")[0] == 400


def test_unknown_task_is_404(served: Served) -> None:
    assert served.get("/task/vllm-9999")[0] == 404
    status, reply = served.post("/api/task/vllm-9999/decision", {"status": "approved"})
    assert status == 404 and reply["ok"] is False


@pytest.mark.parametrize(
    "task_id", ["..", "%2E%2E", "..%2F..%2Fetc", "..%2Ftasks%2Fvllm-1001", "vllm-1001%00", "."]
)
def test_path_traversal_ids_are_404(served: Served, task_id: str) -> None:
    (served.root.parent / "task.json").write_text("{}")  # what `..` would reach
    assert served.get(f"/task/{task_id}")[0] == 404
    status, _ = served.post(f"/api/task/{task_id}/requirement", {"text": "pwned"})
    assert status == 404
    assert not (served.root.parent / "requirement.md").exists()


def test_oversized_body_is_refused(served: Served) -> None:
    status, reply = served.post("/api/task/vllm-1001/requirement", {"text": "x" * (MAX_BODY + 1)})
    assert status == 413 and reply["ok"] is False
    assert not (served.root / "vllm-1001" / "curation.json").exists()


def test_cross_site_posts_are_refused(served: Served) -> None:
    path = "/api/task/vllm-1001/decision"
    payload = {"status": "approved"}
    # A form or a no-cors fetch from another site cannot send application/json.
    status, _ = served.post(path, payload, {"Content-Type": "text/plain"})
    assert status == 415
    status, _ = served.post(path, payload, {"Origin": "https://evil.example"})
    assert status == 403
    # DNS rebinding: the browser talks to us under the attacker's host name.
    req = urllib.request.Request(served.url + "/", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 403
    assert not (served.root / "vllm-1001" / "curation.json").exists()


def test_pages_carry_a_nonce_csp(served: Served) -> None:
    with urllib.request.urlopen(served.url + "/task/vllm-1001") as r:
        csp = r.headers["Content-Security-Policy"]
        page = r.read().decode()
    nonce = csp.split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}">' in page and "'unsafe-inline'" not in csp


def test_javascript_urls_are_not_links(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    write_task(root, make_task("t-1", pr_url="javascript:alert(1)"))
    server = make_server(root)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/task/t-1"
        page = urllib.request.urlopen(url).read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'href="javascript:' not in page


# -- CLI ------------------------------------------------------------------------------------------


def test_cli_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--tasks" in out and "--allow-remote" in out and "--curator" in out


def test_cli_refuses_remote_host_without_allow_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--tasks", str(tmp_path), "--host", "0.0.0.0"])
    assert exit_.value.code == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_cli_serves_and_prints_its_url(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    write_task(root, make_task("vllm-1001"))
    cmd = [sys.executable, "-m", "curation.review", "--tasks", str(root), "--port", "0"]
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(cmd, cwd=repo, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "Reviewing 1 tasks" in line
        url, _, token = line.split(" at ")[1].strip().partition("?token=")
        assert url.startswith("http://127.0.0.1:") and len(token) >= 32
        with urllib.request.urlopen(url + "task/vllm-1001", timeout=10) as r:
            assert "add_kernel" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(10)


def test_cli_refuses_missing_tasks_dir(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--tasks", str(tmp_path / "nope")])
    assert exit_.value.code == 2


# -- a real browser -------------------------------------------------------------------------------

CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
CHROMEDRIVER = Path(shutil.which("chromedriver") or "/usr/bin/chromedriver")


def _missing(what: str) -> None:
    """Skip locally, but fail in CI, which installs the browser (see .ci/run)."""
    message = (
        f"{what} not installed: the review page's browser test drives a real Chromium "
        "(apt-get install chromium chromium-driver; pip install selenium)"
    )
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"CI must run the browser test: {message}")
    pytest.skip(message)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            _missing(str(path))
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()


def test_browser_review_flow(served: Served, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def status_text() -> str:
        return str(browser.find_element(By.ID, "status").text)

    def wait_for(predicate: Any) -> None:
        WebDriverWait(browser, 10).until(lambda _: predicate())

    # as a curator does: open the URL with the token the server printed (it becomes a cookie)
    browser.get(served.url + "/task/vllm-1001?token=" + served.token)
    assert browser.current_url == served.url + "/task/vllm-1001"
    assert "Add alpha scaling to add_kernel" in browser.title

    # Old and new kernels side by side: both visible, new column right of old, same rows.
    kernel = browser.find_element(By.ID, "kernel-0")
    old_cells = kernel.find_elements(By.CSS_SELECTOR, "td.old")
    new_cells = kernel.find_elements(By.CSS_SELECTOR, "td.new")
    old_text = "\n".join(c.text for c in old_cells)
    new_text = "\n".join(c.text for c in new_cells)
    assert "mask = offs < n" in old_text and "x + y, mask=mask" in old_text
    assert "x + alpha * y, mask=mask" in new_text and "alpha * y" not in old_text
    assert all(c.is_displayed() for c in (old_cells[0], new_cells[0]))
    old_box, new_box = old_cells[0].rect, new_cells[0].rect
    assert new_box["x"] >= old_box["x"] + old_box["width"]
    assert abs(new_box["y"] - old_box["y"]) < 2
    assert old_box["width"] > 300 and new_box["width"] > 300
    # The PR body's <script> is text, not a script that ran.
    assert "<script>alert('pwned')</script>" in browser.find_element(By.ID, "pr-body").text

    assert "pending" in status_text()
    textarea = browser.find_element(By.ID, "requirement")
    textarea.clear()
    edited = "Add an alpha parameter; out = x + alpha * y for offs < n."
    textarea.send_keys(edited)
    browser.find_element(By.ID, "save").click()
    wait_for(lambda: "requirement edited" in status_text())

    browser.find_element(By.ID, "reject").click()
    error = browser.find_element(By.ID, "error")
    wait_for(lambda: "reason" in error.text)
    assert error.is_displayed() and "rejected" not in status_text()

    browser.find_element(By.ID, "reason").send_keys("test depends on a GPU model")
    browser.find_element(By.ID, "reject").click()
    wait_for(lambda: "rejected" in status_text())
    assert "test depends on a GPU model" in status_text() and error.text == ""
    badge = browser.find_element(By.ID, "status-badge")
    assert badge.text == "rejected" and "rejected" in str(badge.get_attribute("class"))

    shot = tmp_path / "review.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    rec = curation_json(served.root, "vllm-1001")
    assert rec["status"] == "rejected" and rec["reason"] == "test depends on a GPU model"
    assert rec["requirement_edited"] is True and rec["curator"] == "alice"
    assert (served.root / "vllm-1001" / "requirement.md").read_text() == edited
    assert task_json(served.root, "vllm-1001")["curation_status"] == "rejected"

    # A reload shows what is on disk.
    browser.refresh()
    assert browser.find_element(By.ID, "requirement").get_attribute("value") == edited
    assert "rejected" in status_text()
