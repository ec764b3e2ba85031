"""Move a definition's source to column 0 and re-indent it for the place it lands in.

Reads: a definition's source text, and the indentation of the place it goes to. Writes nothing.
Refuses: `normalise` answers None when no reading of a source's indentation parses (in CPython,
else in tree-sitter).

A source may come at column 0, uniformly indented, or in the "hanging" form a node's text has
when cut out of a nested position (first line bare, the rest at their original indentation).
Lines inside multi-line strings are data, not layout: re-indenting leaves them alone.
"""

from __future__ import annotations

import ast

from mining.kernels import parse_python


def indent_at(src: bytes, pos: int) -> str:
    """The indentation of the line holding byte `pos` (up to `pos` when nothing precedes it)."""
    line = src.rfind(b"\n", 0, pos) + 1
    head = src[line:pos]
    if head.strip():
        head = head[: len(head) - len(head.lstrip())]
    return head.decode("utf-8")


def parses(src: str | bytes) -> bool:
    """Whether CPython parses `src`."""
    try:
        ast.parse(src)
    except (SyntaxError, ValueError):
        return False
    return True


def normalise(source: str, hint: str | None) -> str | None:
    """`source` moved to column 0, or None when no reading of its indentation parses.

    `hint` is the indentation of the place it goes to: a hanging source cut from there has
    exactly that much extra indentation on its later lines.
    """
    lines = source.rstrip().split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return None
    inside = _string_lines("\n".join(lines))
    code = [i for i, line in enumerate(lines) if line.strip() and i not in inside]
    if _lead(lines[0]):
        # Indented as a whole (copied from a nested place): string lines moved along with the
        # code, so they move back too, as far as they have the room.
        n = min(len(_lead(lines[i])) for i in code)
        deep = [i for i, line in enumerate(lines) if len(_lead(line)) >= n and line.strip()]
        lines = _dedent(lines, deep, n)
    rest = code[1:]
    tries = [_dedent(lines, rest, len(hint))] if hint else []
    tries.append(lines)
    deeper = [len(_lead(lines[i])) for i in rest if _lead(lines[i])]
    if deeper:
        tries.append(_dedent(lines, rest, min(deeper)))
    texts = ["\n".join(x) for x in tries]
    # CPython first; then tree-sitter, which reads newer Python than this interpreter (3.12's
    # f-strings): a splice holds its result to what the file passed before (`curation.splice`)
    return next((t for t in texts if parses(t)), None) or next(
        (t for t in texts if not parse_python(t.encode()).root_node.has_error), None
    )


def reindent(text: str, indent: str) -> str:
    """`text` (at column 0) for a place whose first line already stands at `indent`."""
    if not indent:
        return text
    inside = _string_lines(text)
    lines = text.split("\n")
    return "\n".join(
        indent + line if i and line.strip() and i not in inside else line
        for i, line in enumerate(lines)
    )


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dedent(lines: list[str], which: list[int], n: int) -> list[str]:
    out = list(lines)
    for i in which:
        out[i] = out[i][min(n, len(_lead(out[i]))) :]
    return out


def _string_lines(text: str) -> set[int]:
    """0-based lines that start inside a multi-line string (their text is data, not layout)."""
    rows: set[int] = set()
    if '"""' not in text and "'''" not in text and "\\\n" not in text:
        return rows
    stack = [parse_python(text.encode()).root_node]
    while stack:
        node = stack.pop()
        if node.type == "string":
            rows.update(range(node.start_point.row + 1, node.end_point.row + 1))
        elif node.type != "comment":
            stack.extend(node.children)
    return rows
