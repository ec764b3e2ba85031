"""Function-level diff of the Triton kernels of a commit against its parent.

Reads: the kernels `mining.kernels` found in the parent and commit versions of the files a
commit changed, and the commit's file renames.
Writes: nothing; returns `KernelChange` values (unchanged kernels produce none).
Refuses: nothing; it is a pure function of its inputs.

Kernels are paired in decreasing order of confidence, each kernel taking part in at most one
pair: same file (through renames) and qualified name; then identical tokens and name anywhere
(a move); then identical tokens apart from the kernel's own name (a move or rename); then the
same name in another file (a move with edits). What is left was added or deleted.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence

from mining.model import ChangeKind, Kernel, KernelChange

log = logging.getLogger(__name__)

# (path the kernel was found under, the kernel)
_Located = tuple[str, Kernel]


def diff_kernels(
    before: Mapping[str, Sequence[Kernel]],
    after: Mapping[str, Sequence[Kernel]],
    renames: Mapping[str, str],
) -> list[KernelChange]:
    """Changes between parent kernels (by parent path) and commit kernels (by commit path)."""
    old = [(path, k) for path, ks in before.items() for k in ks]
    new = [(path, k) for path, ks in after.items() for k in ks]
    changes: list[KernelChange] = []

    def logical(path: str) -> str:
        return renames.get(path, path)

    # 1. Same logical file and qualname; redefinitions pair up in source order.
    pairs, old, new = _pair(
        old, new, lambda p, k: (logical(p), k.qualname), lambda p, k: (p, k.qualname)
    )
    for (old_path, b), (new_path, a) in pairs:
        if b.source == a.source:
            if old_path != new_path:
                kind = ChangeKind.RENAMED_FILE
            elif _launches(b) != _launches(a):
                # grid, block sizes or num_warps changed where the kernel is launched
                kind = ChangeKind.LAUNCH_CHANGED
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


def _launches(k: Kernel) -> list[tuple[str | None, str, str]]:
    """The kernel's launch sites without their line numbers (moving code is no change)."""
    return sorted((site.wrapper, site.grid, site.text) for site in k.launch_sites)


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
