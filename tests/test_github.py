"""GitHub enrichment against a local test double of the REST API (no network needed)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mining.errors import GithubError, NoNetworkError
from mining.github import GithubEnricher, linked_issues
from mining.model import GithubInfo

REPO = "vllm-project/vllm"
TOKEN = "ghp_test_token_123"


def _pr_json(base: str, number: int, **over: Any) -> dict[str, Any]:
    """A pull request shaped like GitHub's REST response (the fields PyGithub reads)."""
    api = f"{base}/repos/{REPO}"
    user = {
        "login": "alice",
        "id": 101,
        "type": "User",
        "url": f"{base}/users/alice",
        "html_url": "https://github.com/alice",
    }
    pr: dict[str, Any] = {
        "url": f"{api}/pulls/{number}",
        "id": 900000 + number,
        "node_id": f"PR_kw{number}",
        "html_url": f"https://github.com/{REPO}/pull/{number}",
        "diff_url": f"https://github.com/{REPO}/pull/{number}.diff",
        "issue_url": f"{api}/issues/{number}",
        "commits_url": f"{api}/pulls/{number}/commits",
        "review_comments_url": f"{api}/pulls/{number}/comments",
        "comments_url": f"{api}/issues/{number}/comments",
        "number": number,
        "state": "closed",
        "locked": False,
        "title": "[Kernel] Tune fused MoE Triton configs for H200",
        "user": user,
        "body": (
            "Adds tuned configs.\n\nFixes #1201, closes #1202 and RESOLVED #1203.\n"
            "Also see https://github.com/vllm-project/vllm/issues/1300 .\n"
            "fixes other/repo#9 is elsewhere; <!-- Fixes #9999 (template hint) -->"
        ),
        "labels": [
            {"id": 1, "name": "performance", "color": "ededed", "url": f"{api}/labels/performance"},
            {"id": 2, "name": "ready", "color": "0e8a16", "url": f"{api}/labels/ready"},
        ],
        "created_at": "2024-05-01T10:00:00Z",
        "updated_at": "2024-05-03T12:00:00Z",
        "closed_at": "2024-05-03T12:00:00Z",
        "merged_at": "2024-05-03T12:00:00Z",
        "merge_commit_sha": "4003d70f189143d95538be4166287b562e6cf5c5",
        "author_association": "CONTRIBUTOR",
        "draft": False,
        "merged": True,
        "head": {"label": "alice:tune-moe", "ref": "tune-moe", "sha": "1" * 40, "user": user},
        "base": {"label": "vllm-project:main", "ref": "main", "sha": "2" * 40, "user": user},
    }
    pr.update(over)
    return pr


class FakeGithubApi:
    """Serves `GET /repos/{owner}/{name}/pulls/{n}`; scripted responses are served first."""

    def __init__(self) -> None:
        self.prs: dict[int, dict[str, Any]] = {}
        self.scripted: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        self.requests: list[tuple[str, str | None]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                api.requests.append((self.path, self.headers.get("Authorization")))
                if api.scripted:
                    status, headers, body = api.scripted.pop(0)
                else:
                    status, headers, body = api.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval: shutdown() waits up to one interval, per test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def answer(self, path: str) -> tuple[int, dict[str, str], dict[str, Any]]:
        prefix = f"/repos/{REPO}/pulls/"
        if path.startswith(prefix) and path[len(prefix) :].isdigit():
            number = int(path[len(prefix) :])
            if number in self.prs:
                return 200, {"X-RateLimit-Remaining": "4999"}, self.prs[number]
        not_found = {
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
            "status": "404",
        }
        return 404, {}, not_found

    def add_pr(self, number: int, **over: Any) -> None:
        self.prs[number] = _pr_json(self.base_url, number, **over)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[FakeGithubApi]:
    fake = FakeGithubApi()
    try:
        yield fake
    finally:
        fake.close()


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def _enricher(api: FakeGithubApi, tmp_path: Path, **kw: Any) -> GithubEnricher:
    kw.setdefault("min_request_interval_s", 0)
    kw.setdefault("timeout_s", 5)
    return GithubEnricher(TOKEN, tmp_path / "cache", base_url=api.base_url, **kw)


def test_fields_are_parsed(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(4321)
    info = _enricher(api, tmp_path).enrich(REPO, 4321)
    assert info == GithubInfo(
        title="[Kernel] Tune fused MoE Triton configs for H200",
        body=api.prs[4321]["body"],
        labels=("performance", "ready"),
        merged_at="2024-05-03T12:00:00Z",
        author="alice",
        author_association="CONTRIBUTOR",
        linked_issues=(1201, 1202, 1203, 1300),
        url=f"https://github.com/{REPO}/pull/4321",
    )
    assert len(api.requests) == 1
    path, auth = api.requests[0]
    assert path == f"/repos/{REPO}/pulls/4321"
    assert auth is not None and TOKEN in auth


def test_null_body_unmerged_and_deleted_author(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(7, body=None, merged_at=None, merged=False, user=None, labels=[])
    info = _enricher(api, tmp_path).enrich(REPO, 7)
    assert info is not None
    assert (info.body, info.merged_at, info.author, info.labels) == ("", None, None, ())
    assert info.linked_issues == ()


def test_linked_issues_verbs_and_links() -> None:
    body = (
        "fix #1\nFixes: #2\nfixed #3\nclose #4\ncloses #5\nClosed #6\nresolve #7\n"
        "RESOLVES #8\nresolved #9\nFixes vllm-project/vllm#10\nfixes https://github.com/"
        "vllm-project/vllm/issues/11\nsee github.com/other/repo/issues/12, prefix #13, "
        "bugfix #14, unfixed #15"
    )
    assert linked_issues(body, REPO) == tuple(range(1, 12))


def test_cache_hit_makes_no_request(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(55)
    first = _enricher(api, tmp_path).enrich(REPO, 55)
    again = _enricher(api, tmp_path).enrich(REPO, 55)  # a later run, same cache
    assert first == again
    assert len(api.requests) == 1
    entry = json.loads((tmp_path / "cache" / "vllm-project__vllm" / "55.json").read_text())
    assert entry["found"] is True
    assert entry["info"]["title"] == first.title if first else False
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.name.endswith(".tmp")]


def test_not_found_is_cached(api: FakeGithubApi, tmp_path: Path) -> None:
    enricher = _enricher(api, tmp_path)
    assert enricher.enrich(REPO, 999) is None
    assert enricher.enrich(REPO, 999) is None
    assert len(api.requests) == 1
    entry = json.loads(enricher.cache_path(REPO, 999).read_text())
    assert entry["found"] is False


def test_corrupt_cache_entry_is_refetched(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(8)
    enricher = _enricher(api, tmp_path)
    path = enricher.cache_path(REPO, 8)
    path.parent.mkdir(parents=True)
    path.write_text('{"found": tr')
    assert enricher.enrich(REPO, 8) is not None
    assert len(api.requests) == 1
    assert json.loads(path.read_text())["found"] is True


def test_rate_limit_waits_until_reset_then_retries(
    api: FakeGithubApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    api.add_pr(77)
    api.scripted.append(
        (
            403,
            {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": str(int(time.time()) + 120),
            },
            {
                "message": "API rate limit exceeded for user ID 101.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            },
        )
    )
    sleeps = Sleeps()
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="mining.github"):
        info = _enricher(api, tmp_path, sleep=sleeps).enrich(REPO, 77)
    assert info is not None and info.title
    assert len(sleeps.calls) == 1
    assert 118 <= sleeps.calls[0] <= 123
    assert len(api.requests) == 2
    warnings = [r for r in caplog.records if "rate limit" in r.getMessage()]
    assert len(warnings) == 1 and "UTC" in warnings[0].getMessage()
    assert time.monotonic() - start < 3  # neither PyGithub nor urllib3 slept on their own


def test_secondary_rate_limit_with_retry_after(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(78)
    api.scripted.append(
        (
            429,
            {"Retry-After": "7"},
            {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
        )
    )
    sleeps = Sleeps()
    assert _enricher(api, tmp_path, sleep=sleeps).enrich(REPO, 78) is not None
    assert sleeps.calls == [7.0]


def test_rate_limit_longer_than_max_wait_raises(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(79)
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 3000)}
    api.scripted.append((403, headers, {"message": "API rate limit exceeded for 127.0.0.1."}))
    sleeps = Sleeps()
    enricher = _enricher(api, tmp_path, sleep=sleeps, max_wait_s=600)
    with pytest.raises(GithubError, match=r"rate limit.*#79.*vllm-project/vllm"):
        enricher.enrich(REPO, 79)
    assert sleeps.calls == []
    assert not enricher.enabled
    assert not enricher.cache_path(REPO, 79).exists()  # nothing cached: a later run asks again


def test_no_token_returns_none_without_http(
    api: FakeGithubApi, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    api.add_pr(1)
    enricher = GithubEnricher(None, tmp_path / "cache", base_url=api.base_url)
    assert not enricher.enabled
    with caplog.at_level(logging.WARNING, logger="mining.github"):
        assert enricher.enrich(REPO, 1) is None
        assert enricher.enrich(REPO, 2) is None
    assert api.requests == []
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("GITHUB_TOKEN not set; skipping GitHub enrichment") == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_raises_no_network_once(tmp_path: Path) -> None:
    enricher = GithubEnricher(
        TOKEN, tmp_path / "cache", base_url=f"http://127.0.0.1:{_closed_port()}", timeout_s=2
    )
    start = time.monotonic()
    with pytest.raises(NoNetworkError, match="unreachable"):
        enricher.enrich(REPO, 5)
    assert not enricher.enabled
    assert enricher.disabled_reason and "unreachable" in enricher.disabled_reason
    assert enricher.enrich(REPO, 6) is None  # switched off: no second error, no second attempt
    assert time.monotonic() - start < 3


def test_enrich_many_stops_calling_after_network_loss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "cache"
    seeded = GithubInfo("t", "", (), None, "bob", "MEMBER", (), f"https://github.com/{REPO}/pull/3")
    offline = GithubEnricher(TOKEN, cache, base_url=f"http://127.0.0.1:{_closed_port()}")
    GithubEnricher._write_cache(offline.cache_path(REPO, 3), REPO, 3, seeded)
    seen: list[int] = []
    with caplog.at_level(logging.WARNING, logger="mining.github"):
        got = offline.enrich_many(REPO, [1, 2, 3], progress=seen.append)
    assert got == {3: seeded}
    assert seen == [1, 2, 3]
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1


def test_other_api_errors_name_repo_and_pr(api: FakeGithubApi, tmp_path: Path) -> None:
    api.scripted.append((422, {}, {"message": "Validation Failed"}))
    enricher = _enricher(api, tmp_path)
    with pytest.raises(GithubError, match=r"422.*#12.*Validation Failed.*vllm-project/vllm"):
        enricher.enrich(REPO, 12)
    assert enricher.enabled  # one bad PR does not switch the enricher off


def test_bad_credentials_switch_off(api: FakeGithubApi, tmp_path: Path) -> None:
    api.scripted.append((401, {}, {"message": "Bad credentials"}))
    enricher = _enricher(api, tmp_path)
    with pytest.raises(GithubError, match="401"):
        enricher.enrich(REPO, 13)
    assert not enricher.enabled
    assert enricher.enrich(REPO, 14) is None
    assert len(api.requests) == 1


def test_server_hiccup_is_retried(api: FakeGithubApi, tmp_path: Path) -> None:
    api.add_pr(15)
    api.scripted.append((502, {}, {"message": "Server Error"}))
    assert _enricher(api, tmp_path).enrich(REPO, 15) is not None
    assert len(api.requests) == 2


def test_repo_must_be_owner_name(tmp_path: Path) -> None:
    enricher = GithubEnricher(TOKEN, tmp_path / "cache")
    with pytest.raises(GithubError, match="owner/name"):
        enricher.enrich("/srv/mirrors/vllm", 1)
