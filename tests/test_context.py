"""Engineering context at the base commit, on a tiny real repository with a Triton package."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.records import from_json
from curation.context import TRUNCATED, ContextBuilder, build_context
from curation.model import ContextItem, FileContext, TargetKernel
from mining.git import GitRepo
from mining.kernels import find_kernels
from mining.model import Kernel
from tests.gitrepo import TinyRepo

OPS_IMPORTS = """from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl
"""

OPS = (
    OPS_IMPORTS
    + '''

@dataclass
class AddConfig:
    block: int = 256
    num_warps: int = 4


class Unused:
    pass


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, cfg: AddConfig | None = None) -> torch.Tensor:
    cfg = cfg or AddConfig()
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, cfg.block),)](x, y, out, n, BLOCK=cfg.block)
    return out


class AddFunction(torch.autograd.Function):
    """Autograd wrapper of add_kernel."""

    @staticmethod
    def forward(ctx, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def unrelated_helper(
    x,
    y,
):
    return x
'''
)

# The PR: the kernel scales its output, and a new kernel with a new wrapper joins the file.
OPS_PR = (
    OPS.replace(
        "x + tl.load(y_ptr + offs, mask=mask)", "(x + tl.load(y_ptr + offs, mask=mask)) * 2"
    )
    + """

@triton.jit
def mul_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3, mask=offs < n)


def mul(x):
    out = torch.empty_like(x)
    mul_kernel[(1,)](x, out, x.numel(), BLOCK=1024)
    return out
"""
)

LAYERS = """import torch

from pkg import ops
from pkg.ops import AddFunction


def double(x):
    return ops.add(x, x)


class Residual(torch.nn.Module):
    def forward(self, x):
        return AddFunction.apply(x, x)

    def plain(self, x):
        return x
"""

# Spells `add` without calling the wrapper, or calls some other `add`.
NAMING = """import torch


def add_all(xs):
    return sum(xs)


def uses_torch(x):
    return torch.add(x, x)
"""

FRESH = """import triton
import triton.language as tl


@triton.jit
def fresh_kernel(x_ptr):
    pass


def fresh(x):
    fresh_kernel[(1,)](x)
"""

TEST_OPS = """from pkg.ops import add


def test_add():
    assert add is not None
"""

TEST_ADD_CALLER = """from pkg import ops


def test_calls_add():
    ops.add(1, 2)
"""

TEST_LAYERS = """from pkg.layers import double


def test_double():
    assert double
"""

TEST_OTHER = """import pkg.other


def test_other():
    assert pkg.other
"""

HELPERS = """from pkg.ops import add


def run_add(x):
    return add(x, x)
"""

TEST_REL = """from ..helpers import run_add


def test_rel():
    assert run_add
"""

TEST_OLD = """import pkg.ops


def test_old():
    assert pkg.ops
"""

TEST_MUL = """from pkg.ops import mul


def test_mul():
    assert mul
"""


def write_package(repo: TinyRepo) -> tuple[str, str]:
    """Commit the package (base) and the PR on top of it; return (base, merge) shas."""
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", OPS)
    repo.write("pkg/layers.py", LAYERS)
    repo.write("pkg/naming.py", NAMING)
    repo.write("pkg/other.py", "def other(x):\n    return x * 2\n")
    repo.write("pkg/broken.py", "def add(:\n    return ops.add(1, 2)\n")
    repo.write("pkg/latin1.py", b"# caf\xe9\ndef f(x):\n    return add(x, x)\n")
    repo.write("tests/__init__.py", "")
    repo.write("tests/conftest.py", "import pkg.ops\n")
    repo.write("tests/helpers.py", HELPERS)
    repo.write("tests/sub/__init__.py", "")
    repo.write("tests/sub/test_rel.py", TEST_REL)
    repo.write("tests/test_ops.py", TEST_OPS)
    repo.write("tests/test_add_caller.py", TEST_ADD_CALLER)
    repo.write("tests/test_layers.py", TEST_LAYERS)
    repo.write("tests/test_other.py", TEST_OTHER)
    repo.write("tests/test_old.py", TEST_OLD)
    base = repo.commit("add package")
    repo.write("pkg/ops.py", OPS_PR)
    repo.write("pkg/fresh.py", FRESH)
    repo.write("tests/test_mul.py", TEST_MUL)
    repo.write("tests/test_other.py", TEST_OTHER + "\n\ndef test_more():\n    pass\n")
    repo.rm("tests/test_old.py")
    merge = repo.commit("scale add_kernel, add mul_kernel (#7)")
    return base, merge


def _by_name(source: str, path: str) -> dict[str, Kernel]:
    return {k.name: k for k in find_kernels(source.encode(), path)}


def target_kernels() -> list[TargetKernel]:
    """The PR's kernels as curation sees them: add_kernel modified, mul and fresh added."""
    before = _by_name(OPS, "pkg/ops.py")
    after = _by_name(OPS_PR, "pkg/ops.py") | _by_name(FRESH, "pkg/fresh.py")
    out = []
    for name in ("add_kernel", "mul_kernel", "fresh_kernel"):
        old, new = before.get(name), after[name]
        out.append(
            TargetKernel(
                file=new.file,
                name=name,
                change="modified" if old else "added",
                kind=str(new.kind),
                role=str(new.role),
                old_file=old.file if old else None,
                before_src=old.source if old else None,
                after_src=new.source,
                signature_before=old.signature if old else None,
                signature_after=new.signature,
                constexpr_params=new.constexpr_params,
                autotune_configs_before=None,
                autotune_configs_after=None,
                wrappers=new.wrappers,
                span_before=(old.span.start_line, old.span.end_line) if old else None,
                span_after=(new.span.start_line, new.span.end_line),
            )
        )
    return out


@pytest.fixture()
def pkg_repo(tmp_path: Path) -> tuple[GitRepo, str, str]:
    tiny = TinyRepo(tmp_path / "repo")
    base, merge = write_package(tiny)
    return GitRepo(tiny.path), base, merge


def _items(ctx: FileContext) -> list[tuple[str, str, str]]:
    return [(i.name, i.kind, i.why) for i in (*ctx.functions, *ctx.classes)]


def _line(source: str, text: str) -> int:
    return source.splitlines().index(text) + 1


def test_wrappers_callers_classes_and_imports(pkg_repo):
    repo, base, _ = pkg_repo
    modified = target_kernels()[0]
    assert modified.wrappers == ("AddFunction.forward", "add")

    ctx = build_context(repo, base, [modified])

    assert list(ctx) == [
        "pkg/layers.py",
        "pkg/naming.py",
        "pkg/ops.py",
        "tests/helpers.py",
        "tests/test_add_caller.py",
    ]
    ops = ctx["pkg/ops.py"]
    assert ops.imports == (
        "from __future__ import annotations",
        "from dataclasses import dataclass",
        "import torch",
        "import triton",
        "import triton.language as tl",
    )
    assert _items(ops) == [
        ("add", "function", "launches add_kernel"),
        ("AddFunction.forward", "method", "launches add_kernel"),
        ("AddConfig", "class", "type in wrapper signature"),
        ("AddFunction", "class", "class of wrapper"),
    ]
    add = ops.functions[0]
    assert add.signature == (
        "def add(x: torch.Tensor, y: torch.Tensor, cfg: AddConfig | None = None) -> torch.Tensor:"
    )
    assert add.start_line == _line(OPS, add.signature)
    assert add.source.startswith("def add(") and add.source.endswith("return out")
    assert add.end_line == add.start_line + len(add.source.splitlines()) - 1
    forward = ops.functions[1]
    # a method keeps its decorator and indentation; its lines start at the decorator
    assert forward.source.startswith("    @staticmethod\n    def forward(ctx, x, y):")
    assert forward.start_line == _line(OPS, "    def forward(ctx, x, y):") - 1
    config = ops.classes[0]
    assert config.signature == "class AddConfig:"
    assert config.source.startswith("@dataclass\nclass AddConfig:")
    assert ops.classes[1].signature == "class AddFunction(torch.autograd.Function):"
    assert "def backward(ctx, grad):" in ops.classes[1].source

    # `ops.add(...)` through an attribute; `AddFunction.apply(...)` runs the forward wrapper
    assert _items(ctx["pkg/layers.py"]) == [
        ("double", "function", "calls add"),
        ("Residual.forward", "method", "calls AddFunction.forward"),
    ]
    assert ctx["pkg/layers.py"].imports == ()
    assert _items(ctx["tests/helpers.py"]) == [("run_add", "function", "calls add")]
    assert _items(ctx["tests/test_add_caller.py"]) == [("test_calls_add", "function", "calls add")]
    # any call whose callee ends in `add` counts, `torch.add` too; `add_all` only spells it
    assert _items(ctx["pkg/naming.py"]) == [("uses_torch", "function", "calls add")]
    # unparsable (broken.py) and non-UTF-8 (latin1.py) callers are skipped
    assert "pkg/broken.py" not in ctx and "pkg/latin1.py" not in ctx


def test_callers_prefer_related_non_test_files(pkg_repo):
    repo, base, _ = pkg_repo
    modified = target_kernels()[0]
    ctx = build_context(repo, base, [modified], max_callers=1)
    assert _items(ctx["pkg/layers.py"]) == [
        ("double", "function", "calls add"),
        ("Residual.forward", "method", "calls AddFunction.forward"),
    ]
    assert "tests/test_add_caller.py" not in ctx and "tests/helpers.py" not in ctx

    # files naming the wrapper's module (`ops`) first, tests among them after the rest;
    # `torch.add` in a file that never names `ops` comes last and is cut here
    ctx = build_context(repo, base, [modified], max_callers=3)
    assert "tests/helpers.py" in ctx and "tests/test_add_caller.py" in ctx
    assert "pkg/naming.py" not in ctx


def test_added_kernel_gets_the_file_api_without_wrapper_at_base(pkg_repo):
    repo, base, _ = pkg_repo
    added = target_kernels()[1]
    assert added.before_src is None and added.wrappers == ("mul",)

    ctx = build_context(repo, base, [added])

    assert list(ctx) == ["pkg/ops.py"]
    ops = ctx["pkg/ops.py"]
    assert ops.classes == ()
    assert _items(ops) == [
        ("add_kernel", "function", "function of the file the kernel goes into"),
        ("add", "function", "function of the file the kernel goes into"),
        ("unrelated_helper", "function", "function of the file the kernel goes into"),
    ]
    helper = ops.functions[2]
    # only the def lines: the source is the header as written, the signature collapsed
    assert helper.source == "def unrelated_helper(\n    x,\n    y,\n):"
    assert helper.signature == "def unrelated_helper( x, y, ):"
    assert helper.end_line == helper.start_line + 3
    assert ops.functions[0].source == (
        "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):"
    )
    assert ops.functions[0].start_line == _line(OPS, ops.functions[0].source)


def test_kernel_in_a_new_file_has_no_context(pkg_repo):
    repo, base, _ = pkg_repo
    fresh = target_kernels()[2]
    assert fresh.file == "pkg/fresh.py" and fresh.wrappers == ("fresh",)
    assert build_context(repo, base, [fresh]) == {}


def test_several_kernels_share_items_first_reason_kept(pkg_repo):
    repo, base, _ = pkg_repo
    ctx = build_context(repo, base, target_kernels())
    # `add` launches add_kernel and is also a top-level function of mul_kernel's file
    whys = {i.name: i.why for i in ctx["pkg/ops.py"].functions}
    assert whys["add"] == "launches add_kernel"
    assert whys["unrelated_helper"] == "function of the file the kernel goes into"
    assert [i.start_line for i in ctx["pkg/ops.py"].functions] == sorted(
        i.start_line for i in ctx["pkg/ops.py"].functions
    )


def test_long_sources_are_truncated(pkg_repo):
    repo, base, _ = pkg_repo
    ctx = build_context(repo, base, [target_kernels()[0]], max_source_chars=60)
    cls = next(c for c in ctx["pkg/ops.py"].classes if c.name == "AddFunction")
    assert cls.source.endswith(TRUNCATED)
    assert len(cls.source) <= 60
    body = cls.source.removesuffix(TRUNCATED)
    assert body == "class AddFunction(torch.autograd.Function):"  # whole lines only
    assert OPS.count(body) == 1  # cut at a line end of the real source
    # short items are left whole
    assert not ctx["pkg/layers.py"].functions[0].source.endswith(TRUNCATED)


def test_builder_reuses_commits_and_round_trips(pkg_repo):
    repo, base, merge = pkg_repo
    builder = ContextBuilder(repo)
    kernels = target_kernels()[:1]
    first = builder.build(base, kernels)
    assert builder.build(base, kernels) == first
    # At the merge commit the wrapper's file already has mul: a different commit, same builder.
    at_merge = builder.build(merge, kernels)
    assert _items(at_merge["pkg/ops.py"]) == _items(first["pkg/ops.py"])
    restored = {p: from_json(FileContext, _as_dict(c)) for p, c in first.items()}
    assert restored == first


def _as_dict(ctx: FileContext) -> dict[str, object]:
    def item(i: ContextItem) -> dict[str, object]:
        return dict(vars(i))

    return {
        "functions": [item(i) for i in ctx.functions],
        "classes": [item(i) for i in ctx.classes],
        "imports": list(ctx.imports),
    }
