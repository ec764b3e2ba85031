"""Find the Triton kernels in one version of one file.

Reads: the bytes of one file and its repository path; nothing else (no git, no imports of the
analysed code, which never runs).
Writes: nothing; `scan_file` returns the file's kernels sorted by position and the order of its
top-level definitions, `find_kernels` the kernels alone.
Refuses: Python that neither tree-sitter nor CPython can parse (`find_kernels` raises
`UnparsableSource`; `scan_file` reads what tree-sitter recovers and says where the error is;
where only tree-sitter's grammar trips, the kernels are read as usual) and bytes that are not
UTF-8 (`UnicodeDecodeError`, left untouched for the caller to count as a skip).

A kernel is a `def` decorated with `triton.jit` / `triton.autotune(...)` /
`triton.heuristics(...)` through whatever alias the file's imports set up (kind `jit`), or
with `gluon.jit` from `triton.experimental.gluon` (kind `gluon`); a
`name = triton.jit(fn)` / `name = triton.autotune(...)(fn)` assignment (kind `assigned`; a
jit def wrapped this way is that one kernel, not two); the source string of an Inductor
`TritonTemplate(...)` or a whole `*.jinja` template file (kind `template`); code that writes
kernel source as text (kind `generated`, see `mining.text_kernels`). Each file is parsed once
and walked once; everything else is looked up in what that walk collected.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mining.digests import code_digests, jinja_kernel
from mining.errors import MiningError
from mining.launches import RawLaunch, launch_sites
from mining.model import Kernel, KernelKind, KernelRole
from mining.syntax import (
    dotted,
    first_error_line,
    keyword,
    name_of,
    outer,
    params,
    parse_python,
    positional,
    span_of,
    text,
)
from mining.text_kernels import generated_kernels, is_kernel_text, template_kernels

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "FileKernels",
    "Layout",
    "UnparsableSource",
    "find_kernels",
    "might_contain_kernels",
    "parse_python",
    "scan_file",
]

log = logging.getLogger(__name__)

_KERNEL_WORDS = re.compile(rb"jit|autotune|heuristics|TritonTemplate")

# Fully qualified names that make a decorator (or a wrapping call) a Triton one. The submodule
# `triton.runtime.jit` is left out on purpose: as a bare name it is the module, not the function.
_ROLES = {
    "triton.jit": "jit",
    "triton.runtime.jit.jit": "jit",
    "triton.autotune": "autotune",
    "triton.runtime.autotune": "autotune",
    "triton.runtime.autotuner.autotune": "autotune",
    "triton.heuristics": "heuristics",
    "triton.runtime.heuristics": "heuristics",
    "triton.runtime.autotuner.heuristics": "heuristics",
    "triton.experimental.gluon.jit": "gluon",
    "triton.experimental.gluon._runtime.jit": "gluon",
}
_STAR_EXPORTS = {"triton": ("jit", "autotune", "heuristics"), "triton.experimental.gluon": ("jit",)}
# Spellings that count without an import: frameworks re-export these modules
# (`from vllm.triton_utils import triton`), which no import in the file resolves.
_LITERAL = {"triton": "triton", "gluon": "triton.experimental.gluon"}
_COMPILERS = ("jit", "gluon")  # roles that compile a function (the others wrap a compiled one)
_BLOCKS = frozenset(
    {"if_statement", "try_statement", "with_statement", "else_clause", "elif_clause",
     "except_clause", "finally_clause"}
)  # fmt: skip

# The file's top-level definitions in order: (name, lines, digest of the text).
Layout = tuple[tuple[str, int, str], ...]


class UnparsableSource(MiningError):
    """tree-sitter found a syntax error in a Python file, and CPython agrees."""


@dataclass(frozen=True)
class FileKernels:
    """One file version's kernels, its layout, and where it fails to parse (None: it parses)."""

    kernels: tuple[Kernel, ...] = ()
    layout: Layout = ()
    error_line: int | None = None


NO_KERNELS = FileKernels()


def might_contain_kernels(path: str, data: bytes) -> bool:
    """Cheap byte-level prefilter: can this blob hold a kernel at all?"""
    if path.endswith(".py"):
        return _names_triton(data)
    if path.endswith(".jinja"):
        return b"def_kernel" in data or b"tl." in data
    return False


def _names_triton(data: bytes) -> bool:
    # Plain substring tests: much faster than a regular expression over hundreds of MB of blobs.
    return b"riton" in data or b"gluon" in data


def find_kernels(source: bytes, path: str) -> list[Kernel]:
    """Every Triton kernel of one file version, sorted by span start."""
    found = scan_file(source, path)
    if found.error_line is not None:
        raise UnparsableSource(f"{path}: syntax error near line {found.error_line}")
    return list(found.kernels)


def scan_file(source: bytes, path: str) -> FileKernels:
    """Kernels and layout of one file version; a syntax error is reported, not raised."""
    text_ = source.decode("utf-8")  # raises UnicodeDecodeError for the caller to count
    if path.endswith(".jinja"):
        if not might_contain_kernels(path, source):
            return NO_KERNELS
        return FileKernels((jinja_kernel(text_, source, path),))
    if not _names_triton(source) or _KERNEL_WORDS.search(source) is None:
        # Every kernel form spells one of these words somewhere in the file (in the decorator,
        # the wrapping call or the import of an alias), so the parse can be skipped.
        return NO_KERNELS
    root = parse_python(source).root_node
    error_line = None
    if root.has_error:
        # tree-sitter-python lags the language in places (`return x, *rest`); CPython is the
        # judge of what is valid Python, and the error nodes then stay local to such a line.
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):
            error_line = first_error_line(root)
        if error_line is None:
            line = first_error_line(root)
            log.debug("%s: tree-sitter error near line %d, valid for CPython", path, line)
    scan = FileScan(source)
    try:
        scan.walk(root)
        kernels = scan.kernels(path)
    except (StopIteration, AttributeError, IndexError, ValueError, AssertionError):
        if error_line is None:
            raise
        # The recovered tree of a broken file can take shapes valid code never has.
        raise UnparsableSource(f"{path}: syntax error near line {error_line}") from None
    return FileKernels(tuple(kernels), _layout(root), error_line)


def _layout(root: Node) -> Layout:
    """Top-level definitions in order (inside top-level if/try/with blocks too)."""
    out: list[tuple[str, int, str]] = []
    stack = list(reversed(root.named_children))
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _BLOCKS or kind == "block":
            stack.extend(reversed(node.named_children))
            continue
        name = None
        if kind == "decorated_definition":
            defn = node.child_by_field_name("definition")
            name = name_of(defn) if defn is not None else None
        elif kind in ("function_definition", "class_definition"):
            name = name_of(node)
        elif kind == "expression_statement" and node.named_children:
            first = node.named_children[0]
            left = first.child_by_field_name("left") if first.type == "assignment" else None
            name = text(left) if left is not None and left.type == "identifier" else None
        if name:
            lines = node.end_point.row - node.start_point.row + 1
            out.append((name, lines, hashlib.sha1(node.text or b"").hexdigest()))
    return tuple(out)


@dataclass
class _Decor:
    """One Triton layer around a kernel: a decorator or a wrapping call."""

    text: str
    role: str | None  # jit | gluon | autotune | heuristics | None for a foreign decorator
    args: Node | None


@dataclass
class FileScan:
    """What one walk over a parsed file collects; kernels are assembled from it afterwards."""

    src: bytes
    aliases: dict[str, set[str]] = field(default_factory=dict)
    module_values: dict[str, list[Node]] = field(default_factory=dict)
    functions: dict[str, list[Node]] = field(default_factory=dict)
    decorated: list[tuple[Node, Node, str]] = field(default_factory=list)
    assigned: list[tuple[Node, Node, str]] = field(default_factory=list)
    calls: dict[str, list[int]] = field(default_factory=dict)
    launches: dict[str, list[RawLaunch]] = field(default_factory=dict)
    templates: list[tuple[Node, str]] = field(default_factory=list)
    # strings that may hold kernel source: (node, enclosing scope, enclosing def or None)
    texts: list[tuple[Node, tuple[str, ...], Node | None]] = field(default_factory=list)
    # byte ranges of each found kernel's code, keyed by the kernel's span start
    bodies: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def walk(self, root: Node) -> None:
        # Iterative, not recursive: long `a + b + ...` chains nest deeper than Python's stack.
        stack: list[tuple[Node, tuple[str, ...], str | None, Node | None]] = [
            (root, (), None, None)
        ]
        while stack:
            node, scope, func, fnode = stack.pop()
            kind = node.type
            if kind in ("string", "concatenated_string"):
                if is_kernel_text(node.text or b""):
                    self.texts.append((node, scope, fnode))
                continue
            if kind == "comment":
                continue
            if kind == "function_definition":
                name = name_of(node)
                scope = (*scope, name)
                func = ".".join(scope)
                fnode = node
                self.functions.setdefault(name, []).append(node)
            elif kind == "class_definition":
                scope = (*scope, name_of(node))
            elif kind == "decorated_definition":
                defn = node.child_by_field_name("definition")
                if defn is not None and defn.type == "function_definition":
                    name = name_of(defn)
                    self.decorated.append((node, defn, ".".join((*scope, name))))
            elif kind in ("import_statement", "import_from_statement"):
                self._import(node)
            elif kind == "assignment":
                self._assignment(node, scope)
            elif kind == "call":
                self._call(node, scope, func)
            stack.extend((c, scope, func, fnode) for c in reversed(node.children) if c.child_count)
        self._module_aliases()

    def _import(self, node: Node) -> None:
        """Record what each name bound by an import statement refers to, fully qualified."""
        mod_node = node.child_by_field_name("module_name")  # None for a plain `import`
        if mod_node is not None and mod_node.type != "dotted_name":
            return  # relative imports never name triton itself
        prefix = "".join(text(mod_node).split()) + "." if mod_node is not None else ""
        for c in node.named_children:
            if c.type == "wildcard_import":
                for name in _STAR_EXPORTS.get(prefix[:-1], ()):
                    self.aliases.setdefault(name, set()).add(prefix + name)
            elif c.type == "dotted_name" and c is not mod_node:
                name = "".join(text(c).split())
                bound = name if prefix else name.split(".")[0]  # `import a.b` binds `a`
                self.aliases.setdefault(bound, set()).add(prefix + bound)
            elif c.type == "aliased_import":
                target, alias = c.child_by_field_name("name"), c.child_by_field_name("alias")
                if target is not None and alias is not None:
                    full = prefix + "".join(text(target).split())
                    self.aliases.setdefault(text(alias), set()).add(full)

    def _assignment(self, node: Node, scope: tuple[str, ...]) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return
        if not scope and left.type == "identifier":
            self.module_values.setdefault(text(left), []).append(right)
        if right.type == "call" and left.type in ("identifier", "attribute"):
            target = left if left.type == "identifier" else left.child_by_field_name("attribute")
            stmt = node.parent
            if target is not None and stmt is not None and stmt.type == "expression_statement":
                self.assigned.append((stmt, right, ".".join((*scope, text(target)))))

    def _call(self, node: Node, scope: tuple[str, ...], func: str | None) -> None:
        callee = node.child_by_field_name("function")
        if callee is None:
            return
        if callee.type == "identifier":
            name = text(callee)
            self.calls.setdefault(name, []).append(node.start_byte)
        elif callee.type == "attribute":
            attr = callee.child_by_field_name("attribute")
            name = text(attr) if attr is not None else ""
        elif callee.type == "subscript":
            value = callee.child_by_field_name("value")
            if value is not None and value.type == "attribute":
                value = value.child_by_field_name("attribute")
            if value is not None and value.type == "identifier":
                self.launches.setdefault(text(value), []).append((node, callee, func))
            return
        else:
            return
        if name == "TritonTemplate":
            self.templates.append((node, ".".join(scope)))

    # ---- resolution, after the walk has seen every import ----

    def _role(self, node: Node | None) -> str | None:
        parts = dotted(node) if node is not None else None
        if not parts:
            return None
        head, rest = parts[0], parts[1:]
        targets = set(self.aliases.get(head, ()))
        if head in _LITERAL:
            targets.add(_LITERAL[head])
        for target in targets:
            full = [*target.split("."), *rest]
            if "triton" in full:
                at = len(full) - 1 - full[::-1].index("triton")
                role = _ROLES.get(".".join(full[at:]))
                if role is not None:
                    return role
        return None

    def binding(self, name: str, before: int) -> Node | None:
        """The module-level value bound to `name` closest before `before` (else the last)."""
        values = self.module_values.get(name)
        if not values:
            return None
        earlier = [v for v in values if v.start_byte < before]
        return (earlier or values)[-1]

    def _module_aliases(self) -> None:
        # `jit = triton.jit` at module level is an alias like an import is.
        for name, values in self.module_values.items():
            for v in values:
                role_name = self._role(v) if v.type in ("identifier", "attribute") else None
                if role_name is not None:
                    key = next(k for k, r in _ROLES.items() if r == role_name)
                    self.aliases.setdefault(name, set()).add(key)

    def _decor(self, expr: Node, text_: str) -> _Decor:
        if expr.type != "call":
            return _Decor(text_, self._role(expr), None)
        callee, args = expr.child_by_field_name("function"), expr.child_by_field_name("arguments")
        return _Decor(text_, self._role(callee), args)

    def _meta(self, layers: list[_Decor], at: int) -> tuple[str | None, str | None]:
        """(autotune configs, heuristics) texts of a kernel's Triton layers."""
        configs: str | None = None
        heuristics: list[str] = []
        for d in layers:
            if d.role == "autotune" and configs is None:
                node = keyword(d.args, "configs") or next(iter(positional(d.args)), None)
                if node is not None and node.type == "identifier":
                    node = self.binding(text(node), at) or node
                configs = text(node) if node is not None else None
            elif d.role == "heuristics":
                node = keyword(d.args, "values") or next(iter(positional(d.args)), None)
                if node is not None:
                    heuristics.append(text(node))
        return configs, "\n".join(heuristics) if heuristics else None

    def kernels(self, path: str) -> list[Kernel]:
        """Every kernel the walk saw, helpers marked, sorted by position."""
        layered: dict[int, tuple[Node, Node, str, list[_Decor]]] = {}
        for outer_, fn, qualname in self.decorated:
            layers = [
                self._decor(d.named_children[0], text(d)[1:].strip())
                for d in outer_.children
                if d.type == "decorator" and d.named_children
            ]
            if any(d.role for d in layers):
                layered[outer_.start_byte] = (outer_, fn, qualname, layers)
        assigned, absorbed = self._assigned_kernels(path, layered)
        found = [
            self._code_kernel(path, qualname, _def_kind(layers), outer_, fn, layers)
            for start, (outer_, fn, qualname, layers) in layered.items()
            if start not in absorbed
        ]
        found += assigned + template_kernels(self, path)
        taken = {k.span.start_byte for k in found}
        found += [k for k in generated_kernels(self, path) if k.span.start_byte not in taken]
        found = self._with_roles(found)
        found.sort(key=lambda k: k.span.start_byte)
        return found

    def _code_kernel(
        self, path: str, qualname: str, kind: KernelKind, span: Node, fn: Node | None,
        layers: list[_Decor], also_launched_as: str | None = None,
    ) -> Kernel:  # fmt: skip
        """A jit or assigned kernel: `span` is where it is declared, `fn` the def it compiles."""
        name = qualname.rsplit(".", 1)[-1]
        nodes = [span] if fn is None or kind is not KernelKind.ASSIGNED else [outer(fn), span]
        signature, names, constexpr = params(fn) if fn is not None else ("", (), ())
        configs, heuristics = self._meta(layers, span.start_byte)
        raw = list(self.launches.get(name, ()))
        if also_launched_as and also_launched_as != name:
            raw += self.launches.get(also_launched_as, ())
            raw.sort(key=lambda launch: launch[0].start_byte)
        sites, wrappers = launch_sites(raw)
        self.bodies[span.start_byte] = [(n.start_byte, n.end_byte) for n in nodes]
        source = "\n".join(text(n) for n in nodes)
        token_digest, body_digest = code_digests(source, name, nodes)
        return Kernel(
            name=name, qualname=qualname, file=path,
            kind=kind,
            role=KernelRole.KERNEL, span=span_of(span), decorators=tuple(d.text for d in layers),
            signature=signature, params=names, constexpr_params=constexpr,
            autotune_configs=configs, heuristics=heuristics, launch_sites=sites,
            wrappers=wrappers, source=source,
            token_digest=token_digest, body_digest=body_digest,
        )  # fmt: skip

    def _unwrap(self, expr: Node) -> tuple[list[_Decor], Node] | None:
        """Triton layers of `triton.autotune(...)(triton.jit(fn))` forms and the wrapped node."""
        layers: list[_Decor] = []
        while expr.type == "call":
            callee = expr.child_by_field_name("function")
            first = next(iter(positional(expr.child_by_field_name("arguments"))), None)
            if callee is None or first is None:
                break
            role = self._role(callee)
            if role in _COMPILERS:  # triton.jit(fn); autotune(cfgs) alone is no kernel
                layers.append(_Decor(text(callee), role, None))
            elif callee.type == "call" and self._decor(callee, "").role:
                layers.append(self._decor(callee, text(callee)))  # triton.autotune(...)(fn)
            else:
                break
            expr = first
        return (layers, expr) if layers else None

    def _assigned_kernels(
        self, path: str, layered: dict[int, tuple[Node, Node, str, list[_Decor]]]
    ) -> tuple[list[Kernel], set[int]]:
        """Assigned kernels, and the span starts of the jit defs they wrap (one kernel each)."""
        out = []
        absorbed: set[int] = set()
        for stmt, rhs, qualname in self.assigned:
            found = self._unwrap(rhs)
            if found is None:
                continue
            layers, base = found
            if base.type in ("attribute", "subscript") or _is_parameter(base, stmt):
                # `triton.autotune(...)(kernel.fn)`: a kernel object that exists only at run
                # time, compiled elsewhere; no source of this file is a kernel here.
                continue
            fn = self._function(text(base), stmt.start_byte)
            wrapped = layered.get(outer(fn).start_byte) if fn is not None else None
            if wrapped is not None:
                absorbed.add(wrapped[0].start_byte)
                layers = layers + wrapped[3]
            kind = KernelKind.ASSIGNED
            also = name_of(fn) if wrapped is not None and fn is not None else None
            out.append(self._code_kernel(path, qualname, kind, stmt, fn, layers, also))
        return out, absorbed

    def _function(self, name: str, before: int) -> Node | None:
        """The def of `name` closest before `before` (else the first after), if any."""
        defs = self.functions.get(name)
        if not defs:
            return None
        earlier = [d for d in defs if d.start_byte < before]
        return (earlier or defs)[-1]

    def _with_roles(self, kernels: list[Kernel]) -> list[Kernel]:
        """Mark as helpers the kernels that another kernel's body calls by name."""
        bodies = [
            (lo, hi, i)
            for i, k in enumerate(kernels)
            for lo, hi in self.bodies.get(k.span.start_byte, ())
        ]
        out = []
        textual = (KernelKind.TEMPLATE, KernelKind.GENERATED)
        for i, k in enumerate(kernels):
            calls = self.calls.get(k.name, ()) if k.kind not in textual else ()
            helper = any(lo <= pos < hi and j != i for pos in calls for lo, hi, j in bodies)
            out.append(replace(k, role=KernelRole.HELPER) if helper else k)
        return out


def _def_kind(layers: list[_Decor]) -> KernelKind:
    return KernelKind.GLUON if any(d.role == "gluon" for d in layers) else KernelKind.JIT


def _is_parameter(node: Node, at: Node) -> bool:
    """`node` is a name bound by a parameter of the function around `at`."""
    if node.type != "identifier":
        return False
    fn = at.parent
    while fn is not None and fn.type not in ("function_definition", "lambda"):
        fn = fn.parent
    if fn is None or fn.type != "function_definition":
        return False
    return text(node) in {p.lstrip("*") for p in params(fn)[1]}
