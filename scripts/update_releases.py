"""Regenerate `envbuild/releases.json`: torch and triton releases with their dates and needs.

Reads: PyPI's JSON API (`/pypi/torch/json`, `/pypi/torch/<version>/json`, the same for triton).
Where a mirror does not serve the per-version JSON, the core metadata of one Linux x86_64 wheel
(PEP 658, `<wheel url>.metadata`, else read out of the wheel with byte ranges) stands in.
Writes: `envbuild/releases.json` (or `--out`), only after every request succeeded, so a network
failure leaves the old snapshot in place. `--packages a,b` adds the release dates of other
packages (the ones frameworks' tests pin by date) under `packages`; `--packages-only` refreshes
just those.
Refuses: pre-releases, dev and post releases, and torch releases older than 2.0.0.

Per torch release it keeps the upload date (the earliest upload of its files), the triton
requirement (`triton==3.3.0`, also the `pytorch-triton` forms), the default CUDA (from
`nvidia-cuda-runtime-cu12==12.x.y`, `-cu13`, or `cuda-toolkit==13.x.y`) and the Python versions
(from classifiers and the wheels' `cpXY` tags).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import zlib
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

log = logging.getLogger("update_releases")

PYPI = "https://pypi.org/pypi"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "envbuild" / "releases.json"
MIN_TORCH = Version("2.0.0")
TIMEOUT_S = 60

_CUDA_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
_CP_TAG = re.compile(r"^cp3(\d+)$")  # cp313t (free-threaded) deliberately does not match
_CLASSIFIER_PY = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")


class FetchError(RuntimeError):
    """A PyPI request failed; the snapshot is not rewritten."""


def _get_json(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            data: dict[str, Any] = json.load(resp)
            return data
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, TimeoutError, OSError, json.JSONDecodeError) as exc:
        raise FetchError(f"cannot read {url}: {exc}") from exc


def _get_text(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            body: bytes = resp.read()
            return body.decode("utf-8", "replace")
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise FetchError(f"cannot read {url}: {exc}") from exc


def _final_versions(project: dict[str, Any], minimum: Version | None) -> list[Version]:
    out = []
    for raw, files in project["releases"].items():
        try:
            v = Version(raw)
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or v.is_postrelease or v.local or not files:
            continue
        if all(f.get("yanked") for f in files):
            continue
        if minimum is None or v >= minimum:
            out.append(v)
    return sorted(out)


def _upload_date(files: list[dict[str, Any]]) -> str:
    stamps = [f["upload_time_iso_8601"] for f in files if f.get("upload_time_iso_8601")]
    return min(stamps)[:10]


def _linux_wheels(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    wheels = [
        f
        for f in files
        if f["filename"].endswith(".whl") and "linux" in f["filename"] and "x86_64" in f["filename"]
    ]
    # Every Linux x86_64 wheel of a release carries the same requirements; newest tag first.
    return sorted(wheels, key=lambda f: f["filename"], reverse=True)


def _range(url: str, start: int, end: int) -> bytes:
    req = urllib.request.Request(url, headers={"Range": f"bytes={start}-{end}"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            if resp.status != 206:
                raise FetchError(f"{url}: the server ignores byte ranges")
            data: bytes = resp.read()
            return data
    except urllib.error.URLError as exc:
        raise FetchError(f"cannot read {url}: {exc}") from exc


def _metadata_from_zip(url: str, size: int) -> str:
    """METADATA of a remote wheel through byte ranges: a few KB instead of the whole wheel."""
    tail = _range(url, max(0, size - 65_536), size - 1)
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise FetchError(f"{url}: no end of central directory")
    cd_size, cd_offset = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    central = _range(url, cd_offset, cd_offset + cd_size - 1)
    pos = 0
    while pos + 46 <= len(central) and central[pos : pos + 4] == b"PK\x01\x02":
        method, _, _, _, csize, _, nlen, xlen, clen = struct.unpack(
            "<HHHIIIHHH", central[pos + 10 : pos + 34]
        )
        (local,) = struct.unpack("<I", central[pos + 42 : pos + 46])
        name = central[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        pos += 46 + nlen + xlen + clen
        if not re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            continue
        header = _range(url, local, local + 29)
        lnlen, lxlen = struct.unpack("<HH", header[26:30])
        start = local + 30 + lnlen + lxlen
        raw = _range(url, start, start + csize - 1)
        body = zlib.decompress(raw, -15) if method == 8 else raw
        return body.decode("utf-8", "replace")
    raise FetchError(f"{url}: no METADATA in the wheel")


def _metadata(
    name: str, version: Version, files: list[dict[str, Any]], base: str
) -> dict[str, Any]:
    """requires_dist and classifiers of one release, from the per-version JSON or a wheel."""
    try:
        info = _get_json(f"{PYPI}/{name}/{version}/json")["info"]
        return {
            "requires_dist": info.get("requires_dist") or [],
            "classifiers": info.get("classifiers") or [],
        }
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise FetchError(f"{name} {version}: HTTP {exc.code}") from exc
    wheels = _linux_wheels(files)
    if not wheels:
        log.warning(
            "%s %s: no per-version JSON and no Linux wheel; requirements unknown", name, version
        )
        return {"requires_dist": [], "classifiers": []}
    text = None
    for wheel in wheels:
        try:
            text = _get_text(urllib.parse.urljoin(base, wheel["url"]) + ".metadata")
            break
        except urllib.error.HTTPError:
            continue  # not every file has its PEP 658 metadata published
    if text is None:
        wheel = wheels[0]
        text = _metadata_from_zip(urllib.parse.urljoin(base, wheel["url"]), wheel["size"])
    headers = HeaderParser().parsestr(text)
    return {
        "requires_dist": headers.get_all("Requires-Dist") or [],
        "classifiers": headers.get_all("Classifier") or [],
    }


def _parse_requirements(lines: list[str]) -> list[Requirement]:
    reqs = []
    for line in lines:
        try:
            reqs.append(Requirement(line))
        except InvalidRequirement:
            log.warning("unparsable requirement %r", line)
    return reqs


def _triton_spec(reqs: list[Requirement]) -> str | None:
    for req in reqs:
        if req.name in ("triton", "pytorch-triton") and str(req.specifier):
            # "pytorch-triton==2.1.0+e6216047b8": the local part names a commit, not a release.
            return re.sub(r"\+[\w.]+", "", str(req.specifier))
    return None


def _cuda(reqs: list[Requirement]) -> str | None:
    for req in reqs:
        name = req.name.lower()
        if _CUDA_RUNTIME.match(name) or name == "cuda-toolkit":
            for spec in req.specifier:
                if spec.operator == "==":
                    parts = spec.version.split(".")
                    return ".".join(parts[:2])
    return None


def _pythons(classifiers: list[str], files: list[dict[str, Any]]) -> list[str]:
    found = set()
    for c in classifiers:
        m = _CLASSIFIER_PY.match(c)
        if m:
            found.add(m.group(1))
    for f in files:
        m = _CP_TAG.match(f.get("python_version", ""))
        if m:
            found.add(f"3.{m.group(1)}")
    return sorted(found, key=lambda s: Version(s))


def collect() -> dict[str, Any]:
    """Query PyPI and return the snapshot's content."""
    torch_url = f"{PYPI}/torch/json"
    try:
        torch_project = _get_json(torch_url)
        triton_project = _get_json(f"{PYPI}/triton/json")
    except urllib.error.HTTPError as exc:
        raise FetchError(f"PyPI answered HTTP {exc.code}") from exc

    triton = [
        {"version": str(v), "date": _upload_date(triton_project["releases"][str(v)])}
        for v in _final_versions(triton_project, None)
    ]
    torch = []
    for v in _final_versions(torch_project, MIN_TORCH):
        files = torch_project["releases"][str(v)]
        meta = _metadata("torch", v, files, torch_url)
        reqs = _parse_requirements(meta["requires_dist"])
        entry = {
            "version": str(v),
            "date": _upload_date(files),
            "triton_spec": _triton_spec(reqs),
            "cuda": _cuda(reqs),
            "python": _pythons(meta["classifiers"], files),
        }
        log.info("torch %s: %s", v, entry)
        torch.append(entry)
    return {
        "generated": datetime.now(UTC).strftime("%Y-%m-%d"),
        "source": PYPI,
        "torch": torch,
        "triton": triton,
    }


def package_releases(name: str) -> list[dict[str, str]]:
    """Final releases of one PyPI package with their upload dates."""
    project = _get_json(f"{PYPI}/{urllib.parse.quote(name)}/json")
    return [
        {"version": str(v), "date": _upload_date(project["releases"][str(v)])}
        for v in sorted(_final_versions(project, None))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    parser.add_argument(
        "--packages", default="",
        help="comma-separated packages whose release dates to add under `packages` (the ones "
        "frameworks' tests pin by date, core/frameworks.toml `tests.date_pinned`)",
    )  # fmt: skip
    parser.add_argument(
        "--packages-only", action="store_true",
        help="keep the torch/triton tables of --out and only refresh `packages`",
    )  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    names = [n.strip() for n in args.packages.split(",") if n.strip()]
    try:
        data = json.loads(args.out.read_text()) if args.packages_only else collect()
        packages = dict(data.get("packages", {}))
        for name in names:
            packages[name] = package_releases(name)
            log.info("%s: %d releases", name, len(packages[name]))
        if packages:
            data["packages"] = packages
    except FetchError as exc:
        print(f"error: {exc}; {args.out} is left unchanged", file=sys.stderr)
        return 1
    text = json.dumps(data, indent=1) + "\n"
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
    print(f"wrote {args.out}: {len(data['torch'])} torch, {len(data['triton'])} triton releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
