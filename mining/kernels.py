"""Find the Triton kernels in one version of one file.

Reads: the bytes of one file and its repository path; nothing else (no git, no imports of the
analysed code, which never runs).
Writes: nothing; `find_kernels` returns `Kernel` values sorted by position in the file.
Refuses: Python that neither tree-sitter nor CPython can parse (`UnparsableSource`; where only
tree-sitter's grammar trips, the kernels are still read) and bytes that are not UTF-8
(`UnicodeDecodeError`, left untouched for the caller to count as a skip).

A kernel is a `def` decorated with `triton.jit` / `triton.autotune(...)` /
`triton.heuristics(...)` through whatever alias the file's imports set up, a
`name = triton.jit(fn)` assignment, the source string of an Inductor `TritonTemplate(...)`, or
a whole `*.jinja` template file. Each file is parsed once and walked once; everything else is
looked up in what that walk collected.
"""

from __future__ import annotations

import ast
import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mining.digests import code_digests, jinja_kernel, template_kernel
from mining.errors import MiningError
from mining.model import Kernel, KernelKind, KernelRole, LaunchSite, Span

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

log = logging.getLogger(__name__)

_TRITON_BYTES = re.compile(rb"[Tt]riton")
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
}
_STAR_EXPORTS = {"triton": ("jit", "autotune", "heuristics")}

# Containers whose trailing comma is cosmetic (formatters add or drop it); a tuple's is not.
_PARAM_SKIP = frozenset({"(", ")", ",", "comment", "keyword_separator", "positional_separator"})
_PARSER: Parser | None = None


class UnparsableSource(MiningError):
    """tree-sitter found a syntax error in a Python file."""


def might_contain_kernels(path: str, data: bytes) -> bool:
    """Cheap byte-level prefilter: can this blob hold a kernel at all?"""
    if path.endswith(".py"):
        return _TRITON_BYTES.search(data) is not None
    if path.endswith(".jinja"):
        return b"def_kernel" in data or b"tl." in data
    return False


def find_kernels(source: bytes, path: str) -> list[Kernel]:
    """Every Triton kernel of one file version, sorted by span start."""
    text = source.decode("utf-8")  # raises UnicodeDecodeError for the caller to count
    if path.endswith(".jinja"):
        if not might_contain_kernels(path, source):
            return []
        return [jinja_kernel(text, source, path)]
    if _TRITON_BYTES.search(source) is None or _KERNEL_WORDS.search(source) is None:
        # Every kernel form spells one of these words somewhere in the file (in the decorator,
        # the wrapping call or the import of an alias), so the parse can be skipped.
        return []
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        # tree-sitter-python lags the language in places (`return x, *rest`); CPython is the
        # judge of what is valid Python, and the error nodes then stay local to such a line.
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):
            raise UnparsableSource(
                f"{path}: syntax error near line {_first_error_line(root)}"
            ) from None
        log.debug(
            "%s: tree-sitter error near line %d, valid for CPython", path, _first_error_line(root)
        )
    scan = _Scan(source)
    scan.walk(root)
    kernels = scan.jit_kernels(path) + scan.assigned_kernels(path) + scan.template_kernels(path)
    kernels = scan.with_roles(kernels)
    kernels.sort(key=lambda k: k.span.start_byte)
    return kernels


def parse_python(source: bytes) -> Tree:
    """Parse Python source with the shared tree-sitter parser (syntax errors stay in the tree)."""
    return _parser().parse(source)


def _parser() -> Parser:
    # Built lazily and once per process: importing this module stays cheap and every worker of
    # a process pool pays for the language only once.
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_python

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    return _PARSER


def _first_error_line(root: Node) -> int:
    node = root
    while not (node.is_error or node.is_missing):
        child = next((c for c in node.children if c.has_error), None)
        if child is None:
            break
        node = child
    return node.start_point.row + 1


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _dotted(node: Node) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but a chain of plain names."""
    if node.type not in ("identifier", "attribute"):
        return None
    parts = "".join(_text(node).split()).split(".")
    return parts if all(p.isidentifier() for p in parts) else None


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _name(node: Node) -> str:
    """The name of a def or class."""
    return _text(node.child_by_field_name("name") or node)


def _span(node: Node) -> Span:
    return Span(node.start_point.row + 1, node.end_point.row + 1, node.start_byte, node.end_byte)


def _positional(args: Node | None) -> list[Node]:
    if args is None or args.type != "argument_list":
        return []
    skip = ("keyword_argument", "list_splat", "dictionary_splat", "comment")
    return [c for c in args.named_children if c.type not in skip]


def _keyword(args: Node | None, name: str) -> Node | None:
    if args is None or args.type != "argument_list":
        return None
    for c in args.named_children:
        if c.type == "keyword_argument":
            key = c.child_by_field_name("name")
            if key is not None and key.text == name.encode():
                return c.child_by_field_name("value")
    return None


def _params(fn: Node) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(signature, parameter names, constexpr parameter names) of a function_definition."""
    name = _name(fn)
    plist = fn.child_by_field_name("parameters")
    if plist is None:
        return f"def {name}()", (), ()
    text = plist.text or b""
    # Comments inside the parameter list are not part of the signature.
    for c in reversed(plist.children):
        if c.type == "comment":
            lo, hi = c.start_byte - plist.start_byte, c.end_byte - plist.start_byte
            text = text[:lo] + text[hi:]
    inner = _collapse(text.decode("utf-8")[1:-1])
    names: list[str] = []
    constexpr: list[str] = []
    for p in plist.children:
        if p.type in _PARAM_SKIP:
            continue
        head = p.child_by_field_name("name") if p.type.endswith("default_parameter") else p
        if head is not None and p.type == "typed_parameter":
            head = p.named_children[0]
        if head is None:
            continue
        pname = _text(head).replace(" ", "") if head.type.endswith("splat_pattern") else _text(head)
        names.append(pname)
        ann = p.child_by_field_name("type")
        if ann is not None and "".join(_text(ann).split()).strip("'\"").endswith("constexpr"):
            constexpr.append(pname.lstrip("*"))
    return f"def {name}({inner})", tuple(names), tuple(constexpr)


@dataclass
class _Decor:
    """One Triton layer around a kernel: a decorator or a wrapping call."""

    text: str
    role: str | None  # jit | autotune | heuristics | None for a foreign decorator
    args: Node | None


@dataclass
class _Scan:
    """What one walk over a parsed file collects; kernels are assembled from it afterwards."""

    src: bytes
    aliases: dict[str, set[str]] = field(default_factory=dict)
    module_values: dict[str, list[Node]] = field(default_factory=dict)
    functions: dict[str, list[Node]] = field(default_factory=dict)
    decorated: list[tuple[Node, Node, str]] = field(default_factory=list)
    assigned: list[tuple[Node, Node, str]] = field(default_factory=list)
    calls: dict[str, list[int]] = field(default_factory=dict)
    launches: dict[str, list[tuple[Node, Node, str | None]]] = field(default_factory=dict)
    templates: list[tuple[Node, str]] = field(default_factory=list)
    # byte ranges of each found kernel's code, keyed by the kernel's span start
    bodies: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def walk(self, root: Node) -> None:
        # Iterative, not recursive: long `a + b + ...` chains nest deeper than Python's stack.
        stack: list[tuple[Node, tuple[str, ...], str | None]] = [(root, (), None)]
        while stack:
            node, scope, func = stack.pop()
            kind = node.type
            if kind in ("string", "comment", "concatenated_string"):
                continue
            if kind == "function_definition":
                name = _name(node)
                scope = (*scope, name)
                func = ".".join(scope)
                self.functions.setdefault(name, []).append(node)
            elif kind == "class_definition":
                scope = (*scope, _name(node))
            elif kind == "decorated_definition":
                defn = node.child_by_field_name("definition")
                if defn is not None and defn.type == "function_definition":
                    name = _name(defn)
                    self.decorated.append((node, defn, ".".join((*scope, name))))
            elif kind in ("import_statement", "import_from_statement"):
                self._import(node)
            elif kind == "assignment":
                self._assignment(node, scope)
            elif kind == "call":
                self._call(node, scope, func)
            stack.extend((c, scope, func) for c in reversed(node.children) if c.child_count)
        self._module_aliases()

    def _import(self, node: Node) -> None:
        """Record what each name bound by an import statement refers to, fully qualified."""
        mod_node = node.child_by_field_name("module_name")  # None for a plain `import`
        if mod_node is not None and mod_node.type != "dotted_name":
            return  # relative imports never name triton itself
        prefix = "".join(_text(mod_node).split()) + "." if mod_node is not None else ""
        for c in node.named_children:
            if c.type == "wildcard_import":
                for name in _STAR_EXPORTS.get(prefix[:-1], ()):
                    self.aliases.setdefault(name, set()).add(prefix + name)
            elif c.type == "dotted_name" and c is not mod_node:
                name = "".join(_text(c).split())
                bound = name if prefix else name.split(".")[0]  # `import a.b` binds `a`
                self.aliases.setdefault(bound, set()).add(prefix + bound)
            elif c.type == "aliased_import":
                target, alias = c.child_by_field_name("name"), c.child_by_field_name("alias")
                if target is not None and alias is not None:
                    full = prefix + "".join(_text(target).split())
                    self.aliases.setdefault(_text(alias), set()).add(full)

    def _assignment(self, node: Node, scope: tuple[str, ...]) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return
        if not scope and left.type == "identifier":
            self.module_values.setdefault(_text(left), []).append(right)
        if right.type == "call" and left.type in ("identifier", "attribute"):
            target = left if left.type == "identifier" else left.child_by_field_name("attribute")
            stmt = node.parent
            if target is not None and stmt is not None and stmt.type == "expression_statement":
                self.assigned.append((stmt, right, ".".join((*scope, _text(target)))))

    def _call(self, node: Node, scope: tuple[str, ...], func: str | None) -> None:
        callee = node.child_by_field_name("function")
        if callee is None:
            return
        if callee.type == "identifier":
            name = _text(callee)
            self.calls.setdefault(name, []).append(node.start_byte)
        elif callee.type == "attribute":
            attr = callee.child_by_field_name("attribute")
            name = _text(attr) if attr is not None else ""
        elif callee.type == "subscript":
            value = callee.child_by_field_name("value")
            if value is not None and value.type == "attribute":
                value = value.child_by_field_name("attribute")
            if value is not None and value.type == "identifier":
                self.launches.setdefault(_text(value), []).append((node, callee, func))
            return
        else:
            return
        if name == "TritonTemplate":
            self.templates.append((node, ".".join(scope)))

    # ---- resolution, after the walk has seen every import ----

    def _role(self, node: Node | None) -> str | None:
        parts = _dotted(node) if node is not None else None
        if not parts:
            return None
        head, rest = parts[0], parts[1:]
        # The literal spelling always counts too: frameworks re-export the module
        # (`from vllm.triton_utils import triton`), which no import in the file resolves.
        for target in {head} | self.aliases.get(head, set()):
            full = [*target.split("."), *rest]
            if "triton" in full:
                at = len(full) - 1 - full[::-1].index("triton")
                role = _ROLES.get(".".join(full[at:]))
                if role is not None:
                    return role
        return None

    def _binding(self, name: str, before: int) -> Node | None:
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

    def _decor(self, expr: Node, text: str) -> _Decor:
        if expr.type != "call":
            return _Decor(text, self._role(expr), None)
        callee, args = expr.child_by_field_name("function"), expr.child_by_field_name("arguments")
        return _Decor(text, self._role(callee), args)

    def _meta(self, layers: list[_Decor], at: int) -> tuple[str | None, str | None]:
        """(autotune configs, heuristics) texts of a kernel's Triton layers."""
        configs: str | None = None
        heuristics: list[str] = []
        for d in layers:
            if d.role == "autotune" and configs is None:
                node = _keyword(d.args, "configs") or next(iter(_positional(d.args)), None)
                if node is not None and node.type == "identifier":
                    node = self._binding(_text(node), at) or node
                configs = _text(node) if node is not None else None
            elif d.role == "heuristics":
                node = _keyword(d.args, "values") or next(iter(_positional(d.args)), None)
                if node is not None:
                    heuristics.append(_text(node))
        return configs, "\n".join(heuristics) if heuristics else None

    def _launches(self, name: str) -> tuple[tuple[LaunchSite, ...], tuple[str, ...]]:
        """(launch sites, sorted wrapper names) of `name[grid](...)` calls in the file."""
        sites = []
        for call, sub, wrapper in self.launches.get(name, ()):
            open_ = next(c for c in sub.children if c.type == "[")
            grid = self.src[open_.end_byte : sub.children[-1].start_byte].decode("utf-8")
            line = call.start_point.row + 1
            sites.append(LaunchSite(line, wrapper, _collapse(grid), _collapse(_text(call))[:300]))
        return tuple(sites), tuple(sorted({s.wrapper for s in sites if s.wrapper is not None}))

    def jit_kernels(self, path: str) -> list[Kernel]:
        out = []
        for outer, fn, qualname in self.decorated:
            layers = [
                self._decor(d.named_children[0], _text(d)[1:].strip())
                for d in outer.children
                if d.type == "decorator" and d.named_children
            ]
            if any(d.role for d in layers):
                kernel = self._code_kernel(path, qualname, KernelKind.JIT, outer, fn, layers)
                out.append(kernel)
        return out

    def _code_kernel(
        self, path: str, qualname: str, kind: KernelKind, span: Node, fn: Node | None,
        layers: list[_Decor],
    ) -> Kernel:  # fmt: skip
        """A jit or assigned kernel: `span` is where it is declared, `fn` the def it compiles."""
        name = qualname.rsplit(".", 1)[-1]
        nodes = [span] if fn is None or kind is KernelKind.JIT else [_outer(fn), span]
        signature, params, constexpr = _params(fn) if fn is not None else ("", (), ())
        configs, heuristics = self._meta(layers, span.start_byte)
        sites, wrappers = self._launches(name)
        self.bodies[span.start_byte] = [(n.start_byte, n.end_byte) for n in nodes]
        source = "\n".join(_text(n) for n in nodes)
        token_digest, body_digest = code_digests(source, name, nodes)
        return Kernel(
            name=name, qualname=qualname, file=path,
            kind=kind,
            role=KernelRole.KERNEL, span=_span(span), decorators=tuple(d.text for d in layers),
            signature=signature, params=params, constexpr_params=constexpr,
            autotune_configs=configs, heuristics=heuristics, launch_sites=sites,
            wrappers=wrappers, source=source,
            token_digest=token_digest, body_digest=body_digest,
        )  # fmt: skip

    def _unwrap(self, expr: Node) -> tuple[list[_Decor], Node] | None:
        """Triton layers of `triton.autotune(...)(triton.jit(fn))` forms and the wrapped node."""
        layers: list[_Decor] = []
        while expr.type == "call":
            callee = expr.child_by_field_name("function")
            first = next(iter(_positional(expr.child_by_field_name("arguments"))), None)
            if callee is None or first is None:
                break
            if self._role(callee) == "jit":  # triton.jit(fn); autotune(cfgs) alone is no kernel
                layers.append(_Decor(_text(callee), "jit", None))
            elif callee.type == "call" and self._decor(callee, "").role:
                layers.append(self._decor(callee, _text(callee)))  # triton.autotune(...)(fn)
            else:
                break
            expr = first
        return (layers, expr) if layers else None

    def assigned_kernels(self, path: str) -> list[Kernel]:
        out = []
        for stmt, rhs, qualname in self.assigned:
            found = self._unwrap(rhs)
            if found is not None:
                layers, base = found
                fn = self._function(_text(base), stmt.start_byte)
                kind = KernelKind.ASSIGNED
                out.append(self._code_kernel(path, qualname, kind, stmt, fn, layers))
        return out

    def _function(self, name: str, before: int) -> Node | None:
        """The def of `name` closest before `before` (else the first after), if any."""
        defs = self.functions.get(name)
        if not defs:
            return None
        earlier = [d for d in defs if d.start_byte < before]
        return (earlier or defs)[-1]

    def _string(self, node: Node | None, at: int, depth: int = 0) -> str | None:
        """The value of a string expression, as far as the file itself determines it."""
        if node is None or depth > 8:
            return None
        kind = node.type
        if kind == "string":
            if not any(c.type == "interpolation" for c in node.children):
                try:
                    value = ast.literal_eval(_text(node))
                except (ValueError, SyntaxError):
                    value = None
                if isinstance(value, str):
                    return value
            # f-strings and odd literals: the raw text between the quotes
            return "".join(_text(c) for c in node.children[1:-1])
        if kind == "concatenated_string":
            return "".join(self._string(c, at, depth + 1) or "" for c in node.named_children)
        if kind == "parenthesized_expression" and node.named_children:
            return self._string(node.named_children[0], at, depth + 1)
        if kind == "binary_operator" and _text(node.child_by_field_name("operator") or node) == "+":
            parts = [
                self._string(node.child_by_field_name(side), at, depth + 1)
                for side in ("left", "right")
            ]
            if all(p is None for p in parts):
                return None
            return "".join(p or "" for p in parts)
        if kind == "identifier":
            return self._string(self._binding(_text(node), at), at, depth + 1)
        return None

    def template_kernels(self, path: str) -> list[Kernel]:
        out = []
        for call, prefix in self.templates:
            args = call.child_by_field_name("arguments")
            text = self._string(_keyword(args, "source"), call.start_byte)
            if not text:
                # no source=, or one only known at run time (a template file loaded by name)
                log.debug(
                    "%s:%d: TritonTemplate source not resolvable", path, call.start_point.row + 1
                )
                continue
            name = self._string(_keyword(args, "name"), call.start_byte)
            span_node: Node = call
            assign = call.parent
            if assign is not None and assign.type == "assignment":
                left = assign.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    name = name or _text(left)
                if assign.parent is not None and assign.parent.type == "expression_statement":
                    span_node = assign.parent
            name = name or "TritonTemplate"
            qualname = f"{prefix}.{name}" if prefix else name
            out.append(template_kernel(name, qualname, path, _span(span_node), text))
        return out

    def with_roles(self, kernels: list[Kernel]) -> list[Kernel]:
        """Mark as helpers the kernels that another kernel's body calls by name."""
        bodies = [
            (lo, hi, i)
            for i, k in enumerate(kernels)
            for lo, hi in self.bodies.get(k.span.start_byte, ())
        ]
        out = []
        for i, k in enumerate(kernels):
            calls = self.calls.get(k.name, ()) if k.kind is not KernelKind.TEMPLATE else ()
            helper = any(lo <= pos < hi and j != i for pos in calls for lo, hi, j in bodies)
            out.append(replace(k, role=KernelRole.HELPER) if helper else k)
        return out


def _outer(fn: Node) -> Node:
    parent = fn.parent
    return parent if parent is not None and parent.type == "decorated_definition" else fn
