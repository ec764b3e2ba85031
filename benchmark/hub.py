"""Publish a built dataset folder to the HuggingFace Hub as a dataset repository.

Reads: the folder written by `benchmark.build` (README.md, data/*.parquet, assets/, and the
`version` field of manifest.json when present); the token from the caller, else `HF_TOKEN` /
`HUGGING_FACE_HUB_TOKEN`.
Writes: one commit on the Hub dataset repo (created if missing) holding exactly the files of the
folder; nothing on disk.
Refuses: to run without a token (before any network call), a folder without README.md or without
data/*.parquet, a manifest.json that is not a JSON object, and a folder with symlinks that lead
outside it or nowhere (they would push files that are not part of the build, or fail mid-upload).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import httpx2
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from benchmark.errors import PublishError
from core.files import LOCK_NAME

log = logging.getLogger(__name__)

TOKEN_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def resolve_token(token: str | None) -> str:
    """The token to push with: the argument, else the first non-empty token env var."""
    if token:
        return token
    for name in TOKEN_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise PublishError("no Hugging Face token: set HF_TOKEN or pass --token")


def check_folder(folder: Path) -> None:
    """Raise PublishError unless `folder` looks like a complete built dataset folder."""
    if not folder.is_dir():
        raise PublishError(f"{folder} is not a directory")
    missing = []
    if not (folder / "README.md").is_file():
        missing.append("README.md")
    if not any(p.is_file() for p in (folder / "data").glob("*.parquet")):
        missing.append("data/*.parquet")
    if missing:
        raise PublishError(f"{folder} is not a built dataset folder: missing {', '.join(missing)}")
    root = folder.resolve()
    for path in folder.rglob("*"):
        # upload_folder follows symlinks, so one pointing outside would publish a foreign file.
        if not path.is_symlink():
            continue
        try:
            inside = path.resolve(strict=True).is_relative_to(root)
        except (OSError, RuntimeError):  # dangling link or loop (RuntimeError before 3.13)
            inside = False
        if not inside:
            raise PublishError(f"{path} is a symlink leading outside {folder}; refusing to push it")


def dataset_version(folder: Path) -> str | None:
    """The `version` recorded in `folder/manifest.json`, or None when there is none."""
    path = folder / "manifest.json"
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PublishError(f"{path} is not readable JSON: {err}") from err
    if not isinstance(manifest, dict):
        raise PublishError(f"{path} is not a JSON object")
    version = manifest.get("version")
    return None if version is None else str(version)


def default_commit_message(folder: Path) -> str:
    """`Publish dataset version <v>` when the manifest names a version, else a generic message."""
    version = dataset_version(folder)
    return f"Publish dataset version {version}" if version else "Publish dataset"


def push_to_hub(
    folder: Path,
    repo_id: str,
    *,
    token: str | None = None,
    endpoint: str | None = None,
    private: bool = False,
    revision: str | None = None,
    commit_message: str | None = None,
) -> str:
    """Push `folder` to the dataset repo `repo_id` in one commit; return the commit URL."""
    folder = Path(folder)
    token = resolve_token(token)
    check_folder(folder)
    message = commit_message or default_commit_message(folder)

    api = HfApi(endpoint=endpoint, token=token)
    where = api.endpoint
    log.info("pushing %s to %s/datasets/%s (%s)", folder, where, repo_id, message)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=folder,
            repo_id=repo_id,
            repo_type="dataset",
            revision=revision,
            commit_message=message,
            ignore_patterns=[LOCK_NAME],  # the build's output lock is not part of the dataset
        )
    except (HfHubHTTPError, httpx2.HTTPError, OSError, RuntimeError, ValueError) as err:
        # The hub client raises HTTP and transport errors, and also RuntimeError / ValueError
        # wrapping them (LFS uploads, README metadata); the caller needs the reason and the repo.
        raise _publish_error(err, repo_id, where) from err

    url = info.commit_url or info.oid
    log.info("pushed %s to %s: %s", folder, repo_id, url)
    return str(url)


def _publish_error(err: BaseException, repo_id: str, endpoint: str) -> PublishError:
    """Classify a hub client failure by walking its cause chain."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, HfHubHTTPError) and seen.response is not None:
            status = seen.response.status_code
            if status in (401, 403):
                return PublishError(
                    f"cannot push {repo_id}: token rejected by {endpoint} (HTTP {status})"
                )
            return PublishError(f"cannot push {repo_id}: {endpoint} answered HTTP {status}: {seen}")
        if isinstance(seen, httpx2.TransportError | ConnectionError):
            return PublishError(f"cannot push {repo_id}: cannot reach {endpoint} ({seen})")
        seen = seen.__cause__ or seen.__context__
    return PublishError(f"cannot push {repo_id} to {endpoint}: {err}")
