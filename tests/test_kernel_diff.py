"""Pairing of parent and commit kernels into changes, on kernels found in hand-written files."""

from __future__ import annotations

import textwrap

from mining.kernel_diff import diff_kernels
from mining.kernels import find_kernels
from mining.model import ChangeKind, Kernel

HEAD = "import triton\nimport triton.language as tl\n\n"


def kernel(name: str, body: str = "return x", *, qual: str = "") -> str:
    """Source of one jit kernel (inside `class qual:` when qual is given)."""
    src = f"@triton.jit\ndef {name}(x, BLOCK: tl.constexpr):\n    {body}\n"
    if qual:
        src = f"class {qual}:\n" + textwrap.indent(src, "    ")
    return src


def found(files: dict[str, str]) -> dict[str, list[Kernel]]:
    return {path: find_kernels((HEAD + src).encode(), path) for path, src in files.items()}


def summary(before: dict[str, str], after: dict[str, str], renames=None):
    changes = diff_kernels(found(before), found(after), renames or {})
    return [(c.name, c.change, c.file, c.old_file) for c in changes]


def test_unchanged_kernels_produce_nothing() -> None:
    files = {"ops/a.py": kernel("k1") + kernel("k2")}
    assert diff_kernels(found(files), found(files), {}) == []


def test_modified_added_deleted() -> None:
    before = {"ops/a.py": kernel("keep") + kernel("edit") + kernel("gone", "return x - 1")}
    after = {
        "ops/a.py": kernel("keep") + kernel("edit", "return x + 1") + kernel("new", "return -x")
    }
    assert summary(before, after) == [
        ("edit", ChangeKind.MODIFIED, "ops/a.py", "ops/a.py"),
        ("gone", ChangeKind.DELETED, "ops/a.py", "ops/a.py"),
        ("new", ChangeKind.ADDED, "ops/a.py", None),
    ]


def test_change_carries_both_versions() -> None:
    before = found({"ops/a.py": kernel("k")})
    after = found({"ops/a.py": kernel("k", "return x * 2"), "ops/b.py": kernel("n")})
    modified, added = diff_kernels(before, after, {})
    assert modified.before == before["ops/a.py"][0]
    assert modified.after == after["ops/a.py"][0]
    assert (added.before, added.after, added.kernel) == (None, after["ops/b.py"][0], added.after)
    [deleted] = diff_kernels(after, {"ops/a.py": [], "ops/b.py": []}, {})[1:]
    assert (deleted.change, deleted.after, deleted.kernel.name) == (ChangeKind.DELETED, None, "n")


def test_formatting_only() -> None:
    before = {"ops/a.py": kernel("k", "return x + 1")}
    after = {"ops/a.py": kernel("k", "return x+1  # why")}
    assert summary(before, after) == [("k", ChangeKind.FORMATTING_ONLY, "ops/a.py", "ops/a.py")]


def test_renamed_file() -> None:
    before = {"ops/old.py": kernel("k1") + kernel("k2")}
    after = {"ops/new.py": kernel("k1") + kernel("k2", "return x - 1")}
    assert summary(before, after, {"ops/old.py": "ops/new.py"}) == [
        ("k1", ChangeKind.RENAMED_FILE, "ops/new.py", "ops/old.py"),
        ("k2", ChangeKind.MODIFIED, "ops/new.py", "ops/old.py"),
    ]


def test_moved_to_another_file() -> None:
    before = {"ops/a.py": kernel("k") + kernel("stay"), "ops/b.py": ""}
    after = {"ops/a.py": kernel("stay"), "ops/b.py": "# moved here\n" + kernel("k")}
    assert summary(before, after) == [("k", ChangeKind.MOVED, "ops/b.py", "ops/a.py")]


def test_same_body_under_a_new_name_is_a_move_not_add_and_delete() -> None:
    before = {"ops/a.py": kernel("k"), "ops/b.py": ""}
    after = {"ops/a.py": "", "ops/b.py": kernel("renamed")}
    assert summary(before, after) == [
        ("renamed", ChangeKind.MOVED, "ops/b.py", "ops/a.py"),
    ]


def test_moved_into_a_class_of_the_same_file() -> None:
    before = {"ops/a.py": kernel("k")}
    after = {"ops/a.py": kernel("k", qual="Ops")}
    [change] = diff_kernels(found(before), found(after), {})
    assert (change.change, change.before.qualname, change.after.qualname) == (
        ChangeKind.MOVED,
        "k",
        "Ops.k",
    )


def test_moved_and_edited() -> None:
    before = {"ops/a.py": kernel("k"), "ops/b.py": ""}
    after = {"ops/a.py": "", "ops/b.py": kernel("k", "return x * 3")}
    assert summary(before, after) == [("k", ChangeKind.MODIFIED, "ops/b.py", "ops/a.py")]


def test_same_name_in_the_same_file_is_not_a_move_with_edits() -> None:
    before = {"ops/a.py": kernel("k")}
    after = {"ops/a.py": kernel("k", "return x * 3", qual="Ops")}
    assert summary(before, after) == [
        ("k", ChangeKind.ADDED, "ops/a.py", None),
        ("k", ChangeKind.DELETED, "ops/a.py", "ops/a.py"),
    ]


def test_redefinitions_pair_in_order() -> None:
    # Two definitions of `k` (e.g. under if/else); only the second one changes.
    before = {"ops/a.py": kernel("k", "return x") + kernel("k", "return -x")}
    after = {"ops/a.py": kernel("k", "return x") + kernel("k", "return -x - 1")}
    changes = diff_kernels(found(before), found(after), {})
    assert [(c.name, c.change) for c in changes] == [("k", ChangeKind.MODIFIED)]
    [change] = changes
    assert change.before is not None and change.after is not None
    assert change.before.source.endswith("return -x")
    assert change.after.source.endswith("return -x - 1")


def test_output_sorted_by_file_name_change() -> None:
    before = {"z.py": kernel("b") + kernel("a"), "a.py": kernel("c")}
    after = {"z.py": "", "a.py": ""}
    assert [(c.file, c.name) for c in diff_kernels(found(before), found(after), {})] == [
        ("a.py", "c"),
        ("z.py", "a"),
        ("z.py", "b"),
    ]


def test_kernel_renamed_while_moving_to_another_file_is_a_move() -> None:
    # A refactor that moves `_copy_kernel` into ops/ and drops its leading underscore.
    before = {"moe/stash.py": kernel("_copy_kernel", "return x * 3") + kernel("keep")}
    after = {
        "moe/stash.py": kernel("keep"),
        "moe/ops/stash.py": kernel("copy_kernel", "return x * 3"),
    }
    assert summary(before, after) == [
        ("copy_kernel", ChangeKind.MOVED, "moe/ops/stash.py", "moe/stash.py"),
    ]


def test_renamed_and_edited_kernel_is_added_and_deleted() -> None:
    before = {"a.py": kernel("_old", "return x * 3")}
    after = {"b.py": kernel("new", "return x * 4")}
    assert [c[:2] for c in summary(before, after)] == [
        ("_old", ChangeKind.DELETED),
        ("new", ChangeKind.ADDED),
    ]


def test_changed_launch_parameters_with_an_untouched_kernel() -> None:
    wrapper = "\n\ndef run(x):\n    kern[(4,)](x, BLOCK=64, num_warps=4)\n"
    before = {"ops/a.py": kernel("kern") + wrapper}
    after = {"ops/a.py": kernel("kern") + wrapper.replace("num_warps=4", "num_warps=8")}
    assert summary(before, after) == [("kern", ChangeKind.LAUNCH_CHANGED, "ops/a.py", "ops/a.py")]
    moved_down = {"ops/a.py": kernel("kern") + "\n\n# a comment that shifts lines\n" + wrapper}
    assert summary(before, moved_down) == []


def scanned(files: dict[str, str]):
    from mining.kernels import scan_file

    found = {path: scan_file((HEAD + src).encode(), path) for path, src in files.items()}
    return {p: f.kernels for p, f in found.items()}, {p: f.layout for p, f in found.items()}


def host(name: str, lines: int, edit: str = "") -> str:
    body = "".join(f"    y{i} = x + {i}{edit}\n" for i in range(lines))
    return f"def {name}(x):\n{body}    return x\n"


def test_a_kernel_changing_places_with_host_code_is_moved_unless_the_host_code_changed() -> None:
    k = kernel("k", "return x * 3")
    before = {"a.py": kernel("first") + host("launch", 10) + k}
    # The wrapper (12 lines) is heavier than the kernel (3): the kernel is what moved.
    after = {"a.py": kernel("first") + k + host("launch", 10)}
    (kb, lb), (ka, la) = scanned(before), scanned(after)
    changes = diff_kernels(kb, ka, {}, lb, la)
    assert [(c.name, c.change, c.file, c.old_file) for c in changes] == [
        ("k", ChangeKind.MOVED, "a.py", "a.py")
    ]
    # An edited wrapper keeps few of its lines in place: it moved, around an untouched kernel.
    edited = {"a.py": kernel("first") + k + host("launch", 10, " + 1")}
    (kb, lb), (ka, la) = scanned(before), scanned(edited)
    assert diff_kernels(kb, ka, {}, lb, la) == []
