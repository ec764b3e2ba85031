"""Framework registry: short names -> GitHub repositories, read from `frameworks.toml`.

Reads: the TOML file shipped inside the package. Accepts any `owner/name` or a local path too.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from mining.errors import MiningError

DEFAULT_FRAMEWORKS = ("pytorch", "vllm", "megatron-lm")


@dataclass(frozen=True)
class Framework:
    name: str  # short name, used as the output sub-directory
    repo: str  # owner/name on GitHub ("" for a local repository with no GitHub origin)
    branch: str | None = None  # None: the repository's default branch
    path: Path | None = None  # a local clone, when the spec was a path

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}.git"


@cache
def known_frameworks() -> dict[str, Framework]:
    text = resources.files("mining").joinpath("frameworks.toml").read_text()
    data = tomllib.loads(text)
    return {
        name: Framework(name=name, repo=entry["repo"], branch=entry.get("branch"))
        for name, entry in data.items()
    }


def resolve_framework(spec: str) -> Framework:
    """A registry name, an `owner/name` GitHub repository, or a path to a local clone."""
    known = known_frameworks()
    if spec.lower() in known:
        return known[spec.lower()]
    for fw in known.values():
        if fw.repo.lower() == spec.lower():
            return fw
    path = Path(spec).expanduser()
    if path.exists():
        return Framework(name=path.resolve().name.removesuffix(".git").lower(), repo="", path=path)
    if spec.count("/") == 1 and all(spec.split("/")):
        owner, name = spec.split("/")
        return Framework(name=f"{owner}__{name}".lower(), repo=spec)
    raise MiningError(
        f"unknown framework {spec!r}: use one of {', '.join(known)}, an owner/name "
        "GitHub repository, or the path of a local clone"
    )
