"""Plan a task's workload: which calls, at which sizes, measured how (`workload.json`).

Reads: the task record, the repository's files at the base commit (through a `TreeView`), and
the largest launch of a target kernel that the tests captured (`reference.json`, when the task
has one). Writes nothing; `eval.workload_run` stores the plan.

Sources, in this order (the first that gives a call decides the sizes):
1. `benchmark_script`: the repository's own benchmark of the wrapper (`eval.workload_scripts`);
2. `model_config`: the model configurations in the repository (hidden size, heads, head dim,
   vocabulary, experts, top-k) put into the captured launch through the kernel's scalar
   parameters of those names, then scaled along its token dimension as in 3;
3. `test_call`: a test's own call of the wrapper, read from the test module like a benchmark
   script (its parametrize cases are the sweep), at its largest case, scaled along its token
   dimension (`TOKEN_DIMS`; a sequence up to `MAX_SEQ_LEN`, then the batch) until the gold's
   estimated time reaches `MIN_GOLD_US`: wrapper-level, planned without a GPU;
4. `scaled_test_call`: the captured launch scaled along its token dimension (the leading
   dimension of its largest tensor) until the gold's estimated time reaches `MIN_GOLD_US`.
Sizes are labelled small, typical and large. The metric is the kernel time, or the cold wall
time of the call sequence when the PR is about compilation, autotuning or launch overhead
(its title and body, or a kernel parameter that stops being `tl.constexpr`); such a sequence,
scaled from a test (3, 4), holds eight batch sizes (`SERVICE_STEPS`), the other five `step`.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Any, Protocol

from curation.model import TargetRole, Task
from curation.testsel import module_name
from eval.perf_scores import h200_us
from eval.workload_inputs import LAUNCH_OPTIONS, dtype_kind, rule_for
from eval.workload_layout import layout_mismatch
from eval.workload_model import (
    MIN_GOLD_US,
    ArgSpec,
    Entry,
    EntryKind,
    Metric,
    Mode,
    SizeLabel,
    Source,
    Workload,
    WorkloadCall,
)
from eval.workload_registry import RegistryOp, is_registry, registry_args, registry_ops
from eval.workload_scripts import (
    ScriptCall,
    Unknown,
    dims_of,
    evaluate,
    find_calls,
    is_benchmark_script,
    is_test_script,
    reaches,
)

log = logging.getLogger(__name__)

MAX_CALL_BYTES = 16 * 2**30  # a call's tensors must fit the H200 with room to spare
LABELS = (SizeLabel.SMALL, SizeLabel.TYPICAL, SizeLabel.LARGE)
# multiples of the smallest size whose estimate reaches MIN_GOLD_US: small, typical, large
SIZE_STEPS = (1, 4, 16)
# a cold_wall_time sequence: the batch sizes a service meets one after another, each new one
# compiled again where a size is a constexpr (Megatron-LM #5608). With the three sizes alone the
# first call's compilation, paid by every variant, was nine tenths of the sum: two H100 runs of
# #5608 gave 1.16x and 1.06x for the same 69-vs-0.4 ms per new size (docs/workloads.md)
SERVICE_STEPS = (1, 2, 3, 4, 6, 8, 12, 16)
_ITEMSIZE = {
    "float64": 8,
    "int64": 8,
    "uint64": 8,
    "float32": 4,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int16": 2,
    "uint16": 2,
}


class TreeView(Protocol):
    """The repository's files at one commit: its Python modules, and its shell and YAML files
    (the examples' launch arguments, `launch_configs`)."""

    def paths(self) -> list[str]: ...

    def read(self, paths: Sequence[str]) -> dict[str, str]: ...


# --- the metric --------------------------------------------------------------------------------

_COLD_WORDS = re.compile(
    r"re-?compil\w*|compilation|compile[- ]time|jit overhead|launch overhead|cuda[ -]?graph\w*"
    r"|autotun\w* (overhead|time|cost)|(avoid|skip|reduce|cache|fewer)\w*\b.{0,30}autotun\w*",
    re.I,
)
_CONSTEXPR_PARAM = re.compile(r"(\w+)\s*:\s*tl\.constexpr")


def choose_metric(task: Task) -> tuple[Metric, str]:
    """COLD_WALL_TIME for a PR about compilation, autotuning or launch overhead (the words of
    its title and body, or a kernel parameter that loses `tl.constexpr`), else KERNEL_TIME."""
    m = _COLD_WORDS.search(f"{task.title}\n{task.body}")
    if m:
        return Metric.COLD_WALL_TIME, f"the PR text says {m.group(0)!r}"
    for k in task.kernels:
        before = set(_CONSTEXPR_PARAM.findall(k.signature_before or ""))
        after = set(_CONSTEXPR_PARAM.findall(k.signature_after or ""))
        lost = sorted(p for p in before - after if re.search(rf"\b{p}\b", k.signature_after or ""))
        if lost:
            return Metric.COLD_WALL_TIME, f"{k.name}: {', '.join(lost)} constexpr -> runtime"
    return Metric.KERNEL_TIME, "default"


def workload_mode(task: Task) -> Mode:
    """What a call times: the backward alone when every kernel the PR changes is a backward
    one, forward and backward when some are, else the forward."""
    backward = [bool(re.search(r"bwd|backward|grad", k.name, re.I)) for k in task.kernels]
    if backward and all(backward):
        return Mode.BACKWARD
    return Mode.FULL if any(backward) else Mode.FORWARD


# --- estimates ---------------------------------------------------------------------------------


def tensor_bytes(a: ArgSpec) -> int:
    n = math.prod(a.shape) if a.shape else 1
    return n * _ITEMSIZE.get(a.dtype, 1)


def estimate(args: Iterable[ArgSpec], mode: Mode) -> tuple[int, float]:
    """(bytes moved, µs at the H200's copy bandwidth): each tensor read once, the largest one
    written once more (the output); forward and backward touch about three times as much, the
    backward alone twice."""
    sizes = [tensor_bytes(a) for a in args if a.tensor]
    moved = sum(sizes) + (max(sizes) if sizes else 0)
    moved *= {Mode.FULL: 3, Mode.BACKWARD: 2}.get(mode, 1)
    return moved, h200_us(moved)


def _finish(call: WorkloadCall) -> WorkloadCall:
    moved, us = estimate(call.args, call.mode)
    return replace(call, bytes_moved=moved, estimate_us=round(us, 2))


def pick_sizes(calls: Sequence[WorkloadCall]) -> tuple[WorkloadCall, ...]:
    """Up to three calls, small / typical / large: those estimated at `MIN_GOLD_US` or more
    when there are any (smallest, median, largest), else the largest ones."""
    fits = sorted(
        (c for c in calls if c.bytes_moved <= MAX_CALL_BYTES), key=lambda c: c.bytes_moved
    )
    unique: list[WorkloadCall] = []
    for c in fits:
        if not unique or c.bytes_moved != unique[-1].bytes_moved:
            unique.append(c)
    long_enough = [c for c in unique if c.estimate_us >= MIN_GOLD_US]
    pool = long_enough if len(long_enough) >= min(3, len(unique)) else unique[-3:]
    if len(pool) > 3:
        pool = [pool[0], pool[len(pool) // 2], pool[-1]]
    labels = LABELS if len(pool) == 3 else LABELS[-len(pool) :]
    return tuple(replace(c, label=lb) for c, lb in zip(pool, labels, strict=True))


# --- source 1: benchmark scripts ---------------------------------------------------------------


@dataclass(frozen=True)
class TargetNames:
    modules: set[str]
    names: set[str]


def target_names(task: Task) -> TargetNames:
    files = task.target_files
    names = {t.name.split(".")[0] for t in task.targets if t.role is TargetRole.WRAPPER}
    names |= {t.name.split(".")[-1] for t in task.targets}
    names |= {w.split(".")[0] for k in task.kernels for w in k.wrappers}
    names |= {k.name for k in task.kernels}
    modules = {m for f in files if (m := module_name(f))}
    return TargetNames(modules, names)


def defined_names(view: TreeView, files: Set[str]) -> frozenset[str]:
    """The top-level functions and classes of the target files at the base commit."""
    out: set[str] = set()
    for text in view.read(sorted(files)).values():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        out |= {
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
        }
    return frozenset(out)


def package_imports(view: TreeView, files: Set[str]) -> dict[str, set[str]]:
    """The package files (outside tests and benchmarks) beside the target `files`, each with
    the modules and names it imports, absolute or relative (read and parsed once: the hops of
    `from_benchmarks` look up importers here). The public ops a benchmark calls are often a
    module or more away from the target (flash-linear-attention's `chunk_gated_delta_rule`, in
    `chunk.py`, calls the targets of `wy_fast.py` and `common/chunk_delta_h.py`)."""
    tops = {f.split("/", 1)[0] for f in files if "/" in f}
    # a package's __init__ re-exports (a name defined in a target file and imported from the
    # package above is matched already): counted as an importer, it would make every name of
    # the package look like the task's
    candidates = [p for p in view.paths() if p.split("/", 1)[0] in tops and p not in files
                  and p.endswith(".py") and not p.endswith("__init__.py")
                  and not is_benchmark_script(p)
                  and "/test" not in f"/{p}"]  # fmt: skip
    out: dict[str, set[str]] = {}
    for path, text in view.read(candidates).items():
        names = _imported(path.rsplit("/", 1)[0].replace("/", "."), text)
        if names is not None:
            out[path] = set(names)
    return out


def _absolute(package: str, node: ast.ImportFrom) -> str:
    """The module a `from ... import` in a module of `package` names, relative ones resolved."""
    base = package.rsplit(".", node.level - 1)[0] if node.level else ""
    return ".".join(x for x in (base, node.module or "") if x)


# (package, digest of a module's text) -> what it imports: most modules are the same text at
# the base commits of a repository's tasks, and parsing them is most of a plan's time
_IMPORTED: dict[tuple[str, bytes], frozenset[str] | None] = {}


def _imported(package: str, text: str) -> frozenset[str] | None:
    """The modules and `module.name`s a module of `package` imports (None: it does not parse)."""
    key = (package, hashlib.blake2b(text.encode(), digest_size=16).digest())
    if key not in _IMPORTED:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            _IMPORTED[key] = None
            return None
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                full = _absolute(package, node)
                names |= {full, *(f"{full}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        _IMPORTED[key] = frozenset(names)
    return _IMPORTED[key]


MAX_HOPS = 3  # modules between a benchmark's call and a target; the harness's launch log
# shows whether the target runs (`gold_launched`), so a call that does not reach it is caught
HOPS = {1: "one import", 2: "two imports", 3: "three imports"}


Finder = Callable[[TargetNames, frozenset[str]], tuple[list[WorkloadCall], list[str]]]


def _reexported(imported: str, modules: Set[str], defined: Set[str]) -> bool:
    """Whether `pkg.Name` (an importer map entry) is a name a reached file defines, imported
    from a package above that file."""
    package, _, name = imported.rpartition(".")
    return name in defined and any(m.startswith(package + ".") for m in modules)


def named_kernel_scope(task: Task) -> tuple[str, frozenset[str], TargetNames] | None:
    """The kernel the task is named after (`Task.named_kernel`), with its file, its wrappers'
    files and their names; None when the task has one kernel file and no other targets (the
    whole task is that scope) or the name matches no kernel."""
    kernel = task.named_kernel
    if kernel is None:
        return None
    names = {kernel.name} | {w.split(".")[0] for w in kernel.wrappers}
    files = frozenset(
        {kernel.file} | {t.file for t in task.targets if t.name.split(".")[0] in names}
    )
    if files == task.target_files and len(task.kernels) == 1:
        return None
    modules = {m for f in files if (m := module_name(f))}
    return kernel.name, files, TargetNames(modules, names)


def _hop_search(task: Task, view: TreeView, finder: Finder) -> tuple[list[WorkloadCall], list[str]]:
    """`finder`'s calls of the kernel the task is named after (`named_kernel_scope`), else of
    any of its targets: a PR that changes several kernels is timed where its main change runs
    (flash-linear-attention #8d8bfcd4d0's plan had timed `chunk_gla`, which launches one of its
    targets, `chunk_gla_fwd_kernel_o`, and none of its KDA kernels: 1.00x on an H100 that said
    nothing of the PR's own change)."""
    scope = named_kernel_scope(task)
    if scope is not None:
        name, files, names = scope
        calls, notes = _search(files, names, view, finder)
        if calls:
            return calls, notes
    calls, notes = _search(task.target_files, target_names(task), view, finder)
    if calls and scope is not None:
        notes = [f"{notes[0]}; none reaches {name}, the kernel the task is named after"]
    return calls, notes


def _search(
    files: frozenset[str], tn: TargetNames, view: TreeView, finder: Finder
) -> tuple[list[WorkloadCall], list[str]]:
    """`finder`'s calls of the code in `files` (`tn` their modules and names): first of those
    modules' names, then, hop by hop (up to `MAX_HOPS`), of the modules importing the modules
    reached so far. Returns the calls with the finder's last note (and the hop count), or the
    notes of the direct search."""
    reached, modules = set(files), set(tn.modules)
    defined = defined_names(view, files)
    imports: dict[str, set[str]] | None = None  # read at the first hop only
    notes: list[str] = []
    for hops in range(MAX_HOPS + 1):
        if hops:
            # the public op a benchmark calls may sit several modules above the kernel
            # (flash-linear-attention's `chunk_gla` -> `chunk_gla_fwd` in gla/chunk.py ->
            # `chunk_fwd_o` in common/chunk_o.py): each hop adds the modules importing the last
            imports = package_imports(view, files) if imports is None else imports
            # an importer of a reached module, or of a name a reached file defines through a
            # package above it (`from liger_kernel.ops import LigerRMSNormFunction`)
            hop = {
                p
                for p, names in imports.items()
                if p not in reached
                and (names & modules or any(_reexported(n, modules, defined) for n in names))
            }
            if not hop:
                break
            reached |= hop
            modules |= {m for f in hop if (m := module_name(f))}
            defined |= defined_names(view, hop)
        calls, more = finder(TargetNames(modules, tn.names), defined)
        if calls:
            away = f" ({HOPS[hops]} away from the targets)" if hops else ""
            return calls, [(more[-1] if more else "") + away]
        notes += more if not hops else []
    return [], notes


def from_benchmarks(task: Task, view: TreeView, mode: Mode) -> tuple[list[WorkloadCall], str]:
    """The first benchmark script whose sweep calls the task's code, else the first op of the
    repository's op registry (eval.workload_registry) that does: one that reaches a target by
    name or module, else, hop by hop, one that calls a public function of a module importing
    the modules reached so far (the harness's launch log then shows whether the target runs)."""
    paths = view.paths()
    scripts = sorted(p for p in paths if is_benchmark_script(p))
    registries = sorted(p for p in paths if is_registry(p))
    if not scripts and not registries:
        return [], "no benchmark scripts in the repository"
    texts = view.read([*scripts, *registries])
    ops: list[RegistryOp] = []
    notes: list[str] = []
    for path in registries:
        found, why = registry_ops(path, texts.get(path, ""))
        ops += found
        notes += [why] if why else []

    layouts = DocumentedLayouts(view)

    def finder(tn: TargetNames, defined: frozenset[str]) -> tuple[list[WorkloadCall], list[str]]:
        calls, more = _script_calls(scripts, texts, tn, defined, mode, layouts)
        if not calls:
            calls, reg = _registry_calls(ops, tn, defined, mode)
            more = [*more, *reg]
        return calls, more

    calls, more = _hop_search(task, view, finder)
    # a script passed over for its layout is named whatever the search found after it
    skipped = "".join(f"; passed over: {ev}: {why}" for ev, why in layouts.passed_over.items())
    if calls:
        return calls, more[0] + skipped
    notes += more
    if notes:
        return [], "; ".join(notes[:3]) + skipped
    return [], f"no benchmark script of {len(scripts)} calls the targets" + (
        f", nor an op of {', '.join(registries)}" if registries else "") + skipped  # fmt: skip


def _registry_calls(
    ops: Sequence[RegistryOp], tn: TargetNames, defined: frozenset[str], mode: Mode
) -> tuple[list[WorkloadCall], list[str]]:
    """The workload calls of the first registered op that reaches the task's code, one per
    shape configuration that builds, and notes on the others."""
    notes: list[str] = []
    for op in ops:
        if not reaches(op.module, op.function, tn.modules, tn.names, defined):
            continue
        if op.why_not or (op.skip_backward and mode is not Mode.FORWARD):
            notes.append(op.why_not or f"{op.path}: {op.name} is registered without backward")
            continue
        calls: list[WorkloadCall] = []
        for dims in op.shapes.values():
            try:
                args = registry_args(op, dims, grad=mode is not Mode.FORWARD)
            except (Unknown, TypeError, ValueError, KeyError):
                continue
            entry = Entry(op.module, op.function, EntryKind.FUNCTION)
            sizes = {k: int(v) for k, v in dims.items()}
            calls.append(_finish(WorkloadCall(SizeLabel.TYPICAL, Source.BENCHMARK_SCRIPT,
                                              f"{op.path}:{op.line}", entry, tuple(args),
                                              sizes, mode)))  # fmt: skip
        if calls:
            passed = f" (passed over: {'; '.join(notes)})" if notes else ""
            return list(pick_sizes(calls)), [f"{op.path}: {op.name}, {len(calls)} shapes{passed}"]
        notes.append(f"{op.path}: no shape configuration of {op.name} builds its inputs")
    return [], notes


def runs_backward(sc: ScriptCall) -> bool:
    """Whether the script or test around the call runs a backward pass (`.backward(`,
    `autograd.grad(`) in its function or in a module-level helper it calls (another test of
    the module, that does, says nothing of this one): code that never does times
    and checks the forward (flash-linear-attention #d0b67c5e63's `test_chunk` makes its
    inputs require gradients and calls `chunk_iplr_delta_rule` forward only; that op had no
    backward at the commit, so a plan that ran one failed)."""
    called = {n.func.id for n in ast.walk(sc.function)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}  # fmt: skip
    helpers = [f for name, f in sc.helpers.items() if name in called and f is not sc.function]
    for fn in (sc.function, *helpers):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                if name == "backward" or (name == "grad" and "autograd" in ast.unparse(node)):
                    return True
    return False


def call_mode(sc: ScriptCall, mode: Mode) -> tuple[Mode, str]:
    """What the call site times of the task's `mode`, and why it cannot reach the PR ("" when
    it can): where the code around it runs no backward (`runs_backward`) the forward only,
    and a PR that changes only backward kernels is out of its reach: the search goes on to
    the next call site (flash-linear-attention #315's forward-only test was a fallback for its
    forward kernel; a PR of backward kernels alone would have timed none of them)."""
    if mode is Mode.FORWARD or runs_backward(sc):
        return mode, ""
    if mode is Mode.BACKWARD:
        return mode, f"{sc.path}:{sc.line}: runs no backward (the PR changes only backward kernels)"
    return Mode.FORWARD, ""


def _evaluated(sc: ScriptCall, points: Iterable[Mapping[str, Any]], mode: Mode,
               source: Source) -> list[WorkloadCall]:  # fmt: skip
    """The call site at each point where it evaluates to tensors and values, timed in `mode`
    (the call site's: `call_mode`)."""
    calls: list[WorkloadCall] = []
    for point in points:
        try:
            init, args, cast = evaluate(sc, point)
        except (Unknown, TypeError, ValueError, IndexError, KeyError):
            continue
        entry = replace(sc.entry, init=init, dtype=cast)
        if mode is not Mode.FORWARD:
            args = [replace(a, grad=a.tensor and dtype_kind(a.dtype) == "float") for a in args]
        calls.append(_finish(WorkloadCall(SizeLabel.TYPICAL, source, f"{sc.path}:{sc.line}",
                                          entry, tuple(args), dims_of(point), mode)))  # fmt: skip
    return calls


def _script_calls(
    scripts: Sequence[str],
    texts: Mapping[str, str],
    tn: TargetNames,
    defined: frozenset[str],
    mode: Mode,
    layouts: Callable[[WorkloadCall], str] | None = None,
) -> tuple[list[WorkloadCall], list[str]]:
    """The workload calls of the first script that gives some, and notes on the others. A call
    site whose tensors contradict the shapes its function documents (`layouts`) is passed
    over (`DocumentedLayouts.passed_over` says which and why: the hop search keeps the notes
    of its first pass only)."""
    notes: list[str] = []
    for path in scripts:
        found, why = find_calls(path, texts.get(path, ""), tn.modules, tn.names, defined)
        if why:
            notes.append(why)
        calls: list[WorkloadCall] = []
        reached: list[tuple[ScriptCall, Mode]] = []
        for sc in found:
            sc_mode, unreached = call_mode(sc, mode)
            if unreached:
                notes.append(unreached)
            else:
                reached.append((sc, sc_mode))
        for sc, sc_mode in reached:
            calls = _evaluated(sc, sc.sweeps, sc_mode, Source.BENCHMARK_SCRIPT)
            if layouts and any(layouts(c) for c in calls):
                calls = []
            if calls:
                break  # the first call site of the script that evaluates is the workload
        if calls:
            return list(pick_sizes(calls)), [*notes, f"{path}: {len(calls)} sweep points"]
        if reached and not why:
            notes.append(f"{path}: its call of {reached[0][0].imported} could not be evaluated")
    return [], notes


# --- source 1b: the tests' own calls, scaled ---------------------------------------------------

# the parameters a test sizes its token (then batch) dimension with, most specific first
TOKEN_DIMS = ("T", "seq_len", "seqlen", "seq_length", "L", "S", "N", "BT", "num_tokens",
              "n_tokens", "M", "B", "batch_size", "bsz", "bs", "batch")  # fmt: skip
MAX_SCALE = 2**12
SEQ_DIMS = {"T", "seq_len", "seqlen", "seq_length", "L", "S"}
BATCH_DIMS = ("B", "batch_size", "bsz", "bs", "batch")
MAX_SEQ_LEN = 16384  # a long but common context; longer workloads grow the batch instead
# failing those, the names that end so (`input_batch`, `output_batch`, `num_seq_tokens`)
TOKEN_SUFFIX = re.compile(r"_(tokens|seq_?len|batch|batch_size)$")


class Definitions:
    """`(module, name)` -> the class or function the tree defines under that name, following
    `from .x import name` of a package's `__init__` (two imports deep)."""

    def __init__(self, view: TreeView) -> None:
        self.view = view
        self.paths = set(view.paths())
        self.cache: dict[tuple[str, str], ast.ClassDef | ast.FunctionDef | None] = {}

    def _file(self, module: str) -> str | None:
        stem = module.replace(".", "/")
        for prefix in ("", "src/"):
            for path in (f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"):
                if path in self.paths:
                    return path
        return None

    def find(self, module: str, name: str, depth: int = 0) -> ast.ClassDef | ast.FunctionDef | None:
        key = (module, name)
        if key not in self.cache:
            self.cache[key] = self._find(module, name, depth)
        return self.cache[key]

    def _find(self, module: str, name: str, depth: int) -> ast.ClassDef | ast.FunctionDef | None:
        path = self._file(module)
        if path is None:
            return None
        try:
            tree = ast.parse(self.view.read([path]).get(path, ""))
        except SyntaxError:
            return None
        package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
                return node
            if isinstance(node, ast.ImportFrom) and depth < 2:
                for a in node.names:
                    if (a.asname or a.name) == name:
                        return self.find(_absolute(package, node), a.name, depth + 1)
        return None


class InitParams(Definitions):
    """`(module, class)` -> the positional parameter names of the class's `__init__` (without
    `self`) in the tree."""

    def __call__(self, module: str, name: str) -> list[str] | None:
        node = self.find(module, name)
        if not isinstance(node, ast.ClassDef):
            return None
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                return [a.arg for a in item.args.args[1:]]
        return []


class DocumentedLayouts(Definitions):
    """A benchmark script's call checked against the shapes its function's docstring gives
    its tensors (`eval.workload_layout`): a script kept from an older API puts the swept
    dimension elsewhere (flash-linear-attention's benchmark_fla.py of 2024 built head-first
    (B, H, T, D) tensors for `parallel_retention`, whose docstring says `[B, T, H, K]` since
    2025: H=8192 then overflowed a grid axis, "invalid argument", call 69)."""

    def __init__(self, view: TreeView) -> None:
        super().__init__(view)
        self.passed_over: dict[str, str] = {}  # evidence -> why, kept for the plan's notes

    def __call__(self, call: WorkloadCall) -> str:
        node = self.find(call.entry.module, call.entry.name)
        if not isinstance(node, ast.FunctionDef):
            return ""
        why = layout_mismatch(node, call.args, call.dims)
        if why:
            self.passed_over.setdefault(call.evidence, why)
        return why


def test_files(task: Task, view: TreeView) -> list[str]:
    """The repository's test modules at the base commit, the task's own tests first."""
    own = [*task.tests.selected_existing, *task.tests.changed_in_pr]
    own += [n.split("::", 1)[0] for n in task.tests.node_ids]
    tests = sorted(p for p in view.paths() if is_test_script(p))
    first = [p for p in dict.fromkeys(own) if p in set(tests)]
    rest = set(tests) - set(first)
    return first + [p for p in tests if p in rest]


# a test's parameters named like a model's width, and the model key each one takes
WIDTH_DIMS = {"V": "vocab_size", "vocab_size": "vocab_size", "n_vocab": "vocab_size",
              "hidden_size": "hidden_size", "hidden_dim": "hidden_size",
              "d_model": "hidden_size",
              # an MoE call's widths, by their full names only (a test's `E` or `K` may be
              # anything): they come from one model with the hidden size
              "intermediate_size": "intermediate_size", "ffn_hidden_size": "intermediate_size",
              "ffn_hidden": "intermediate_size", "num_experts": "num_experts",
              "topk": "top_k", "top_k": "top_k"}  # fmt: skip


def model_widths(
    point: Mapping[str, Any], configs: Sequence[tuple[str, dict[str, int]]]
) -> tuple[dict[str, Any], str]:
    """`point` with its vocabulary and hidden-size parameters (`WIDTH_DIMS`) at the median
    model configuration of the repository that has them (by hidden size), and the evidence;
    `point` unchanged and "" when it has none or no configuration fits. Heads and head
    dimensions keep the test's values: their one-letter names mean other things in tests."""
    named = {d: k for d, k in WIDTH_DIMS.items() if type(point.get(d)) is int}
    usable = [(ev, c) for ev, c in configs if all(k in c for k in named.values())]
    if not named or not usable:
        return dict(point), ""
    ev, cfg = sorted(usable, key=lambda ec: ec[1]["hidden_size"])[len(usable) // 2]
    widened = {**point, **{d: cfg[k] for d, k in named.items()}}
    return widened, ", ".join(f"{d}={cfg[k]}" for d, k in named.items()) + f" from {ev}"


def _unevaluated(sc: ScriptCall) -> str:
    """What stops the call at its first case (the evaluator's word for it), for the log."""
    try:
        evaluate(sc, sc.sweeps[0] if sc.sweeps else {})
    except (Unknown, TypeError, ValueError, IndexError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"[:80]
    return ""


def _round(point: Mapping[str, Any]) -> bool:
    """Whether every size of a test case but its token and batch dimensions is a power of two
    or a multiple of 64."""
    sizes = [v for k, v in point.items() if type(v) is int and v > 1 and not k.startswith("__")
             and k not in TOKEN_DIMS]  # fmt: skip
    return all(v & (v - 1) == 0 or v % 64 == 0 for v in sizes)


def scaled_test_calls(
    sc: ScriptCall,
    mode: Mode,
    configs: Sequence[tuple[str, dict[str, int]]] = (),
    steps: Sequence[int] = SIZE_STEPS,
) -> tuple[list[WorkloadCall], str]:
    """The test's call at its largest evaluating case, its widths at a model configuration's
    (`model_widths`, when the call evaluates so), its token dimension (`TOKEN_DIMS`)
    multiplied by the smallest power of two whose estimate reaches `MIN_GOLD_US` (small), and
    4x and 16x that (typical, large), or at each of `steps` times it; or why not."""
    mode, unreached = call_mode(sc, mode)
    if unreached:
        return [], unreached
    cases = [(p, c) for p in sc.sweeps for c in _evaluated(sc, [p], mode, Source.TEST_CALL)]
    if not cases:
        return [], f"{sc.path}:{sc.line}: its call of {sc.imported} could not be evaluated" + (
            f" ({why})" if (why := _unevaluated(sc)) else "")  # fmt: skip
    # tests mix round sizes with odd ones that exercise masking (D=100, 300): a model's are
    # round, so the largest case among the round ones when there are any
    round_cases = [pc for pc in cases if _round(pc[0])] or cases
    point, biggest = max(round_cases, key=lambda pc: pc[1].bytes_moved)
    widened, widths = model_widths(point, configs)
    if widths and _evaluated(sc, [widened], mode, Source.TEST_CALL):
        point = widened
    else:
        widths = ""
    dim = next((d for d in TOKEN_DIMS if type(point.get(d)) is int and point[d] > 0), None)
    # failing a known name, every `*_batch` (`*_tokens`, ...) size grows together, keeping the
    # test's ratios (`output_batch` 20 holds what `input_batch` 16 gives it, at every scale)
    together = [] if dim else [d for d, v in point.items()
                               if TOKEN_SUFFIX.search(d) and type(v) is int and v > 0]  # fmt: skip
    dim = dim or next(iter(together), None)
    if dim is None:
        return [], f"{sc.path}:{sc.line}: no token dimension among {', '.join(biggest.dims)}"

    batch = next((d for d in BATCH_DIMS if type(point.get(d)) is int and point[d] > 0), None)

    def at(factor: int) -> WorkloadCall | None:
        # a sequence grows up to MAX_SEQ_LEN, the batch takes the rest (when the test has one)
        f_seq = factor
        if dim in SEQ_DIMS and batch is not None and batch != dim:
            while f_seq > 1 and point[dim] * f_seq > MAX_SEQ_LEN:
                f_seq //= 2
        scaled = {**point, dim: point[dim] * f_seq, **{d: point[d] * factor for d in together}}
        if f_seq < factor and batch is not None:
            scaled[batch] = point[batch] * (factor // f_seq)
        got = _evaluated(sc, [scaled], mode, Source.TEST_CALL)
        return got[0] if got else None

    calls, factor = _sized(at, MAX_SCALE, steps)
    if not calls:
        return [], f"{sc.path}:{sc.line}: {dim} x{factor} does not fit"
    sizes = ", ".join(f"{d}={point[d]}" for d in together or [dim])
    at_size = f"{sc.imported} at {sizes} x{factor}, " + ", ".join(f"x{k}" for k in steps[1:])
    return calls, f"{sc.path}:{sc.line}: {at_size}" + (f" ({widths})" if widths else "")


def from_tests(
    task: Task, view: TreeView, mode: Mode, steps: Sequence[int] = SIZE_STEPS
) -> tuple[list[WorkloadCall], str]:
    """The first test (the task's own test modules first) whose parametrized call of the
    task's code evaluates, scaled up (`scaled_test_calls` at `steps`); the same hops as the
    benchmarks."""
    paths = test_files(task, view)
    if not paths:
        return [], "no test modules in the repository"
    texts = view.read(paths)
    params = InitParams(view)
    configs = model_configs(view)

    def finder(tn: TargetNames, defined: frozenset[str]) -> tuple[list[WorkloadCall], list[str]]:
        notes: list[str] = []
        for path in paths:
            found, why = find_calls(path, texts.get(path, ""), tn.modules, tn.names,
                                    defined, test=True, init_params=params)  # fmt: skip
            notes += [why] if why else []
            for sc in found:
                calls, note = scaled_test_calls(sc, mode, configs, steps)
                if calls:
                    return calls, [note]
                notes.append(note)
        return [], notes[:3]

    calls, notes = _hop_search(task, view, finder)
    if calls:
        return calls, notes[0]
    return [], "; ".join(notes[:3]) or f"no test module of {len(paths)} calls the targets"


# --- source 2: model configurations ------------------------------------------------------------

MODEL_KEYS = {
    "hidden_size": {"hidden_size", "hidden_dim", "d_model", "n_cols", "dim", "C"},
    "num_heads": {"num_heads", "num_attention_heads", "n_heads", "H"},
    "head_dim": {"head_dim", "head_size", "kv_channels", "D"},
    "vocab_size": {"vocab_size", "n_vocab", "V"},
    "intermediate_size": {"intermediate_size", "ffn_dim", "ffn_hidden_size", "ffn_hidden", "I"},
    "num_experts": {"num_experts", "n_routed_experts", "n_experts", "E"},
    "top_k": {"num_experts_per_tok", "top_k", "topk", "moe_topk", "moe_router_topk"},
}
_CONFIG_FILE = re.compile(r"(^|/)(configuration_\w+|\w*model_configs?\w*)\.py$")
# a model's launch arguments in the repository's examples (Megatron-LM's training and
# post-training scripts and their YAML: `--hidden-size 4096`, `--num-experts: 8`)
_LAUNCH_FILE = re.compile(r"(^|/)examples/.*\.(sh|ya?ml)$")
_LAUNCH_ARG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)\s*[:=]?\s*[\"']?(\d+)\b", re.M)
# an expert's width, where the model has experts, is the one an MoE kernel sees
_EXPERT_WIDTH = "moe_ffn_hidden_size"


def _model_key(name: str) -> str | None:
    return next((k for k, names in MODEL_KEYS.items() if name in names), None)


def _is_block(name: str) -> bool:
    """A tile size by its name: `BLOCK_DIM`, `BLOCK_SIZE_N`, flash-linear-attention's `BK`."""
    return bool(re.match(r"BLOCK|B[A-Z]$", name))


def _with_head_dim(values: dict[str, int]) -> dict[str, int]:
    """A model's sizes with its head dimension, hidden size / heads when it names none."""
    if "head_dim" not in values and values.get("num_heads"):
        values["head_dim"] = values["hidden_size"] // values["num_heads"]
    return values


def launch_configs(view: TreeView) -> list[tuple[str, dict[str, int]]]:
    """(evidence, {model key: value}) of every example launch script or YAML of the repository
    whose arguments name a hidden size (`--hidden-size 4096`): one model a file, the first
    value of each argument; an MoE model's `--moe-ffn-hidden-size` is its intermediate size."""
    # a test's or a mock run's arguments are no model (as for configuration files)
    paths = sorted(p for p in view.paths() if _LAUNCH_FILE.search(p)
                   and not re.search(r"test|mock", p))  # fmt: skip
    out: list[tuple[str, dict[str, int]]] = []
    for path, text in view.read(paths).items():
        values: dict[str, int] = {}
        line = 0
        for m in _LAUNCH_ARG.finditer(text):
            name, value = m.group(1).replace("-", "_"), int(m.group(2))
            key = "intermediate_size" if name == _EXPERT_WIDTH else _model_key(name)
            if key is None or value <= 0:
                continue
            if key == "hidden_size" and key not in values:
                line = text.count("\n", 0, m.start()) + 1
            if name == _EXPERT_WIDTH:
                values[key] = value
            else:
                values.setdefault(key, value)
        if "hidden_size" in values:
            out.append((f"{path}:{line}", _with_head_dim(values)))
    return out


def model_configs(view: TreeView) -> list[tuple[str, dict[str, int]]]:
    """(evidence, {model key: value}) of every configuration in the repository that names a
    hidden size: `__init__` defaults of configuration classes, config calls and dicts, and the
    examples' launch arguments (`launch_configs`)."""
    paths = sorted(p for p in view.paths() if _CONFIG_FILE.search(p) and "test" not in p)
    out: list[tuple[str, dict[str, int]]] = []
    for path, text in view.read(paths).items():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            pairs: list[tuple[str, ast.expr]] = []
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                a = node.args
                pos = a.args[len(a.args) - len(a.defaults) :]
                pairs = [(x.arg, d) for x, d in zip(pos, a.defaults, strict=True)]
                pairs += [
                    (x.arg, d)
                    for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                    if d is not None
                ]
            elif isinstance(node, ast.Call):
                pairs = [(k.arg, k.value) for k in node.keywords if k.arg]
            elif isinstance(node, ast.Dict):
                pairs = [
                    (k.value, v)
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                ]
            values: dict[str, int] = {}
            for name, v in pairs:
                key = _model_key(name)
                if key and isinstance(v, ast.Constant) and type(v.value) is int and v.value > 0:
                    values.setdefault(key, v.value)
            if "hidden_size" in values:
                out.append((f"{path}:{getattr(node, 'lineno', 0)}", _with_head_dim(values)))
    return out + launch_configs(view)


# --- source 3: the captured launch, scaled -----------------------------------------------------


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(1, n)
    return tuple(reversed(out))


def restride(
    old_shape: Sequence[int], old_stride: Sequence[int], shape: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides for `shape` laid out in the same dimension order as the captured tensor (None
    when it was contiguous)."""
    if tuple(old_stride) == _contiguous(old_shape):
        return None
    order = sorted(range(len(shape)), key=lambda i: (old_stride[i], -i))  # innermost first
    out = [0] * len(shape)
    acc = 1
    for i in order:
        out[i] = acc
        acc *= max(1, shape[i])
    return tuple(out)


@dataclass(frozen=True)
class Captured:
    """A target kernel's largest launch in the tests (`KernelTiming.launch`)."""

    kernel: str
    file: str
    record: Mapping[str, Any]


def _args_of(cap: Captured) -> list[tuple[str, Any, bool]]:
    """(name, description, keyword) of each launch argument."""
    rec = cap.record
    names = list(rec.get("params") or [])
    pos = list(rec.get("args") or [])
    out = [(names[i] if i < len(names) else f"arg{i}", a, False) for i, a in enumerate(pos)]
    out += [(k, v, True) for k, v in (rec.get("kwargs") or {}).items()]
    return out


def _tensor_base(name: str) -> str:
    """A pointer parameter's name without its `_ptr` ending, lower case (`conv_state_ptr` ->
    `conv_state`): what the names of its stride parameters start with."""
    return re.sub(r"_?ptr$", "", name.lower()) or name.lower()


def _stride_owner(name: str, tensors: Mapping[str, Any]) -> str | None:
    """The tensor parameter whose stride the scalar `name` is (`x_b_stride`, `stride_xm`,
    `X_row_stride` of `x_ptr`, `x`, `X_ptr`): the longest tensor name it starts with or that
    follows its `stride_`; None when it names no stride or no tensor."""
    low = name.lower()
    if "stride" not in low:
        return None
    owners = [t for t in tensors if low.startswith(_tensor_base(t) + "_")
              or low.startswith("stride_" + _tensor_base(t))]  # fmt: skip
    return max(owners, key=lambda t: len(_tensor_base(t)), default=None)


def _new_stride(value: int, old: Mapping[str, Any], new: ArgSpec) -> int | None:
    """The owner tensor's stride at the dimension whose captured stride was `value`, at the new
    shape; None when no dimension, or dimensions with different new strides, had it."""
    shape = [int(x) for x in old["shape"]]
    before = old.get("stride") or _contiguous(shape)
    after = new.stride or _contiguous(new.shape)
    got = {after[i] for i, s in enumerate(before) if s == value}
    return got.pop() if len(got) == 1 else None


CACHE_INDEX = re.compile(r"state|cache|slot", re.I)  # `conv_state_indices`, `slot_mapping`


def _cache_lines(captured: Mapping[str, Mapping[str, Any]], tokens: int) -> int:
    """The line count of a cache the token rows index (0 when none): an integer tensor along
    the tokens whose captured values (all at least 0) fit the leading dimension of another
    tensor that has more lines than rows, the smallest such dimension. A decode kernel's state
    cache grows with the batch, its rows indexing distinct lines (rule `slots`)."""
    for name, d in captured.items():
        stats = d.get("int_stats") or {}
        shape = [int(x) for x in d["shape"]]
        if not stats or not shape or shape[0] != tokens or stats.get("min", -1) < 0:
            continue
        if rule_for(name, str(d["dtype"]).removeprefix("torch."), stats) != "index":
            continue
        if not CACHE_INDEX.search(name):  # labels, token ids, gather positions: not lines
            continue
        fits = [int(o["shape"][0]) for n, o in captured.items() if n != name
                and len(o["shape"]) >= 2
                and int(o["shape"][0]) > max(tokens, stats["max"])]  # fmt: skip
        if fits:
            return min(fits)
    return 0


def _token_named(name: str) -> bool:
    return name in TOKEN_DIMS or bool(TOKEN_SUFFIX.search(name))


def token_scalars(cap: Captured, tokens: int, numel: int) -> frozenset[str]:
    """The scalar launch arguments that scale with the tokens. Of those equal to the token
    count (`tokens`): every one that is not a stride (recomputed from its tensor), a launch
    option (`num_warps`, `num_stages`: flash-linear-attention #d0b67c5e63's test launch had 4
    of each and a batch of 4, and its plan asked for 64 warps), a model
    width (`MODEL_KEYS`: `n_cols`, `dim`) or a `tl.constexpr` named otherwise than a token or
    batch dimension (a convolution `WIDTH`, a block size; flash-linear-attention's
    `T: tl.constexpr` does scale); when several are, those named like a token or batch
    dimension (`batch` 2 beside `state_len` 2), else all of them. And those equal to the token
    tensor's element count (`numel`) that are neither strides nor such constexprs."""
    constexprs = set(cap.record.get("constexprs") or {})
    widths = set().union(*MODEL_KEYS.values())
    ints = [n for n, d, _ in _args_of(cap) if type(d) is int and d > 1
            and "stride" not in n.lower() and n not in LAUNCH_OPTIONS
            and (n not in constexprs or _token_named(n))
            and d in (tokens, numel)]  # fmt: skip
    values = {n: d for n, d, _ in _args_of(cap)}
    equal = [n for n in ints if values[n] == tokens and n not in widths]
    named = [n for n in equal if _token_named(n)]
    whole = {n for n in ints if values[n] == numel}
    return frozenset(named if len(equal) > 1 and named else equal) | whole


def _captured_tensors(cap: Captured) -> dict[str, Mapping[str, Any]]:
    """The launch's tensor arguments by parameter name."""
    return {n: d for n, d, _ in _args_of(cap) if isinstance(d, dict) and "shape" in d}


def _specs(
    cap: Captured,
    tokens: int,
    factor: int,
    renames: Mapping[int, int],
    scaled: Set[str],
    lines: int,
) -> list[ArgSpec]:
    """The launch's arguments with the token dimension (and a cache of `lines` lines that the
    tokens index, `_cache_lines`) multiplied by `factor`, the scalars `scaled`
    (`token_scalars`) with it, strides recomputed from their tensors, and other sizes renamed
    (`renames`: captured size -> model size); a block `tl.constexpr` (`_is_block`) that equals
    a renamed size becomes the power of two that covers the new size."""
    specs = []
    captured = _captured_tensors(cap)
    constexprs = set(cap.record.get("constexprs") or {})
    built: dict[str, ArgSpec] = {}
    for name, d, kw in _args_of(cap):
        if isinstance(d, dict) and "shape" in d:
            old = [int(x) for x in d["shape"]]
            shape = [renames.get(x, x) for x in old]
            if shape and old[0] in (tokens, lines):
                shape[0] = old[0] * factor
            dtype = str(d["dtype"]).removeprefix("torch.")
            stats = d.get("int_stats")
            rule = rule_for(name, dtype, stats)
            params: dict[str, Any] = {}
            if stats:
                if rule == "labels":
                    params = {
                        "high": stats["max"] + 1,
                        "ignore": stats.get("negative", 0.0),
                        "ignore_index": min(stats["min"], -1),
                    }
                elif rule == "offsets":
                    total = stats["max"]
                    params = {"total": total * factor if total == tokens else total}
                elif rule == "index" and lines and old and old[0] == tokens:
                    rule, params = "slots", {"high": lines * factor}
                elif rule in ("topk", "index"):
                    params = {
                        "high": renames.get(stats["max"] + 1, stats["max"] + 1),
                        "low": max(0, stats["min"]),
                    }
            elif rule in ("labels", "index", "topk"):
                params = {"high": 2}
            stride = restride(old, d.get("stride") or _contiguous(old), shape)
            built[name] = ArgSpec(name, True, tuple(shape), dtype, stride, rule, params,
                                  keyword=kw)  # fmt: skip
            specs.append(built[name])
        else:
            value = d
            owner = _stride_owner(name, captured)
            if name in LAUNCH_OPTIONS:
                pass  # the launch's warps and stages stay the test's, whatever their value
            elif type(d) is int and owner is not None and owner in built:
                value = _new_stride(d, captured[owner], built[owner]) or renames.get(d, d)
            elif type(d) is int and d > 1 and "stride" in name.lower():
                value = renames.get(d, d)
            elif type(d) is int and d > 1 and name in scaled:
                value = d * factor
            elif type(d) is int and d in renames and name in constexprs and _is_block(name):
                # a block the width gave (the wrapper's `next_power_of_2(dim)`, Megatron-LM
                # #4460's BLOCK_DIM): it covers the model's width, a power of two as Triton
                # needs, never the width itself (3072)
                value = 1 << (renames[d] - 1).bit_length()
            elif type(d) is int and d > 1:
                value = renames.get(d, d)
            specs.append(ArgSpec(name, False, value=value, keyword=kw))
    return specs


ALL_BLOCKS = tuple(2**j for j in range(21))


def grid_block(g: int, n: int) -> int | None:
    """The power of two b for which the grid dimension `g` (> 1) is ceil(n / b), or None."""
    return next((b for b in ALL_BLOCKS if g > 1 and n and math.ceil(n / b) == g), None)


def _grid(grid: Sequence[int], tokens: int, numel: int, factor: int) -> tuple[int, ...]:
    """The launch grid at `factor` times the tokens: a grid dimension that was
    ceil(tokens / b) or ceil(numel / b) for a power of two b stays so."""
    out = []
    for g in grid:
        new = g
        for n in (tokens, numel):
            if (b := grid_block(g, n)) is not None:
                new = math.ceil(n * factor / b)
                break
        out.append(int(new))
    return tuple(out)


def _token_tensor(cap: Captured) -> Mapping[str, Any] | None:
    """The tensor argument whose leading dimension counts the tokens: the largest one, unless
    it is a cache whose lines an index tensor names (`CACHE_INDEX`: `conv_state_indices`, all
    its values below the cache's line count) while the grid runs one program per index: then
    the largest tensor as long as the index. A decode kernel's state cache is its largest
    tensor, a few lines; scaling it would grow memory, not work."""
    tensors = [(n, d) for n, d, _ in _args_of(cap) if isinstance(d, dict) and d.get("shape")]
    if not tensors:
        return None
    tensors.sort(key=lambda nd: -math.prod(nd[1]["shape"]))
    largest = tensors[0][1]
    lead = int(largest["shape"][0])
    grid = [int(g) for g in cap.record.get("grid") or [1]]
    for name, d in tensors:
        stats = d.get("int_stats") or {}
        rows = int(d["shape"][0])
        if (CACHE_INDEX.search(name) and stats and rows > 1 and stats.get("min", -1) >= 0
                and stats.get("max", lead) < lead and rows in grid):  # fmt: skip
            return next(t for _, t in tensors if int(t["shape"][0]) == rows)
    return largest


def what_the_kernel_sees(call: WorkloadCall) -> tuple[Any, ...]:
    """What of a kernel-level call decides the work its kernel does: a Triton kernel reads no
    tensor's shape, only its launch grid, its scalar arguments and the contents of its index
    tensors (their rule and parameters: an offsets tensor's total)."""
    scalars = tuple((a.name, a.value) for a in call.args if not a.tensor)
    contents = tuple((a.name, a.rule, sorted(a.params.items())) for a in call.args if a.tensor)
    return call.grid, scalars, contents


def _sequence_offsets(cap: Captured, tokens: int) -> str:
    """The offsets tensor (`cu_seqlens`) of `tokens` + 1 entries, if the launch has one: its
    leading dimension is then a number of sequences (flash-linear-attention #479's
    `fused_recurrent_bwd_kernel`: initial states of (2, H, K, V) beside `cu_seqlens` of 3
    entries; scaled as tokens, the grid ran 1024 sequences over offsets of 2, reading past
    them)."""
    for name, d in _captured_tensors(cap).items():
        shape = [int(x) for x in d["shape"]]
        dtype = str(d["dtype"]).removeprefix("torch.")
        if shape == [tokens + 1] and rule_for(name, dtype, d.get("int_stats")) == "offsets":
            return name
    return ""


def scaled_calls(
    cap: Captured,
    mode: Mode,
    source: Source = Source.SCALED_TEST_CALL,
    renames: Mapping[int, int] | None = None,
    evidence: str = "",
    steps: Sequence[int] = SIZE_STEPS,
) -> tuple[list[WorkloadCall], str]:
    """The captured launch at the smallest power-of-two multiple of its token dimension whose
    estimate reaches `MIN_GOLD_US` (small), and 4x and 16x that (typical, large), or at each
    of `steps` times it; or none, and why. None when doubling the token dimension changes
    nothing the kernel sees (`what_the_kernel_sees`): the larger tensors would be timed doing
    the test's work (flash-linear-attention #449 on the H200, 2026-12-06: a varlen kernel's
    leading dimension is its batch of 1, the grid and `cu_seqlens` stayed the test's, and the
    gold "moved" 800 MB in 1.7 us, 100x the copy peak)."""
    big = _token_tensor(cap)
    if big is None:
        return [], f"{cap.kernel}: no tensor argument"
    tokens = int(big["shape"][0])
    numel = math.prod(big["shape"])
    counted = _sequence_offsets(cap, tokens)
    if counted:
        return [], (
            f"{cap.kernel}: the leading dimension ({tokens}) of its largest tensor counts the "
            f"sequences of {counted}, whose packed tokens would have to grow with them"
        )
    renames = dict(renames or {})
    module = module_name(cap.file)
    if module is None:  # not an importable module path: nothing to call
        return [], f"{cap.file} is not an importable module"
    entry = Entry(module, cap.kernel, EntryKind.KERNEL)
    grid0 = [int(g) for g in cap.record.get("grid") or [1]]

    scaled = token_scalars(cap, tokens, numel)
    lines = _cache_lines(_captured_tensors(cap), tokens)

    def at(factor: int) -> WorkloadCall:
        specs = _specs(cap, tokens, factor, renames, scaled, lines)
        grid = _grid(grid0, tokens, numel, factor)
        return _finish(
            WorkloadCall(
                SizeLabel.TYPICAL,
                source,
                evidence or f"capture of {cap.kernel}",
                entry,
                tuple(specs),
                {"tokens": tokens * factor},
                mode,
                grid,
            )
        )

    if what_the_kernel_sees(at(1)) == what_the_kernel_sees(at(2)):
        return [], (
            f"{cap.kernel}: its grid, scalars and index tensors do not grow with the leading "
            f"dimension ({tokens}) of its largest tensor"
        )
    calls = _sized(at, 2**20, steps)[0]
    return calls, f"{cap.kernel} at {len(calls)} sizes"


def _sized(
    at: Callable[[int], WorkloadCall | None], limit: int, steps: Sequence[int] = SIZE_STEPS
) -> tuple[list[WorkloadCall], int]:
    """`at(factor)` at the smallest power-of-two factor (at most `limit`) whose estimate reaches
    `MIN_GOLD_US`, then at each of `steps` times it: those that evaluate and fit
    `MAX_CALL_BYTES`, in that order; the ones at 1x, 4x and 16x labelled small, typical and
    large (the first kept of them small), any other `step`; and the factor."""
    factor = 1
    while (first := at(factor)) is not None and first.estimate_us < MIN_GOLD_US and factor < limit:
        factor *= 2
    made = [(k, first if k == 1 else at(k * factor)) for k in steps]
    kept = [(k, c) for k, c in made if c is not None and c.bytes_moved <= MAX_CALL_BYTES]
    labels = iter(LABELS)
    return [replace(c, label=next(labels) if k in SIZE_STEPS else SizeLabel.STEP)
            for k, c in kept], factor  # fmt: skip


def _grid_bound(cap: Captured, named: Mapping[str, int]) -> dict[str, str]:
    """The model sizes of `named` that a renaming by value cannot change alone, and why: one
    equal to the token count (the leading dimension of the largest tensor, which is scaled
    separately), or one that divides an axis of the launch grid (the grid is kept, so its
    programs would cover part of the renamed tensors). flash-linear-attention #300 and
    #d0b67c5e63: batch 2 and 2 heads, grid axis B*H = 4; renaming the heads to a model's 4
    renamed the batch too, and the grid ran half of the (b, h) pairs."""
    big = _token_tensor(cap)
    tokens = int(big["shape"][0]) if big is not None else 0
    grid = [int(g) for g in cap.record.get("grid") or []]
    out: dict[str, str] = {}
    for k, v in named.items():
        if v == tokens:
            out[k] = f"{k} ({v}) equals the token count"
        elif any(g > 1 and g % v == 0 for g in grid):
            out[k] = f"{k} ({v}) divides the launch grid {tuple(grid)}"
    return out


def _indexed_widths(cap: Captured, named: dict[str, int]) -> dict[str, int]:
    """`named` with a hidden size that an integer tensor of the launch indexes (its values
    reach past half of it) read as the vocabulary: Liger-Kernel's cross entropy calls its
    vocabulary `n_cols`, which the model keys name a hidden size, and at a model's hidden size
    of 2048 its labels (up to 31997, the test's vocabulary) read past each row (call 69: 3266
    invalid reads under memcheck, the base stopped by a device-side assertion)."""
    width = named.get("hidden_size")
    if width is None or "vocab_size" in named:
        return named
    for _, d, _ in _args_of(cap):
        stats = d.get("int_stats") if isinstance(d, dict) else None
        if stats and width // 2 < int(stats["max"]) + 1 <= width:
            out = {k: v for k, v in named.items() if k != "hidden_size"}
            return {**out, "vocab_size": width}
    return named


def from_models(cap: Captured, view: TreeView, mode: Mode) -> tuple[list[WorkloadCall], str]:
    """The captured launch with the model sizes put in through the kernel's scalar parameters
    named like a model key (`hidden_size`, `n_cols`, `V`, ...), for three models (smallest,
    median and largest hidden size), each scaled to `MIN_GOLD_US`."""
    named = {}
    for name, d, _ in _args_of(cap):
        key = _model_key(name)
        if key and type(d) is int and d > 1:
            named[key] = d
    if not named:
        return [], "no scalar parameter of the kernel names a model size"
    # sizes are renamed by value: a model size whose value another size parameter also has
    # (flash-linear-attention's `V`, a value head dimension, beside `K` at 64) is ambiguous
    # and left out; a block (`BLOCK_DIM`, `BK`) sharing it follows it (`_specs`)
    sizes = [(n, d) for n, d, _ in _args_of(cap) if type(d) is int and d > 1
             and "stride" not in n.lower() and n not in LAUNCH_OPTIONS]  # fmt: skip
    shared = {k: sorted({n for n, d in sizes if d == v and _model_key(n) != k and not _is_block(n)})
              for k, v in named.items()}  # fmt: skip
    named = {k: v for k, v in named.items() if not shared[k]}
    if not named:
        why = "; ".join(f"{k} shares its value with {', '.join(ns)}" for k, ns in shared.items())
        return [], f"no unambiguous model size among the kernel's parameters ({why})"
    named = _indexed_widths(cap, named)
    tied = _grid_bound(cap, named)
    named = {k: v for k, v in named.items() if k not in tied}
    if not named:
        return [], f"no model size the launch can take ({'; '.join(tied.values())})"
    configs = [(ev, c) for ev, c in model_configs(view) if set(named) <= set(c)]
    if not configs:
        return [], f"no model configuration gives {', '.join(sorted(named))}"

    # smallest, median and largest by the sizes the launch takes (a vocabulary's, when it
    # takes that: Liger-Kernel #1267's "small" was a vocabulary of 102400 beside a "typical"
    # 32000, the models ordered by hidden size); of models alike in those, the widest
    def taken(ec: tuple[str, dict[str, int]]) -> tuple[int, ...]:
        return tuple(ec[1][k] for k in sorted(named))

    configs.sort(key=lambda ec: (taken(ec), ec[1]["hidden_size"]))
    unique = list({taken(ec): ec for ec in configs}.values())
    chosen = [unique[0], unique[len(unique) // 2], unique[-1]] if len(unique) >= 3 else unique
    calls, why = [], ""
    for lb, (ev, cfg) in zip(LABELS[-len(chosen) :], chosen, strict=True):
        renames = {named[k]: cfg[k] for k in named}
        scaled, why = scaled_calls(cap, mode, Source.MODEL_CONFIG, renames, ev)
        typical = [c for c in scaled if c.label is SizeLabel.SMALL]
        calls += [
            replace(c, label=lb, dims={**c.dims, **{k: cfg[k] for k in named}}) for c in typical
        ]
    found = f"{len(configs)} configurations name {', '.join(sorted(named))}"
    return calls, found if calls else f"{found}, but {why}"


# --- the plan ----------------------------------------------------------------------------------


def plan_workload(task: Task, view: TreeView, captured: Captured | None) -> Workload:
    """The task's workload from the first source that gives a call."""
    metric, why_metric = choose_metric(task)
    mode = workload_mode(task)
    # a benchmark script's or a model's sizes stay theirs; a scaled test call of a cold_wall_time
    # workload becomes a service's sequence of batch sizes
    steps = SERVICE_STEPS if metric is Metric.COLD_WALL_TIME else SIZE_STEPS
    tried: list[str] = []
    calls, note = from_benchmarks(task, view, mode)
    tried.append(f"{Source.BENCHMARK_SCRIPT}: {note}")
    stable = captured is not None and _signature_kept(task, captured.kernel)
    # a captured launch is called as the bare kernel: what is timed is that launch, never a
    # backward through it (flash-linear-attention #449's backward-mode kernel calls kept the
    # launch in the untimed forward and timed nothing: 1.8 us at "107x the copy peak")
    if not calls and captured is not None and stable:
        calls, note = from_models(captured, view, Mode.FORWARD)
        tried.append(f"{Source.MODEL_CONFIG}: {note}")
    elif not calls:
        tried.append(f"{Source.MODEL_CONFIG}: needs a captured launch of a target kernel")
    if not calls:
        calls, note = from_tests(task, view, mode, steps)
        tried.append(f"{Source.TEST_CALL}: {note}")
    if not calls:
        if captured is None:
            tried.append(f"{Source.SCALED_TEST_CALL}: no captured launch (no reference run)")
        elif not stable:
            tried.append(
                f"{Source.SCALED_TEST_CALL}: {captured.kernel} changes its signature "
                "(a kernel-level call would not fit the gold)"
            )
        else:
            calls, note = scaled_calls(captured, Mode.FORWARD, steps=steps)
            tried.append(f"{Source.SCALED_TEST_CALL}: {note}")
    why = "" if calls else "no source gave a call: " + "; ".join(tried)
    return Workload(task.task_id, metric, why_metric, tuple(calls), why, tuple(tried))


def _signature_kept(task: Task, kernel: str) -> bool:
    k = next((k for k in task.kernels if k.name == kernel), None)
    return k is not None and (k.signature_before or "") == (k.signature_after or "")


def captured_launch(task: Task, kernels: Iterable[Any]) -> Captured | None:
    """The largest captured launch of a target kernel among `kernels` (`KernelTiming`s of the
    reference's gold runs and its selection run)."""
    files = {k.name: k.file for k in task.kernels}
    best: Captured | None = None
    for k in kernels:
        rec = getattr(k, "launch", None)
        if not rec or k.kernel not in files:
            continue
        if best is None or int(rec.get("numel") or 0) > int(best.record.get("numel") or 0):
            best = Captured(k.kernel, files[k.kernel], rec)
    return best
