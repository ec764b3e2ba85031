"""Engineering context of a task: the code around its kernels at the base commit.

Reads: the Python files of the base commit (the PR's parent) through `mining.git.GitRepo`: one
tree listing and one blob batch per commit, kept in a small per-commit cache (`SourceCache`).
Writes: nothing; `build_context` returns `{path: FileContext}`, files and items in file / line
order, so the same inputs always give the same context.
Refuses: files that are not UTF-8 or that CPython cannot parse are skipped (logged at debug),
and so are kernel files or wrappers missing at the base commit; neither is an error.

What a kernel's context holds:
- the import statements of its file;
- the wrappers that launch it (`TargetKernel.wrappers`), whole; for a kernel the PR adds, the
  wrappers that already exist plus the def lines of its file's top-level functions;
- the functions and methods anywhere in the repository that call a wrapper, `max_callers` per
  wrapper: those in files that spell the wrapper's module name first, non-test ones first;
- the class enclosing a method wrapper and the classes of the kernel's file named in a
  wrapper's annotations.
Only files whose bytes spell a wrapper's name are parsed: that keeps a call on a repository of
a few thousand files well under a second.
"""

from __future__ import annotations

import ast
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from curation.model import ContextItem, FileContext, TargetKernel
from mining.kernels import parse_python
from mining.paths import is_test_path

if TYPE_CHECKING:
    from tree_sitter import Node

    from mining.git import GitRepo

log = logging.getLogger(__name__)

TRUNCATED = "\n# ... truncated"
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_NO_CODE = frozenset({"string", "concatenated_string", "comment"})
_IDENT = re.compile(r"[A-Za-z_]\w*")
# Methods nobody calls by their own name: `Fn.apply(...)` runs an autograd Function's forward
# and backward, `Module(...)(x)` a module's forward; callers spell the class name instead.
_CALLED_THROUGH_CLASS = frozenset({"forward", "backward"})


class SourceCache:
    """The Python files of the last few commits asked for, each commit read in one blob batch.

    Blobs already read for a cached commit are reused, so neighbouring commits cost only the
    files that differ.
    """

    def __init__(self, repo: GitRepo, max_commits: int = 4):
        self.repo = repo
        self.max_commits = max_commits
        self._commits: OrderedDict[str, tuple[dict[str, str], dict[str, bytes]]] = OrderedDict()

    def tree(self, commit: str) -> dict[str, str]:
        """path -> blob sha of every .py file at `commit`."""
        return self._load(commit)[0]

    def files(self, commit: str) -> dict[str, bytes]:
        """path -> content of every .py file at `commit` (unreadable blobs left out)."""
        return self._load(commit)[1]

    def _load(self, commit: str) -> tuple[dict[str, str], dict[str, bytes]]:
        hit = self._commits.get(commit)
        if hit is not None:
            self._commits.move_to_end(commit)
            return hit
        tree = self.repo.list_tree(commit, (".py",))
        known: dict[str, bytes] = {}
        for old_tree, old_files in self._commits.values():
            for path, data in old_files.items():
                known[old_tree[path]] = data
        fresh = self.repo.read_blobs({p: s for p, s in tree.items() if s not in known})
        files = {}
        for path, sha in tree.items():
            content = known[sha] if sha in known else fresh.get(path)
            if content is not None:
                files[path] = content
        self._commits[commit] = (tree, files)
        if len(self._commits) > self.max_commits:
            self._commits.popitem(last=False)
        return tree, files


def parse_module(data: bytes, path: str) -> Node | None:
    """The tree-sitter root of a Python file, or None when it is not UTF-8 or not valid Python."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        log.debug("%s: not UTF-8, skipped", path)
        return None
    root = parse_python(data).root_node
    if root.has_error:
        # tree-sitter's grammar lags the language in places; CPython decides what is valid.
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            log.debug("%s: syntax error, skipped", path)
            return None
    return root


def truncate(source: str, max_chars: int) -> str:
    """`source` cut at a line end and marked, so that it fits in `max_chars` marker included."""
    if len(source) <= max_chars:
        return source
    budget = max(0, max_chars - len(TRUNCATED))
    cut = source.rfind("\n", 0, budget + 1)
    return source[: cut if cut > 0 else budget] + TRUNCATED


@dataclass(frozen=True)
class _Call:
    name: str  # the callee's last identifier
    owner: str | None  # the identifier before it in `a.b.name(...)`; None for `name(...)`


@dataclass
class _Def:
    """One def or class of a file; byte ranges point into `_PyFile.data`."""

    qualname: str
    kind: str  # function | method | class
    top_level: bool
    lines: tuple[int, int]  # decorators included, 1-based inclusive
    header_lines: tuple[int, int]  # `def` / `class` keyword to the colon
    source_bytes: tuple[int, int]
    header_bytes: tuple[int, int]
    annotations: frozenset[str]  # identifiers in parameter and return annotations
    calls: list[_Call] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class _PyFile:
    data: bytes
    imports: tuple[str, ...]
    defs: list[_Def]

    def get(self, qualname: str) -> _Def | None:
        return next((d for d in self.defs if d.qualname == qualname), None)

    def text(self, span: tuple[int, int]) -> str:
        return self.data[span[0] : span[1]].decode("utf-8")


def _analyse(data: bytes, path: str) -> _PyFile | None:
    """Defs, module-level imports and the calls inside each def, in one walk of the tree."""
    root = parse_module(data, path)
    if root is None:
        return None
    imports: list[str] = []
    defs: list[_Def] = []
    # Iterative, not recursive: long expression chains nest deeper than Python's stack.
    stack: list[tuple[Node, tuple[tuple[str, str], ...], _Def | None]] = [(root, (), None)]
    while stack:
        node, scope, owner = stack.pop()
        kind = node.type
        if kind in _NO_CODE:
            continue
        if kind in ("function_definition", "class_definition"):
            owner = _make_def(node, scope, data)
            defs.append(owner)
            scope = (*scope, (owner.name, "class" if owner.kind == "class" else "function"))
        elif kind in _IMPORTS:
            if not scope:  # imports inside functions are details of those functions
                imports.append(_node_text(node))
            continue
        elif kind == "call" and owner is not None:
            call = _call(node)
            if call is not None:
                owner.calls.append(call)
        stack.extend((c, scope, owner) for c in reversed(node.children) if c.child_count)
    return _PyFile(data, tuple(imports), defs)


def _node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _make_def(node: Node, scope: tuple[tuple[str, str], ...], data: bytes) -> _Def:
    parent = node.parent
    outer = parent if parent is not None and parent.type == "decorated_definition" else node
    name_node = node.child_by_field_name("name")
    name = _node_text(name_node) if name_node is not None else "?"
    is_class = node.type == "class_definition"
    kind = "class" if is_class else "method" if scope and scope[-1][1] == "class" else "function"
    colon = next((c for c in node.children if c.type == ":"), None)
    header_end = colon if colon is not None else node
    annotations: set[str] = set()
    if not is_class:
        params = node.child_by_field_name("parameters")
        types = [p.child_by_field_name("type") for p in params.named_children] if params else []
        types.append(node.child_by_field_name("return_type"))
        for t in types:
            if t is not None:
                # the regex also reads names inside string annotations ("Config")
                annotations.update(_IDENT.findall(_node_text(t)))
    return _Def(
        qualname=".".join([*(s for s, _ in scope), name]),
        kind=kind,
        top_level=not scope,
        lines=(outer.start_point.row + 1, node.end_point.row + 1),
        header_lines=(node.start_point.row + 1, header_end.end_point.row + 1),
        source_bytes=(_line_start(data, outer.start_byte), node.end_byte),
        header_bytes=(_line_start(data, node.start_byte), header_end.end_byte),
        annotations=frozenset(annotations),
    )


def _line_start(data: bytes, pos: int) -> int:
    # Methods keep their indentation so that every line of the source lines up.
    start = data.rfind(b"\n", 0, pos) + 1
    return start if not data[start:pos].strip() else pos


def _call(node: Node) -> _Call | None:
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    if callee.type == "identifier":
        return _Call(_node_text(callee), None)
    if callee.type != "attribute":
        return None  # `kernel[grid](...)`, `f()(...)`: not a call of a named function
    attr = callee.child_by_field_name("attribute")
    obj = callee.child_by_field_name("object")
    if attr is None:
        return None
    if obj is not None and obj.type == "attribute":
        obj = obj.child_by_field_name("attribute")
    owner = _node_text(obj) if obj is not None and obj.type == "identifier" else None
    return _Call(_node_text(attr), owner)


def _call_target(wrapper: _Def) -> tuple[str, Callable[[_Call], bool]]:
    """(the name a caller's bytes must spell, whether a call in it calls the wrapper)."""
    name = wrapper.name
    if wrapper.kind != "method":
        return name, lambda c: c.name == name
    cls = wrapper.qualname.split(".")[-2]
    if name in _CALLED_THROUGH_CLASS or (name.startswith("__") and name.endswith("__")):
        return cls, lambda c: c.name == cls or (c.owner == cls and c.name in ("apply", name))
    return name, lambda c: c.owner is not None and c.name == name  # self.m(), obj.m(), C.m()


class _Picked:
    """The items chosen so far; the first reason given for an item is the one kept."""

    def __init__(self, max_source_chars: int):
        self.max_source_chars = max_source_chars
        self.items: dict[tuple[str, str], ContextItem] = {}
        self.imports: dict[str, tuple[str, ...]] = {}

    def has(self, path: str, d: _Def) -> bool:
        return (path, d.qualname) in self.items

    def add(self, path: str, pf: _PyFile, d: _Def, why: str, *, header_only: bool = False) -> None:
        if self.has(path, d):
            return
        if header_only:
            source, (start, end) = pf.text(d.header_bytes), d.header_lines
        else:
            source, (start, end) = pf.text(d.source_bytes), d.lines
        self.items[path, d.qualname] = ContextItem(
            name=d.qualname,
            kind=d.kind,
            signature=" ".join(pf.text(d.header_bytes).split()),
            source=truncate(source, self.max_source_chars),
            why=why,
            start_line=start,
            end_line=end,
        )

    def result(self) -> dict[str, FileContext]:
        by_file: dict[str, list[ContextItem]] = {}
        for (path, _), item in self.items.items():
            by_file.setdefault(path, []).append(item)
        out = {}
        for path in sorted(by_file.keys() | self.imports.keys()):
            items = sorted(by_file.get(path, ()), key=lambda i: (i.start_line, i.name))
            out[path] = FileContext(
                functions=tuple(i for i in items if i.kind != "class"),
                classes=tuple(i for i in items if i.kind == "class"),
                imports=self.imports.get(path, ()),
            )
        return out


class ContextBuilder:
    """Builds task contexts for one repository, reusing file contents and parses across calls."""

    def __init__(self, repo: GitRepo, cache: SourceCache | None = None, max_parsed: int = 4096):
        self.cache = cache or SourceCache(repo)
        self.max_parsed = max_parsed
        self._parsed: OrderedDict[str, _PyFile | None] = OrderedDict()  # by blob sha

    def build(
        self,
        base_commit: str,
        kernels: Sequence[TargetKernel],
        *,
        max_callers: int = 6,
        max_source_chars: int = 6000,
    ) -> dict[str, FileContext]:
        """The context of `kernels` at `base_commit`, keyed by file path."""
        files = self.cache.files(base_commit)
        tree = self.cache.tree(base_commit)
        picked = _Picked(max_source_chars)
        wrappers: list[tuple[str, _PyFile, _Def]] = []
        added_into: list[tuple[str, _PyFile]] = []
        for k in kernels:
            path = k.old_file or k.file
            pf = self._file(path, tree, files)
            if pf is None:
                log.debug("%s: %s absent or unreadable at %s", k.name, path, base_commit[:10])
                continue
            picked.imports[path] = pf.imports
            for qualname in k.wrappers:
                d = pf.get(qualname)
                if d is None:
                    log.debug("%s: wrapper %s not in %s at base", k.name, qualname, path)
                    continue
                wrappers.append((path, pf, d))
                picked.add(path, pf, d, f"launches {k.name}")
            if k.before_src is None:
                added_into.append((path, pf))

        for path, pf, d in wrappers:
            if d.kind == "method":
                cls = pf.get(d.qualname.rsplit(".", 1)[0])
                if cls is not None:
                    picked.add(path, pf, cls, "class of wrapper")
            for c in pf.defs:
                if c.kind == "class" and c.name in d.annotations:
                    picked.add(path, pf, c, "type in wrapper signature")

        # A kernel the PR adds has no launcher yet: the file's API shows where it will fit.
        for path, pf in added_into:
            for d in pf.defs:
                if d.top_level and d.kind == "function":
                    why = "function of the file the kernel goes into"
                    picked.add(path, pf, d, why, header_only=True)

        # `Fn.apply(...)` reaches forward and backward alike: credit it to the forward.
        for path, _, d in sorted(wrappers, key=lambda w: w[2].name == "backward"):
            for cpath, cpf, caller in self._callers(path, d, tree, files, max_callers):
                picked.add(cpath, cpf, caller, f"calls {d.qualname}")
        return picked.result()

    def _file(self, path: str, tree: dict[str, str], files: dict[str, bytes]) -> _PyFile | None:
        sha, data = tree.get(path), files.get(path)
        if sha is None or data is None:
            return None
        if sha in self._parsed:
            self._parsed.move_to_end(sha)
            return self._parsed[sha]
        pf = _analyse(data, path)
        self._parsed[sha] = pf
        if len(self._parsed) > self.max_parsed:
            self._parsed.popitem(last=False)
        return pf

    def _callers(
        self,
        wrapper_path: str,
        wrapper: _Def,
        tree: dict[str, str],
        files: dict[str, bytes],
        max_callers: int,
    ) -> list[tuple[str, _PyFile, _Def]]:
        """Up to `max_callers` functions calling `wrapper`, non-test ones first."""
        needle, calls_it = _call_target(wrapper)
        needle_b = needle.encode()
        # `torch.add(...)` matches a wrapper named `add` too; files that spell the wrapper's
        # module name are likelier to mean the wrapper, so they rank first.
        stem = wrapper_path.rsplit("/", 1)[-1].removesuffix(".py")
        if stem == "__init__":
            stem = wrapper_path.rsplit("/", 2)[-2] if "/" in wrapper_path else stem
        stem_b = stem.encode()
        found: list[tuple[bool, bool, str, int, _PyFile, _Def]] = []
        for path, data in files.items():
            if needle_b not in data:  # cheap: most files never spell the name
                continue
            pf = self._file(path, tree, files)
            if pf is None:
                continue
            related = path == wrapper_path or stem_b in data
            for d in pf.defs:
                if d.kind == "class" or (path == wrapper_path and d.qualname == wrapper.qualname):
                    continue
                if any(calls_it(c) for c in d.calls):
                    found.append((not related, is_test_path(path), path, d.lines[0], pf, d))
        found.sort(key=lambda f: f[:4])
        return [(path, pf, d) for _, _, path, _, pf, d in found[:max_callers]]


def build_context(
    repo: GitRepo,
    base_commit: str,
    kernels: Sequence[TargetKernel],
    *,
    max_callers: int = 6,
    max_source_chars: int = 6000,
) -> dict[str, FileContext]:
    """The engineering context of `kernels` at `base_commit` (see the module docstring)."""
    return ContextBuilder(repo).build(
        base_commit, kernels, max_callers=max_callers, max_source_chars=max_source_chars
    )
