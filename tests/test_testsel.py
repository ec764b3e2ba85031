"""Test selection from a static import graph, on tiny real repositories."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from curation.model import TargetKernel
from curation.testsel import TestSelector, is_test_module, module_name, select_tests
from mining.git import GitRepo
from tests.gitrepo import TinyRepo
from tests.test_context import target_kernels, write_package


def changes(repo: GitRepo, merge: str) -> list[tuple[str, str]]:
    return [(c.path, c.status) for c in repo.raw_changes(merge)[merge]]


@pytest.fixture()
def pkg_repo(tmp_path: Path) -> tuple[GitRepo, str, str]:
    tiny = TinyRepo(tmp_path / "repo")
    base, merge = write_package(tiny)
    return GitRepo(tiny.path), base, merge


def test_module_names():
    assert module_name("megatron/core/ssm/ops/x.py") == "megatron.core.ssm.ops.x"
    assert module_name("pkg/__init__.py") == "pkg"
    assert module_name("src/mylib/kern.py") == "mylib.kern"
    assert module_name("python/triton/language/core.py") == "triton.language.core"
    assert module_name("tools/run-me.py") is None
    assert module_name("pkg/t.jinja") is None


def test_test_modules():
    assert is_test_module("tests/test_ops.py")
    assert is_test_module("pkg/ops_test.py")
    assert not is_test_module("tests/conftest.py")
    assert not is_test_module("tests/helpers.py")
    assert not is_test_module("pkg/ops.py")


def test_direct_importers_then_one_hop(pkg_repo):
    repo, base, merge = pkg_repo
    changed = changes(repo, merge)
    assert ("tests/test_old.py", "D") in changed

    sel = select_tests(repo, base, merge, changed, target_kernels()[:1])

    # test_old.py imports the kernel module but the PR deletes it; test_mul.py and
    # test_other.py are the PR's own tests and come first whatever they import
    assert sel.changed_in_pr == ("tests/test_mul.py", "tests/test_other.py")
    # direct importers, ranked by the words their names share with the kernel (`add`); the
    # one-hop tests (tests/sub/test_rel.py through helpers, tests/test_layers.py through
    # pkg.layers) are left out because direct importers exist
    assert sel.selected_existing == (
        "tests/test_add_caller.py",  # from pkg import ops
        "tests/test_ops.py",  # from pkg.ops import add
    )
    assert sel.command == (
        "python -m pytest -q -rA tests/test_mul.py tests/test_other.py "
        "tests/test_add_caller.py tests/test_ops.py"
    )
    assert sel.fail_to_pass == () and sel.pass_to_pass == ()


def test_max_existing_keeps_direct_importers(pkg_repo):
    repo, base, merge = pkg_repo
    sel = select_tests(repo, base, merge, changes(repo, merge), target_kernels(), max_existing=2)
    assert sel.selected_existing == ("tests/test_add_caller.py", "tests/test_ops.py")


def test_kernel_in_new_file_and_no_tests_gives_empty_command(pkg_repo):
    repo, base, merge = pkg_repo
    fresh = target_kernels()[2]
    sel = select_tests(repo, base, merge, [("pkg/fresh.py", "A")], [fresh])
    assert sel.changed_in_pr == () and sel.selected_existing == ()
    assert sel.command == ""


def test_changed_tests_must_exist_after_the_pr(pkg_repo):
    repo, base, merge = pkg_repo
    changed = [
        ("tests/test_old.py", "D"),
        ("tests/conftest.py", "M"),  # not a test module
        ("tests/helpers.py", "M"),  # a helper under tests/, collects nothing
        ("tests/test_ghost.py", "A"),  # claimed, but absent at the merge commit
        ("tests/test_mul.py", "A"),
    ]
    sel = TestSelector(repo).select(base, merge, changed, [])
    assert sel.changed_in_pr == ("tests/test_mul.py",)
    assert sel.command == "python -m pytest -q -rA tests/test_mul.py"


KERN = """import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def scale(x):
    scale_kernel[(1,)](x, x.numel(), BLOCK=128)
"""


def _scale_kernel(file: str) -> TargetKernel:
    return TargetKernel(
        file=file,
        name="scale_kernel",
        change="modified",
        kind="jit",
        role="kernel",
        old_file=file,
        before_src="...",
        after_src="...",
        signature_before=None,
        signature_after=None,
        constexpr_params=("BLOCK",),
        autotune_configs_before=None,
        autotune_configs_after=None,
        wrappers=("scale",),
        span_before=(5, 7),
        span_after=(5, 7),
    )


def test_src_layout_relative_imports_and_reexports(tmp_path):
    tiny = TinyRepo(tmp_path / "src_repo")
    tiny.write("src/mylib/__init__.py", "from mylib.kern import scale\n")
    tiny.write("src/mylib/kern.py", KERN)
    tiny.write("src/mylib/other.py", "def other():\n    pass\n")
    tiny.write("src/mylib/user.py", "from . import kern\n\n\ndef use(x):\n    kern.scale(x)\n")
    tiny.write("tests/test_kern.py", "from mylib.kern import scale\n")
    tiny.write("tests/test_paren.py", "from mylib.kern import (\n    scale,\n)\n")
    tiny.write("tests/test_backslash.py", "from mylib import other, \\\n    kern\n")
    # spells the names, imports neither
    tiny.write("tests/test_words.py", "KERN = 'mylib.kern scale'\n\n\ndef kern():\n    pass\n")
    # the wrapper re-exported by the package above the kernel module
    tiny.write("tests/test_reexport.py", "from mylib import scale\n")
    # importing a sibling through the package is no hop, although __init__ imports kern
    tiny.write("tests/test_sibling.py", "from mylib import other\n")
    tiny.write("tests/test_user.py", "import mylib.user as u\n")
    tiny.write("tests/kernels/__init__.py", "")
    tiny.write("tests/kernels/helpers.py", "from mylib import kern\n")
    tiny.write("tests/kernels/test_rel.py", "from .helpers import kern\n")
    tiny.write(
        "tests/kernels/test_skip.py",
        "import pytest\n\n\ndef test_it():\n    kern = pytest.importorskip('mylib.kern')\n",
    )
    tiny.write("tests/kernels/test_broken.py", "import mylib.kern\ndef (:\n")
    base = tiny.commit("library")
    tiny.write("src/mylib/kern.py", KERN.replace("pass", "tl.program_id(0)"))
    merge = tiny.commit("tune scale_kernel")
    repo = GitRepo(tiny.path)

    sel = select_tests(
        repo, base, merge, changes(repo, merge), [_scale_kernel("src/mylib/kern.py")]
    )

    assert sel.changed_in_pr == ()
    # test_kern.py shares a word with the kernel's module and comes first; the one-hop tests
    # (tests/kernels/test_rel.py, tests/test_user.py) are left out: direct importers exist
    assert sel.selected_existing == (
        "tests/test_kern.py",
        "tests/kernels/test_skip.py",
        "tests/test_backslash.py",
        "tests/test_paren.py",
        "tests/test_reexport.py",
    )
    assert sel.command.startswith("python -m pytest -q -rA tests/test_kern.py ")


def test_autograd_function_and_package_reexport_reach_the_kernel(tmp_path):
    """A test importing the autograd Function through the package that re-exports it (as
    `from liger_kernel.ops import LigerXFunction` does) is a direct test of the kernel."""
    tiny = TinyRepo(tmp_path / "fw")
    tiny.write("src/lib/__init__.py", "")
    tiny.write("src/lib/ops/__init__.py", "from lib.ops.norm import NormFunction\n")
    tiny.write(
        "src/lib/ops/norm.py",
        KERN.replace("def scale_kernel", "def norm_kernel")
        + "\n\ndef norm_fwd(x):\n    norm_kernel[(1,)](x)\n\n\n"
        "class NormFunction(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, x):\n        return norm_fwd(x)\n",
    )
    tiny.write("test/test_norm.py", "from lib.ops import NormFunction\n\ndef test_n(): pass\n")
    tiny.write("test/test_other.py", "from lib.ops import something_else\n\ndef test_o(): pass\n")
    base = tiny.commit("library")
    tiny.write("src/lib/ops/norm.py", (tiny.path / "src/lib/ops/norm.py").read_text() + "\n# v2\n")
    merge = tiny.commit("tune")
    k = _scale_kernel("src/lib/ops/norm.py")
    k = replace(k, name="norm_kernel", wrappers=("norm_fwd",))
    sel = select_tests(GitRepo(tiny.path), base, merge, [], [k])
    assert sel.selected_existing == ("test/test_norm.py",)
