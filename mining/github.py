"""GitHub enrichment: a PR number -> its title, body, labels, merge time, author and linked issues.

Reads: the GitHub REST API (`GET /repos/{owner}/{name}/pulls/{n}`) through PyGithub, and the
on-disk cache written by earlier runs.
Writes: one JSON file per PR under `<cache_dir>/<owner>__<name>/<n>.json`, atomically; a 404 is
cached too, as a small "not found" marker. A cached PR is never asked for again.
Refuses: to run without a token (it logs once and returns None), to wait out a rate limit longer
than `max_wait_s` (GithubError), and to keep calling an API it cannot reach (NoNetworkError
once, then every call answers from the cache or with None; see `disabled_reason`).

This is the only module that imports PyGithub.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github import UnknownObjectException as GithubNotFound
from urllib3.util.retry import Retry

from core.errors import RecordError
from core.files import write_json
from core.records import from_json, to_json
from mining.errors import GithubError, NoNetworkError
from mining.model import GithubInfo

log = logging.getLogger(__name__)

__all__ = ["GithubEnricher", "linked_issues"]

CACHE_SCHEMA = 1
DEFAULT_BASE_URL = "https://api.github.com"
# A secondary rate limit answers 403 without a reset time; GitHub's guidance is to wait at
# least a minute before trying again.
SECONDARY_RATE_LIMIT_WAIT_S = 60.0

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
_CLOSING_RE = re.compile(
    r"(?<![\w/-])(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s*:?\s+"
    r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)?#(?P<num>\d+)\b",
    re.IGNORECASE,
)
# PR templates put their instructions ("Fixes #<issue>") in HTML comments; those are not links.
_HTML_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)


def linked_issues(body: str, repo: str) -> tuple[int, ...]:
    """Issue numbers a PR body links: `fixes|closes|resolves #N`, `github.com/<repo>/issues/N`."""
    text = _HTML_COMMENT_RE.sub("", body)
    found: set[int] = set()
    for m in _CLOSING_RE.finditer(text):
        # `fixes other/repo#5` closes an issue elsewhere; its number means nothing here.
        if m["repo"] is None or m["repo"].lower() == repo.lower():
            found.add(int(m["num"]))
    url_re = re.compile(rf"https?://github\.com/{re.escape(repo)}/issues/(\d+)\b", re.IGNORECASE)
    found.update(int(n) for n in url_re.findall(text))
    return tuple(sorted(found))


def _header(headers: dict[str, Any] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value)
    return None


class GithubEnricher:
    """Fetches and caches what GitHub knows about one PR at a time.

    `enrich` answers from the cache first; only a miss reaches the API. Rate limits are waited
    out through the injected `sleep` (so nothing is lost), unreachable networks and bad
    credentials switch the enricher off for the rest of the run.
    """

    def __init__(
        self,
        token: str | None,
        cache_dir: Path,
        base_url: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_wait_s: float = 3600,
        *,
        timeout_s: int = 30,
        min_request_interval_s: float = 0.25,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.max_wait_s = max_wait_s
        self._token = token or None
        self._sleep = sleep
        self._clock = clock
        self._timeout_s = timeout_s
        self._min_interval_s = min_request_interval_s
        self._client: Github | None = None
        self._told_disabled = False
        #: Why the API is not called (no token, unreachable, bad credentials); None when it is.
        self.disabled_reason: str | None = None if self._token else "GITHUB_TOKEN not set"

    @property
    def enabled(self) -> bool:
        """True while API calls are still made (a token is set and nothing switched them off)."""
        return self.disabled_reason is None

    def cache_path(self, repo: str, number: int) -> Path:
        """Where the PR's cache entry lives."""
        owner, name = self._split(repo)
        return self.cache_dir / f"{owner}__{name}" / f"{number}.json"

    def enrich(self, repo: str, number: int) -> GithubInfo | None:
        """The PR's GitHub data, or None when it does not exist or the API is not used."""
        path = self.cache_path(repo, number)
        hit, cached = self._read_cache(path)
        if hit:
            return cached
        if not self.enabled:
            if not self._told_disabled and self._token is None:
                log.warning("GITHUB_TOKEN not set; skipping GitHub enrichment")
            self._told_disabled = True
            return None
        info = self._fetch(repo, number)
        self._write_cache(path, repo, number, info)
        return info

    def enrich_many(
        self,
        repo: str,
        numbers: Iterable[int],
        progress: Callable[[int], None] | None = None,
    ) -> dict[int, GithubInfo]:
        """Enrich several PRs; once the network is gone the rest come only from the cache.

        `progress` is called with the count of PRs handled so far. A GithubError for a single
        PR is logged and that PR skipped; one that switches the enricher off ends the API calls.
        """
        out: dict[int, GithubInfo] = {}
        for done, number in enumerate(numbers, start=1):
            try:
                info = self.enrich(repo, number)
            except NoNetworkError as exc:
                log.warning("%s; the remaining PRs come from the cache only", exc)
                info = None
            except GithubError as exc:
                if self.enabled:
                    log.warning("skipping PR #%d: %s", number, exc)
                else:
                    log.warning("%s; the remaining PRs come from the cache only", exc)
                info = None
            if info is not None:
                out[number] = info
            if progress is not None:
                progress(done)
        return out

    # --- API ---------------------------------------------------------------------------------

    def _github(self) -> Github:
        if self._client is None:
            assert self._token is not None
            # PyGithub's default retry sleeps through rate limits on its own, invisibly and
            # without a cap; here only server hiccups are retried and rate limits are ours.
            retry = Retry(
                total=2,
                connect=0,
                read=0,
                status=2,
                backoff_factor=1.0,
                status_forcelist=(500, 502, 503, 504),
                allowed_methods=frozenset({"GET"}),
                respect_retry_after_header=False,
                raise_on_status=False,
            )
            self._client = Github(
                auth=Auth.Token(self._token),
                base_url=self.base_url,
                timeout=self._timeout_s,
                retry=retry,
                seconds_between_requests=self._min_interval_s or None,
                lazy=True,  # get_repo / get_pull build objects; only `raw_data` makes the call
            )
        return self._client

    def _fetch(self, repo: str, number: int) -> GithubInfo | None:
        waited = 0.0
        while True:
            try:
                pr = self._github().get_repo(repo).get_pull(number)
                data = pr.raw_data  # the one GET; everything below reads the loaded object
                return GithubInfo(
                    title=pr.title or "",
                    body=pr.body or "",
                    labels=tuple(label.name for label in pr.labels),
                    # GitHub's own ISO form ("...Z"), not PyGithub's re-rendered datetime.
                    merged_at=data.get("merged_at"),
                    author=pr.user.login if data.get("user") else None,
                    author_association=data.get("author_association"),
                    linked_issues=linked_issues(pr.body or "", repo),
                    url=pr.html_url,
                )
            except GithubNotFound:
                log.debug("%s#%d: not found", repo, number)
                return None
            except GithubException as exc:
                wait = self._rate_limit_wait(exc)
                if wait is None:
                    raise self._api_error(exc, repo, number) from exc
                if waited + wait > self.max_wait_s:
                    self.disabled_reason = f"GitHub rate limit: would wait {wait:.0f} s"
                    raise GithubError(
                        f"GitHub rate limit for PR #{number}: waiting {wait:.0f} s more would "
                        f"exceed max_wait_s={self.max_wait_s:.0f}",
                        repo=repo,
                    ) from exc
                reset = datetime.fromtimestamp(self._clock() + wait, tz=UTC)
                log.warning(
                    "GitHub rate limit hit at %s#%d; waiting %.0f s until %s",
                    repo,
                    number,
                    wait,
                    reset.strftime("%Y-%m-%d %H:%M:%S UTC"),
                )
                self._sleep(wait)
                waited += wait
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
                reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                self.disabled_reason = f"GitHub API unreachable at {self.base_url}"
                raise NoNetworkError(
                    f"GitHub API unreachable at {self.base_url} ({type(exc).__name__}: {reason}); "
                    "GitHub enrichment is off for this run",
                    repo=repo,
                ) from exc
            except requests.exceptions.RequestException as exc:
                raise GithubError(
                    f"GitHub request for PR #{number} failed: {type(exc).__name__}: {exc}",
                    repo=repo,
                ) from exc

    def _rate_limit_wait(self, exc: GithubException) -> float | None:
        """Seconds to wait before retrying, or None when `exc` is not a rate limit."""
        if exc.status not in (403, 429):
            return None
        headers = exc.headers
        retry_after = _header(headers, "retry-after")
        if retry_after is not None:
            try:
                return max(float(retry_after), 1.0)
            except ValueError:
                pass
        remaining = _header(headers, "x-ratelimit-remaining")
        reset = _header(headers, "x-ratelimit-reset")
        if remaining == "0" and reset is not None:
            try:
                # +1: the reset time has whole-second resolution and clocks disagree a little.
                return max(float(reset) - self._clock(), 0.0) + 1.0
            except ValueError:
                pass
        if isinstance(exc, RateLimitExceededException) or exc.status == 429:
            return SECONDARY_RATE_LIMIT_WAIT_S
        return None

    def _api_error(self, exc: GithubException, repo: str, number: int) -> GithubError:
        message = exc.message
        if not message and isinstance(exc.data, dict):
            message = exc.data.get("message")
        text = f"GitHub API error {exc.status} for PR #{number}: {message or exc}"
        if exc.status == 401:
            # Every further call would fail the same way.
            self.disabled_reason = "GitHub rejected the token (401)"
        return GithubError(text, repo=repo)

    # --- cache -------------------------------------------------------------------------------

    @staticmethod
    def _split(repo: str) -> tuple[str, str]:
        if not _REPO_RE.match(repo):
            raise GithubError(f"not a GitHub owner/name: {repo!r}", repo=repo)
        owner, name = repo.split("/")
        return owner, name

    @staticmethod
    def _read_cache(path: Path) -> tuple[bool, GithubInfo | None]:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False, None
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable cache entry %s: %s", path, exc)
            return False, None
        try:
            if not entry["found"]:
                return True, None
            return True, from_json(GithubInfo, entry["info"], where=str(path))
        except (KeyError, TypeError, RecordError) as exc:
            log.warning("ignoring malformed cache entry %s: %s", path, exc)
            return False, None

    @staticmethod
    def _write_cache(path: Path, repo: str, number: int, info: GithubInfo | None) -> None:
        entry = {
            "schema": CACHE_SCHEMA,
            "repo": repo,
            "number": number,
            "found": info is not None,
            "fetched_at": datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "info": to_json(info) if info is not None else None,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        # Atomic, so an interrupted run never leaves half a file that reads as a hit.
        write_json(path, entry, sort_keys=True)
