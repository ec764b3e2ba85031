"""The shared tree-sitter parser and small readers of its nodes.

Reads: Python source bytes, or nodes of a tree parsed from them. Writes nothing.
Refuses nothing: a syntax error stays in the tree as ERROR or MISSING nodes, and the callers
decide what that means. tree-sitter loads on the first parse, not on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mining.model import Span

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

# Containers whose trailing comma is cosmetic (formatters add or drop it); a tuple's is not.
_PARAM_SKIP = frozenset({"(", ")", ",", "comment", "keyword_separator", "positional_separator"})
_PARSER: Parser | None = None


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


def first_error_line(root: Node) -> int:
    """1-based line of the first ERROR or MISSING node under `root`."""
    node = root
    while not (node.is_error or node.is_missing):
        child = next((c for c in node.children if c.has_error), None)
        if child is None:
            break
        node = child
    return node.start_point.row + 1


def collapse(text: str) -> str:
    return " ".join(text.split())


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def code_text(node: Node, start: int | None = None, end: int | None = None) -> str:
    """The node's text (or its bytes `start:end`) without comments and line continuations,
    whitespace collapsed.

    What remains of a call or an expression still parses: inside brackets line breaks are
    free, and a comment would swallow everything after it once the lines are joined.
    """
    lo_all = node.start_byte if start is None else start
    hi_all = node.end_byte if end is None else end
    whole = node.text or b""
    raw = whole[lo_all - node.start_byte : hi_all - node.start_byte]
    if b"#" not in raw and b"\\" not in raw:
        return collapse(raw.decode("utf-8"))
    cuts: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.end_byte <= lo_all or n.start_byte >= hi_all:
            continue
        if n.type in ("comment", "line_continuation"):
            cuts.append((max(n.start_byte, lo_all) - lo_all, min(n.end_byte, hi_all) - lo_all))
        elif n.type not in ("string", "concatenated_string"):
            stack.extend(n.children)
    for lo, hi in sorted(cuts, reverse=True):
        raw = raw[:lo] + b" " + raw[hi:]
    return collapse(raw.decode("utf-8"))


def dotted(node: Node) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None for anything but a chain of plain names."""
    if node.type not in ("identifier", "attribute"):
        return None
    parts = "".join(text(node).split()).split(".")
    return parts if all(p.isidentifier() for p in parts) else None


def name_of(node: Node) -> str:
    """The name of a def or class."""
    return text(node.child_by_field_name("name") or node)


def span_of(node: Node) -> Span:
    return Span(node.start_point.row + 1, node.end_point.row + 1, node.start_byte, node.end_byte)


def positional(args: Node | None) -> list[Node]:
    if args is None or args.type != "argument_list":
        return []
    skip = ("keyword_argument", "list_splat", "dictionary_splat", "comment")
    return [c for c in args.named_children if c.type not in skip]


def keyword(args: Node | None, name: str) -> Node | None:
    if args is None or args.type != "argument_list":
        return None
    for c in args.named_children:
        if c.type == "keyword_argument":
            key = c.child_by_field_name("name")
            if key is not None and key.text == name.encode():
                return c.child_by_field_name("value")
    return None


def params(fn: Node) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(signature, parameter names, constexpr parameter names) of a function_definition."""
    name = name_of(fn)
    plist = fn.child_by_field_name("parameters")
    if plist is None:
        return f"def {name}()", (), ()
    raw = plist.text or b""
    # Comments inside the parameter list are not part of the signature.
    for c in reversed(plist.children):
        if c.type == "comment":
            lo, hi = c.start_byte - plist.start_byte, c.end_byte - plist.start_byte
            raw = raw[:lo] + raw[hi:]
    inner = collapse(raw.decode("utf-8")[1:-1])
    names: list[str] = []
    constexpr: list[str] = []
    for p in plist.children:
        if p.type in _PARAM_SKIP:
            continue
        head = p.child_by_field_name("name") if p.type.endswith("default_parameter") else p
        if head is not None and p.type == "typed_parameter":
            head = p.named_children[0] if p.named_children else None
        if head is None:
            continue
        pname = text(head).replace(" ", "") if head.type.endswith("splat_pattern") else text(head)
        names.append(pname)
        ann = p.child_by_field_name("type")
        if ann is not None and "".join(text(ann).split()).strip("'\"").endswith("constexpr"):
            constexpr.append(pname.lstrip("*"))
    return f"def {name}({inner})", tuple(names), tuple(constexpr)


def outer(fn: Node) -> Node:
    """A def together with its decorators, when it has any."""
    parent = fn.parent
    return parent if parent is not None and parent.type == "decorated_definition" else fn


def enclosing_function(node: Node) -> Node | None:
    """The innermost function_definition around `node`, if any."""
    p = node.parent
    while p is not None and p.type != "function_definition":
        p = p.parent
    return p
