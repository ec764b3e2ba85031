"""Workload calls from a repository's op registry, read with `ast` (never executed).

flash-linear-attention replaced its per-op benchmark scripts on 2026-03-24 by one registry,
`benchmarks/ops/registry.py`: each op is declared once, `register_op(OpConfig(name=...,
import_path=..., inputs={arg: TensorSpec(shape_fn, requires_grad=..., dtype=..., transform=...)},
extra_kwargs=..., ...))`, beside a table of shape configurations (`SHAPE_CONFIGS`: B, T, H, D).
Its 16 optimization tasks since had no workload, since no script called their ops.

Reads: the registry file's text at the task's base commit. Gives, per op: its entry (module,
function), and per shape configuration the call's arguments: each tensor's shape from its shape
function (a `def f(B, T, H, D, **kw): return (...)` of the file, evaluated on the
configuration), its dtype (`default` is the benchmark's bf16), its input rule from its transform
(a function of the file, or an alias, whose result is a `sigmoid` or `logsigmoid` of the
tensor, clamps aside), and the constant keyword arguments. An op whose inputs the file mutates
after building them (`post_init`), or whose transform or shape is not of that form, is skipped
with the reason; a configuration outside the op's `dim_constraints` is left out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eval.workload_model import ArgSpec
from eval.workload_scripts import Unknown, _dotted, _literal

REGISTRY_PATTERN = re.compile(r"^bench(mark)?s?/(.*/)?registry\.py$")
DEFAULT_DTYPE = "bfloat16"  # the registry's `default` (its runner's dtype)
DTYPES = {"default": DEFAULT_DTYPE, "float32": "float32", "long": "int64"}
# a transform's outermost function, clamps stripped -> the input rule (eval.workload_inputs)
TRANSFORM_RULES = {"sigmoid": "sigmoid", "logsigmoid": "logsigmoid"}


def is_registry(path: str) -> bool:
    return bool(REGISTRY_PATTERN.match(path))


@dataclass(frozen=True)
class RegistryOp:
    path: str
    line: int
    name: str  # the registry's name of the op
    module: str
    function: str
    inputs: tuple[tuple[str, dict[str, Any]], ...]  # argument -> TensorSpec keywords (nodes)
    extra: dict[str, Any]
    skip_backward: bool
    dims_allowed: dict[str, list[int]]
    shapes: dict[str, dict[str, int]]  # the op's own configurations, else the file's
    why_not: str = ""  # set when the op cannot be built (post_init, an unknown input)
    file: _File | None = field(default=None, compare=False, repr=False)


class _File:
    """The registry file's module-level definitions the ops refer to."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.values: dict[str, ast.expr] = {}
        self.fields: dict[str, list[str]] = {}  # dataclass -> its fields, in order
        for n in tree.body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                if isinstance(n.targets[0], ast.Name):
                    self.values[n.targets[0].id] = n.value
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
                self.values[n.target.id] = n.value
            elif isinstance(n, ast.ClassDef):
                self.fields[n.name] = [
                    s.target.id for s in n.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]  # fmt: skip
        # the module-level constants, in file order (`default_shapes=_layer_shapes`)
        self.env: dict[str, Any] = {}
        for name, value in self.values.items():
            try:
                self.env[name] = _literal(value, self.env)
            except (Unknown, TypeError, ValueError, KeyError, ZeroDivisionError):
                continue

    def keywords(self, call: ast.Call) -> dict[str, ast.expr]:
        """The call's arguments by field name (positional ones by the class's field order)."""
        names = self.fields.get(_dotted(call.func), [])
        out = {k.arg: k.value for k in call.keywords if k.arg}
        for i, a in enumerate(call.args):
            if i < len(names):
                out.setdefault(names[i], a)
        return out

    def value(self, kw: Mapping[str, ast.expr], key: str, default: Any = None) -> Any:
        """The constant value of a call's argument `key` (`default` when it is not given)."""
        return _literal(kw[key], self.env) if key in kw else default

    def dict_items(self, node: ast.expr, depth: int = 0) -> list[tuple[str, ast.expr]]:
        """A dict display's items, `**name` of a module-level dict expanded."""
        if isinstance(node, ast.Name) and node.id in self.values and depth < 8:
            return self.dict_items(self.values[node.id], depth + 1)
        if not isinstance(node, ast.Dict):
            raise Unknown("not a dict")
        out: list[tuple[str, ast.expr]] = []
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                out += self.dict_items(v, depth + 1)
            elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                out.append((k.value, v))
            else:
                raise Unknown("a key that is not a string")
        return out

    def shape(self, fn: ast.expr, dims: Mapping[str, int]) -> tuple[int, ...]:
        """A shape function of the file evaluated on a configuration."""
        f = self.functions.get(fn.id) if isinstance(fn, ast.Name) else None
        if f is None:
            raise Unknown("shape function")
        env: dict[str, Any] = dict(dims)
        for a in f.args.args:
            if a.arg not in env:
                raise Unknown(a.arg)
        rets = [s for s in f.body if isinstance(s, ast.Return) and s.value is not None]
        if not rets:
            raise Unknown("no return")
        value = _literal(rets[-1].value, env)  # type: ignore[arg-type]
        if not isinstance(value, tuple) or not all(isinstance(x, int) for x in value):
            raise Unknown("not a shape")
        return value

    def rule(self, transform: ast.expr | None, depth: int = 0) -> str:
        """The input rule a transform gives (`normal` without one)."""
        if transform is None or (isinstance(transform, ast.Constant) and transform.value is None):
            return "normal"
        if isinstance(transform, ast.Name) and depth < 4:
            if transform.id in self.values:
                return self.rule(self.values[transform.id], depth + 1)
            f = self.functions.get(transform.id)
            rets = [s for s in f.body if isinstance(s, ast.Return)] if f else []
            if rets and rets[-1].value is not None:
                return self.rule(rets[-1].value, depth + 1)
        node = transform
        # `x.clamp_min(-5)`, `.clamp(...)`: the clamp is the rule's own bound
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("clamp")
        ):
            node = node.func.value
        if isinstance(node, ast.Call):
            node = node.func
        named = isinstance(node, ast.Attribute | ast.Name)
        name = _dotted(node).rsplit(".", 1)[-1] if named else ""
        if name in TRANSFORM_RULES:
            return TRANSFORM_RULES[name]
        raise Unknown(f"transform {ast.unparse(transform)[:40]}")


def registry_ops(path: str, text: str) -> tuple[list[RegistryOp], str]:
    """The ops a registry file declares, or why it gives none."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return [], f"{path}:{exc.lineno}: does not parse"
    f = _File(tree)
    shapes = f.env.get("SHAPE_CONFIGS") or {}
    ops: list[RegistryOp] = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not (isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Call)):
            continue
        if not _dotted(call.func).rsplit(".", 1)[-1].startswith("register"):
            continue
        kw = f.keywords(call.args[0])
        try:
            name, module = f.value(kw, "name"), f.value(kw, "import_path")
            function, extra = f.value(kw, "func_name"), f.value(kw, "extra_kwargs")
            allowed, own = f.value(kw, "dim_constraints"), f.value(kw, "default_shapes")
            skip = bool(f.value(kw, "skip_backward", False))
            inputs = [(arg, f.keywords(v)) for arg, v in f.dict_items(kw["inputs"])
                      if isinstance(v, ast.Call)]  # fmt: skip
        except (Unknown, KeyError, TypeError):
            continue
        why = ""
        if "post_init" in kw and not (
            isinstance(kw["post_init"], ast.Constant) and kw["post_init"].value is None
        ):
            why = f"{name}: its inputs are changed after they are built (post_init)"
        ops.append(RegistryOp(path, call.lineno, name, module, function or name, tuple(inputs),
                              extra or {}, skip, allowed or {}, own or shapes, why, f))  # fmt: skip
    if not ops:
        return [], f"{path}: registers no op"
    return ops, ""


def registry_args(op: RegistryOp, dims: Mapping[str, int], grad: bool) -> list[ArgSpec]:
    """The arguments of `op` on one shape configuration (`Unknown` when one cannot be built,
    or the configuration is outside the op's constraints)."""
    for dim, allowed in op.dims_allowed.items():
        if dim in dims and dims[dim] not in allowed:
            raise Unknown(f"{dim}={dims[dim]} outside {allowed}")
    f = op.file
    if f is None:
        raise Unknown("no registry file")
    args: list[ArgSpec] = []
    for arg, spec in op.inputs:
        if "shape_fn" not in spec:
            raise Unknown(f"{arg}: no shape function")
        dtype = DTYPES.get(f.value(spec, "dtype", "default"))
        if dtype is None:
            raise Unknown(f"{arg}: dtype")
        needs = bool(f.value(spec, "requires_grad", True))
        shape = f.shape(spec["shape_fn"], dims)
        if dtype == "int64":
            index = {"low": 0, "high": 10}  # the registry's randint(0, 10)
            args.append(ArgSpec(arg, True, shape, dtype, rule="index", params=index, keyword=True))
            continue
        rule = f.rule(spec.get("transform"))
        args.append(ArgSpec(arg, True, shape, dtype, rule=rule, keyword=True, grad=grad and needs))
    for k, v in op.extra.items():
        args.append(ArgSpec(k, False, value=v, keyword=True))
    return args
