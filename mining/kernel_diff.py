"""Function-level diff of the Triton kernels of a commit against its parent.

Reads: the kernels `mining.kernels` found in the parent and commit versions of the files a
commit changed, and the commit's file renames.
Writes: nothing; returns `KernelChange` values (unchanged kernels produce none).
Refuses: nothing; it is a pure function of its inputs.

Kernels are paired in decreasing order of confidence, each kernel taking part in at most one
pair: same file (through renames) and qualified name; then identical tokens and name anywhere
(a move); then identical tokens apart from the kernel's own name (a move or rename); then the
same name in another file (a move with edits). What is left was added or deleted.

A kernel whose source is unchanged in its file is still a change when the calls that launch it
changed (`launch_changed`, compared as `mining.launches` says) or when its top-level definition
changed places among the file's other definitions (`moved`, with `file == old_file`): the
definitions that stay in order are the heaviest common subsequence of the two versions' orders,
an unchanged definition weighing its lines and an edited one almost nothing, as a line diff
keeps the most unchanged lines in place; the others moved.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence

from mining.kernels import Layout
from mining.launches import same_launches
from mining.model import ChangeKind, Kernel, KernelChange

log = logging.getLogger(__name__)

# (path the kernel was found under, the kernel)
_Located = tuple[str, Kernel]


def diff_kernels(
    before: Mapping[str, Sequence[Kernel]],
    after: Mapping[str, Sequence[Kernel]],
    renames: Mapping[str, str],
    layouts_before: Mapping[str, Layout] | None = None,
    layouts_after: Mapping[str, Layout] | None = None,
) -> list[KernelChange]:
    """Changes between parent kernels (by parent path) and commit kernels (by commit path).

    The layouts (top-level definitions of each file version, `mining.kernels.scan_file`) show
    kernels moved within their file; without them the kernels' own order stands in.
    """
    old = [(path, k) for path, ks in before.items() for k in ks]
    new = [(path, k) for path, ks in after.items() for k in ks]
    changes: list[KernelChange] = []

    def logical(path: str) -> str:
        return renames.get(path, path)

    # 1. Same logical file and qualname; redefinitions pair up in source order.
    pairs, old, new = _pair(
        old, new, lambda p, k: (logical(p), k.qualname), lambda p, k: (p, k.qualname)
    )
    moved_units: dict[str, set[str]] = {}

    def moved_in_file(path: str, b: Kernel, a: Kernel) -> bool:
        if b.span.start_line == a.span.start_line:
            return False  # nothing above it changed size, so nothing around it moved
        if path not in moved_units:
            old_layout = (layouts_before or {}).get(path) or _kernel_layout(before.get(path, ()))
            new_layout = (layouts_after or {}).get(path) or _kernel_layout(after.get(path, ()))
            moved_units[path] = _moved(old_layout, new_layout)
        return _unit(b) in moved_units[path] and _unit(a) == _unit(b)

    for (old_path, b), (new_path, a) in pairs:
        if b.source == a.source:
            if old_path != new_path:
                kind = ChangeKind.RENAMED_FILE
            elif not same_launches(b, a):
                # grid, block sizes or num_warps changed where the kernel is launched
                kind = ChangeKind.LAUNCH_CHANGED
            elif moved_in_file(new_path, b, a):
                kind = ChangeKind.MOVED
            else:
                continue  # untouched
        elif b.token_digest == a.token_digest:
            kind = ChangeKind.FORMATTING_ONLY
        else:
            kind = ChangeKind.MODIFIED
        changes.append(KernelChange(a.name, kind, new_path, old_path, b, a))

    # 2. Identical tokens and name elsewhere: a move.
    pairs, old, new = _pair(
        old, new, lambda p, k: (k.name, k.token_digest), lambda p, k: (k.name, k.token_digest)
    )
    for (old_path, b), (new_path, a) in pairs:
        changes.append(KernelChange(a.name, ChangeKind.MOVED, new_path, old_path, b, a))

    # 2b. Identical tokens under another name, in this file or another: a renamed or moved
    # kernel (a refactor that also drops a leading underscore, say).
    pairs, old, new = _pair(
        old, new, lambda p, k: k.body_digest or None, lambda p, k: k.body_digest or None
    )
    for (old_path, b), (new_path, a) in pairs:
        changes.append(KernelChange(a.name, ChangeKind.MOVED, new_path, old_path, b, a))

    # 3. Same name in another file: moved and edited. Pairing by name alone inside one file
    # would mistake a replaced kernel for an edited one, so the file must differ.
    by_name: dict[str, list[_Located]] = defaultdict(list)
    for item in new:
        by_name[item[1].name].append(item)
    left_old: list[_Located] = []
    for old_path, b in old:
        candidates = by_name.get(b.name, [])
        match = next((c for c in candidates if c[0] != logical(old_path)), None)
        if match is None:
            left_old.append((old_path, b))
            continue
        candidates.remove(match)
        new_path, a = match
        changes.append(KernelChange(a.name, ChangeKind.MODIFIED, new_path, old_path, b, a))
    left_new = [item for items in by_name.values() for item in items]

    # 4. The rest.
    for old_path, b in left_old:
        changes.append(KernelChange(b.name, ChangeKind.DELETED, old_path, old_path, b, None))
    for new_path, a in left_new:
        changes.append(KernelChange(a.name, ChangeKind.ADDED, new_path, None, None, a))

    changes.sort(key=lambda c: (c.file, c.name, str(c.change)))
    return changes


def _unit(k: Kernel) -> str:
    """The top-level definition that holds a kernel (its class, or itself)."""
    return k.qualname.split(".", 1)[0]


def _kernel_layout(kernels: Sequence[Kernel]) -> Layout:
    units: list[tuple[str, int, str]] = []
    for k in sorted(kernels, key=lambda k: k.span.start_byte):
        lines = k.span.end_line - k.span.start_line + 1
        if units and units[-1][0] == _unit(k):
            name, before, digest = units[-1]
            units[-1] = (name, before + lines, digest + k.token_digest)
        else:
            units.append((_unit(k), lines, k.token_digest))
    return tuple(units)


def _moved(old: Layout, new: Layout) -> set[str]:
    """Definitions (by name) that changed places between two layouts of one file.

    Only names defined once in each version take part: a redefinition (if/else) is ambiguous.
    """
    counts_old: dict[str, int] = defaultdict(int)
    counts_new: dict[str, int] = defaultdict(int)
    for name, _, _ in old:
        counts_old[name] += 1
    for name, _, _ in new:
        counts_new[name] += 1
    common = {n for n, c in counts_old.items() if c == 1 and counts_new.get(n) == 1}
    b = [n for n, _, _ in new if n in common]
    if [n for n, _, _ in old if n in common] == b:
        return set()
    new_digest = {n: d for n, _, d in new}
    # An edited definition keeps few of its lines in place; an unchanged one keeps them all.
    a = [(n, lines if new_digest[n] == d else 1) for n, lines, d in old if n in common]
    # heaviest common subsequence
    m = len(b)
    best = [[0] * (m + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        name, weight = a[i]
        row, below = best[i], best[i + 1]
        for j in range(m - 1, -1, -1):
            if name == b[j]:
                row[j] = weight + below[j + 1]
            else:
                row[j] = max(below[j], row[j + 1])
    kept = set()
    i = j = 0
    while i < len(a) and j < m:
        if a[i][0] == b[j] and best[i][j] == a[i][1] + best[i + 1][j + 1]:
            kept.add(b[j])
            i += 1
            j += 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return common - kept


def _pair(
    old: list[_Located],
    new: list[_Located],
    old_key: Callable[[str, Kernel], Hashable],
    new_key: Callable[[str, Kernel], Hashable],
) -> tuple[list[tuple[_Located, _Located]], list[_Located], list[_Located]]:
    """Pair kernels with equal keys in order; return the pairs and both unpaired remainders."""
    waiting: dict[Hashable, list[_Located]] = defaultdict(list)
    for item in new:
        key = new_key(*item)
        if key is not None:  # None: this kernel has no such key and pairs with nothing
            waiting[key].append(item)
    pairs: list[tuple[_Located, _Located]] = []
    left_old: list[_Located] = []
    for item in old:
        key = old_key(*item)
        queue = waiting.get(key) if key is not None else None
        if queue:
            pairs.append((item, queue.pop(0)))
        else:
            left_old.append(item)
    paired_new = {id(a) for _, a in pairs}
    left_new = [item for item in new if id(item) not in paired_new]
    return pairs, left_old, left_new
