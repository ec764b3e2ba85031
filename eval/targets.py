"""What a prediction may change: the task's targets (its kernels, their jit helpers and launch
wrappers, each in its file) and nothing else.

Reads: a task record; a prediction's kernel items; a prepared tree before and after a
prediction's patch. Writes nothing.
Refuses (`SpliceError`, which scores as `splice_error`): a kernel item that names no target, or
whose source holds anything but definitions of its file's targets; a patch that touches a
protected file (tests, conftest.py, pytest configuration, packaging: `eval.protected`) or any
file that holds no target, that adds a link, a binary or a mode change, or that changes a target
file outside its target definitions (adding or removing imports excepted). A patch may create
a target's file that the base commit lacks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from curation.indentation import normalise
from curation.model import Task
from curation.splice import all_definitions
from curation.taskdir import AFTER_DIR, TaskDir
from curation.testsel import package_path
from eval.errors import SpliceError
from eval.protected import is_protected
from eval.splice import KernelSource


@dataclass(frozen=True)
class Target:
    file: str
    name: str  # qualified name in the file (`Class.method` for a method)
    role: str  # kernel | helper | wrapper | caller


def targets(task: Task) -> tuple[Target, ...]:
    """The task's targets: its explicit list (`task.targets`, curation.targets), else (a record
    of schema 1) each kernel of `task.kernels` and each of its `wrappers`, in the kernel's
    file. The one place eval decides them."""
    if task.targets:
        return tuple(Target(t.file, t.name, str(t.role)) for t in task.targets)
    out: dict[tuple[str, str], Target] = {}
    for k in task.kernels:
        out.setdefault((k.file, k.name), Target(k.file, k.name, k.role))
        for w in k.wrappers:
            out.setdefault((k.file, w), Target(k.file, w, "wrapper"))
    return tuple(out.values())


def gold_sources(task: Task, tdir: TaskDir) -> list[str]:
    """The expert's version of every target, kernels and launch wrappers alike (each target's
    definitions in the task's `after/` file), and the kernels' stored gold sources: what the
    checks that spare the gold's own code compare a prediction with. flash-linear-attention
    #e582c2883f's `breakpoint()` is in a wrapper, which `task.kernels` does not hold."""
    out = kernel_gold_sources(task)
    for t in targets(task):
        path = tdir.source_path(AFTER_DIR, t.file)
        if path.is_file():
            out += [d.source for d in all_definitions(path.read_bytes()).get(t.name, [])]
    return out


def kernel_gold_sources(task: Task) -> list[str]:
    """The kernels' stored gold sources (`task.kernels`): the expert's code where the task
    directory's files are not at hand."""
    return [k.after_src for k in task.kernels if k.after_src]


def watched_kernels(task: Task) -> list[str]:
    """The PR's kernels as the plugin watches them, `name@path` (the path from the package
    root): a kernel of the same name in another file is not taken for the target (77 of release
    1.24.8's 455 tasks have a kernel whose name another non-test file of the commit defines,
    e.g. flash-linear-attention's `fused_recurrent_fwd_kernel` in several ops)."""
    return [f"{k.name}@{package_path(k.file)}" for k in task.kernels]


def target_files(task: Task) -> frozenset[str]:
    return frozenset(t.file for t in targets(task))


def _by_file(task: Task) -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for t in targets(task):
        names.setdefault(t.file, set()).add(t.name)
    return names


def _is_target(name: str, names: Iterable[str]) -> bool:
    """`name` is a target's qualified name or the bare name of one."""
    return any(name == n or name == n.rsplit(".", 1)[-1] for n in names)


# --- kernel items ---------------------------------------------------------------------------


def check_items(items: Sequence[KernelSource], task: Task) -> None:
    """Refuse items that would change anything but the task's targets."""
    by_file = _by_file(task)
    for item in items:
        names = by_file.get(item.file)
        if not names:
            raise SpliceError(f"{item.file}: holds none of the task's targets",
                              task_id=task.task_id)  # fmt: skip
        if not _is_target(item.name, names):
            raise SpliceError(f"{item.name}: not one of the task's targets in {item.file}",
                              task_id=task.task_id)  # fmt: skip
        defined = _defined_names(item, task.task_id)
        if defined is None:
            continue  # does not parse: splicing refuses it with the parser's message
        extra = [n for n in defined if not _is_target(n, names)]
        if extra:
            raise SpliceError(f"{item.name}: its source also defines {', '.join(extra)}, which "
                              "is not a target", task_id=task.task_id)  # fmt: skip


def _defined_names(item: KernelSource, task_id: str) -> list[str] | None:
    """Names an item's source defines at its top level (a `kernel = triton.jit(fn)` kernel
    counts as `kernel`, its `fn` goes with it); SpliceError for any other statement."""
    source = normalise(item.source, None)
    if source is None:
        return None
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    defs: list[str] = []
    assigned: list[str] = []
    referenced: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.append(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _assigned(stmt):
            assigned += _assigned(stmt)
            referenced |= _names_in(stmt.value)
        else:
            raise SpliceError(f"{item.name}: its source holds a {type(stmt).__name__} statement "
                              f"(line {stmt.lineno}); only the target's definition may be spliced",
                              task_id=task_id)  # fmt: skip
    return [n for n in defs if n not in referenced] + assigned


def _names_in(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    targets_ = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in targets_ if isinstance(t, ast.Name)]


# --- patches --------------------------------------------------------------------------------

_BINARY = re.compile(r"^(GIT binary patch|Binary files .* differ)$", re.M)
_MODES = re.compile(r"^(old mode|new mode|new file mode|deleted file mode) (\d+)$", re.M)


def check_patch_text(patch: str, task: Task) -> None:
    """Refusals that the patch's text shows before it is applied."""
    if _BINARY.search(patch):
        raise SpliceError("the prediction's patch carries a binary file", task_id=task.task_id)
    for m in _MODES.finditer(patch):
        if m.group(1) in ("old mode", "new mode") or m.group(2) == "120000":
            raise SpliceError(f"the prediction's patch changes a file mode ({m.group(0)})",
                              task_id=task.task_id)  # fmt: skip


def check_patched_tree(
    before: Mapping[str, str], after: Mapping[str, str], sources: Mapping[str, tuple[str, str]],
    task: Task,
) -> None:  # fmt: skip
    """Refuse a patch by what it did to the tree (`eval.protected.snapshot(everything=True)`
    before and after; `sources`: (before, after) text of each changed target file)."""
    allowed = target_files(task)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    for path in changed:
        if is_protected(path):
            raise SpliceError(f"the prediction's patch touches {path}, which decides how the "
                              "tests run", task_id=task.task_id)  # fmt: skip
        if path not in allowed:
            raise SpliceError(f"the prediction's patch touches {path}, which holds none of the "
                              "task's targets", task_id=task.task_id)  # fmt: skip
        if path not in after:
            raise SpliceError(f"the prediction's patch deletes {path}", task_id=task.task_id)
        if after[path].startswith("link:"):
            raise SpliceError(f"the prediction's patch makes {path} a link", task_id=task.task_id)
    names = _by_file(task)
    for path, (old, new) in sources.items():
        if _outside_targets(old, names[path]) != _outside_targets(new, names[path]):
            raise SpliceError(f"the prediction's patch changes {path} outside the task's "
                              "targets", task_id=task.task_id)  # fmt: skip


def _outside_targets(source: str, names: set[str]) -> str:
    """The module with its target definitions and its imports left out, as a layout-free dump
    (unparsable text compares as itself)."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return source
    # the functions that target assignments (`kernel = triton.jit(fn)`) compile go with them
    compiled: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and set(_assigned(stmt)) & names:
            compiled |= _names_in(stmt.value)
    module.body = _strip(module.body, names | compiled, "")
    return ast.dump(module)


def _strip(body: list[ast.stmt], names: set[str], prefix: str) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if f"{prefix}{stmt.name}" in names:
                continue
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            if {f"{prefix}{a}" for a in _assigned(stmt)} & names:
                continue
        elif isinstance(stmt, ast.ClassDef):
            stmt.body = _strip(stmt.body, names, f"{prefix}{stmt.name}.")
        kept.append(stmt)
    return kept
