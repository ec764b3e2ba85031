"""The stages are layered: each package imports only `core` and the stages before it, and
only `mining/git.py` runs git (GitPython or a `git` subprocess)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("core", "mining", "curation", "envbuild", "eval", "benchmark")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_each_stage_imports_only_the_stages_before_it() -> None:
    wrong = []
    for rank, pkg in enumerate(ORDER):
        later = set(ORDER[rank + 1 :])
        for path in sorted((ROOT / pkg).rglob("*.py")):
            bad = _imports(path) & later
            if bad:
                wrong.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert wrong == []


def test_only_the_git_gateway_runs_git() -> None:
    offenders = []
    for pkg in ORDER:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == ROOT / "mining" / "git.py":
                continue
            text = path.read_text()
            if "git" in _imports(path) or '"git",' in text or "['git'" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
