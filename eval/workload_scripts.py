"""Workload calls from a repository's own benchmark scripts, read with `ast` (never executed).

Reads: the text of the benchmark scripts at the task's base commit (Liger-Kernel's
`benchmark/scripts/*.py`, flash-linear-attention's `benchmarks/**.py`, any `benchmark*/` or
`bench*/` Python file). Writes nothing.

A script is used when it imports the task's wrapper (or kernel, or a name from the wrapper's
module, or a module whose file name is the target file's). From it come:
- the sweep: `x_name`/`x_values` and `extra_benchmark_configs` of a config dict (Liger), or the
  `x_names`/`x_vals`/`args` of a `triton.testing.Benchmark(...)` (flash-linear-attention);
- the benchmark function that calls the imported name: its assignments are replayed on each
  sweep point with a small evaluator (constants, arithmetic, tuples, `range` comprehensions,
  `torch.<dtype>`, the sweep's values), so the tensors it builds (`torch.randn(...)`,
  `randint`, `*_like`, ...) get shapes and dtypes;
- the call: `name(args)`, `name.apply(args)`, or `obj = Name(**init); obj(args)`.
A script whose call cannot be resolved to tensors and values is skipped with the reason.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eval.workload_inputs import dtype_kind, rule_for
from eval.workload_model import ArgSpec, Entry, EntryKind

SCRIPT_PATTERNS = (
    re.compile(r"^benchmarks?/(.*/)?[^/]+\.py$"),
    re.compile(r"^bench/(.*/)?[^/]+\.py$"),
)
_SKIP_NAMES = {"__init__.py", "utils.py", "runner.py", "registry.py", "visualize.py", "run.py"}
_CTORS = {
    "randn",
    "rand",
    "randint",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "randperm",
    "tensor",
}
# shape-keeping functions around a constructor, and the input rule each one means
_WRAPPERS = {
    "logsigmoid": "logsigmoid",
    "normalize": "l2norm",
    "sigmoid": "sigmoid",
    "softmax": "probs",
    "exp": "positive",
    "abs": "positive",
}
# the same as methods at the end of a constructor's chain (`torch.rand(...).sigmoid()`)
_METHOD_RULES = {"sigmoid": "sigmoid", "softmax": "probs", "exp": "positive", "abs": "positive"}
# tensor and module methods that cast to the dtype of their name (`_dtype_name` spells it)
_DTYPE_METHODS = {"bfloat16", "half", "float", "double"}
_LIKE = {"randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like"}


class Unknown(Exception):
    """An expression the evaluator cannot give a value to."""


def is_benchmark_script(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name not in _SKIP_NAMES and any(p.match(path) for p in SCRIPT_PATTERNS)


_TEST_PATTERN = re.compile(r"^(.*/)?tests?/(.*/)?test_[^/]*\.py$")


def is_test_script(path: str) -> bool:
    """A pytest module of the repository (`test/.../test_*.py`, `tests/.../test_*.py`)."""
    return bool(_TEST_PATTERN.match(path))


@dataclass(frozen=True)
class TensorValue:
    """A tensor the script builds: its shape, dtype and the input rule its construction says."""

    shape: tuple[int, ...]
    dtype: str
    rule: str = "normal"
    params: dict[str, Any] = field(default_factory=dict)
    grad: bool = False


@dataclass
class ScriptCall:
    """A benchmark script's call of the task's code, ready to be evaluated at a sweep point."""

    path: str
    line: int
    entry: Entry
    function: ast.FunctionDef
    call: ast.Call
    init: dict[str, ast.expr]
    sweeps: list[dict[str, Any]]  # one environment per sweep point
    imported: str  # the imported name the call reaches
    cast: tuple[ast.expr, ...] = ()  # MODULE: what it may be cast to once built (`_cast_of`)
    # the script's module-level functions: helpers that build inputs (`_make_moe_inputs`)
    helpers: Mapping[str, ast.FunctionDef] = field(default_factory=dict)
    # every `from m import n [as a]` of the script: local name -> (m, n), for the members of an
    # imported class or module passed as arguments (`ActivationType.SQUARED_RELU`)
    imports: Mapping[str, tuple[str, str]] = field(default_factory=dict)


STR_METHODS = ("startswith", "endswith")  # a string's tests a script branches on


def _literal(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """The value of `node` under `env`, or `Unknown`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise Unknown(node.id)
    if isinstance(node, ast.Tuple | ast.List):
        items = _items(node.elts, env)
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:  # `{**base, ...}`: the unpacked dict's items, in order
                base = _literal(v, env)
                if not isinstance(base, dict):
                    raise Unknown("** of a non-dict")
                out.update(base)
            else:
                out[_literal(k, env)] = _literal(v, env)
        return out
    if isinstance(node, ast.UnaryOp):
        v = _literal(node.operand, env)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return not v
        raise Unknown("unary")
    if isinstance(node, ast.IfExp):
        return _literal(node.body if _literal(node.test, env) else node.orelse, env)
    if isinstance(node, ast.BoolOp):
        values = [_literal(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = _literal(node.left, env), _literal(node.comparators[0], env)
        compare: dict[type, Any] = {
            ast.Eq: lambda: a == b,
            ast.NotEq: lambda: a != b,
            ast.Lt: lambda: a < b,
            ast.LtE: lambda: a <= b,
            ast.Gt: lambda: a > b,
            ast.GtE: lambda: a >= b,
            ast.Is: lambda: a is b,
            ast.IsNot: lambda: a is not b,
            ast.In: lambda: a in b,
            ast.NotIn: lambda: a not in b,
        }
        op = compare.get(type(node.ops[0]))
        if op is None:
            raise Unknown("comparison")
        try:
            return op()
        except TypeError:
            raise Unknown("comparison") from None
    if isinstance(node, ast.BinOp):
        a, b = _literal(node.left, env), _literal(node.right, env)
        ops: dict[type, Any] = {
            ast.Add: lambda: a + b,
            ast.Sub: lambda: a - b,
            ast.Mult: lambda: a * b,
            ast.FloorDiv: lambda: a // b,
            ast.Div: lambda: a / b,
            ast.Pow: lambda: a**b,
            ast.Mod: lambda: a % b,
        }
        fn = ops.get(type(node.op))
        if fn is None:
            raise Unknown("operator")
        try:
            return fn()
        except (TypeError, ZeroDivisionError, OverflowError):
            raise Unknown("arithmetic") from None
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        if base == "torch":
            return f"torch.{node.attr}"
        if base == "input" and node.attr == "x" and "x" in env:
            return env["x"]
        if base and f"{base}.{node.attr}" in env:
            return env[f"{base}.{node.attr}"]
        raise Unknown(_dotted(node) or "attribute")
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in env:
            return env[key.value]  # cfg["M"], input.extra_benchmark_config["M"]
        container = _literal(node.value, env)
        return container[_literal(key, env)]
    if isinstance(node, ast.Call):
        fname = _dotted(node.func)
        args = _items(node.args, env)
        if isinstance(node.func, ast.Attribute) and node.func.attr in STR_METHODS:
            base = _literal(node.func.value, env)  # `provider.startswith('flash')`
            if isinstance(base, str) and all(isinstance(a, str | tuple) for a in args):
                return getattr(base, node.func.attr)(*args)
        if fname in ("pytest.param", "param"):
            return tuple(args)  # a parametrize case: its values (ids and marks left out)
        if fname == "range":
            return list(range(*args))
        builtin: dict[str, Any] = {
            "int": int,
            "float": float,
            "min": min,
            "max": max,
            "len": len,
            "abs": abs,
            "round": round,
        }
        if fname in builtin:
            return builtin[fname](*args)
        if fname in ("math.ceil", "triton.cdiv", "cdiv"):
            return math.ceil(args[0] / args[1]) if len(args) == 2 else math.ceil(args[0])
        raise Unknown(fname or "call")
    if isinstance(node, ast.ListComp) and len(node.generators) >= 1:
        return _comprehension(node, env)
    raise Unknown(type(node).__name__)


def _items(nodes: list[ast.expr], env: Mapping[str, Any]) -> list[Any]:
    """The values of a list of elements or arguments, `*starred` ones unpacked."""
    items: list[Any] = []
    for e in nodes:
        if isinstance(e, ast.Starred):
            items.extend(_literal(e.value, env))
        else:
            items.append(_literal(e, env))
    return items


def _comprehension(node: ast.ListComp, env: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = []

    def walk(i: int, scope: dict[str, Any]) -> None:
        if i == len(node.generators):
            out.append(_literal(node.elt, scope))
            return
        gen = node.generators[i]
        for value in _literal(gen.iter, scope):
            inner = dict(scope)
            _bind(gen.target, value, inner)
            if all(_literal(c, inner) for c in gen.ifs):
                walk(i + 1, inner)

    walk(0, dict(env))
    return out


def _bind(target: ast.expr, value: Any, env: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Tuple | ast.List):
        values = list(value)
        if len(values) != len(target.elts):
            raise Unknown("unpacking")
        for t, v in zip(target.elts, values, strict=True):
            _bind(t, v, env)
    else:
        raise Unknown("target")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


# --- the sweep ---------------------------------------------------------------------------------


def _sweeps(tree: ast.Module) -> list[dict[str, Any]]:
    """Every sweep point the script declares, as an environment."""
    points: list[dict[str, Any]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {
                k.value: v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant)
            }
            if "x_values" in keys:
                points += _points(
                    keys.get("x_name"), keys["x_values"], keys.get("extra_benchmark_configs"), {}
                )
        elif isinstance(node, ast.Call) and _dotted(node.func).endswith("Benchmark"):
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if "x_vals" in kw:
                extra = kw.get("args")
                const = {}
                if isinstance(extra, ast.Dict):
                    try:
                        const = _literal(extra, {})
                    except Unknown:
                        const = {}
                line = _line_arg(kw.get("line_arg"), kw.get("line_vals"))
                swept = _points(kw.get("x_names"), kw["x_vals"], None, const)
                points += [{**p, **line} for p in swept]
    return points


LINES = "__lines__"  # a sweep point's (line_arg, line_vals): the providers a perf_report compares


def _line_arg(name: ast.expr | None, values: ast.expr | None) -> dict[str, Any]:
    """`{LINES: ("provider", ("abc", "gla", ...))}` of a perf_report's `line_arg`/`line_vals`,
    else nothing. The script builds its inputs per provider (flash-linear-attention's
    benchmark_abc.py: q as (B, H, T, D), rebuilt as (B, T, H, D) `if provider.startswith('flash')`),
    so a call is evaluated with the provider that reaches it bound (`_provider`)."""
    try:
        arg = _literal(name, {}) if name is not None else None
        vals = _literal(values, {}) if values is not None else None
    except (Unknown, IndexError, KeyError):
        return {}
    if not isinstance(arg, str) or not isinstance(vals, list | tuple):
        return {}
    return {LINES: (arg, tuple(vals))}


def _enclosing_ifs(body: list[ast.stmt], line: int) -> list[tuple[ast.If, bool]]:
    """The `if` statements around `line`, outermost first, each with whether `line` lies in its
    body (True) or in its `else`/`elif` (False)."""
    out: list[tuple[ast.If, bool]] = []
    while True:
        node = next((n for n in body if n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if node is None:
            return out
        if isinstance(node, ast.If):
            inside = any(n.lineno <= line <= (n.end_lineno or n.lineno) for n in node.body)
            out.append((node, inside))
            body = node.body if inside else node.orelse
        elif isinstance(node, ast.For | ast.While | ast.With | ast.Try):
            body = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            body += [s for h in getattr(node, "handlers", []) for s in h.body]
        else:
            return out


def _provider(sc: ScriptCall, point: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep point with its perf_report's `line_arg` bound to the first of its values whose
    `if` tests lead to the call (`elif provider == 'gla':`, or `elif provider_base == 'kda':`
    after `provider_base = provider`); a test that does not evaluate agrees with every value.
    Unchanged without a line_arg, or where the script binds it."""
    lines = point.get(LINES)
    if not lines or lines[0] in point:
        return dict(point)
    name, values = lines
    ifs = _enclosing_ifs(sc.function.body, sc.line)

    def leads(env: Mapping[str, Any]) -> bool:
        for node, inside in ifs:  # each test read where it stands (`provider_base == 'kda'`)
            here = _replay(sc.function, env, node.lineno, sc.helpers)
            try:
                if bool(_literal(node.test, here)) != inside:
                    return False
            except (Unknown, TypeError, ValueError, IndexError, KeyError):
                continue
        return True

    for v in values:
        if leads({**point, name: v}):
            return {**point, name: v}
    return dict(point)


def _points(
    x_name: ast.expr | None, x_values: ast.expr, extras: ast.expr | None, const: dict[str, Any]
) -> list[dict[str, Any]]:
    try:
        names = _literal(x_name, {}) if x_name is not None else "x"
        values = _literal(x_values, {})
        configs = _literal(extras, {}) if extras is not None else [{}]
    except (Unknown, IndexError, KeyError):
        return []
    names = [names] if isinstance(names, str) else list(names)
    out = []
    for cfg in configs if isinstance(configs, list) else [configs]:
        for v in values:
            env: dict[str, Any] = {**const, **(cfg if isinstance(cfg, dict) else {})}
            vals = list(v) if isinstance(v, tuple | list) and len(names) > 1 else [v]
            for n, val in zip(names, vals, strict=False):
                env[n] = val
            env["x"] = vals[0]
            env["__x_names__"] = tuple(names)
            out.append(env)
    return out


# a test's reference implementation, imported beside the kernel's wrapper: not the workload
# a reference implementation's name: `rowscale_ref`, `naive_x`, `torch_x` in any case, and the
# CamelCase `RowScaleRef` / `TorchRowScale` only so spelled (not `deref`, `torchx`)
_REFERENCE = re.compile(r"(?i:(^|_)(ref|naive|torch|reference)(_|$))|Ref$|^(Torch|Naive)[A-Z]")
MAX_TEST_POINTS = 4096  # parametrize combinations evaluated per test function
FIXTURES = "__fixtures__"  # module_env's key of the names of the fixtures it evaluated


def module_env(tree: ast.Module) -> dict[str, Any]:
    """The module-level names a test's parametrize lists use (`test_t_list = [64, 300]`), in
    source order; both branches of an `if` are read and the later assignment wins (the
    branch after `else` is usually the full test, the one before it a reduced one)."""
    env: dict[str, Any] = {}

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                with contextlib.suppress(Unknown, TypeError, ValueError, IndexError, KeyError):
                    _bind(node.targets[0], _literal(node.value, env), env)
            elif isinstance(node, ast.FunctionDef) and (value := _fixture(node, env)) is not None:
                env[node.name] = value  # a test's parameter of this name gets it
                env.setdefault(FIXTURES, set()).add(node.name)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                walk(node.body)
                walk(getattr(node, "orelse", []))

    walk(tree.body)
    return env


def _fixture(fn: ast.FunctionDef, env: Mapping[str, Any]) -> Any:
    """The value a `@pytest.fixture` without parameters returns when its body is one `return`
    of a value (`return {"input_batch": 16, "feature_dim": 256}`); None otherwise."""
    fixture = any(_dotted(d.func if isinstance(d, ast.Call) else d).endswith("fixture")
                  and not (isinstance(d, ast.Call) and any(k.arg == "params" for k in d.keywords))
                  for d in fn.decorator_list)  # fmt: skip
    body = [n for n in fn.body
            if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]  # fmt: skip
    if not fixture or fn.args.args or len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    try:
        return _literal(body[0].value, env) if body[0].value is not None else None
    except (Unknown, TypeError, ValueError, IndexError, KeyError):
        return None


def parametrized(fn: ast.FunctionDef, env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the function's `@pytest.mark.parametrize` cases, each an
    environment over `env` (at most `MAX_TEST_POINTS`; a decorator whose cases cannot be
    evaluated is left out, so its parameter keeps `env`'s value or stays unknown)."""
    axes: list[list[dict[str, Any]]] = []
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and _dotted(dec.func).endswith("parametrize")):
            continue
        if len(dec.args) < 2:
            continue
        try:
            names = _literal(dec.args[0], env)
            cases = _literal(dec.args[1], env)
        except (Unknown, TypeError, ValueError, IndexError, KeyError):
            continue
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        axis = []
        for case in cases:
            values = list(case) if len(names) > 1 else [case]
            if len(values) == len(names):
                axis.append(dict(zip(names, values, strict=True)))
        if axis:
            axes.append(axis)
    start = dict(env)
    for a in fn.args.args:  # a fixture's dict is the test's named sizes: `params["input_batch"]`
        value = env.get(a.arg) if a.arg in env.get(FIXTURES, ()) else None
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            start.update(value)
    points: list[dict[str, Any]] = [start]
    for axis in axes:
        points = [{**p, **case} for p in points for case in axis][:MAX_TEST_POINTS]
    for p in points:
        p["__x_names__"] = tuple(k for axis in axes for k in axis[0])
    return points


# --- finding the call --------------------------------------------------------------------------


def _imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """local name -> (module, imported name) for `from m import n [as a]` anywhere in the
    script (function-level imports included)."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                out[a.asname or a.name] = (node.module, a.name)
    return out


def relevance(
    tree: ast.Module,
    modules: set[str],
    names: set[str],
    defined: frozenset[str] = frozenset(),
) -> dict[str, tuple[str, str]]:
    """The imports of the script that reach the task's code: a target name, a name from a
    target's module (or one the module's name ends: `ops.rowscale`), or a
    name that a target file defines imported from a package above it (`from fla.ops.gla import
    chunk_gla`, defined in `fla/ops/gla/chunk.py`)."""
    return {local: (module, name) for local, (module, name) in _imports(tree).items()
            if reaches(module, name, modules, names, defined)}  # fmt: skip


def reaches(
    module: str,
    name: str,
    modules: set[str],
    names: set[str],
    defined: frozenset[str] = frozenset(),
) -> bool:
    """Whether `from module import name` reaches the task's code (see `relevance`)."""
    above = name in defined and any(m.startswith(module + ".") for m in modules)
    # a module named by the tail of a target's (`ops.rowscale`: a script that puts a package
    # directory on its path); a sibling package's file of the same name
    # (`fla.ops.simple_gla.parallel` for `fla/ops/nsa/parallel.py`) is not the task's code,
    # nor a bare name (`from utils import assert_close`: the tests' own utils.py)
    tail = "." in module and any(m.endswith("." + module) for m in modules)
    return name in names or module in modules or tail or above


@functools.lru_cache(maxsize=512)
def _parsed(text: str) -> ast.Module | SyntaxError:
    """A script's tree (read-only), parsed once: the planner's hops and the tasks of one
    repository read the same test modules again and again."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        return exc


def find_calls(
    path: str,
    text: str,
    modules: set[str],
    names: set[str],
    defined: frozenset[str] = frozenset(),
    test: bool = False,
    init_params: Callable[[str, str], Sequence[str] | None] | None = None,
) -> tuple[list[ScriptCall], str]:
    """The script's calls of the task's code, or why there are none. A benchmark script
    declares one sweep for the whole module; a `test` module's sweep is per test function,
    its parametrize cases (`parametrized`). `init_params(module, class)`: the names of the
    class's constructor parameters, for a construction with positional arguments."""
    tree = _parsed(text)
    if isinstance(tree, SyntaxError):
        return [], f"{path}:{tree.lineno}: does not parse"
    reach = relevance(tree, modules, names, defined)
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    script_imports = _imports(tree)
    if not reach:
        return [], ""
    sweeps = [] if test else _sweeps(tree)
    if not sweeps and not test:
        return [], f"{path}: imports {', '.join(sorted(reach))} but declares no sweep"
    env = module_env(tree) if test else {}
    calls: list[ScriptCall] = []
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        if test:
            if not fn.name.startswith("test"):
                continue
            sweeps = parametrized(fn, env)
        aliases: dict[str, str] = {}  # local variable -> the reached import it names
        objects: dict[str, tuple[str, ast.Call]] = {}  # obj = Reached(**init)
        casts: dict[str, tuple[ast.expr, ...]] = {}  # obj = Reached(...).to(dtype)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t, v = node.targets[0], node.value
                if isinstance(t, ast.Name) and isinstance(v, ast.Name) and v.id in reach:
                    aliases[t.id] = v.id
                inner = _strip_methods(v)
                if (
                    isinstance(t, ast.Name)
                    and isinstance(inner, ast.Call)
                    and isinstance(inner.func, ast.Name)
                    and inner.func.id in reach
                ):
                    cls = inner.func.id
                    if cls[:1].isupper():
                        objects[t.id] = (cls, inner)
                        casts[t.id] = _cast_of(v)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            local = method = ""
            init: dict[str, ast.expr] = {}
            kind = EntryKind.FUNCTION
            built: tuple[str, ast.Call] | None = None  # the module the call calls, if any
            cast: tuple[ast.expr, ...] = ()
            inline = _strip_methods(func) if isinstance(func, ast.Call) else None
            if isinstance(func, ast.Name) and func.id in objects:
                built, cast = objects[func.id], casts[func.id]
            elif (  # `Cls(...)(args)`: built and called in one expression
                isinstance(inline, ast.Call)
                and isinstance(inline.func, ast.Name)
                and inline.func.id in reach
                and inline.func.id[:1].isupper()
            ):
                built, cast = (inline.func.id, inline), _cast_of(func)
            if built is not None:
                local, ctor = built
                kind = EntryKind.MODULE
                init = {k.arg: k.value for k in ctor.keywords if k.arg}
                if ctor.args:
                    params = init_params(*reach[local]) if init_params else None
                    starred = any(isinstance(a, ast.Starred) for a in ctor.args)
                    if params is None or starred or len(ctor.args) > len(params):
                        continue  # positional constructor arguments: names unknown
                    init = {**dict(zip(params, ctor.args, strict=False)), **init}
            elif isinstance(func, ast.Name):
                local = aliases.get(func.id, func.id)
                if local[:1].isupper():
                    continue  # a class being constructed, not called
            elif isinstance(func, ast.Attribute) and func.attr == "apply":
                local, method = _dotted(func.value), "apply"
            if local not in reach or (test and _REFERENCE.search(reach[local][1])):
                continue
            module, name = reach[local]
            entry = Entry(module, name, kind, method)
            calls.append(ScriptCall(path, node.lineno, entry, fn, node, init, sweeps, local, cast,
                                    helpers, script_imports))  # fmt: skip
    if not calls:
        return [], f"{path}: imports {', '.join(sorted(reach))} but never calls it"
    return calls, ""


def _cast_of(node: ast.expr) -> tuple[ast.expr, ...]:
    """What a chain such as `Cls(...).to(dtype).to(device)` or `Cls(...).bfloat16()` may cast
    to, outermost first: the arguments of its `.to(...)` calls (evaluated later; a device is
    passed over then) and its dtype methods."""
    out: list[ast.expr] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        if attr in _DTYPE_METHODS:
            out.append(ast.Constant(f"torch.{attr}"))
        elif attr == "to":
            out += [k.value for k in node.keywords if k.arg == "dtype"] + list(node.args[:1])
        node = node.func.value
    return tuple(out)


def _module_cast(sc: ScriptCall, env: Mapping[str, Any]) -> str:
    """The dtype name a MODULE entry is cast to in the replayed `env` ("" when none)."""
    for node in sc.cast:
        value = _maybe(node, env)
        if isinstance(value, str) and value.startswith("torch."):
            return _dtype_name(value)
    return ""


def _strip_methods(node: ast.expr) -> ast.expr:
    """`X(...).to(device).cuda()` -> `X(...)`."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr
        in (
            "to",
            "cuda",
            "contiguous",
            "requires_grad_",
            "float",
            "half",
            "bfloat16",
            "clamp_min",
            "clamp",
            "detach",
            "clone",
            "t",
        )
    ):
        node = node.func.value
    return node


# --- evaluating the call at one sweep point ----------------------------------------------------


_DTYPE_ALIASES = {"long": "int64", "int": "int32", "float": "float32", "half": "float16",
                  "double": "float64", "short": "int16", "cfloat": "complex64"}  # fmt: skip


def _dtype_name(v: Any) -> str:
    name = str(v).removeprefix("torch.") if v is not None else "float32"
    return _DTYPE_ALIASES.get(name, name)


def _tensor(node: ast.expr, env: Mapping[str, Any]) -> TensorValue:
    """The tensor an expression builds (`torch.randn(M, N, dtype=...)` and friends), or keeps:
    `-a`, `g / 4`, `x * y` of one shape, `F.normalize(a)` of a tensor built before."""
    if isinstance(node, ast.IfExp):  # `torch.randn(D) if bias else None`
        return _tensor(node.body if _literal(node.test, env) else node.orelse, env)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _tensor(node.operand, env)
    if isinstance(node, ast.BinOp):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            try:
                value = _tensor(side, env)
            except Unknown:
                continue
            scalar = _maybe(other, env)
            if isinstance(scalar, int | float) and not isinstance(scalar, bool):
                return value
            with contextlib.suppress(Unknown):
                if _tensor(other, env).shape == value.shape:
                    return value
        raise Unknown("an operation on tensors")
    grad = False
    squeeze: list[int] = []
    dtype_method = ""  # `.bfloat16()` and friends at the end of the chain
    method_rule = ""  # the outermost rule-giving method of the chain
    outer = node
    while (
        isinstance(outer, ast.Call)
        and isinstance(outer.func, ast.Attribute)
        and _dotted(outer.func.value) not in ("torch", "F", "torch.nn.functional")
    ):
        attr = outer.func.attr
        if attr == "requires_grad_":
            grad = True
        if attr == "squeeze" and outer.args:
            squeeze.append(_literal(outer.args[0], env))
        if attr in _DTYPE_METHODS and not dtype_method:
            dtype_method = _dtype_name(attr)
        if attr == "to" and outer.args and not dtype_method:  # `.to(dtype)`, `.to(device)`
            to = _maybe(outer.args[0], env)
            dtype_method = _dtype_name(to) if isinstance(to, str) and "." in to else ""
        method_rule = method_rule or _METHOD_RULES.get(attr.rstrip("_"), "")
        outer = outer.func.value
    if isinstance(outer, ast.Name) and isinstance(env.get(outer.id), TensorValue):
        known: TensorValue = env[outer.id]  # `q.clone()`, `x.detach().requires_grad_()`
        return replace(known, grad=known.grad or grad, dtype=dtype_method or known.dtype,
                       rule=method_rule or known.rule)  # fmt: skip
    wrap = ""  # a shape-keeping function around the constructor decides the input rule
    if isinstance(outer, ast.Call) and outer.args:
        wrap = _WRAPPERS.get(_dotted(outer.func).rsplit(".", 1)[-1], "")
        if wrap:
            outer = _strip_methods(outer.args[0])
            if isinstance(outer, ast.Name) and isinstance(env.get(outer.id), TensorValue):
                return replace(env[outer.id], rule=wrap, grad=env[outer.id].grad or grad)
    if not isinstance(outer, ast.Call):
        raise Unknown("not a constructor")
    fname = _dotted(outer.func)
    kw = {k.arg: k.value for k in outer.keywords if k.arg}
    if kw.get("requires_grad") is not None:
        with contextlib.suppress(Unknown):
            grad = grad or bool(_literal(kw["requires_grad"], env))
    short = fname.rsplit(".", 1)[-1]
    if not fname.startswith("torch.") or short not in _CTORS | _LIKE:
        raise Unknown(fname)
    dtype = _literal(kw["dtype"], env) if "dtype" in kw else None
    if short in _LIKE:
        base = env.get(_dotted(outer.args[0])) if outer.args else None
        if not isinstance(base, TensorValue):
            raise Unknown("like of an unknown tensor")
        rule = "zeros" if short in ("zeros_like", "empty_like") else "normal"
        return TensorValue(base.shape, _dtype_name(dtype) if dtype else base.dtype, rule, grad=grad)
    args = list(outer.args)
    params: dict[str, Any] = {}
    rule = "normal"
    if short == "randint":
        low, high = 0, None
        nums = [a for a in args if not isinstance(_maybe(a, env), tuple | list)]
        if len(nums) == 1:
            high = _literal(nums[0], env)
        elif len(nums) >= 2:
            low, high = _literal(nums[0], env), _literal(nums[1], env)
        if "high" in kw:
            high = _literal(kw["high"], env)
        args = [a for a in args if isinstance(_maybe(a, env), tuple | list)]
        if "size" in kw:
            args = [kw["size"]]
        rule, params = "index", {"low": low, "high": high}
        dtype = dtype or "torch.int64"
    elif short in ("zeros", "empty"):
        rule = "zeros"
    elif short == "tensor":
        return _written(outer, env, kw, grad)
    elif short in ("arange", "randperm"):
        raise Unknown(short)
    elif short == "full":
        args = args[:1]
    if "size" in kw and short != "randint":
        args = [kw["size"]]
    shape: list[int] = []
    for a in args:
        v = _literal(a, env)
        shape.extend(int(x) for x in (v if isinstance(v, tuple | list) else [v]))
    for d in squeeze:
        if -len(shape) <= d < len(shape) and shape[d] == 1:
            del shape[d]
    if wrap:
        rule = wrap
    elif method_rule and rule == "normal":
        rule = method_rule
    if dtype_method:
        dtype = dtype_method
    if rule == "normal" and dtype and dtype_kind(_dtype_name(dtype)) == "int":
        # `torch.full((B, T, H, S), T, dtype=torch.long)` then filled in a loop (NSA's block
        # indices): its values are set where the reader does not follow; random ones could
        # address memory the kernel must not touch
        raise Unknown("an integer tensor whose values are set elsewhere")
    return TensorValue(tuple(shape), _dtype_name(dtype), rule, params, grad)


def _written(call: ast.Call, env: Mapping[str, Any], kw: Mapping[str, ast.expr],
             grad: bool) -> TensorValue:  # fmt: skip
    """`torch.tensor([5])`, `torch.tensor([[0, 1], [2, 3]], dtype=...)`: the values as written
    (rule `values`: a position or a small table the test chose, kept at every size)."""
    values = _literal(call.args[0], env) if call.args else None
    shape: list[int] = []
    level: Any = values
    while isinstance(level, list | tuple):
        shape.append(len(level))
        level = level[0] if level else None
    flat = _flat(values)
    if not flat or not all(type(v) in (int, float, bool) for v in flat):
        raise Unknown("tensor")  # `torch.tensor(n)` (a scalar: shape ()) is written out too
    kinds = {type(v) for v in flat}
    default = {frozenset({bool}): "torch.bool", frozenset({int}): "torch.int64"}.get(
        frozenset(kinds), "torch.float32")  # fmt: skip
    dtype = _literal(kw["dtype"], env) if "dtype" in kw else default
    return TensorValue(tuple(shape), _dtype_name(dtype), "values", {"values": values}, grad)


def _member(node: ast.expr, imports: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """`ActivationType.SQUARED_RELU` of `from pkg.moe import ActivationType`: a reference the
    harness resolves in the variant's tree (`{"ref": "pkg.moe:ActivationType.SQUARED_RELU"}`);
    `Unknown` for anything else."""
    path = _dotted(node)
    root = path.split(".", 1)[0]
    if "." not in path or root not in imports:
        raise Unknown(path or type(node).__name__)
    module, name = imports[root]
    return {"ref": f"{module}:{name}.{path.split('.', 1)[1]}"}


def _flat(values: Any) -> list[Any]:
    if isinstance(values, list | tuple):
        return [v for item in values for v in _flat(item)]
    return [values]


def _maybe(node: ast.expr, env: Mapping[str, Any]) -> Any:
    try:
        return _literal(node, env)
    except Unknown:
        return None


MAX_HELPER_DEPTH = 3  # helpers calling helpers, replayed at most this deep


def _replay(
    fn: ast.FunctionDef,
    point: Mapping[str, Any],
    stop: int,
    helpers: Mapping[str, ast.FunctionDef] | None = None,
    depth: int = 0,
) -> dict[str, Any]:
    """The function's environment at line `stop`: parameters from the sweep point, then each
    assignment before that line that can be evaluated, in source order. An `if` whose test
    evaluates takes its branch; one whose test does not reads both (the later one wins). An
    assignment from a call of one of the script's `helpers` takes what the helper returns,
    its body replayed with the call's arguments (`_inlined`)."""
    env: dict[str, Any] = dict(point)
    for a in fn.args.args:
        if a.arg in point:
            env[a.arg] = point[a.arg]

    def assign(node: ast.Assign | ast.AnnAssign) -> None:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        if node.value is None:
            return
        try:
            try:
                v: Any = _value(node.value, env)
            except Unknown:
                if not (helpers and isinstance(node.value, ast.Call)):
                    raise
                v = _inlined(node.value, env, helpers, depth)
            _bind(target, v, env)
        except (Unknown, TypeError, ValueError, IndexError, KeyError):
            pass

    def walk(body: list[ast.stmt]) -> bool:
        """False once `stop` is reached."""
        for node in body:
            if node.lineno >= stop:
                return False
            if isinstance(node, ast.Assign | ast.AnnAssign):
                assign(node)
            elif isinstance(node, ast.If):
                try:
                    taken = [node.body if _literal(node.test, env) else node.orelse]
                except (Unknown, TypeError, ValueError, IndexError, KeyError):
                    taken = [node.body, node.orelse]
                for branch in taken:
                    if not walk(branch):
                        return False
            elif isinstance(node, ast.For | ast.While | ast.With | ast.Try):
                for branch in (node.body, getattr(node, "orelse", [])):
                    if not walk(branch):
                        return False
        return True

    walk(fn.body)
    return env


def _value(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """A tensor the expression builds or keeps, else its plain value (`Unknown` if neither)."""
    try:
        return _tensor(node, env)
    except Unknown:
        return _literal(node, env)


def _inlined(call: ast.Call, env: Mapping[str, Any], helpers: Mapping[str, ast.FunctionDef],
             depth: int) -> Any:  # fmt: skip
    """What a module-level helper returns (`hidden, probs = _make_inputs(T, H, topk)`): its
    parameters bound from the call's arguments (and its defaults), its body replayed, its last
    top-level `return` evaluated (a tuple element by element)."""
    fn = helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if fn is None or depth >= MAX_HELPER_DEPTH:
        raise Unknown(_dotted(call.func) or "call")
    returns = [n for n in fn.body if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        raise Unknown(f"{fn.name} returns nothing")
    params = [a.arg for a in fn.args.args]
    bound: dict[str, Any] = {}
    given = [*zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults, strict=True),
             *zip(params, call.args, strict=False),
             *((k.arg, k.value) for k in call.keywords if k.arg in params)]  # fmt: skip
    for name, node in given:
        with contextlib.suppress(Unknown, TypeError, ValueError, IndexError, KeyError):
            bound[name] = _value(node, env)
    last = returns[-1]
    outer = {k: v for k, v in env.items() if k not in params}  # an unbound parameter stays so
    inner = _replay(fn, {**outer, **bound}, last.lineno, helpers, depth + 1)
    assert last.value is not None
    if isinstance(last.value, ast.Tuple):
        return tuple(_value(e, inner) for e in last.value.elts)
    return _value(last.value, inner)


def evaluate(sc: ScriptCall, point: Mapping[str, Any]) -> tuple[dict[str, Any], list[ArgSpec], str]:
    """(init keywords, arguments, the dtype a MODULE entry is cast to or "") of the call at one
    sweep point; `Unknown` when an argument is neither a tensor the script built nor a value."""
    env = _replay(sc.function, _provider(sc, point), sc.line, sc.helpers)
    init = {k: _literal(v, env) for k, v in sc.init.items()}
    init = {
        k: (_dtype_name(v) if isinstance(v, str) and v.startswith("torch.") else v)
        for k, v in init.items()
    }
    specs: list[ArgSpec] = []
    params = [(None, a) for a in sc.call.args] + [(k.arg, k.value) for k in sc.call.keywords]
    for i, (kw, node) in enumerate(params):
        if isinstance(node, ast.Starred):
            raise Unknown("starred")
        name = kw or (node.id if isinstance(node, ast.Name) else f"arg{i}")
        value: Any
        try:
            value = _value(node, env)
        except Unknown:
            value = _member(node, sc.imports)
        if isinstance(value, TensorValue):
            by_name = rule_for(name, value.dtype)
            if value.rule == "index" and by_name in ("labels", "offsets", "topk"):
                high = value.params.get("high") or 2
                total = math.prod(value.shape) if value.shape else 1
                value = replace(value, rule=by_name, params={"high": high, "total": total})
            specs.append(
                ArgSpec(
                    name,
                    True,
                    value.shape,
                    value.dtype,
                    None,
                    value.rule,
                    dict(value.params),
                    keyword=kw is not None,
                    grad=value.grad,
                )
            )
        else:
            if isinstance(value, str) and value.startswith("torch."):
                value = {"dtype": _dtype_name(value)}
            specs.append(ArgSpec(name, False, value=value, keyword=kw is not None))
    if not any(s.tensor for s in specs):
        raise Unknown("no tensor argument")
    return init, specs, _module_cast(sc, env)


def dims_of(point: Mapping[str, Any]) -> dict[str, int]:
    return {
        k: int(v)
        for k, v in point.items()
        if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("__")
    }


def sweep_keys(calls: Iterable[ScriptCall]) -> set[str]:
    return {k for c in calls for p in c.sweeps for k in p if not k.startswith("__")}
