"""Names the PR's tests import from the framework that the setup state does not define.

Reads: the PR's test files and the framework's modules at the PR's commit, and the setup-state
bytes of the target files. Writes nothing; the builder stores the result in
`tests.unresolved_imports` (the setup state lost the name: `curation.check` fails a task whose
requirement does not name it) and `tests.undefined_upstream` (the PR's own commit does not
define it either: the tests that import it fail with the gold, so the GPU never keeps them, and
the check warns).
Rule: the setup state of a file that holds no target is its version at the PR's commit, so only
`from <framework module> import <name>` lines are checked, against the module's top-level
definitions, imports and assignments in its setup-state version (a name that is a sub-module,
`module/<name>.py` or a package, counts as defined). Modules outside the repository (torch,
pytest, ...) and star imports are not checked.
Seen on flash-linear-attention: 739ef15f97's test_simple_gla.py imports
`fused_recurrent_simple_gla` from `fla.ops.simple_gla`, whose `__init__.py` at that commit does
not export it; its test_gla.py tests verified the task on the GPU.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from curation.testsel import module_name

# what a name in `tests.undefined_upstream` is (the check's warning; eval.gate's reason when such
# a module is all a selection could run)
UNDEFINED_UPSTREAM = "the PR's tests import names that its own commit does not define"


def top_level_names(source: bytes) -> set[str] | None:
    """What a module defines at its top level (None when it does not parse, or when it defines
    names that no statement spells: `from x import *`, a module `__getattr__`, attributes set on
    `sys.modules[__name__]` or through `globals()`; flash-linear-attention's fla/utils.py
    registers its lower-case aliases such as `is_intel_alchemist` with setattr)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if _dynamic(tree):
        return None
    return bound_names(ast.walk(tree))


def bound_names(nodes: Iterable[ast.AST]) -> set[str]:
    """The names these statements bind: definitions, imports and assignment targets."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _dynamic(tree: ast.Module) -> bool:
    """Whether the module makes names at import that no statement spells."""
    if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name == "globals":
                return True
        if (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) == "sys.modules"
            and ast.unparse(node.slice) == "__name__"
        ):
            return True
    return False


def imported_names(source: bytes) -> list[tuple[str, str]]:
    """(module, name) of each absolute `from module import name` in a test file."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [(node.module, a.name) for a in node.names if a.name != "*"]
    return out


def import_gaps(
    tests: Mapping[str, bytes],
    modules: Mapping[str, bytes],
    setup: Mapping[str, bytes],
    tree: Iterable[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(`module.name`s the setup state lost, `module.name`s the PR's commit does not define
    either) among the names the tests import from framework modules. `modules`: module files at
    the PR's commit (path -> bytes), `setup`: the setup-state bytes of the target files, `tree`:
    every path at the PR's commit."""
    paths = list(tree)
    by_module: dict[str, str] = {}
    for path in paths:
        mod = module_name(path)
        if mod is not None:
            by_module.setdefault(mod, path)
    lost: set[str] = set()
    upstream: set[str] = set()
    for data in tests.values():
        for module, name in imported_names(data):
            found = by_module.get(module)
            if found is None or f"{module}.{name}" in by_module:
                continue  # not the framework's, or a sub-module
            gold = modules.get(found)
            source = setup.get(found, gold)
            if source is None or _defines(source, name):
                continue
            qualified = f"{module}.{name}"
            (lost if gold is not None and _defines(gold, name) else upstream).add(qualified)
    return tuple(sorted(lost)), tuple(sorted(upstream))


def _defines(source: bytes, name: str) -> bool:
    """Whether the module binds `name` at its top level (True when that cannot be known)."""
    defined = top_level_names(source)
    return defined is None or name in defined


def modules_to_read(tests: Mapping[str, bytes], tree: Iterable[str]) -> list[str]:
    """The framework module files the tests import from (what the builder must read)."""
    by_module = {m: p for p in tree if (m := module_name(p)) is not None}
    wanted = {by_module[m] for data in tests.values() for m, _ in imported_names(data)
              if m in by_module}  # fmt: skip
    return sorted(wanted)
