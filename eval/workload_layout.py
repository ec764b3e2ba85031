"""The layout a function's docstring gives its tensor arguments, and a call that contradicts it.

flash-linear-attention documents each op's tensors in its docstring, one argument a block:

    q (torch.Tensor):
        queries of shape `[B, T, H, K]`.

or, while both layouts were accepted, `[B, H, T, K]` if `head_first=True` else `[B, T, H, K]`
(the flag's value is the call's, else the signature's default). A benchmark script written for
the other layout still runs: the op reads the sequence as heads (2026-12-06, call 69:
`benchmarks/ops/benchmark_fla.py` built (16, 8, 8192, 128) head-first tensors for
`parallel_retention`, documented `[B, T, H, K]` at the task's base: 131072 programs on one grid
axis, "invalid argument" at the typical size, and a tie of nonsense at the small one).

Only what is known is compared: a dimension's name the call's sizes give (`dims`: the sweep's
`T`), whose value occurs once in the tensor's shape. Read with `ast`, never executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from eval.workload_model import ArgSpec

# "name (type):" or "name:" opening an argument's block in a docstring's Args section
_HEADER = re.compile(r"^(\s*)(\w+)\s*(\([^)]*\))?\s*:")
ARG_SECTIONS = ("Args", "Arguments", "Parameters", "Inputs")
_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Inputs|Returns?|Outputs|Raises|Yields|Examples?|Notes?)\s*:\s*$"
)
# "of shape `[B, T, H, K]`", optionally "if `flag=True` else `[...]`"
_SHAPE = re.compile(
    r"shape\s+`\[([^\]`]*)\]`(?:\s+if\s+`(\w+)\s*=\s*(True|False)`\s+else\s+`\[([^\]`]*)\]`)?"
)


def _blocks(doc: str) -> dict[str, str]:
    """Each argument's docstring block (its header line and the lines indented under it), from
    the Args section (the whole docstring when it has no sections)."""
    out: dict[str, str] = {}
    lines: list[str] = []
    name, indent = "", -1
    in_args = not any(_SECTION.match(line) for line in doc.splitlines())
    for line in doc.splitlines():
        section = _SECTION.match(line)
        m = _HEADER.match(line)
        if section or (m and in_args and (not name or len(m.group(1)) <= indent)):
            if name:
                out.setdefault(name, " ".join(lines))
            name, lines = "", []
            if section:
                in_args = section.group(1) in ARG_SECTIONS
                continue
        if m and in_args and not name:
            name, indent, lines = m.group(2), len(m.group(1)), [line]
        elif name:
            lines.append(line.strip())
    if name:
        out.setdefault(name, " ".join(lines))
    return out


def _defaults(fn: ast.FunctionDef) -> dict[str, Any]:
    """The signature's literal defaults by parameter name."""
    args = [*fn.args.posonlyargs, *fn.args.args]
    out: dict[str, Any] = {}
    for a, d in zip(args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True):
        if isinstance(d, ast.Constant):
            out[a.arg] = d.value
    for a, kd in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        if isinstance(kd, ast.Constant):
            out[a.arg] = kd.value
    return out


def documented_layouts(fn: ast.FunctionDef, flags: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each tensor argument's dimension names as the docstring gives them, a conditional one
    resolved with `flags` (the call's values, over the signature's defaults)."""
    doc = ast.get_docstring(fn) or ""
    known = {**_defaults(fn), **flags}
    out: dict[str, list[str]] = {}
    for name, text in _blocks(doc).items():
        m = _SHAPE.search(text)
        if m is None:
            continue
        dims = m.group(1)
        if m.group(2):
            if m.group(2) not in known:
                continue  # a layout chosen by a flag of unknown value
            dims = m.group(1) if bool(known[m.group(2)]) == (m.group(3) == "True") else m.group(4)
        out[name] = [d.strip() for d in dims.split(",")]
    return out


def layout_mismatch(fn: ast.FunctionDef, args: Sequence[ArgSpec], dims: Mapping[str, int]) -> str:
    """Why the call's tensors contradict the function's documented layout ("" when they do
    not, or when nothing can be compared)."""
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    flags: dict[str, Any] = {}
    named: list[tuple[str, ArgSpec]] = []
    for i, a in enumerate(args):
        name = a.name if a.keyword or i >= len(params) else params[i]
        if a.tensor:
            named.append((name, a))
        elif isinstance(a.value, bool | int | str):
            flags[name] = a.value
    layouts = documented_layouts(fn, flags)
    for name, a in named:
        want = layouts.get(name)
        if want is None or len(want) != len(a.shape):
            continue
        for i, dim in enumerate(want):
            v = dims.get(dim)
            if v is None or list(a.shape).count(v) != 1 or a.shape[i] == v:
                continue
            return (
                f"its {name} {tuple(a.shape)} has {dim}={v} at dimension {a.shape.index(v)}, "
                f"where {fn.name}'s docstring puts {dim} in [{', '.join(want)}]"
            )
    return ""
