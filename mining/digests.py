"""Token digests of kernel code and of template text, and template kernels.

Reads: tree-sitter nodes of one kernel, or the text of an Inductor template. Writes nothing.
A digest ignores whitespace, line breaks, comments, quote style and formatters' trailing commas,
so two versions with the same digest differ only in formatting (`formatting_only`); blocks
keep markers because indentation is syntax.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from mining.model import Kernel, KernelKind, KernelRole, Span

if TYPE_CHECKING:
    from tree_sitter import Node

_TRAILING_COMMA_OK = frozenset({"argument_list", "parameters", "list", "dictionary", "set"})
_CLOSERS = frozenset({")", "]", "}"})
_DEF_KERNEL = re.compile(r"def_kernel\(([^)]*)\)")
_QUOTED = re.compile(r"""["']([^"']*)["']""")
# Template text is not valid Python (Jinja tags), so it is tokenised by this pattern instead of
# tree-sitter: newlines with their indentation, comments, one-line strings, words, punctuation.
_TEMPLATE_TOKEN = re.compile(
    r"""(?P<nl>\n[ \t]*)|(?P<comment>\#[^\n]*)"""
    r"""|(?P<tok>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\w+|\S)"""
)


def _digest(tokens: Iterable[bytes]) -> str:
    return hashlib.sha1(b"\x00".join(tokens)).hexdigest()


def _tokens(nodes: Iterable[Node]) -> Iterator[bytes]:
    """Leaf tokens without comments, so that whitespace, line breaks and comments do not count.

    Blocks are bracketed by markers because indentation is syntax: dedenting a statement out of
    a loop must change the digest. String quotes are normalised and cosmetic trailing commas
    dropped, the two token-level edits code formatters make.
    """
    stack: list[Node | None] = list(reversed(list(nodes)))
    while stack:
        node = stack.pop()
        if node is None:
            yield b"\x01}"
            continue
        kind = node.type
        if kind in ("comment", "line_continuation"):
            continue
        if kind == "string_content" or node.child_count == 0:
            tok = node.text or b""
            if kind in ("string_start", "string_end"):
                tok = tok.replace(b"'", b'"')
            yield tok
            continue
        children = node.children
        if kind == "block":
            yield b"\x01{"
            stack.append(None)
        elif (
            kind in _TRAILING_COMMA_OK
            and len(children) >= 2
            and children[-2].type == ","
            and children[-1].type in _CLOSERS
        ):
            children = children[:-2] + children[-1:]
        stack.extend(reversed(children))


def node_digest(nodes: Iterable[Node]) -> str:
    """Token digest of some nodes: whitespace, comments, quote style, trailing commas aside."""
    return _digest(_tokens(nodes))


# Most versions of a file leave most of its kernels untouched: their digests are reused.
_DIGESTS: dict[tuple[str, str], tuple[str, str]] = {}
_DIGESTS_MAX = 50_000


def code_digests(source: str, name: str, nodes: list[Node]) -> tuple[str, str]:
    """(token digest, digest with the kernel's own name blanked) of a kernel's code."""
    key = (name, source)
    hit = _DIGESTS.get(key)
    if hit is not None:
        return hit
    tokens = list(_tokens(nodes))
    own = name.encode()
    result = _digest(tokens), _digest(b"\x03" if tok == own else tok for tok in tokens)
    if len(_DIGESTS) >= _DIGESTS_MAX:
        _DIGESTS.clear()
    _DIGESTS[key] = result
    return result


def _template_digest(text: str) -> str:
    """Digest of template text: tokens plus the indentation of each logical line."""
    out: list[bytes] = []
    depth = 0
    indent: str | None = ""
    for m in _TEMPLATE_TOKEN.finditer(text):
        if m.lastgroup == "nl":
            indent = m.group()[1:] if depth == 0 else None
        elif m.lastgroup == "tok":
            tok = m.group()
            if indent is not None:
                out.append(b"\x02" + indent.encode())
                indent = None
            out.append(tok.encode())
            if tok in "([{":
                depth += 1
            elif tok in ")]}":
                depth = max(0, depth - 1)
    return _digest(out)


def _def_kernel_params(text: str) -> tuple[str, ...]:
    m = _DEF_KERNEL.search(text)
    return tuple(_QUOTED.findall(m.group(1))) if m else ()


def jinja_kernel(text: str, source: bytes, path: str) -> Kernel:
    name = path.rsplit("/", 1)[-1].split(".", 1)[0]
    lines = max(1, text.count("\n") + (not text.endswith("\n")))
    return template_kernel(name, name, path, Span(1, lines, 0, len(source)), text)


def template_kernel(
    name: str, qualname: str, path: str, span: Span, text: str,
    kind: KernelKind = KernelKind.TEMPLATE, signature: str = "",
    params: tuple[str, ...] | None = None,
) -> Kernel:  # fmt: skip
    """A kernel whose code is text: an Inductor template, or generated kernel source."""
    return Kernel(
        name=name, qualname=qualname, file=path, kind=kind,
        role=KernelRole.KERNEL, span=span, decorators=(), signature=signature,
        params=_def_kernel_params(text) if params is None else params,
        constexpr_params=(), autotune_configs=None,
        heuristics=None, launch_sites=(), wrappers=(), source=text,
        token_digest=_template_digest(text),
        body_digest=_template_digest(text),
    )  # fmt: skip
