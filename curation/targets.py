"""A task's targets (what a model writes) and its setup state (the tree it starts from).

Reads: the task's kernels (with base and gold sources) and the base and gold bytes of their
files. Writes nothing; the builder stores the results (`targets` in task.json, `setup.patch`).

The targets are the kernels the PR changes (added, modified or deleted; jit helpers included)
plus the Python functions in the gold files that launch them (their wrappers, methods of
autograd Functions included). Every other change of the PR (callers, configs, new modules'
plumbing, imports) belongs to the setup state, which every variant starts from: the gold tree
with each target put back to its base version. A target the PR adds becomes a stub that keeps
its decorators, signature and docstring and raises `NotImplementedError`; a kernel the PR
deletes is put back. So the base variant is the setup state, the gold variant is the setup
state plus the gold targets, and a prediction is spliced into the setup state.
Refuses nothing: a target that cannot be put back (Triton source in template strings) stays
as the gold has it and is left out of the targets, with a log line.
"""

from __future__ import annotations

import ast
import logging
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from core.files import line_starts
from curation.errors import SpliceError
from curation.imports import bound_names
from curation.model import Target, TargetKernel, TargetRole, TargetStatus
from curation.splice import STUB_MESSAGE, Definition, KernelSource, definitions, splice_file
from curation.testsel import module_name
from mining.git import file_diff
from mining.kernels import parse_python

if TYPE_CHECKING:
    from tree_sitter import Node

log = logging.getLogger(__name__)


def stub(source: str) -> str:
    """`source` with every function body replaced by `raise NotImplementedError(...)`,
    decorators, signature and docstring kept (an assigned kernel keeps its assignment)."""
    data = source.encode()
    root = parse_python(data).root_node
    edits: list[tuple[int, int, bytes]] = []
    for node in root.named_children:
        fn = node
        if fn.type == "decorated_definition":
            fn = fn.child_by_field_name("definition") or fn
        if fn.type != "function_definition":
            continue
        body = fn.child_by_field_name("body")
        if body is None or not body.named_children:
            continue
        first = body.named_children[0]
        keep_end = first.end_byte if _is_docstring(first) else body.start_byte  # it stays
        indent = " " * first.start_point.column
        lead = "\n" + indent if keep_end != body.start_byte else ""
        text = f'{lead}raise NotImplementedError("{STUB_MESSAGE}")'.encode()
        edits.append((keep_end, body.end_byte, text))
    for start, end, text in reversed(edits):
        data = data[:start] + text + data[end:]
    return data.decode()


def find_targets(
    kernels: Sequence[TargetKernel],
    gold_files: Mapping[str, bytes],
    base_files: Mapping[str, bytes],
) -> tuple[Target, ...]:
    """The kernels and the wrappers that launch them, in the gold files, in file order."""
    out: list[Target] = []
    seen: set[tuple[str, str]] = set()
    for k in kernels:
        if k.kind == "template":
            log.info("%s: %s is a template kernel; not a target", k.file, k.name)
            continue
        if k.file not in gold_files and k.after_src is not None:
            continue
        if k.after_src is None and k.file not in gold_files:
            continue  # deleted with its file: the PR removed the module
        status = (
            TargetStatus.ADDED
            if k.before_src is None
            else TargetStatus.DELETED
            if k.after_src is None
            else TargetStatus.MODIFIED
        )
        src = k.after_src or k.before_src or ""
        role = TargetRole.HELPER if k.role == "helper" else TargetRole.KERNEL
        signature = k.signature_after or k.signature_before or ""
        out.append(Target(k.file, k.name, role, status, signature, _docstring(src)))
        seen.add((k.file, k.name))
    for k in kernels:
        gold = gold_files.get(k.file)
        if gold is None or k.after_src is None:
            continue
        gold_defs = definitions(gold)
        base = base_files.get(k.old_file or k.file)
        base_defs = definitions(base) if base is not None else {}
        for qualname in k.wrappers:
            if (k.file, qualname) in seen or qualname not in gold_defs:
                continue
            seen.add((k.file, qualname))
            d = gold_defs[qualname]
            old = base_defs.get(qualname)
            status = (
                TargetStatus.ADDED
                if old is None
                else TargetStatus.UNCHANGED
                if old.source == d.source
                else TargetStatus.MODIFIED
            )
            out.append(
                Target(k.file, qualname, TargetRole.WRAPPER, status, d.signature, d.docstring)
            )
    out += _coupled_callers(out, kernels, gold_files, base_files)
    # A function nested in another target is part of it (a closure inside an autograd
    # Function's backward): the outer one is the target.
    names = {(t.file, t.name) for t in out}
    return tuple(
        t for t in out if not any((t.file, outer) in names for outer in _enclosing(t.name))
    )


def _coupled_callers(
    targets: Sequence[Target],
    kernels: Sequence[TargetKernel],
    gold_files: Mapping[str, bytes],
    base_files: Mapping[str, bytes],
) -> list[Target]:
    """Functions of a wrapper's file that the PR changes where they call a wrapper whose
    interface it changes (parameters or what it returns): at the setup state the gold caller
    would meet the base wrapper (Liger-Kernel #1187's autograd Function unpacked 7 values from a
    wrapper that returned 6 at base, so its base could not run on the H200). They become
    targets, so base, gold and prediction each keep caller and wrapper consistent."""
    old_paths = {k.file: k.old_file or k.file for k in kernels}
    seen = {(t.file, t.name) for t in targets}
    out: list[Target] = []
    for w in targets:
        if w.role is not TargetRole.WRAPPER or w.status is not TargetStatus.MODIFIED:
            continue
        base = base_files.get(old_paths.get(w.file, w.file))
        if base is None or w.file not in gold_files:
            continue
        gold_defs, base_defs = definitions(gold_files[w.file]), definitions(base)
        old, new = base_defs.get(w.name), gold_defs.get(w.name)
        if old is None or new is None or not _interface_changed(old, new):
            continue
        callee = w.name.rsplit(".", 1)[-1]
        for qualname, d in gold_defs.items():
            before = base_defs.get(qualname)
            if (w.file, qualname) in seen or before is None or before.source == d.source:
                continue
            if _changes_a_call(before.source, d.source, callee):
                seen.add((w.file, qualname))
                out.append(Target(w.file, qualname, TargetRole.CALLER, TargetStatus.MODIFIED,
                                  d.signature, d.docstring))  # fmt: skip
    return out


def _changes_a_call(base_source: str, gold_source: str, callee: str) -> bool:
    """Whether a line the PR adds to a function lies inside a call of `callee`: the call's
    name line or any argument line (#1187's `backward` adds only `ctx.num_stages,` to a call
    of a wrapper that gained that parameter)."""
    if f"{callee}(" not in gold_source:
        return False
    kept = set(base_source.splitlines())
    changed = {i for i, line in enumerate(gold_source.splitlines()) if line not in kept}
    if not changed:
        return False
    stack = [parse_python(textwrap.dedent(gold_source).encode()).root_node]
    while stack:
        node = stack.pop()
        span = range(node.start_point.row, node.end_point.row + 1)
        if node.type == "call" and _call_name(node) == callee and changed.intersection(span):
            return True
        stack.extend(node.named_children)
    return False


def _call_name(call: Node) -> str:
    """The last name of a call's function: `f` of `f(x)` and of `mod.f(x)`."""
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "attribute":
        fn = fn.child_by_field_name("attribute")
    return fn.text.decode() if fn is not None and fn.text is not None else ""


def _interface_changed(old: Definition, new: Definition) -> bool:
    """Whether a wrapper's parameters or its return statements differ between two versions."""

    def returns(d: Definition) -> list[str]:
        return sorted(" ".join(line.split()) for line in d.source.splitlines()
                      if line.strip().startswith("return"))  # fmt: skip

    return old.signature != new.signature or returns(old) != returns(new)


def keep_base_imports(source: str, base_file: bytes, gold_file: bytes, name: str = "") -> str:
    """A wrapper's base `source` with the module imports it uses that the gold file dropped,
    made local to it (first statements after the docstring): the setup state keeps the gold
    module's imports, so a base wrapper that calls `math.ceil` where the PR removed `import
    math` would fail at the base variant (Liger-Kernel #815 on the H200). Local, so the gold
    wrapper spliced over it leaves the gold file unchanged."""
    base_imports = _module_imports(base_file)
    gold_bound = module_names(gold_file)
    if not base_imports or gold_bound is None:
        return source
    used = set(re.findall(r"[A-Za-z_]\w*", source))
    missing = sorted(n for n in base_imports if n in used and n not in gold_bound)
    if not missing:
        return source
    data = source.encode()
    root = parse_python(data).root_node
    fn = next((n for n in root.named_children if n.type in _DEFS), None)
    if fn is not None and fn.type == "decorated_definition":
        fn = fn.child_by_field_name("definition")
    body = fn.child_by_field_name("body") if fn is not None else None
    if body is None or not body.named_children:
        return source
    first = body.named_children[0]
    indent = " " * first.start_point.column
    lines = [base_imports[n] for n in missing]
    if _is_docstring(first):
        at, text = first.end_byte, "".join(f"\n{indent}{line}" for line in lines)
    else:
        at, text = first.start_byte, "".join(f"{line}\n{indent}" for line in lines)
    log.info("%s: the base version keeps %s, which the gold module no longer imports",
             name or "wrapper", ", ".join(missing))  # fmt: skip
    return (data[:at] + text.encode() + data[at:]).decode()


_DEFS = ("function_definition", "decorated_definition")


@dataclass(frozen=True)
class Elsewhere:
    """A module the PR changes that holds no target, as the base had it. The setup state takes
    its gold version, so a helper the PR deleted there is gone for a restored base target that
    imports it (flash-linear-attention #466 `safe_exp_comba`, #652 `safe_exp`, #737550ff9b
    `safe_diff_exp`): the base variant would fail at import, not on what the PR fixed."""

    path: str
    base: bytes
    gone: frozenset[str]  # module-level names its base binds and its gold does not


def elsewhere_modules(
    base_files: Mapping[str, bytes], gold_files: Mapping[str, bytes], deleted: Iterable[str] = ()
) -> dict[str, Elsewhere]:
    """Dotted module name -> `Elsewhere` for the changed modules (base and gold contents; the
    `deleted` ones gone in the gold) whose gold no longer binds some of their base's names."""
    out: dict[str, Elsewhere] = {}
    gone_files = set(deleted)
    for path, base in base_files.items():
        module = module_name(path)
        base_names = module_names(base)
        gold = gold_files.get(path)
        if module is None or base_names is None or (gold is None and path not in gone_files):
            continue  # not a module, unparsable, or its gold unknown (a blob a mirror lacks)
        gold_names = module_names(gold) if gold is not None else frozenset()
        if gold_names is None:
            continue  # the gold star-imports: it may bind anything
        if gone := base_names - gold_names:
            out[module] = Elsewhere(path, base, gone)
    return out


def keep_base_globals(
    source: str,
    base_file: bytes,
    gold_file: bytes,
    kept: set[str],
    path: str = "",
    elsewhere: Mapping[str, Elsewhere] | None = None,
) -> str:
    """A base target's `source` (a kernel, or a module-level wrapper) preceded by the
    module-level statements of the base file that bind names it uses and the gold file no
    longer binds (and, in turn, what those use): the setup state keeps the gold module, so a
    base kernel whose decorator reads
    `_AUTOTUNE_CONFIGS` (Megatron-LM #4603) or whose body calls `safe_exp` (flash-linear-
    attention #463), both gone in the gold, would fail with a NameError at the base variant:
    a failure the PR did not fix. Module-level, since a Triton kernel resolves its globals in
    its module; `kept` (the names one file already got) is updated. The gold variant is the
    gold tree itself, so these statements never reach it. A name the base file (at `path`)
    imports from one of the `elsewhere` modules, which the PR deleted there, comes as that
    module's base definition instead of the import (`_carried`)."""
    gold_bound = module_names(gold_file)
    binding = _base_bindings(base_file)
    if gold_bound is None or binding is None:
        return source
    imports = _module_imports(base_file)  # name -> an import of that name alone

    def instead(name: str, found: ast.stmt) -> list[_Entry] | None:
        if not isinstance(found, ast.ImportFrom) or not elsewhere:
            return None
        return _carried(name, found, path, elsewhere, gold_bound, kept)

    def skip(n: str) -> bool:
        return n in gold_bound or n in kept

    # imports first, then what other modules' bases give, then this file's definitions in its
    # own order
    chosen = sorted(_walk(_free_names(source), base_file, imports, 2, skip, kept, instead))
    if not chosen:
        return source
    log.info("a base target keeps %s, which the gold module no longer binds",
             ", ".join(sorted(n for n in kept if n in binding)))  # fmt: skip
    return "".join(t.rstrip("\n") + "\n\n\n" for *_, t in chosen) + source


_Entry = tuple[int, int, str]  # (group: 0 imports, 1 other modules', 2 own; base line; text)


def _walk(
    names: Iterable[str],
    src: bytes,
    imports: Mapping[str, str],
    group: int,
    skip: Callable[[str], bool],
    kept: set[str],
    instead: Callable[[str, ast.stmt], list[_Entry] | None] | None = None,
) -> list[_Entry]:
    """The module-level statements of the base file `src` that bind `names`, and in turn what
    they read: a name bound by an import as that import alone (`imports`), any other as its
    statement (in `group`, at its line). A name `skip` refuses, or that `src` does not bind (a
    builtin), brings nothing; every name brought goes into `kept`. `instead` may give other
    entries for a name (`_carried`)."""
    binding = _base_bindings(src) or {}
    lines = src.decode().splitlines(keepends=True)
    out: list[_Entry] = []
    todo = set(names)
    while todo:
        name = todo.pop()
        found = binding.get(name)
        if found is None or skip(name):
            continue
        kept.add(name)
        other = instead(name, found) if instead is not None else None
        if other is not None:
            out += [e for e in other if e not in out]
            continue
        if isinstance(found, ast.Import | ast.ImportFrom) and name in imports:
            out.append((0, 0, imports[name]))  # only this name: the gold may bind the others
            continue
        text = _segment(lines, found)
        if any(t == text for *_, t in out):
            continue
        out.append((group, found.lineno, text))
        todo |= _free_names(text)
    return out


def _carried(
    name: str,
    node: ast.ImportFrom,
    path: str,
    elsewhere: Mapping[str, Elsewhere],
    gold_bound: frozenset[str],
    kept: set[str],
) -> list[_Entry] | None:
    """What stands in for `name`, which the base file at `path` imports (`node`) from a module
    where the PR deleted it: that module's base definition, with the names it reads that the
    target's gold module lacks (its imports made absolute, its definitions in turn), as
    `keep_base_globals` entries; None when the module still binds it."""
    alias = next((a for a in node.names if (a.asname or a.name) == name), None)
    module = elsewhere.get(_imported_module(path, node) or "")
    if alias is None or module is None or alias.name not in module.gone:
        return None
    binding = _base_bindings(module.base)
    if binding is None or alias.name not in binding:
        return None
    imports = _module_imports(module.base, module.path)  # absolute: they move to another module
    head = alias.name  # the caller has `name` in `kept` already

    def skip(n: str) -> bool:
        return n != head and (n in gold_bound or n in kept)

    out = _walk([head], module.base, imports, 1, skip, kept)
    if name != head:  # `from m import safe_exp as sexp`, after the module's definitions
        out.append((1, len(module.base.decode().splitlines()) + 1, f"{name} = {head}\n"))
    log.info("%s: the base's %s comes from %s's base, where the PR deleted it",
             path or "a target module", head, module.path)  # fmt: skip
    return out


def _free_names(source: str) -> set[str]:
    """The names a definition (or statement) reads that it does not bind itself: parameters,
    assignments and nested definitions left out; attributes and strings are not names."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError):
        return set(re.findall(r"[A-Za-z_]\w*", source))  # unparsable: every word, to be safe
    loads: set[str] = set()
    stores: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.arg):
            stores.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stores.add(node.name)
    return loads - stores


def _segment(lines: list[str], node: ast.stmt) -> str:
    """A module-level statement's source, decorators included."""
    return "".join(lines[_first_line(node) - 1 : node.end_lineno])


def _first_line(node: ast.stmt) -> int:
    """A statement's first line, its decorators' included."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def file_targets(targets: Sequence[Target], path: str) -> set[str]:
    """The module-level names of the targets in `path` (a method: its class)."""
    return {t.name.split(".")[0] for t in targets if t.file == path}


@lru_cache(maxsize=64)
def _base_bindings(src: bytes) -> Mapping[str, ast.stmt] | None:
    """Name -> the module-level statement that first binds it (None: the file does not
    parse); what `keep_base_globals` restores and `_unbound_errors` checks, read once a file."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return None
    binding: dict[str, ast.stmt] = {}
    for node in tree.body:  # module-level statements only (one inside an `if` stays)
        for name in bound_names([node]):
            binding.setdefault(name, node)
    return binding


def _is_docstring(statement: Node) -> bool:
    """Whether a body's first statement is its docstring (a plain string expression)."""
    kids = statement.named_children
    return statement.type == "expression_statement" and bool(kids) and kids[0].type == "string"


def _top_statements(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, those under top-level if / try / with included."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, _SCOPES):
            continue  # a function's or class's own names are not the module's
        for field in ("body", "orelse", "finalbody"):
            todo += getattr(node, field, [])
        for handler in getattr(node, "handlers", []):
            todo += handler.body
    return out


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@lru_cache(maxsize=64)
def _module_imports(src: bytes, path: str = "") -> Mapping[str, str]:
    """Name -> the import statement (one name) that binds it at module level; relative ones
    made absolute when the file's `path` is given. Cached by content: the setup state asks
    once per wrapper of a file."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, str] = {}
    for node in _top_statements(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                out.setdefault(bound, f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
        elif isinstance(node, ast.ImportFrom) and not any(a.name == "*" for a in node.names):
            module = "." * node.level + (node.module or "")
            if path and node.level:
                module = _imported_module(path, node) or module
            for a in node.names:
                alias = f" as {a.asname}" if a.asname else ""
                out.setdefault(a.asname or a.name, f"from {module} import {a.name}{alias}")
    return out


@lru_cache(maxsize=64)
def module_names(src: bytes) -> frozenset[str] | None:
    """Every name bound at module level (None: unknown, e.g. a star import or no parse)."""
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return None
    top = _top_statements(tree)
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in top):
        return None
    return frozenset(bound_names(top))


def _enclosing(qualname: str) -> list[str]:
    parts = qualname.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def setup_files(
    targets: Sequence[Target],
    kernels: Sequence[TargetKernel],
    gold_files: Mapping[str, bytes],
    base_files: Mapping[str, bytes],
    elsewhere: Mapping[str, Elsewhere] | None = None,
) -> dict[str, bytes]:
    """The setup-state bytes of every file that holds a target (gold path -> bytes);
    `elsewhere` (`elsewhere_modules`): the other changed modules, whose deleted helpers a
    restored base target may import."""
    # one name may stand for several definitions (e.g. a helper defined per Triton version in
    # the two branches of an `if`): they pair up with the targets in file order
    by_name: dict[tuple[str, str], list[TargetKernel]] = {}
    for kernel in kernels:
        by_name.setdefault((kernel.file, kernel.name), []).append(kernel)
    items: dict[str, list[KernelSource]] = {}
    kept: dict[str, set[str]] = {}  # per file: the base names its kernels' sources restored
    for t in targets:
        same = by_name.get((t.file, t.name)) if t.role is not TargetRole.WRAPPER else None
        k = same.pop(0) if same else None
        if k is not None:  # a kernel or helper: its base source, or a stub of the gold one
            source = k.before_src if k.before_src is not None else stub(k.after_src or "")
            base_path = k.old_file or k.file
            base = base_files.get(base_path)
            restored = k.before_src is not None
        else:  # a wrapper: its base version by qualified name, or a stub
            kern = next(x for x in kernels if x.file == t.file)
            base_path = kern.old_file or kern.file
            base = base_files.get(base_path)
            old = definitions(base).get(t.name) if base is not None else None
            gold_def = definitions(gold_files[t.file])[t.name]
            source = old.source if old is not None else stub(gold_def.source)
            if old is not None and base is not None:
                source = keep_base_imports(source, base, gold_files[t.file], t.name)
            restored = old is not None and "." not in t.name  # a module-level wrapper
        if restored and base is not None and t.file in gold_files:
            # the file's targets are restored by their own items, never twice
            own = kept.setdefault(t.file, file_targets(targets, t.file))
            source = keep_base_globals(source, base, gold_files[t.file], own, base_path, elsewhere)
        items.setdefault(t.file, []).append(KernelSource(t.file, t.name, source))
    out = {}
    for path, group in items.items():
        try:
            out[path] = splice_file(gold_files[path], path, group)
        except SpliceError as exc:
            raise SpliceError(f"setup state of {path}: {exc}") from None
    return out


def setup_patch(
    gold_patch: bytes,
    setup: Mapping[str, bytes],
    base_files: Mapping[str, bytes],
    old_paths: Mapping[str, str],
) -> bytes:
    """The base -> setup-state diff: `gold.patch` with each target file's section replaced by
    the diff from its base version (at its old path) to its setup state."""
    sections = split_patch(gold_patch)
    out: list[bytes] = []
    done: set[str] = set()
    for path, section in sections:
        if path not in setup:
            out.append(section)
            continue
        done.add(path)
        old = old_paths.get(path, path)
        if old != path and _renamed_from(section) == old:  # the old file goes, the new comes
            out.append(file_diff(old, base_files.get(old), None))
            out.append(file_diff(path, None, setup[path]))
        else:
            # the file's own base version (None: a new file), also when its kernel came from
            # another file that the gold patch keeps or deletes in a section of its own
            # (flash-linear-attention 7be5c3d716 moves a kernel from chunk_util.py, which it
            # deletes, into fused_chunk.py, which exists at the base)
            out.append(file_diff(path, base_files.get(path), setup[path]))
    for path in sorted(set(setup) - done):  # a target file the gold patch shows no section for
        out.append(file_diff(path, base_files.get(path), setup[path]))
    return b"".join(out)


def _renamed_from(section: bytes) -> str | None:
    """The old path of a git diff section that renames its file, else None."""
    return _header(section, b"rename from ")


def _header(section: bytes, prefix: bytes) -> str | None:
    """The rest of the header line of a git diff section that starts with `prefix` (the lines
    before its first hunk), else None."""
    for line in section.split(b"\n"):
        if line.startswith(b"@@"):
            return None
        if line.startswith(prefix):
            return line[len(prefix) :].decode("utf-8", "surrogateescape")
    return None


def split_patch(patch: bytes) -> list[tuple[str, bytes]]:
    """(path at the new side, section) for each file of a git diff."""
    marker = b"diff --git "
    starts = [i for i in line_starts(patch) if i < len(patch) and patch.startswith(marker, i)]
    if not starts:
        return []
    out = []
    for a, b in zip(starts, [*starts[1:], len(patch)], strict=True):
        section = patch[a:b]
        out.append((_new_path(section), section))
    return out


def new_side_lines(patch: bytes) -> dict[str, list[tuple[int, int]]]:
    """Per file of a git diff, the line ranges of its new side that the diff adds, or next to
    which it deletes (a dropped parametrization changes the test around it)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path, section in split_patch(patch):
        lines: list[int] = []
        new = 0
        for raw in section.split(b"\n"):
            if raw.startswith(b"@@"):
                m = re.match(rb"@@ -\d+(?:,\d+)? \+(\d+)", raw)
                new = int(m.group(1)) if m else 0
            elif not new:  # the file's header lines (`---`, `+++`) come before its first hunk
                continue
            elif raw.startswith(b"+"):
                lines.append(new)
                new += 1
            elif raw.startswith(b"-"):
                # both neighbours of the deletion: a dropped first decorator leaves a blank
                # line above and the function's next line below
                lines += [max(new - 1, 1), new]
            elif raw.startswith(b" ") or raw == b"":
                new += 1
        spans: list[tuple[int, int]] = []
        for n in sorted(set(lines)):
            if spans and n <= spans[-1][1] + 1:
                spans[-1] = (spans[-1][0], n)
            else:
                spans.append((n, n))
        if spans:
            out[path] = spans
    return out


def _new_path(section: bytes) -> str:
    renamed = _header(section, b"rename to ")
    if renamed is not None:
        return renamed
    for prefix in (b"+++ b/", b"--- a/"):  # the new side, else a deletion's old one
        path = _header(section, prefix)
        if path is not None:
            return path.rstrip("\t")
    header = section.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    return header.rsplit(" b/", 1)[-1]


def _docstring(source: str) -> str | None:
    root = parse_python(source.encode()).root_node
    for node in root.named_children:
        fn = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if fn is None or fn.type != "function_definition":
            continue
        body = fn.child_by_field_name("body")
        if body is not None and body.named_children:
            first = body.named_children[0]
            if first.type == "expression_statement" and first.named_children:
                string = first.named_children[0]
                if string.type == "string" and string.text is not None:
                    return string.text.decode("utf-8", "replace")
        return None
    return None


def roundtrip_errors(
    targets: Sequence[Target],
    kernels: Sequence[TargetKernel],
    setup_patch_bytes: bytes,
    base_files: Mapping[str, bytes],
    gold_files: Mapping[str, bytes],
) -> list[str]:
    """The invariant every task keeps: the setup state plus the gold targets is the gold.
    One message per target file where it does not hold (files with a deleted kernel are
    skipped: the gold has no definition to put back)."""
    import tempfile
    from pathlib import Path

    from mining.errors import GitError
    from mining.git import apply_patch

    files = {t.file for t in targets}
    every = split_patch(setup_patch_bytes)
    sections = [sec for path, sec in every if path in files]
    # what the setup state deletes from the other modules the PR changes
    removed = {path: _removed_definitions(sec) for path, sec in every if path not in files}
    old_paths = {k.file: k.old_file or k.file for k in kernels}
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for f in files:
            # the file's base version, and that of the file its kernel came from (a rename's
            # setup section creates the new path; a kernel moved into a file that exists at
            # the base changes that file)
            for path in {f, old_paths.get(f, f)}:
                if path in base_files:
                    (root / path).parent.mkdir(parents=True, exist_ok=True)
                    (root / path).write_bytes(base_files[path])
        try:
            apply_patch(root, b"".join(sections))
        except GitError as exc:
            return [f"setup.patch does not apply to the base target files: {exc}"]
        for f in sorted(files):
            if f not in gold_files or any(
                t.status is TargetStatus.DELETED for t in targets if t.file == f
            ):
                continue  # a missing gold file is reported by its own check
            gold_defs = definitions(gold_files[f])
            pool = [k for k in kernels if k.file == f]
            items = []
            for t in targets:
                if t.file != f:
                    continue
                k = None
                if t.role is not TargetRole.WRAPPER:
                    k = next((x for x in pool if x.name == t.name), None)
                    if k is not None:
                        pool.remove(k)
                source = k.after_src if k is not None else gold_defs[t.name].source
                items.append(KernelSource(f, t.name, source or ""))
            setup_bytes = (root / f).read_bytes() if (root / f).exists() else b""
            errors += _unbound_errors(f, setup_bytes, targets, kernels, base_files)
            restored = _restored(f, targets, kernels, base_files)
            errors += _deleted_import_errors(f, setup_bytes, restored, removed)
            try:
                back = splice_file(setup_bytes, f, items, parses_like=gold_files[f])
            except SpliceError as exc:
                errors.append(f"{f}: the gold targets do not splice into the setup state: {exc}")
                continue
            if back != gold_files[f] and (
                without_kept(back, gold_files[f], file_targets(targets, f)) != gold_files[f]
            ):
                errors.append(f"{f}: the setup state plus the gold targets is not the gold file")
    return errors


def _unbound_errors(
    path: str,
    setup: bytes,
    targets: Sequence[Target],
    kernels: Sequence[TargetKernel],
    base_files: Mapping[str, bytes],
) -> list[str]:
    """A base target of the setup state that uses a name its base module bound and the setup
    module does not (the base variant would fail on the name, not on what the PR fixed)."""
    setup_bound = module_names(setup)
    if setup_bound is None:
        return []
    wanted = {(t.file, t.name) for t in targets if t.role is not TargetRole.WRAPPER}
    out = []
    for k in kernels:
        base = base_files.get(k.old_file or k.file)
        if k.file != path or (k.file, k.name) not in wanted or k.before_src is None or not base:
            continue
        base_top = _base_bindings(base)  # as `keep_base_globals` reads it
        if base_top is None:
            continue
        missing = sorted(n for n in _free_names(k.before_src) & base_top.keys()
                         if n not in setup_bound)  # fmt: skip
        if missing:
            out.append(f"{path}: the setup state's base {k.name} uses {', '.join(missing)}, "
                       "which the setup module does not bind")  # fmt: skip
    return out


_DEFINED = re.compile(rb"^([+-])(?:async def|def|class)\s+(\w+)|^([+-])(\w+)\s*(?::[^=]*)?=(?!=)",
                      re.M)  # fmt: skip


def _removed_definitions(section: bytes) -> frozenset[str]:
    """The module-level names a patch section's file stops defining: a `def`, `class` or
    assignment at column 0 removed and not added again."""
    gone: set[str] = set()
    added: set[str] = set()
    for m in _DEFINED.finditer(section):
        sign, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        (gone if sign == b"-" else added).add(name.decode())
    return frozenset(gone - added)


def _imported_module(importer: str, node: ast.ImportFrom) -> str | None:
    """The dotted module a `from ... import` in the file `importer` names, relative ones
    resolved against its package (`module_name`: a leading src/ is no package)."""
    if not node.level:
        return node.module
    own = module_name(importer)
    if own is None:
        return None
    package = own.split(".") if importer.endswith("/__init__.py") else own.split(".")[:-1]
    if node.level - 1 > len(package):
        return None  # beyond the top of the tree
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *(node.module.split(".") if node.module else [])]) or None


def _restored(
    path: str,
    targets: Sequence[Target],
    kernels: Sequence[TargetKernel],
    base_files: Mapping[str, bytes],
) -> list[tuple[str, str]]:
    """(name, base source) of the targets of `path` the setup state restores to their base:
    kernels and helpers, and wrappers (flash-linear-attention #257's base wrapper calls
    `is_triton_shared_mem_enough`, which the PR deleted from `fla/utils.py`)."""
    out = [(k.name, k.before_src) for k in kernels if k.file == path and k.before_src is not None]
    kern = next((k for k in kernels if k.file == path), None)
    base = base_files.get(kern.old_file or kern.file) if kern is not None else None
    defs = definitions(base) if base is not None else {}
    for t in targets:
        if t.file == path and t.role is TargetRole.WRAPPER and t.name in defs:
            out.append((t.name, defs[t.name].source))
    return out


def _deleted_import_errors(
    path: str,
    setup: bytes,
    restored: Sequence[tuple[str, str]],
    removed: Mapping[str, frozenset[str]],
) -> list[str]:
    """A base target of the setup state (`restored`: name, base source) that uses a name its
    module imports from another module whose definition the setup state deletes
    (flash-linear-attention #466: `safe_exp_comba`, deleted from `fla/ops/comba/utils.py` by
    the PR, imported back for the restored base): the base variant would fail at import, not
    on what the PR fixed."""
    try:
        tree = ast.parse(setup)
    except (SyntaxError, ValueError):
        return []
    by_module = {module_name(p): (p, names) for p, names in removed.items()}
    imported: dict[str, tuple[str, str]] = {}  # bound name -> (module path, name there)
    for node in _top_statements(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source, gone = by_module.get(_imported_module(path, node), ("", frozenset()))
        for a in node.names:
            if a.name in gone:
                imported[a.asname or a.name] = (source, a.name)
    out = []
    for target, source in restored:
        for name in sorted(_free_names(source) & imported.keys()):
            module, there = imported[name]
            out.append(f"{path}: the setup state's base {target} uses {name}, imported from "
                       f"{module}, where the setup state no longer defines {there}")  # fmt: skip
    return out


def without_kept(data: bytes, gold: bytes, targets: set[str]) -> bytes:
    """`data` without the runs of module-level statements, each right before a definition of
    one of `targets`, that bind only names the `gold` module does not bind (with the two blank
    lines after each): what `keep_base_globals` put before base targets, so that the setup
    state plus the gold targets is the gold up to those."""
    gold_bound = module_names(gold)
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return data
    if gold_bound is None:
        return data
    lines = data.decode().splitlines(keepends=True)
    drop: set[int] = set()
    run: list[ast.stmt] = []
    for node in tree.body:
        names = bound_names([node])
        if names and not names & gold_bound and not names & targets:
            run.append(node)
            continue
        defines = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in targets
        for kept in run if defines else []:
            start = _first_line(kept)
            end = kept.end_lineno or kept.lineno
            last = end
            while end < len(lines) and end < last + 2 and not lines[end].strip():
                end += 1
            drop |= set(range(start - 1, end))
        run = []
    return "".join(line for i, line in enumerate(lines) if i not in drop).encode()
