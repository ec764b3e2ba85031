"""Publishing a dataset folder against a local test double of the Hugging Face Hub REST API.

The double speaks the part of the protocol that `HfApi.create_repo` and `HfApi.upload_folder`
use: repo creation, README metadata validation, preupload (regular vs LFS), the git-LFS batch
API with basic single-part uploads and verify, and the NDJSON commit endpoint. It keeps the bytes
it receives so the tests can compare them with the files on disk.

LFS uploads run with `hf_xet` switched off: with it on, LFS files go through the Xet storage
protocol (a Rust client talking to a CAS server), which the double does not speak. The Xet
pipeline itself is still exercised with a double that answers "regular" for every file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import constants as hf_constants
from huggingface_hub.utils._runtime import is_xet_available

from benchmark.errors import PublishError
from benchmark.hub import push_to_hub

# huggingface_hub streams LFS bodies with httpx2's deprecated `data=`; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning")

REPO_ID = "triton-pr-bench/triton-pr-bench"
TOKEN = "hf_test_token_123"

_REPO_API = re.compile(r"^/api/datasets/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
_PREUPLOAD = re.compile(r"^/api/datasets/(?P<repo>[^/]+/[^/]+)/preupload/(?P<rev>[^/]+)$")
_COMMIT = re.compile(r"^/api/datasets/(?P<repo>[^/]+/[^/]+)/commit/(?P<rev>[^/]+)$")
_LFS_BATCH = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch$")
_LFS_VERIFY = re.compile(r"^/datasets/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/verify$")
_LFS_UPLOAD = re.compile(r"^/lfs-storage/(?P<oid>[0-9a-f]{64})$")


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased


@dataclass
class HubDouble:
    """State of the fake Hub: what it was asked and what it now holds."""

    base: str = ""
    token: str = TOKEN
    lfs_suffixes: tuple[str, ...] = (".parquet", ".png")
    requests: list[Received] = field(default_factory=list)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)  # repo id -> create payload
    files: dict[str, bytes] = field(default_factory=dict)  # path in repo -> content (main)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)  # sha256 -> uploaded bytes
    verified: set[str] = field(default_factory=set)
    commits: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _HubServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean; the double records requests itself

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    # -- plumbing ---------------------------------------------------------------------------

    def _body(self) -> bytes:
        # Streamed uploads (a file object as body) arrive chunked, without Content-Length.
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self) -> None:
        hub = self.server.hub
        path = urlsplit(self.path).path
        body = self._body()
        with hub.lock:
            hub.requests.append(
                Received(self.command, path, {k.lower(): v for k, v in self.headers.items()})
            )
        # The storage URL stands for a pre-signed S3 URL: no Hub token there.
        if self.command == "PUT" and (m := _LFS_UPLOAD.match(path)):
            return self._lfs_upload(m["oid"], body)
        if self.headers.get("Authorization") != f"Bearer {hub.token}":
            # The header the real Hub sends for a bad token; it stops huggingface_hub from
            # reporting the 401 as a missing repository.
            return self._json(
                401,
                {"error": "Invalid credentials in Authorization header"},
                {"X-Error-Message": "Invalid credentials in Authorization header"},
            )
        if self.command == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body))
        if self.command == "POST" and path == "/api/validate-yaml":
            return self._json(200, {"errors": [], "warnings": []})
        for pattern, method, handler in (
            (_REPO_API, "GET", self._repo_info),
            (_PREUPLOAD, "POST", self._preupload),
            (_COMMIT, "POST", self._commit),
            (_LFS_BATCH, "POST", self._lfs_batch),
            (_LFS_VERIFY, "POST", self._lfs_verify),
        ):
            if self.command == method and (m := pattern.match(path)):
                if m["repo"] not in hub.repos:
                    return self._json(
                        404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
                    )
                return handler(m, body)
        return self._json(404, {"error": f"no route for {self.command} {path}"})

    # -- endpoints --------------------------------------------------------------------------

    def _create_repo(self, payload: dict[str, Any]) -> None:
        hub = self.server.hub
        repo = f"{payload['organization']}/{payload['name']}"
        url = f"{hub.base}/datasets/{repo}"
        with hub.lock:
            if repo in hub.repos:
                return self._json(
                    409, {"error": "You already created this dataset repo", "url": url}
                )
            hub.repos[repo] = payload
        return self._json(200, {"url": url, "name": repo})

    def _repo_info(self, m: re.Match[str], body: bytes) -> None:
        hub = self.server.hub
        sha = hub.commits[-1]["oid"] if hub.commits else "0" * 40
        siblings = [{"rfilename": p} for p in sorted(hub.files)]
        return self._json(
            200, {"id": m["repo"], "sha": sha, "private": False, "siblings": siblings}
        )

    def _preupload(self, m: re.Match[str], body: bytes) -> None:
        files = json.loads(body)["files"]
        for f in files:
            mode = "lfs" if f["path"].endswith(self.server.hub.lfs_suffixes) else "regular"
            f.update(uploadMode=mode, shouldIgnore=False, oid=None)
            del f["sample"]
        return self._json(200, {"files": files, "commitOid": None})

    def _lfs_batch(self, m: re.Match[str], body: bytes) -> None:
        verify = f"{self.server.hub.base}/datasets/{m['repo']}.git/info/lfs/objects/verify"
        objects = []
        for obj in json.loads(body)["objects"]:
            oid, size = obj["oid"], obj["size"]
            objects.append(
                {
                    "oid": oid,
                    "size": size,
                    "authenticated": True,
                    "actions": {
                        "upload": {"href": f"{self.server.hub.base}/lfs-storage/{oid}"},
                        "verify": {"href": verify},
                    },
                }
            )
        return self._json(200, {"transfer": "basic", "objects": objects})

    def _lfs_upload(self, oid: str, body: bytes) -> None:
        if hashlib.sha256(body).hexdigest() != oid:
            return self._json(400, {"error": "content does not match its oid"})
        with self.server.hub.lock:
            self.server.hub.lfs_objects[oid] = body
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("ETag", f'"{oid[:32]}"')
        self.end_headers()

    def _lfs_verify(self, m: re.Match[str], body: bytes) -> None:
        payload = json.loads(body)
        stored = self.server.hub.lfs_objects.get(payload["oid"])
        if stored is None or len(stored) != payload["size"]:
            return self._json(404, {"error": "object not uploaded"})
        self.server.hub.verified.add(payload["oid"])
        return self._json(200, {"success": True})

    def _commit(self, m: re.Match[str], body: bytes) -> None:
        hub = self.server.hub
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(item["value"] for item in lines if item["key"] == "header")
        added: dict[str, bytes] = {}
        for item in lines:
            value = item["value"]
            if item["key"] == "file":
                assert value["encoding"] == "base64"
                added[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "lfsFile":
                stored = hub.lfs_objects.get(value["oid"])
                if stored is None or len(stored) != value["size"]:
                    return self._json(422, {"error": f"LFS object of {value['path']} missing"})
                added[value["path"]] = stored
            elif item["key"] != "header":
                return self._json(400, {"error": f"unexpected operation {item['key']}"})
        oid = hashlib.sha1(body).hexdigest()
        with hub.lock:
            hub.files.update(added)
            hub.commits.append(
                {
                    "oid": oid,
                    "revision": m["rev"],
                    "summary": header["summary"],
                    "entries": [(item["key"], item["value"].get("path")) for item in lines[1:]],
                }
            )
        url = f"{hub.base}/datasets/{m['repo']}/commit/{oid}"
        return self._json(200, {"success": True, "commitOid": oid, "commitUrl": url})


class _HubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, hub: HubDouble) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub


@pytest.fixture(autouse=True)
def _no_real_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No token from the environment, no telemetry, and no connection beyond loopback."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    real_connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"test tried to reach {address}")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


@pytest.fixture
def no_xet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send LFS files through the git-LFS protocol, the one the double speaks."""
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)


@pytest.fixture
def hub() -> Iterator[HubDouble]:
    state = HubDouble()
    server = _HubServer(state)
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _png(width: int = 4, height: int = 3) -> bytes:
    """A real (tiny, grey gradient) PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + bytes(range(y * 40, y * 40 + width)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A small built dataset folder, shaped like `benchmark.build` writes it."""
    out = tmp_path / "dataset"
    (out / "data").mkdir(parents=True)
    (out / "assets").mkdir()
    (out / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
        "    path: data/test-*.parquet\n---\n# triton-pr-bench\n",
        encoding="utf-8",
    )
    table = pa.table(
        {
            "task_id": ["vllm-1234", "sglang-42"],
            "patch": ["diff --git a/k.py b/k.py\n", "diff --git a/t.py b/t.py\n"],
            "merged_at": ["2025-01-02T03:04:05Z", "2025-02-03T04:05:06Z"],
        }
    )
    pq.write_table(table, out / "data" / "test-00000-of-00001.parquet")
    (out / "assets" / "plot.png").write_bytes(_png())
    (out / "manifest.json").write_text(
        json.dumps({"version": "1.2.0", "releases": [{"version": "1.2.0"}]}), encoding="utf-8"
    )
    return out


def _files_on_disk(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_push_delivers_every_file_byte_identical(
    hub: HubDouble, dataset: Path, no_xet: None
) -> None:
    url = push_to_hub(dataset, REPO_ID, token=TOKEN, endpoint=hub.base, private=True)

    assert hub.files == _files_on_disk(dataset)
    assert set(hub.files) == {
        "README.md",
        "manifest.json",
        "data/test-00000-of-00001.parquet",
        "assets/plot.png",
    }
    # Both upload paths ran: the parquet and the PNG through LFS, the rest inline in the commit.
    (commit,) = hub.commits
    kinds = dict((path, key) for key, path in commit["entries"])
    assert kinds == {
        "README.md": "file",
        "manifest.json": "file",
        "data/test-00000-of-00001.parquet": "lfsFile",
        "assets/plot.png": "lfsFile",
    }
    assert hub.verified == set(hub.lfs_objects)
    assert len(hub.lfs_objects) == 2
    assert "1.2.0" in commit["summary"]
    assert commit["revision"] == "main"
    assert url == f"{hub.base}/datasets/{REPO_ID}/commit/{commit['oid']}"
    assert hub.repos[REPO_ID]["type"] == "dataset"
    assert hub.repos[REPO_ID]["visibility"] == "private"
    # Every Hub call carried the token (the storage PUTs stand for pre-signed URLs: none there).
    hub_calls = [r for r in hub.requests if not r.path.startswith("/lfs-storage/")]
    assert hub_calls
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in hub_calls)


def test_push_through_xet_pipeline_with_regular_files(hub: HubDouble, dataset: Path) -> None:
    # The default upload path when hf_xet is installed; all-regular files keep Xet storage idle.
    if not is_xet_available():
        pytest.skip("hf_xet not installed: upload_folder takes the path tested above")
    hub.lfs_suffixes = ()
    push_to_hub(dataset, REPO_ID, token=TOKEN, endpoint=hub.base)

    assert hub.files == _files_on_disk(dataset)
    assert not hub.lfs_objects


def test_push_to_existing_repo_with_token_from_env_and_own_message(
    hub: HubDouble, dataset: Path, no_xet: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", TOKEN)
    push_to_hub(dataset, REPO_ID, endpoint=hub.base)
    (dataset / "README.md").write_text("# triton-pr-bench, v2\n", encoding="utf-8")

    push_to_hub(dataset, REPO_ID, endpoint=hub.base, commit_message="Fix the card")

    assert [c["summary"] for c in hub.commits] == ["Publish dataset version 1.2.0", "Fix the card"]
    assert hub.files == _files_on_disk(dataset)


def test_no_token_refused_before_any_request(hub: HubDouble, dataset: Path) -> None:
    with pytest.raises(PublishError, match="no Hugging Face token"):
        push_to_hub(dataset, REPO_ID, endpoint=hub.base)
    assert hub.requests == []


def test_rejected_token(hub: HubDouble, dataset: Path, no_xet: None) -> None:
    with pytest.raises(PublishError, match="token rejected") as caught:
        push_to_hub(dataset, REPO_ID, token="hf_wrong", endpoint=hub.base)
    assert REPO_ID in str(caught.value)
    assert hub.base in str(caught.value)
    assert hub.files == {}
    assert hub.requests  # the double was asked and said no


def test_unreachable_endpoint(dataset: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port any more: the connection is refused at once.
    with pytest.raises(PublishError, match="cannot reach") as caught:
        push_to_hub(dataset, REPO_ID, token=TOKEN, endpoint=f"http://127.0.0.1:{port}")
    assert REPO_ID in str(caught.value)


@pytest.mark.parametrize("missing", ["data/test-00000-of-00001.parquet", "README.md"])
def test_incomplete_folder_refused(hub: HubDouble, dataset: Path, missing: str) -> None:
    (dataset / missing).unlink()
    expected = "data/*.parquet" if missing.endswith(".parquet") else "README.md"
    with pytest.raises(PublishError, match=re.escape(expected)):
        push_to_hub(dataset, REPO_ID, token=TOKEN, endpoint=hub.base)
    assert hub.requests == []


def test_symlink_outside_folder_refused(hub: HubDouble, dataset: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not part of the dataset", encoding="utf-8")
    (dataset / "assets" / "notes.txt").symlink_to(secret)
    with pytest.raises(PublishError, match="outside"):
        push_to_hub(dataset, REPO_ID, token=TOKEN, endpoint=hub.base)
    assert hub.requests == []
