"""Kernels whose code is text in the file: Inductor templates and generated kernel source.

Reads: what `mining.kernels.FileScan` collected in its walk over one file. Writes nothing.

- `template`: the `source=` string of an Inductor `TritonTemplate(...)` call.
- `generated`: kernel libraries that write one kernel per shape or dtype keep its source as
  text. A string constant (module or class level) whose value holds a Triton decorator line
  (`@triton.jit`, `@triton.autotune`, `@triton.heuristics`, `@gluon.jit`) and a `def` line is
  one kernel, named by the constant (its source is the assignment statement); a function whose
  string literals hold such a decorator line and a `def` line (`code.writeline("@triton.jit")`,
  `f"def {name}("`) is one kernel, the builder, named by the function. Docstrings and bare
  string statements never count, nor does a decorator mentioned mid-sentence (the decorator
  must start a line of the text).
"""

from __future__ import annotations

import ast
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from mining.digests import code_digests, template_kernel
from mining.model import Kernel, KernelKind, KernelRole
from mining.syntax import collapse, keyword, name_of, outer, params, span_of, text

if TYPE_CHECKING:
    from tree_sitter import Node

    from mining.kernels import FileScan

log = logging.getLogger(__name__)

# Cheap test of a string literal's raw bytes during the walk; the value is checked afterwards.
_KERNEL_TEXT_BYTES = re.compile(
    rb"@\s*(?:triton|gluon)\s*\.\s*(?:jit|autotune|heuristics)|(?:^|[\s\"'])def\s"
)
_DECORATOR_LINE = re.compile(
    r"(?m)^[ \t]*@[ \t]*(?:triton|gluon)[ \t]*\.[ \t]*(?:jit|autotune|heuristics)\b"
)
_DEF_LINE = re.compile(r"(?m)^[ \t]*def[ \t]+[\w{]")
_DEF_SIGNATURE = re.compile(r"(?m)^[ \t]*def[ \t]+([\w{}]+)[ \t]*\(([^)]*)\)")
# Expressions a string constant may sit in on its way to the assignment that names it.
_CLIMB = frozenset(
    {"parenthesized_expression", "binary_operator", "concatenated_string", "attribute", "call",
     "argument_list"}
)  # fmt: skip


def is_kernel_text(raw: bytes) -> bool:
    """Can this string literal (raw bytes, quotes included) be part of generated kernel code?"""
    return (b"@" in raw or b"def" in raw) and _KERNEL_TEXT_BYTES.search(raw) is not None


def string_value(scan: FileScan, node: Node | None, at: int, depth: int = 0) -> str | None:
    """The value of a string expression, as far as the file itself determines it."""
    if node is None or depth > 8:
        return None
    kind = node.type
    if kind == "string":
        if not any(c.type == "interpolation" for c in node.children):
            try:
                value = ast.literal_eval(text(node))
            except (ValueError, SyntaxError):
                value = None
            if isinstance(value, str):
                return value
        # f-strings and odd literals: the raw text between the quotes
        return "".join(text(c) for c in node.children[1:-1])
    if kind == "concatenated_string":
        return "".join(string_value(scan, c, at, depth + 1) or "" for c in node.named_children)
    if kind == "parenthesized_expression" and node.named_children:
        return string_value(scan, node.named_children[0], at, depth + 1)
    if kind == "binary_operator" and text(node.child_by_field_name("operator") or node) == "+":
        parts = [
            string_value(scan, node.child_by_field_name(side), at, depth + 1)
            for side in ("left", "right")
        ]
        if all(p is None for p in parts):
            return None
        return "".join(p or "" for p in parts)
    if kind == "identifier":
        return string_value(scan, scan.binding(text(node), at), at, depth + 1)
    return None


def template_kernels(scan: FileScan, path: str) -> list[Kernel]:
    out = []
    for call, prefix in scan.templates:
        args = call.child_by_field_name("arguments")
        value = string_value(scan, keyword(args, "source"), call.start_byte)
        if not value:
            # no source=, or one only known at run time (a template file loaded by name)
            log.debug("%s:%d: TritonTemplate source not resolvable", path, call.start_point.row + 1)
            continue
        name = string_value(scan, keyword(args, "name"), call.start_byte)
        span_node: Node = call
        assign = call.parent
        if assign is not None and assign.type == "assignment":
            left = assign.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                name = name or text(left)
            if assign.parent is not None and assign.parent.type == "expression_statement":
                span_node = assign.parent
        name = name or "TritonTemplate"
        qualname = f"{prefix}.{name}" if prefix else name
        out.append(template_kernel(name, qualname, path, span_of(span_node), value))
    return out


def generated_kernels(scan: FileScan, path: str) -> list[Kernel]:
    """String constants and builder functions that hold kernel source (module docstring)."""
    if not scan.texts:
        return []
    template_ranges = [(c.start_byte, c.end_byte) for c, _ in scan.templates]
    template_sources = set()
    for call, _ in scan.templates:
        src = keyword(call.child_by_field_name("arguments"), "source")
        if src is not None and src.type == "identifier":
            template_sources.add(text(src))
    builders: dict[int, tuple[Node, tuple[str, ...], list[str]]] = {}
    constants: dict[int, tuple[Node, Node, tuple[str, ...], list[str]]] = {}
    for node, scope, fnode in scan.texts:
        if _bare_statement(node) or any(lo <= node.start_byte < hi for lo, hi in template_ranges):
            continue
        value = string_value(scan, node, node.start_byte) or ""
        if fnode is not None:
            builders.setdefault(fnode.start_byte, (fnode, scope, []))[2].append(value)
            continue
        stmt, right = _assignment_of(node)
        if stmt is not None and right is not None:
            constants.setdefault(stmt.start_byte, (stmt, right, scope, []))[3].append(value)
    out = []
    for stmt, right, scope, values in constants.values():
        assign = stmt.named_children[0]
        left = assign.child_by_field_name("left")
        name = text(left) if left is not None else ""
        value = string_value(scan, right, stmt.start_byte) or "".join(values)
        if name in template_sources or not _holds_kernel([value]):
            continue
        signature, names = _text_signature(value)
        qualname = ".".join((*scope, name))
        kernel = template_kernel(
            name, qualname, path, span_of(stmt), value, KernelKind.GENERATED, signature, names
        )
        # The source is the statement its span covers (what a splice replaces); the digest
        # stays that of the generated text, blind to its spacing and comments.
        out.append(replace(kernel, source=text(stmt)))
    for fnode, scope, values in builders.values():
        if _holds_kernel(values):
            out.append(_builder_kernel(path, fnode, scope))
    return out


def _holds_kernel(values: list[str]) -> bool:
    return any(_DECORATOR_LINE.search(v) for v in values) and any(
        _DEF_LINE.search(v) for v in values
    )


def _builder_kernel(path: str, fnode: Node, scope: tuple[str, ...]) -> Kernel:
    name = name_of(fnode)
    at = len(scope) - 1 - scope[::-1].index(name) if name in scope else len(scope) - 1
    qualname = ".".join(scope[: at + 1]) or name
    whole = outer(fnode)
    source = text(whole)
    token_digest, body_digest = code_digests(source, name, [whole])
    signature, names, constexpr = params(fnode)
    decorators = tuple(text(d)[1:].strip() for d in whole.children if d.type == "decorator")
    return Kernel(
        name=name, qualname=qualname, file=path, kind=KernelKind.GENERATED,
        role=KernelRole.KERNEL, span=span_of(whole), decorators=decorators,
        signature=signature, params=names, constexpr_params=constexpr,
        autotune_configs=None, heuristics=None, launch_sites=(), wrappers=(), source=source,
        token_digest=token_digest, body_digest=body_digest,
    )  # fmt: skip


def _bare_statement(node: Node) -> bool:
    """A string that is a statement on its own: a docstring, or a no-op string."""
    parent = node.parent
    return parent is not None and parent.type == "expression_statement"


def _assignment_of(node: Node) -> tuple[Node | None, Node | None]:
    """(statement, right-hand side) of the `name = ...` assignment holding a string, if any."""
    child, parent = node, node.parent
    while parent is not None and parent.type in _CLIMB:
        child, parent = parent, parent.parent
    if parent is None or parent.type != "assignment":
        return None, None
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    stmt = parent.parent
    if (
        left is None
        or left.type != "identifier"
        or right is None
        or child != right
        or stmt is None
        or stmt.type != "expression_statement"
    ):
        return None, None
    return stmt, right


def _text_signature(value: str) -> tuple[str, tuple[str, ...]]:
    """Signature and parameter names of the first `def` in generated kernel text."""
    m = _DEF_SIGNATURE.search(value)
    if m is None:
        return "", ()
    names = []
    for part in m.group(2).split(","):
        pname = part.split(":", 1)[0].split("=", 1)[0].strip()
        if pname:
            names.append(pname)
    return collapse(f"def {m.group(1)}({m.group(2)})"), tuple(names)
