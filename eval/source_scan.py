"""A static look at a prediction's source for what a Triton kernel and its launch wrapper have
no business doing: reaching into pytest, the interpreter, the process, files or the network.

Reads: a prediction's sources (its kernel items' source, the lines its patch adds). Writes
nothing. A hit is the scorer's `forbidden_api` flag: the prediction is not credited. It does not
change how a run is judged, and it is defence in depth only: code that hides its intent (a
string handed to a function found by a computed name) passes it, which is why predictions run
sandboxed and verdicts come over the harness's channel whatever this says.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

MODULES = frozenset({
    "_pytest", "pytest", "pluggy", "tpb_verdict", "eval", "gc", "ctypes", "cffi", "inspect",
    "importlib", "builtins", "subprocess", "socket", "ssl", "http", "urllib", "requests", "signal",
    "multiprocessing", "concurrent", "atexit", "faulthandler", "resource", "pickle", "marshal",
    "shutil", "tempfile", "code", "codeop", "runpy", "unittest", "pty", "fcntl", "mmap", "io",
})  # fmt: skip
CALLS = frozenset({"exec", "eval", "compile", "__import__", "open", "globals", "breakpoint",
                   "exit", "quit", "input"})  # fmt: skip
OS_ALLOWED = frozenset({"environ", "getenv", "path", "cpu_count", "sep"})
SYS_ALLOWED = frozenset({"version_info", "platform", "maxsize", "byteorder", "float_info"})
DUNDERS = frozenset({"__code__", "__globals__", "__builtins__", "__subclasses__", "__closure__",
                     "__dict__", "__class__", "__bases__", "__mro__", "__loader__", "__spec__",
                     "f_back", "f_globals", "f_locals", "tb_frame", "gi_frame"})  # fmt: skip

_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w., ]+))", re.M)
_ATTR = re.compile(r"\b(os|sys)\s*\.\s*(\w+)|\.\s*(__\w+__|f_\w+|tb_frame|gi_frame)\b")
_CALL = re.compile(r"(?<![\w.])(\w+)\s*\(")


def forbidden(sources: Iterable[str]) -> list[str]:
    """What the sources use that a kernel should not, e.g. `import _pytest`, `os._exit`."""
    hits: list[str] = []
    for text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            hits += _by_text(text)
        else:
            hits += _by_tree(tree)
    return sorted(set(hits))


def added_lines(patch: str) -> str:
    """The lines a unified diff adds, without the leading `+`."""
    return "\n".join(ln[1:] for ln in patch.splitlines()
                     if ln.startswith("+") and not ln.startswith("+++"))  # fmt: skip


def _module_hit(name: str) -> str | None:
    top = name.split(".")[0]
    if top in MODULES:
        return f"import {name}"
    if top in ("os", "sys") and "." in name:
        return _attr_hit(top, name.split(".")[1])
    return None


def _attr_hit(base: str, attr: str) -> str | None:
    allowed = OS_ALLOWED if base == "os" else SYS_ALLOWED
    return None if attr in allowed else f"{base}.{attr}"


def _bound(tree: ast.AST) -> set[str]:
    """Names the source binds itself (parameters, assignments, loop targets): a parameter named
    `input` is the caller's tensor, not the builtin."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _by_tree(tree: ast.AST) -> list[str]:
    hits: list[str | None] = []
    bound = _bound(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hits += [_module_hit(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            hits.append(_module_hit(node.module))
            if node.module in ("os", "sys"):
                hits += [_attr_hit(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Attribute):
            if node.attr in DUNDERS:
                hits.append(f".{node.attr}")
            elif isinstance(node.value, ast.Name) and node.value.id in ("os", "sys"):
                hits.append(_attr_hit(node.value.id, node.attr))
        elif isinstance(node, ast.Name) and node.id in CALLS and node.id not in bound:
            hits.append(f"{node.id}()")
    return [h for h in hits if h]


def _by_text(text: str) -> list[str]:
    """The same look for text that does not parse (a patch's added lines)."""
    code = re.sub(r"#.*$", "", text, flags=re.M)
    hits: list[str | None] = []
    for m in _IMPORT.finditer(code):
        names = [m.group(1)] if m.group(1) else [n.split(" as ")[0].strip()
                                                 for n in m.group(2).split(",")]  # fmt: skip
        hits += [_module_hit(n) for n in names if n]
    for m in _ATTR.finditer(code):
        if m.group(3):
            hits.append(f".{m.group(3)}" if m.group(3) in DUNDERS else None)
        else:
            hits.append(_attr_hit(m.group(1), m.group(2)))
    hits += [f"{m.group(1)}()" for m in _CALL.finditer(code) if m.group(1) in CALLS]
    return [h for h in hits if h]
