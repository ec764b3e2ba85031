"""Which tests judge a task: the PR's own tests and the existing tests that import its kernels.

Reads: the PR's changed paths, the tree of the merge commit (which changed tests exist after
the PR) and the Python files of the base commit through `curation.context.SourceCache`.
Writes: nothing; `select_tests` returns a `TestSelection` whose outcome lists stay empty
(eval fills them).
Refuses: nothing is an error. Unparsable or non-UTF-8 files are skipped (logged at debug);
imports are read statically, never executed, so a test that reaches a kernel only through
`importlib` with a computed name is not found.

An existing test is selected when it imports a kernel's module (`import a.b.c`, `from a.b import
c`, `from a.b.c import x`, relative imports, `pytest.importorskip("a.b.c")`) or imports one of
its wrappers from a package above it; after those come tests importing a non-test module that
itself imports a kernel's module (one hop), only when no direct test exists and only those
whose file names share a word with the kernels. The names a test may import a kernel by are its
wrappers, the classes of wrapper methods, and the module's functions and classes that call them
(autograd `Function`s and the public ops over them), from the module or any package above it
(re-exports). Tests are ranked by the words their names share with the kernels. Files under a
leading `src/` or `python/` directory are matched as if that directory were not there (src
layouts). Only files pytest collects by
default (`test_*.py`, `*_test.py` under a test path; never conftest.py) are run, the PR's own
tests included: a helper module under tests/ holds no tests.
"""

from __future__ import annotations

import ast
import logging
import re
import shlex
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from curation.context import SourceCache, parse_module
from curation.model import TargetKernel, TestSelection
from mining.paths import is_test_path

if TYPE_CHECKING:
    from tree_sitter import Node

    from mining.git import GitRepo

log = logging.getLogger(__name__)

_SRC_DIRS = ("src", "python")
_IMPORT_CALLS = frozenset({"import_module", "importorskip", "__import__"})
_IMPORT_CALLS_RE = re.compile(rb"import_module|importorskip|__import__")
# The text of what looks like an import: a cheap screen before a file is parsed, since a
# module's last name ("experts", "activations") is often a common word elsewhere in a file.
_IMPORTISH = re.compile(
    rb"(?m)^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|(?:[^\n\\]|\\[\s\S])*)"
    rb"|import[ \t]+(?:[^\n\\]|\\[\s\S])*)"  # a backslash continues the line
    rb"|(?:import_module|importorskip|__import__)\([^)]*\)"
)
# Nodes whose children can be statements: where an import statement may stand.
_STATEMENT_BODIES = frozenset(
    {
        "module", "block", "function_definition", "class_definition", "decorated_definition",
        "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
        "except_group_clause", "finally_clause", "with_statement", "for_statement",
        "while_statement", "match_statement", "case_clause",
    }
)  # fmt: skip


def is_test_module(path: str) -> bool:
    """A file pytest collects by default: a test path named `test_*.py` or `*_test.py`."""
    name = PurePosixPath(path).name
    return (
        is_test_path(path)
        and name != "conftest.py"
        and ((name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py"))
    )


def package_path(path: str) -> str:
    """`src/a/b.py` -> `a/b.py`: a file's path from its package root (a leading src/ or python/
    dropped), the end of the file name Python gives its code wherever the package is imported
    from."""
    head, sep, rest = path.partition("/")
    return rest if sep and head in _SRC_DIRS else path


def module_name(path: str) -> str | None:
    """`a/b/c.py` -> `a.b.c`, `a/b/__init__.py` -> `a.b`, without a leading src/ or python/."""
    if not path.endswith(".py"):
        return None
    parts = package_path(path)[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _canonical(module: str) -> str:
    head, _, rest = module.partition(".")
    return rest if head in _SRC_DIRS and rest else module


@dataclass(frozen=True)
class _Import:
    level: int  # leading dots of a relative import; 0 for an absolute one
    module: str  # "" for `from . import x`
    names: tuple[str, ...]  # what `from ... import` binds; empty for `import a.b`


@dataclass(frozen=True)
class _Imported:
    """What one file imports, resolved to absolute module names."""

    modules: frozenset[str]  # every module named, including `a.b.c` of `from a.b import c`
    names: frozenset[tuple[str, str]]  # (module, name) of each `from module import name`


def _imports(root: Node, with_calls: bool) -> list[_Import]:
    """Every import of a file, wherever it stands (tests often import inside functions).

    Import statements are statements, so only statement bodies are walked, which skips most of
    a large file's nodes; expressions are walked too when `with_calls` asks for import calls.
    """
    out: list[_Import] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "import_statement":
            for c in node.named_children:
                name = c.child_by_field_name("name") if c.type == "aliased_import" else c
                if name is not None and name.type == "dotted_name":
                    out.append(_Import(0, _text(name), ()))
            continue
        if kind == "import_from_statement":
            out.append(_from_import(node))
            continue
        if with_calls:
            if kind in ("string", "comment"):
                continue
            if kind == "call":
                found = _import_call(node)
                if found is not None:
                    out.append(found)
        elif kind not in _STATEMENT_BODIES:
            continue
        stack.extend(c for c in node.children if c.child_count)
    return out


def _from_import(node: Node) -> _Import:
    mod = node.child_by_field_name("module_name")
    level, module = 0, ""
    if mod is not None and mod.type == "relative_import":
        for c in mod.children:
            if c.type == "import_prefix":
                level = len(_text(c).strip())
            elif c.type == "dotted_name":
                module = _text(c)
    elif mod is not None:
        module = _text(mod)
    names = []
    for c in node.children_by_field_name("name"):
        name = c.child_by_field_name("name") if c.type == "aliased_import" else c
        if name is not None:
            names.append(_text(name))
    if any(c.type == "wildcard_import" for c in node.children):
        names.append("*")
    return _Import(level, "".join(module.split()), tuple(names))


def _import_call(node: Node) -> _Import | None:
    """`importlib.import_module("a.b")`, `pytest.importorskip("a.b")` with a literal name."""
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    if callee.type == "attribute":
        callee = callee.child_by_field_name("attribute")
    if callee is None or _text(callee) not in _IMPORT_CALLS:
        return None
    args = node.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    if first is None or first.type != "string":
        return None
    content = [c for c in first.children if c.type not in ("string_start", "string_end")]
    if len(content) != 1 or content[0].type != "string_content":
        return None  # f-strings and escapes: a computed name
    name = _text(content[0])
    ok = name and all(p.isidentifier() for p in name.split("."))
    return _Import(0, name, ()) if ok else None


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _resolve(path: str, imports: Iterable[_Import]) -> _Imported:
    # Relative imports resolve against the package as the file spells it (src/ included).
    parts = path[:-3].split("/")
    package = parts[:-1]
    modules: set[str] = set()
    names: set[tuple[str, str]] = set()
    for imp in imports:
        if imp.level:
            if imp.level - 1 > len(package):
                continue  # beyond the top of the tree: nothing in this repository
            base_parts = package[: len(package) - (imp.level - 1)]
            base = ".".join([*base_parts, *filter(None, imp.module.split("."))])
        else:
            base = imp.module
        if not base:
            continue
        base = _canonical(base)
        modules.add(base)
        for n in imp.names:
            if n != "*":
                modules.add(f"{base}.{n}")
                names.add((base, n))
    return _Imported(frozenset(modules), frozenset(names))


@dataclass(frozen=True)
class _Target:
    """A kernel's module and the names its wrappers are imported by."""

    module: str
    names: frozenset[str]

    @property
    def packages(self) -> frozenset[str]:
        """The module and every package above it (a wrapper may be re-exported by any)."""
        parts = self.module.split(".")
        return frozenset(".".join(parts[:i]) for i in range(1, len(parts) + 1))

    def imported_by(self, imp: _Imported) -> bool:
        if self.module in imp.modules:
            return True
        packages = self.packages
        return any(mod in packages and n in self.names for mod, n in imp.names)


def _targets(
    kernels: Sequence[TargetKernel], base_tree: dict[str, str], files: dict[str, bytes]
) -> list[_Target]:
    out: dict[str, set[str]] = {}
    for k in kernels:
        path = k.old_file or k.file
        module = module_name(path) if path in base_tree else None
        if module is None:
            continue  # the PR creates the file: no existing test can import it
        names = out.setdefault(module, set())
        for w in k.wrappers:
            parts = w.split(".")
            names.add(parts[0])  # a function, or the class of a method
        names.add(k.name)
        names |= _callers_in_module(files.get(path, b""), names)
    return [_Target(m, frozenset(n)) for m, n in sorted(out.items())]


def _callers_in_module(data: bytes, names: set[str], depth: int = 2) -> set[str]:
    """Top-level functions and classes of a module that call one of `names` (an autograd
    `Function` whose `forward` calls a wrapper, a public op calling that Function's `apply`),
    `depth` steps out: tests import these, not the kernel."""
    if not data:
        return set()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    wanted = set(names)
    for _ in range(depth):
        new = set()
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if node.name in wanted or node.name in found:
                continue
            called = {
                n.id if isinstance(n, ast.Name) else n.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Name | ast.Attribute)
            }
            if called & wanted:
                new.add(node.name)
        if not new:
            break
        found |= new
        wanted |= new
    return found


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 2} - _COMMON_WORDS


_COMMON_WORDS = frozenset({"test", "tests", "kernel", "kernels", "triton", "ops", "fused", "py"})


def rank_tests(paths: Iterable[str], kernels: Sequence[TargetKernel]) -> list[str]:
    """`paths` most related first: by the words their file names share with the kernels'
    modules, names and wrappers (`test_rms_norm.py` for `ops/rms_norm.py`), then by path."""
    words: set[str] = set()
    for k in kernels:
        words |= _words(PurePosixPath(k.file).stem) | _words(k.name)
        for w in k.wrappers:
            words |= _words(w)
    return sorted(paths, key=lambda p: (-len(_words(PurePosixPath(p).stem) & words), p))


class TestSelector:
    """Selects tests for tasks of one repository, reusing file contents and parses."""

    __test__ = False  # not a pytest test class despite its name

    def __init__(self, repo: GitRepo, cache: SourceCache | None = None, max_parsed: int = 8192):
        self.repo = repo
        self.cache = cache or SourceCache(repo)
        self.max_parsed = max_parsed
        self._parsed: OrderedDict[str, list[_Import] | None] = OrderedDict()  # by blob sha

    def select(
        self,
        base_commit: str,
        merge_commit: str,
        changed_paths: Sequence[tuple[str, str]],
        kernels: Sequence[TargetKernel],
        *,
        max_existing: int = 10,
    ) -> TestSelection:
        """The PR's tests plus at most `max_existing` existing tests that import its kernels."""
        merge_tree = self.repo.list_tree(merge_commit, (".py",))
        changed = sorted(
            {
                path
                for path, status in changed_paths
                if not status.startswith("D") and path in merge_tree and is_test_module(path)
            }
        )
        base_tree = self.cache.tree(base_commit)
        files = self.cache.files(base_commit)
        direct, hop = self._importers(base_tree, files, _targets(kernels, base_tree, files))
        log.debug("%s: %d direct and %d one-hop importers", base_commit[:10], len(direct), len(hop))
        # One hop reaches far (a module importing every op pulls in every test of the package):
        # one-hop tests count only when no test imports a kernel's module or wrappers, and
        # only those whose names share a word with the kernels.
        if direct:
            hop = []
        else:
            hop = [p for p in rank_tests(hop, kernels) if _shares_words(p, kernels)][:3]
        # An existing test runs after the test patch is applied: it must survive the PR.
        keep = [p for p in rank_tests(direct, kernels) + hop if p not in changed]
        keep = [p for p in keep if p in merge_tree]
        existing = tuple(keep[:max_existing])
        run = [*changed, *existing]
        command = f"python -m pytest -q -rA {shlex.join(run)}" if run else ""
        return TestSelection(
            command=command, changed_in_pr=tuple(changed), selected_existing=existing
        )

    def _importers(
        self, tree: dict[str, str], files: dict[str, bytes], targets: list[_Target]
    ) -> tuple[list[str], list[str]]:
        """(tests importing a target, tests importing a non-test importer of one), by path."""
        if not targets:
            return [], []
        needles = {t.module.rsplit(".", 1)[-1] for t in targets}
        needles.update(n for t in targets for n in t.names)
        kernel_modules = {t.module for t in targets}
        above = set().union(*(t.packages for t in targets)) - kernel_modules
        direct: list[str] = []
        middle: set[str] = set()
        for path, imported in self._scan(tree, files, needles):
            if not any(t.imported_by(imported) for t in targets):
                continue
            module = module_name(path)
            if is_test_module(path):
                direct.append(path)
            elif (
                module is not None
                and module not in kernel_modules
                and module not in above
                and not path.endswith("conftest.py")  # pytest loads it; nothing imports it
            ):
                # A package above the kernel re-exports it; counting its importers would pull in
                # every test of the package, so only real intermediaries are hops.
                middle.add(module)
        hop: list[str] = []
        if middle:
            seen = set(direct)
            needles = {m.rsplit(".", 1)[-1] for m in middle}
            for path, imported in self._scan(tree, files, needles):
                if path not in seen and is_test_module(path) and imported.modules & middle:
                    hop.append(path)
        return sorted(direct), sorted(hop)

    def _scan(
        self, tree: dict[str, str], files: dict[str, bytes], needles: set[str]
    ) -> Iterable[tuple[str, _Imported]]:
        """(path, imports) of each file whose bytes spell one of `needles`, by path."""
        needles_b = [n.encode() for n in needles]
        words = re.compile(rb"\b(?:" + b"|".join(re.escape(n) for n in needles_b) + rb")\b")
        for path in sorted(files):
            data = files[path]
            if not any(n in data for n in needles_b):
                continue
            if not any(words.search(m.group()) for m in _IMPORTISH.finditer(data)):
                continue
            imports = self._file_imports(tree[path], data, path)
            if imports:
                yield path, _resolve(path, imports)

    def _file_imports(self, sha: str, data: bytes, path: str) -> list[_Import] | None:
        if sha in self._parsed:
            self._parsed.move_to_end(sha)
            return self._parsed[sha]
        root = parse_module(data, path)
        with_calls = _IMPORT_CALLS_RE.search(data) is not None
        imports = _imports(root, with_calls) if root is not None else None
        self._parsed[sha] = imports
        if len(self._parsed) > self.max_parsed:
            self._parsed.popitem(last=False)
        return imports


def _shares_words(path: str, kernels: Sequence[TargetKernel]) -> bool:
    words = set().union(*(_words(PurePosixPath(k.file).stem) | _words(k.name) for k in kernels))
    return bool(_words(PurePosixPath(path).stem) & words)


def select_tests(
    repo: GitRepo,
    base_commit: str,
    merge_commit: str,
    changed_paths: Sequence[tuple[str, str]],
    kernels: Sequence[TargetKernel],
    *,
    max_existing: int = 10,
) -> TestSelection:
    """The tests of a task (see the module docstring); `command` is "" when there are none."""
    return TestSelector(repo).select(
        base_commit, merge_commit, changed_paths, kernels, max_existing=max_existing
    )
