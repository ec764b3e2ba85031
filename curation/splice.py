"""Put kernels (and their wrapper functions) into framework files: the setup state's base
versions and stubs (curation), a model's prediction (eval).

Reads: one file's bytes and the definitions to put into it (`KernelSource`: from a task's gold
or base sources, or from a model's prediction); `splice_tree` reads the files under a checkout.
Writes: nothing, except `splice_tree`, which rewrites (or creates) the files its items name.
Refuses (`SpliceError`): bytes that are not UTF-8, a file that does not parse to begin with, an
item whose source does not parse, a name that matches several definitions ambiguously, edits
that overlap, and any result that tree-sitter or CPython cannot parse.

An item replaces the Triton kernel of its name (decorators included), else the plain function
or method of its name; an item that names nothing is inserted before the first top-level
statement that calls or launches it, else at the end of the file. A source is re-indented to
where it lands (`eval.indentation` says which forms it may come in). Edits are computed
against the original bytes and applied from the end backwards.
"""

from __future__ import annotations

import ast
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from curation.errors import SpliceError
from curation.indentation import indent_at, normalise, parses, reindent
from curation.model import Task
from mining.kernels import UnparsableSource, find_kernels, parse_python
from mining.model import Kernel, KernelKind

if TYPE_CHECKING:
    from tree_sitter import Node

log = logging.getLogger(__name__)

_DEFS = frozenset({"function_definition", "decorated_definition", "class_definition"})
_OPAQUE = frozenset({"string", "concatenated_string", "comment"})
# What a setup state's stub of a target raises (`curation.targets.stub`).
STUB_MESSAGE = "this target is yours to write"
# The names a Triton kernel or wrapper needs bound, and the import that binds each.
_TRITON_IMPORTS = {"triton": "import triton\n", "tl": "import triton.language as tl\n"}


@dataclass(frozen=True)
class KernelSource:
    """One kernel or wrapper definition for `file`, as a model or the gold provides it."""

    file: str
    name: str  # the definition's name; a dotted qualname (`Class.kernel`) picks a nested one
    source: str  # the whole definition, decorators included


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int  # == start for an insertion
    text: bytes
    rank: float  # among insertions at one offset, the lower rank lands first
    item: int  # index of the item the edit comes from; -1 for the imports


@dataclass(frozen=True)
class _Def:
    qualname: str
    node: Node  # function_definition or class_definition
    outer: Node  # the decorated_definition around it, else the node itself

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class _Target:
    """Where an existing definition sits: one span, or two for a `k = triton.jit(fn)` kernel."""

    span: tuple[int, int]
    fn_span: tuple[int, int] | None = None  # the def of `fn` of an assigned kernel
    kernel: str = ""  # the assigned kernel's name
    fn: str = ""  # the name of the function it compiles


def splice_file(
    original: bytes, path: str, items: Sequence[KernelSource], *, parses_like: bytes | None = None
) -> bytes:
    """`original` with each item replacing the definition it names, or inserted when new. The
    result must pass every parse check that `parses_like` (default: `original`) passes: the
    round trip of a setup state whose stub hid the gold's newer syntax holds it to the gold."""
    if not items:
        return original
    if not path.endswith(".py"):
        raise SpliceError(f"{path}: only Python files can take a kernel")
    try:
        original.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpliceError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not original.strip():
        return _new_file(path, items)
    try:
        kernels = find_kernels(original, path)
    except UnparsableSource as exc:
        raise SpliceError(f"{path}: the file does not parse before splicing: {exc}") from None
    before = _checks(original, path)  # (tree-sitter parses it cleanly, CPython does, ...)
    if not (before[0] or before[1]):
        why = _syntax_error(original)
        raise SpliceError(f"{path}: the file does not parse before splicing: {why}")
    # a file that only tree-sitter parses is newer Python than this interpreter's (3.12's
    # f-strings, `f"{d["k"]}"`): the result is then held to tree-sitter's check alone
    splice = _Splice(original, path, list(items), kernels)
    edits = splice.edits(_bound_names(splice.root))
    baseline = before if parses_like is None else _checks(parses_like, path)
    result = _apply(original, edits)
    if not _holds(_checks(result, path), baseline):
        # Blame the items whose own edits break the file; an interplay blames them all.
        blamed = [
            item.name
            for i, item in enumerate(items)
            if not _holds(
                _checks(_apply(original, [e for e in edits if e.item in (i, -1)]), path), baseline
            )
        ] or [item.name for item in items]
        raise SpliceError(f"{path}: splicing {', '.join(blamed)} leaves a file that does not parse")
    return result


def splice_tree(root: Path, items: Sequence[KernelSource]) -> list[str]:
    """Splice `items` into their files under `root` in place; the paths that changed."""
    by_file: dict[str, list[KernelSource]] = {}
    for item in items:
        by_file.setdefault(item.file, []).append(item)
    changed = []
    base = root.resolve()
    for rel, group in by_file.items():
        target = (root / rel).resolve()
        if not target.is_relative_to(base) or target == base:
            raise SpliceError(f"{rel}: not a file under {root}")
        original = target.read_bytes() if target.exists() else b""
        result = splice_file(original, rel, group)
        if result != original or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(result)
            changed.append(rel)
            log.debug("spliced %d definition(s) into %s", len(group), rel)
    return changed


def gold_items(task: Task) -> list[KernelSource]:
    """The task's kernels as the PR leaves them (kernels it deletes have none)."""
    return [KernelSource(k.file, k.name, k.after_src) for k in task.kernels if k.after_src]


def base_items(task: Task) -> list[KernelSource]:
    """The task's kernels at the base commit (kernels the PR adds have none)."""
    return [KernelSource(k.file, k.name, k.before_src) for k in task.kernels if k.before_src]


class _Splice:
    """The edits that put a list of items into one parsed file."""

    def __init__(self, src: bytes, path: str, items: list[KernelSource], kernels: list[Kernel]):
        self.src = src
        self.path = path
        self.items = items
        self.kernels = kernels
        self.root = parse_python(src).root_node
        self.funcs, self.classes = _scan_defs(self.root)
        self.uses = [_names(parse_python(it.source.encode()).root_node)[1] for it in items]

    def fail(self, i: int, why: str) -> SpliceError:
        return SpliceError(f"{self.path}: {self.items[i].name}: {why}")

    def edits(self, bound: set[str]) -> list[_Edit]:
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(self.items):
            groups.setdefault(item.name, []).append(i)
        edits: list[_Edit] = []
        new: list[int] = []
        placed: dict[int, int] = {}  # replacing item -> where its top-level statement starts
        for name, idxs in groups.items():
            targets = self.targets(name)
            if not targets:
                new.extend(idxs)
                continue
            if len(idxs) == len(targets):
                pairs = list(zip(idxs, targets, strict=True))
            elif len(idxs) == 1:  # one new version for every definition of that name ...
                pairs = [(idxs[0], t) for t in self.working(name, targets)]
            else:
                raise self.fail(idxs[0], f"{len(idxs)} items for {len(targets)} definitions")
            for i, target in pairs:
                edits.extend(self.replace(i, target))
                placed.setdefault(i, self.top_start(target.span[0]))
        edits.extend(self.inserts(new, placed))
        needed = set().union(*self.uses) & _TRITON_IMPORTS.keys()
        missing = [name for name in _TRITON_IMPORTS if name in needed - bound]
        if missing:
            edits.append(self.imports("".join(_TRITON_IMPORTS[n] for n in missing)))
        return _deduplicated(edits, self.path, self.items)

    def targets(self, name: str) -> list[_Target]:
        dotted = "." in name
        kernels = [k for k in self.kernels if (k.qualname if dotted else k.name) == name]
        if kernels:
            return [self.kernel_target(k) for k in kernels]
        for defs in (self.funcs, self.classes):
            found = [f for f in defs if (f.qualname if dotted else f.name) == name]
            if not dotted and len(found) > 1:
                found = [f for f in found if "." not in f.qualname] or found
            if found:
                return [_Target((f.outer.start_byte, f.outer.end_byte)) for f in found]
        return []

    def working(self, name: str, targets: list[_Target]) -> list[_Target]:
        """... but of a plain function defined several times, only the definitions that launch
        a kernel of the file, or that are a setup state's stub, where some are and some are not:
        pytorch/ao #1810 defines its new wrapper under `if TORCH_VERSION_AT_LEAST_2_4:` and, in
        the `else:`, a same-named fallback that raises; the fallback is not the target."""
        if len(targets) < 2 or any(k.name == name for k in self.kernels):
            return targets
        launches = {site.line for k in self.kernels for site in k.launch_sites}
        stub = f'raise NotImplementedError("{STUB_MESSAGE}")'.encode()

        def works(t: _Target) -> bool:
            first, last = (self.src.count(b"\n", 0, at) + 1 for at in t.span)
            return (
                any(first <= line <= last for line in launches)
                or stub in self.src[t.span[0] : t.span[1]]
            )

        return [t for t in targets if works(t)] or targets

    def kernel_target(self, k: Kernel) -> _Target:
        span = (k.span.start_byte, k.span.end_byte)
        if k.kind is not KernelKind.ASSIGNED or not k.signature.startswith("def "):
            return _Target(span)
        fn = k.signature[4:].split("(", 1)[0]
        stmt = self.src[span[0] : span[1]].decode("utf-8")
        # The kernel's source is the def it compiles, a newline, then the assignment.
        fn_text = k.source[: -len(stmt) - 1] if k.source.endswith("\n" + stmt) else None
        defs = [f for f in self.funcs if f.name == fn]
        found = next((f for f in defs if _text(f.outer) == fn_text), None)
        found = found or next((f for f in reversed(defs) if f.outer.start_byte < span[0]), None)
        if found is None:  # compiled from an imported function: only the assignment is here
            return _Target(span)
        return _Target(span, (found.outer.start_byte, found.outer.end_byte), k.name, fn)

    def canonical(self, i: int, hint: str) -> str:
        text = normalise(self.items[i].source, hint)
        if text is None:
            raise self.fail(i, "the source does not parse")
        return text

    def replace(self, i: int, target: _Target) -> list[_Edit]:
        if target.fn_span is None:
            indent = indent_at(self.src, target.span[0])
            body = reindent(self.canonical(i, indent), indent)
            return [_Edit(*target.span, body.encode(), i, i)]
        fn_indent = indent_at(self.src, target.fn_span[0])
        text = self.canonical(i, fn_indent)
        tops = parse_python(text.encode()).root_node.named_children
        fn_def = next((c for c in tops if c.type in _DEFS), None)
        stmt = next((c for c in tops if _assigns(c) == target.kernel.rsplit(".", 1)[-1]), None)
        if fn_def is not None and stmt is not None:
            stmt_indent = indent_at(self.src, target.span[0])
            return [
                _Edit(*target.fn_span, reindent(_text(fn_def), fn_indent).encode(), i, i),
                _Edit(*target.span, reindent(_text(stmt), stmt_indent).encode(), i, i),
            ]
        whole = reindent(text, fn_indent).encode()
        if fn_def is not None and len(tops) == 1 and _def_name(fn_def) == target.fn:
            return [_Edit(*target.fn_span, whole, i, i)]  # a new `fn`, the same assignment
        # The kernel is now defined some other way: its source takes the def's place.
        return [_Edit(*target.fn_span, whole, i, i), _Edit(*target.span, b"", i, i)]

    def top_start(self, pos: int) -> int:
        """Where the top-level statement holding `pos` starts, with the comments above it."""
        children = self.root.children
        idx = next(j for j, c in enumerate(children) if c.start_byte <= pos < c.end_byte)
        while idx > 0:
            prev, cur = children[idx - 1], children[idx]
            line = self.src.rfind(b"\n", 0, prev.start_byte) + 1
            own_line = not self.src[line : prev.start_byte].strip()
            if (
                prev.type != "comment"
                or not own_line
                or prev.end_point.row + 1 < cur.start_point.row
            ):
                break
            idx -= 1
        start = children[idx].start_byte
        return self.src.rfind(b"\n", 0, start) + 1

    @cached_property
    def needs(self) -> list[tuple[int, set[str]]]:
        """(start, names it needs defined first) of each top-level statement, in file order."""
        out = []
        for child in self.root.children:
            if child.type != "comment":
                called, used = _names(child)
                # A def only needs the name when it runs; any other statement runs at import.
                out.append((child.start_byte, called if child.type in _DEFS else used))
        return out

    def first_user(self, name: str) -> int | None:
        """Start of the first top-level statement that needs `name` defined before it."""
        start = next((start for start, names in self.needs if name in names), None)
        return None if start is None else self.top_start(start)

    def inserts(self, new: list[int], placed: dict[int, int]) -> list[_Edit]:
        if not new:
            return []
        edits = []
        pos: dict[int, int] = dict(placed)
        for i in new:
            if "." in self.items[i].name:
                edits.append(self.into_class(i))
                continue
            first = self.first_user(self.items[i].name)
            if first is not None:
                pos[i] = first
        flat = [i for i in new if "." not in self.items[i].name]
        # A new helper lands before whatever other item uses it (positions only ever shrink).
        changed = True
        while changed:
            changed = False
            for i in flat:
                users = [p for j, p in pos.items() if j != i and self.items[i].name in self.uses[j]]
                if users and min(users) < pos.get(i, len(self.src) + 1):
                    pos[i] = min(users)
                    changed = True
        children = self.root.children
        end = children[-1].end_byte if children else len(self.src)
        rank = _dependency_order(flat, self.items, self.uses)
        for i in flat:
            text = self.canonical(i, "")
            if i in pos:
                edits.append(_Edit(pos[i], pos[i], (text + "\n\n\n").encode(), rank[i], i))
            else:
                edits.append(_Edit(end, end, ("\n\n\n" + text).encode(), rank[i], i))
        return edits

    def into_class(self, i: int) -> _Edit:
        owner, _ = self.items[i].name.rsplit(".", 1)
        cls = next((c for c in self.classes if c.qualname == owner), None)
        body = cls.node.child_by_field_name("body") if cls is not None else None
        if body is None or not body.named_children:
            raise self.fail(i, f"no class {owner} to put it into")
        indent = indent_at(self.src, body.named_children[0].start_byte)
        text = reindent(self.canonical(i, indent), indent)
        return _Edit(body.end_byte, body.end_byte, f"\n\n{indent}{text}".encode(), i, i)

    def imports(self, lines: str) -> _Edit:
        """The triton imports, after the module docstring and `from __future__` imports."""
        header_end = None
        first = None
        for c in self.root.named_children:
            if c.type == "comment":
                continue
            if c.type == "future_import_statement" or (header_end is None and _is_docstring(c)):
                header_end = c.end_byte
                continue
            first = c
            break
        if first is None:
            # Nothing but a header or comments: the imports go where new items go, in front.
            pos = self.root.children[-1].end_byte
            return _Edit(pos, pos, ("\n\n" + lines.rstrip("\n")).encode(), float("-inf"), -1)
        line = self.src.rfind(b"\n", 0, first.start_byte) + 1
        # after the header (a statement follows it, so a newline does), else above the first
        pos = line if header_end is None else self.src.index(b"\n", header_end) + 1
        text = ("\n" if header_end is not None else "") + lines
        if b"\n" not in self.src[pos:line] and "import" not in first.type:
            text += "\n\n" if first.type in _DEFS else "\n"  # keep the imports a block apart
        return _Edit(pos, pos, text.encode(), float("-inf"), -1)


def _new_file(path: str, items: Sequence[KernelSource]) -> bytes:
    """A file of nothing but `items`, with the triton imports they use."""
    texts = []
    uses = []
    for item in items:
        text = normalise(item.source, None)
        if text is None:
            raise SpliceError(f"{path}: {item.name}: the source does not parse")
        texts.append(text)
        uses.append(_names(parse_python(text.encode()).root_node)[1])
    rank = _dependency_order(list(range(len(items))), items, uses)
    needed = set().union(*uses)
    head = "".join(line for name, line in _TRITON_IMPORTS.items() if name in needed)
    body = "\n\n\n".join(texts[i] for i in sorted(rank, key=rank.__getitem__))
    result = (head + "\n\n" if head else "") + body + "\n"
    if not all(_checks(result.encode(), path)):
        raise SpliceError(f"{path}: the new file made of {len(items)} item(s) does not parse")
    return result.encode()


def _dependency_order(
    idxs: list[int], items: Sequence[KernelSource], uses: Sequence[set[str]]
) -> dict[int, float]:
    """A rank per item: the helpers an item uses before it, otherwise the given order."""
    order: list[int] = []
    seen: set[int] = set()

    def visit(i: int) -> None:
        seen.add(i)
        for j in idxs:
            if j not in seen and items[j].name.rsplit(".", 1)[-1] in uses[i]:
                visit(j)
        order.append(i)

    for i in idxs:
        if i not in seen:
            visit(i)
    return {i: float(r) for r, i in enumerate(order)}


def _deduplicated(edits: list[_Edit], path: str, items: Sequence[KernelSource]) -> list[_Edit]:
    """The edits with exact repeats dropped; overlapping replacements are an error."""
    unique = list({(e.start, e.end, e.text): e for e in edits}.values())
    spans = sorted((e for e in unique if e.end > e.start), key=lambda e: (e.start, e.end))
    for a, b in pairwise(spans):
        if b.start < a.end:
            names = {items[a.item].name, items[b.item].name}
            raise SpliceError(f"{path}: the edits of {' and '.join(sorted(names))} overlap")
    for e in unique:
        if e.end == e.start and any(s.start < e.start < s.end for s in spans):
            raise SpliceError(f"{path}: {items[e.item].name} would land inside another edit")
    return unique


def _apply(src: bytes, edits: Sequence[_Edit]) -> bytes:
    out = bytearray(src)
    # From the end backwards, so each edit's offsets still hold when it is applied; at one
    # offset a replacement goes first and higher ranks next, leaving the lowest rank in front.
    for e in sorted(edits, key=lambda e: (e.start, e.end > e.start, e.rank), reverse=True):
        out[e.start : e.end] = e.text
    return bytes(out)


def _checks(src: bytes, path: str) -> tuple[bool, bool, bool]:
    """(tree-sitter parses `src` cleanly, CPython parses it, CPython compiles it).

    Compiling catches what the parser lets through but an import would not, such as a snippet's
    `from __future__` import that lands below other code.
    """
    clean = not parse_python(src).root_node.has_error
    if not parses(src):
        return clean, False, False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the framework's own strings
            compile(src, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError):
        return clean, True, False
    return clean, True, True


def _holds(result: tuple[bool, ...], baseline: tuple[bool, ...]) -> bool:
    """The result passes every check the original passed (tree-sitter lags CPython in places)."""
    return all(ok or not base for ok, base in zip(result, baseline, strict=True))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _def_name(node: Node) -> str:
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition") or node
    name = node.child_by_field_name("name")
    return _text(name) if name is not None else ""


def _assigns(node: Node) -> str | None:
    """The plain name an `x = ...` statement assigns, else None."""
    if node.type != "expression_statement" or not node.named_children:
        return None
    assign = node.named_children[0]
    left = assign.child_by_field_name("left") if assign.type == "assignment" else None
    return _text(left) if left is not None and left.type == "identifier" else None


def _is_docstring(node: Node) -> bool:
    kids = node.named_children
    return (
        node.type == "expression_statement"
        and len(kids) == 1
        and kids[0].type in ("string", "concatenated_string")
    )


def _same(a: Node | None, b: Node) -> bool:
    return a is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte


def _names(node: Node) -> tuple[set[str], set[str]]:
    """(names called or subscripted, names read at all) under `node`, strings aside."""
    called: set[str] = set()
    used: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _OPAQUE:
            continue
        if n.type != "identifier":
            stack.extend(n.children)
            continue
        parent = n.parent
        kind = parent.type if parent is not None else ""
        field = {
            "attribute": "attribute",  # `x.name` is not the name
            "assignment": "left",
            "keyword_argument": "name",
            "function_definition": "name",
            "class_definition": "name",
        }.get(kind)
        if parent is not None and field and _same(parent.child_by_field_name(field), n):
            continue
        name = _text(n)
        used.add(name)
        head = {"call": "function", "subscript": "value"}.get(kind)
        if parent is not None and head and _same(parent.child_by_field_name(head), n):
            called.add(name)
    return called, used


def _scan_defs(root: Node) -> tuple[list[_Def], list[_Def]]:
    """Every function and class of a file, in file order, with qualified names."""
    funcs: list[_Def] = []
    classes: list[_Def] = []
    stack: list[tuple[Node, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, scope = stack.pop()
        if node.type in ("function_definition", "class_definition"):
            name = node.child_by_field_name("name")
            scope = (*scope, _text(name) if name is not None else "?")
            parent = node.parent
            outer = parent if parent is not None and parent.type == "decorated_definition" else node
            bucket = funcs if node.type == "function_definition" else classes
            bucket.append(_Def(".".join(scope), node, outer))
        stack.extend((c, scope) for c in reversed(node.children) if c.type not in _OPAQUE)
    return funcs, classes


def _bound_names(root: Node) -> set[str]:
    """Names a file binds by import or assignment, anywhere (`try: import triton` counts)."""
    names: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type in ("import_statement", "import_from_statement", "future_import_statement"):
            for name in node.children_by_field_name("name"):
                alias = name.child_by_field_name("alias") if name.type == "aliased_import" else None
                if alias is not None:
                    names.add(_text(alias))
                elif node.type == "import_statement":
                    names.add(_text(name).split(".")[0])
                else:
                    names.add(_text(name))
        elif node.type == "assignment":
            left = node.child_by_field_name("left")  # `x: int = 0` binds too, `x: int` not
            if left is not None and left.type == "identifier" and node.child_by_field_name("right"):
                names.add(_text(left))
    return names


def _syntax_error(src: bytes) -> str:
    try:
        ast.parse(src)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    return "tree-sitter finds an error"


@dataclass(frozen=True)
class Definition:
    """A function of a file, as `definitions` finds it."""

    qualname: str
    source: str  # decorators included
    signature: str  # `def name(params) -> ret` (no decorators, no colon)
    docstring: str | None


@lru_cache(maxsize=64)
def definitions(src: bytes) -> dict[str, Definition]:
    """Every function and method of a file by qualified name (the first of a repeated name).
    Cached by content: a task asks for the same file once per kernel and wrapper."""
    return {name: found[0] for name, found in all_definitions(src).items()}


@lru_cache(maxsize=64)
def all_definitions(src: bytes) -> dict[str, list[Definition]]:
    """Every function and method of a file by qualified name, a repeated name's definitions in
    file order (flash-linear-attention #810 defines `tanh` twice, under `if` and `else`)."""
    root = parse_python(src).root_node
    funcs, _ = _scan_defs(root)
    out: dict[str, list[Definition]] = {}
    for d in funcs:
        body = d.node.child_by_field_name("body")
        head = _head(src, d.node)
        doc = None
        if body is not None and body.named_children:
            first = body.named_children[0]
            if first.type == "expression_statement" and first.named_children:
                string = first.named_children[0]
                if string.type == "string":
                    doc = _text(string)
        out.setdefault(d.qualname, []).append(
            Definition(d.qualname, _text(d.outer), " ".join(head.split()), doc)
        )
    return out


def _head(src: bytes, fn: Node) -> str:
    """`def name(params) -> ret` of a function_definition, without its colon and without the
    comments in it or between the colon and the body (tree-sitter puts those in the def)."""
    colons = [c for c in fn.children if c.type == ":"]
    end = colons[-1].start_byte if colons else fn.end_byte
    comments: list[Node] = []
    stack = [c for c in fn.children if c.end_byte <= end]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            comments.append(node)
        else:
            stack.extend(node.children)
    out, at = bytearray(), fn.start_byte
    for c in sorted(comments, key=lambda c: c.start_byte):
        out += src[at : c.start_byte]
        at = c.end_byte
    out += src[at:end]
    return out.decode("utf-8", "replace")
