"""The framework registry: one entry per framework, read by every stage through `framework()`.

Reads: `core/frameworks.toml`, shipped inside the package. An entry holds the repository and
branch (mining), the PR message rules (mining), the install recipe and the requirement files
its environment installs (envbuild), and the test runner hints (eval). Any `owner/name` or local
path that the registry does not name resolves to an entry with the defaults.
Refuses: an unknown key or a wrongly typed value in the registry (one line naming the entry),
and a spec that is neither a registry name, an `owner/name`, nor an existing path.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from core.errors import FrameworkError, RecordError
from core.records import from_json

DEFAULT_FRAMEWORKS = ("pytorch", "vllm", "megatron-lm")
# Commit-message rules that name a commit's PR, in the order mining/prs.py tries them.
PR_RULES = ("trailer", "squash", "merge", "gitlab")
DEFAULT_RECIPE = "pip-editable"


@dataclass(frozen=True)
class InstallSpec:
    recipe: str = DEFAULT_RECIPE
    # files of the repository (at the base commit) its environment installs; () = the recipe's
    requirement_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestHints:
    __test__ = False  # not a pytest class

    env: dict[str, str] = field(default_factory=dict)  # set in every test process
    pytest_args: tuple[str, ...] = ()  # added to every pytest command line
    pythonpath: tuple[str, ...] = ()  # checkout directories put first on PYTHONPATH (src/)
    # packages the tests import whose APIs move fast: pinned to their newest release before
    # the base commit when the repository does not pin them (envbuild), installed per task
    date_pinned: tuple[str, ...] = ()
    # at least this many seconds per test run: a framework whose tests compile many large
    # kernels (flash-linear-attention's chunked ones) needs more than the default
    min_timeout_s: float = 0.0
    # tests in a selection run (0: the command's default): each one compiles its kernels
    select_max: int = 0


@dataclass(frozen=True)
class Framework:
    name: str  # short name: output sub-directory and task id prefix
    repo: str  # owner/name on GitHub ("" for a local repository with no GitHub origin)
    branch: str | None = None  # None: the repository's default branch
    path: Path | None = None  # a local clone, when the spec was a path
    pr_rules: tuple[str, ...] = PR_RULES
    install: InstallSpec = InstallSpec()
    tests: TestHints = TestHints()

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}.git"


@cache
def known_frameworks() -> dict[str, Framework]:
    """Every registry entry by name."""
    data = tomllib.loads(resources.files("core").joinpath("frameworks.toml").read_text())
    out = {}
    for name, entry in data.items():
        try:
            fw = from_json(Framework, {"name": name, **entry}, where=f"frameworks.toml [{name}]")
        except RecordError as exc:
            raise FrameworkError(str(exc)) from None
        unknown = set(fw.pr_rules) - set(PR_RULES)
        if unknown:
            raise FrameworkError(f"frameworks.toml [{name}]: unknown pr_rules {sorted(unknown)}")
        out[name] = fw
    return out


def framework(name: str) -> Framework:
    """The entry of a framework by its short name (as task records carry it); defaults for a
    name the registry does not hold (a repository mined by `owner/name` or path)."""
    return known_frameworks().get(name) or Framework(name=name, repo="")


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
    raise FrameworkError(
        f"unknown framework {spec!r}: use one of {', '.join(known)}, an owner/name "
        "GitHub repository, or the path of a local clone"
    )
