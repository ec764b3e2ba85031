"""Launch sites of a kernel (`kernel[grid](...)`) and whether two versions launch it alike.

Reads: tree-sitter nodes of the calls (when a file is scanned) or the recorded call texts
(when two versions are compared). Writes nothing.

Two versions launch a kernel alike when the multisets of their launches are equal, a launch
being the tokens of its grid and its arguments bound to the kernel's parameter names: the
enclosing function's name, the line, line wrapping, comments, trailing commas and quote style
do not count, and neither does passing a value by position or by keyword (`k[g](x, 64)` and
`k[g](x, BLOCK=64)` bind the same value to the same parameter) or the order of keywords.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from mining.digests import node_digest
from mining.model import Kernel, LaunchSite
from mining.syntax import code_text, parse_python, text

if TYPE_CHECKING:
    from tree_sitter import Node

# One raw launch: the call, its `kernel[grid]` subscript, the enclosing function's qualname.
RawLaunch = tuple["Node", "Node", "str | None"]


def launch_sites(raw: Sequence[RawLaunch]) -> tuple[tuple[LaunchSite, ...], tuple[str, ...]]:
    """(launch sites, sorted wrapper names) of one kernel's `name[grid](...)` calls."""
    sites = []
    for call, sub, wrapper in raw:
        open_ = next((c for c in sub.children if c.type == "["), None)
        start = open_.end_byte if open_ is not None else sub.end_byte
        grid = code_text(sub, start, max(start, sub.children[-1].start_byte))
        sites.append(LaunchSite(call.start_point.row + 1, wrapper, grid, code_text(call)))
    return tuple(sites), tuple(sorted({s.wrapper for s in sites if s.wrapper is not None}))


def same_launches(before: Kernel, after: Kernel) -> bool:
    """Whether two versions of a kernel are launched alike in their file (module docstring)."""
    old, new = before.launch_sites, after.launch_sites
    if sorted(s.text for s in old) == sorted(s.text for s in new):
        return True
    if len(old) != len(new):
        return False
    keys_old = Counter(launch_key(s.text, before.params) for s in old)
    return keys_old == Counter(launch_key(s.text, after.params) for s in new)


def launch_key(call_text: str, params: Sequence[str]) -> Hashable:
    """What a launch passes: grid tokens and {parameter: value tokens}."""
    call = _parse_call(call_text)
    if call is None:  # not a `name[grid](...)` call any more: compare its text
        return ("text", call_text)
    sub = call.child_by_field_name("function")
    args = call.child_by_field_name("arguments")
    assert sub is not None
    grid = node_digest(_grid_nodes(sub))
    names = [p.lstrip("*") for p in params if not p.startswith("*")]
    bound: dict[str, str] = {}
    spread: list[tuple[str, str]] = []
    position = 0
    after_splat = False
    for arg in args.named_children if args is not None else ():
        kind = arg.type
        if kind == "comment":
            continue
        if kind == "keyword_argument":
            key = arg.child_by_field_name("name")
            value = arg.child_by_field_name("value")
            bound[text(key) if key is not None else ""] = node_digest([value] if value else [])
        elif kind in ("list_splat", "dictionary_splat"):
            after_splat = after_splat or kind == "list_splat"
            spread.append((kind, node_digest([arg])))
        else:
            # Positions after `*args` cannot be bound to names without running the code.
            if after_splat or position >= len(names):
                spread.append((f"#{position}", node_digest([arg])))
            else:
                bound[names[position]] = node_digest([arg])
            position += 1
    return (grid, tuple(sorted(bound.items())), tuple(spread))


def _grid_nodes(sub: Node) -> list[Node]:
    """The nodes between the brackets of `kernel[grid]`."""
    inside = False
    out = []
    for c in sub.children:
        if c.type == "[":
            inside = True
        elif c.type == "]":
            break
        elif inside and c.type != "comment":
            out.append(c)
    return out


def _parse_call(call_text: str) -> Node | None:
    root = parse_python(call_text.encode()).root_node
    if root.has_error or len(root.named_children) != 1:
        return None
    stmt = root.named_children[0]
    call = stmt.named_children[0] if stmt.named_children else None
    if call is None or call.type != "call":
        return None
    sub = call.child_by_field_name("function")
    return call if sub is not None and sub.type == "subscript" else None
