"""The curator's review page: a small local web app over a tasks directory.

Reads: `tasks/<task_id>/` (task.json, requirement.md, curation.json), only through `TaskDir`.
Writes: only through `TaskDir.edit_requirement` and `TaskDir.decide` (requirement.md,
curation.json, and the status they mirror into task.json); nothing else.
Refuses: every state-changing request (POST) without this run's token (403): the token is
made when the server starts and printed in the URL it shows (`/?token=...`, as notebook servers
do); opening that URL stores it in an HttpOnly, SameSite=Strict cookie for this port, and an API
client may send it as `X-Review-Token`. Pages are readable without it. Also refused: ids that
are not an existing task directory directly under the root (no path traversal), request bodies
over `MAX_BODY` bytes, POSTs that are not JSON or come from another origin, Host headers other
than loopback names on a loopback server (DNS rebinding), a rejection without a reason, a
non-loopback `--host` unless `--allow-remote` is given, and connections that would exhaust the
server (`curation.review_server`: heads within a timeout, a cap on waiting connections, a fixed
pool of workers).

Standard library only (`http.server`). Task text comes from PRs and is untrusted: the HTML is
rendered, escaped, by `curation.review_page`; here the Content-Security-Policy runs only the
page's own nonce-tagged script and style.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import re
import secrets
import socket
import sys
import threading
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from core.errors import CoreError
from curation.model import CurationStatus
from curation.review_page import esc, render_index, render_page, render_task
from curation.review_server import BoundedHandler, BoundedHTTPServer
from curation.taskdir import TaskDir, task_dirs

logger = logging.getLogger(__name__)

MAX_BODY = 1 << 20  # a requirement is a few KB; anything near this is a mistake or an attack
DRAIN_LIMIT = 16 << 20  # oversized bodies up to this are read and dropped before the 413
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_TASK_PAGE = re.compile(r"^/task/([^/]+)/?$")
_API = re.compile(r"^/api/task/([^/]+)/(requirement|decision)$")
TOKEN_HEADER = "X-Review-Token"


def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# -- server --------------------------------------------------------------------------------------


class _Refused(Exception):
    """A request the API turns down; becomes a JSON error with this HTTP status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ReviewServer(BoundedHTTPServer):
    """The HTTP server, holding the tasks root, the curator's name, this run's token and the
    write lock."""

    def __init__(
        self, tasks_root: Path, host: str, port: int, curator: str | None, token: str | None
    ):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.tasks_root = tasks_root
        self.curator = curator
        self.token = token or secrets.token_urlsafe(32)
        # Two tabs on one task would race on curation.json's read-modify-write.
        self.write_lock = threading.Lock()
        self.allowed_hosts = (_LOOPBACK_NAMES | {host.lower()}) if is_loopback(host) else None
        super().__init__((host, port), ReviewHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    @property
    def login_url(self) -> str:
        """The URL to open: it carries this run's token."""
        return f"{self.url}?token={self.token}"

    @property
    def cookie_name(self) -> str:
        # cookies ignore ports: two review servers on one host must not share one
        return f"review-token-{self.server_address[1]}"

    def token_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())

    def task_ids(self) -> list[str]:
        return [td.id for td in task_dirs(self.tasks_root)]

    def find(self, quoted_id: str) -> TaskDir | None:
        """The task dir for a URL id, only if it is one of the listed dirs (no traversal)."""
        task_id = unquote(quoted_id)
        if task_id not in self.task_ids():
            return None
        return TaskDir(self.tasks_root / task_id)


class ReviewHandler(BoundedHandler):
    server_version = "curation-review"

    @property
    def review(self) -> ReviewServer:
        return cast(ReviewServer, self.server)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, body: str, ctype: str, nonce: str = "") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", f"{ctype}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header(
            "Content-Security-Policy",
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'",
        )
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload), "application/json")

    def _host_ok(self) -> bool:
        # On loopback, another Host means a DNS-rebinding page is talking to us.
        allowed = self.review.allowed_hosts
        host = urlsplit("//" + self.headers.get("Host", "")).hostname
        if allowed is None or host in allowed:
            return True
        self._send(403, "forbidden host\n", "text/plain")
        return False

    def _cookie_token(self) -> str | None:
        try:
            jar = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return None
        morsel = jar.get(self.review.cookie_name)
        return morsel.value if morsel else None

    def _login(self, path: str, given: str) -> None:
        """`?token=`: a right token goes into the cookie and the URL loses it."""
        if not self.review.token_ok(given):
            self._send(403, "wrong token: open the URL curation.review printed\n", "text/plain")
            return
        self.send_response(303)
        self.send_header(
            "Set-Cookie",
            f"{self.review.cookie_name}={self.review.token}; Path=/; HttpOnly; SameSite=Strict",
        )
        self.send_header("Location", path)
        self.send_header("Content-Length", "0")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()

    def do_GET(self) -> None:
        if not self._host_ok():
            return
        nonce = secrets.token_urlsafe(16)
        url = urlsplit(self.path)
        path = url.path
        given = parse_qs(url.query).get("token")
        if given:
            return self._login(path, given[0])
        try:
            if path == "/":
                return self._send(
                    200, render_index(self.review.tasks_root, nonce), "text/html", nonce
                )
            m = _TASK_PAGE.match(path)
            td = self.review.find(m[1]) if m else None
            if td is None:
                page = render_page(
                    "Not found", '<h1>Not found</h1><p><a href="/">all tasks</a></p>', nonce
                )
                return self._send(404, page, "text/html", nonce)
            page = render_task(td, self.review.task_ids(), nonce)
            self._send(200, page, "text/html", nonce)
        except Exception as exc:  # show the curator what broke instead of a dropped connection
            logger.exception("GET %s failed", path)
            page = render_page("Error", f"<h1>Error</h1><pre>{esc(exc)}</pre>", nonce)
            self._send(500, page, "text/html", nonce)

    def do_POST(self) -> None:
        if not self._host_ok():
            return
        try:
            self._json(200, self._api())
        except _Refused as exc:
            self._json(exc.status, {"ok": False, "error": str(exc)})
        except Exception as exc:
            logger.exception("POST %s failed", self.path)
            self._json(500, {"ok": False, "error": f"internal error: {exc}"})

    def _api(self) -> dict[str, Any]:
        given = self.headers.get(TOKEN_HEADER) or self._cookie_token()
        if not self.review.token_ok(given):
            self.close_connection = True  # its body is never read
            raise _Refused(
                403, "missing or wrong token: open the URL curation.review printed (?token=...)"
            )
        m = _API.match(urlsplit(self.path).path)
        if not m:
            raise _Refused(404, "no such endpoint")
        # A page on another site can POST here (it is localhost); browsers send its Origin.
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != self.headers.get("Host"):
            raise _Refused(403, "cross-origin request refused")
        if self.headers.get_content_type() != "application/json":
            raise _Refused(415, "send application/json")
        td = self.review.find(m[1])
        if td is None:
            raise _Refused(404, "unknown task")
        payload = self._read_json()
        curator = self.review.curator
        if m[2] == "requirement":
            text = payload.get("text")
            if not isinstance(text, str):
                raise _Refused(400, '"text" must be a string')
            if not text.strip():
                raise _Refused(400, "the requirement is empty")
            with self.review.write_lock:
                td.edit_requirement(text, curator)
            logger.info("task %s: requirement edited by %s", td.id, curator or "?")
        else:
            raw_status, reason = payload.get("status"), payload.get("reason")
            if raw_status not in [
                str(s) for s in CurationStatus
            ]:  # a list: payload may be unhashable
                raise _Refused(400, "status must be approved, rejected or pending")
            if reason is not None and not isinstance(reason, str):
                raise _Refused(400, '"reason" must be a string')
            status = CurationStatus(raw_status)
            reason = (reason or "").strip() or None
            if status is CurationStatus.REJECTED and not reason:
                raise _Refused(400, "a rejection needs a reason")
            with self.review.write_lock:
                td.decide(status, reason, curator)
            logger.info("task %s: %s by %s (%s)", td.id, status, curator or "?", reason or "")
        rec = td.load_curation()
        return {
            "ok": True,
            "status": str(rec.status),
            "reason": rec.reason,
            "requirement_edited": rec.requirement_edited,
            "updated_at": rec.updated_at,
        }

    def _read_json(self) -> dict[str, Any]:
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            raise _Refused(411, "Content-Length required")
        if int(length) > MAX_BODY:
            self.close_connection = True  # the unread body would be parsed as the next request
            # Read a moderately oversized body before answering: closing on a client that is
            # still sending resets the connection and it never sees the 413.
            if int(length) <= DRAIN_LIMIT:
                self.rfile.read(int(length))
            raise _Refused(413, f"request body over {MAX_BODY} bytes")
        try:
            payload = json.loads(self.rfile.read(int(length)))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _Refused(400, f"invalid JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise _Refused(400, "send a JSON object")
        return payload


def make_server(
    tasks_root: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    curator: str | None = None,
    token: str | None = None,
) -> ReviewServer:
    """A bound, not yet serving review server (port 0 picks a free port; a fresh token unless
    one is given)."""
    return ReviewServer(Path(tasks_root), host, port, curator, token)


def serve(
    tasks_root: Path, host: str = "127.0.0.1", port: int = 8765, curator: str | None = None
) -> None:
    """Serve the review page until Ctrl-C, printing its URL."""
    server = make_server(tasks_root, host, port, curator)
    print(
        f"Reviewing {len(server.task_ids())} tasks in {tasks_root} at {server.login_url}",
        flush=True,
    )
    print("Press Ctrl-C to stop.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m curation.review --tasks DIR`."""
    parser = argparse.ArgumentParser(
        prog="python -m curation.review",
        description="Serve the curator's review page for a tasks directory. It edits "
        "requirement.md and curation.json, so it listens on loopback only by default.",
    )
    parser.add_argument("--tasks", type=Path, required=True, help="the tasks directory")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any)")
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    parser.add_argument("--curator", help="your name, recorded with each edit and decision")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a non-loopback --host (anyone who reaches it can edit tasks)",
    )
    args = parser.parse_args(argv)
    if not args.tasks.is_dir():
        parser.error(f"--tasks {args.tasks}: not a directory")
    if not is_loopback(args.host) and not args.allow_remote:
        parser.error(
            f"--host {args.host} is not a loopback address; the page writes task files, "
            "so pass --allow-remote to expose it"
        )
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        serve(args.tasks, args.host, args.port, args.curator)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except CoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
