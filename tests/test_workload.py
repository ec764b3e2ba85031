"""Workloads (issue 10): sources, the scaling rule, valid inputs, the output comparison, the
optimization gate, the scores, and the harness end to end on the CPU (TRITON_INTERPRET=1)."""

from __future__ import annotations

import ast
import json
import math
import os
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from core.files import write_record
from curation.model import Hardware, TaskType, TypeDecision, VerificationStatus
from curation.taskdir import TaskFile, task_dirs
from eval.gate import decide, workload_verdict
from eval.launch_capture import kernel_name, same_kernel
from eval.model import Environment, FailureClass, RunResult, TestOutcome, Variant
from eval.perf_scores import PEAKS, efficiency, perf_score
from eval.targets import watched_kernels
from eval.workload_model import (
    ArgSpec,
    CallResult,
    Entry,
    EntryKind,
    Metric,
    Mode,
    SizeLabel,
    Source,
    Timing,
    Workload,
    WorkloadCall,
)
from eval.workload_plan import (
    SERVICE_STEPS,
    Captured,
    choose_metric,
    from_models,
    model_configs,
    model_widths,
    plan_workload,
    scaled_calls,
    workload_mode,
)
from eval.workload_run import GitTreeView, summarize_result
from eval.workspace import SourceStore
from mining.git import GitRepo
from tests.gitrepo import TinyRepo
from tests.tinyfw import DEVICE_FUNCTIONS

torch = pytest.importorskip("torch")
os.environ.setdefault("TRITON_INTERPRET", "1")

ROWSCALE = """import torch
import triton
import triton.language as tl


@triton.jit
def rowscale_kernel(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    tl.store(out_ptr + row * n_cols + offs, x * w, mask=mask)


def rowscale(x, w):
    out = torch.empty_like(x)
    rows, cols = x.shape
    rowscale_kernel[(rows,)](x, w, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
"""

LIGER_STYLE = """import torch
import triton
from utils import run_benchmarks

from pkg.ops.rowscale import rowscale


def bench_speed_rowscale(input):
    N = input.x
    M = input.extra_benchmark_config["M"]
    dtype = input.extra_benchmark_config["dtype"]
    x = torch.randn((M, N), dtype=dtype, device="cuda")
    w = torch.randn(N, dtype=dtype, device="cuda")

    def fwd():
        return rowscale(x, w)

    return triton.testing.do_bench(fwd)


if __name__ == "__main__":
    common_configs = {
        "kernel_name": "rowscale",
        "x_name": "N",
        "x_values": [2**i for i in range(10, 15)],
        "extra_benchmark_configs": [{"M": 4096, "dtype": torch.bfloat16}],
    }
    run_benchmarks(bench_test_fn=bench_speed_rowscale, **common_configs)
"""

FLA_STYLE = """import torch
import torch.nn.functional as F
import triton

from pkg.ops.rowscale import rowscale


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=['T'],
        x_vals=[128 * 2 ** i for i in range(0, 8)],
        line_arg='provider',
        line_vals=['fused'],
        args={},
    )
)
def benchmark(T, provider):
    dtype = torch.bfloat16
    B, H, D = 16, 8, 128
    g = F.logsigmoid(torch.randn(B * T, H * D, device='cuda', dtype=dtype)).clamp_min(-5)
    w = torch.randn(H * D, device='cuda', dtype=dtype)
    return triton.testing.do_bench(lambda: rowscale(g, w))
"""

CONFIGS = """class TinyConfig:
    def __init__(self, hidden_size=2048, num_heads=16, vocab_size=32000):
        self.hidden_size = hidden_size


BIG = dict(hidden_size=8192, num_heads=64)
MID = {"hidden_size": 4096, "num_heads": 32}
"""


def _task_repo(tmp_path: Path, bench: dict[str, str], title: str = "Speed up rowscale (#3)"):
    """A tiny framework whose PR speeds up the rowscale kernel, crawled and curated."""
    from curation.curate import main as curate
    from mining.crawl import main as crawl

    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/rowscale.py", ROWSCALE)
    repo.write("tests/test_rowscale.py", "from pkg.ops.rowscale import rowscale\n")
    for rel, text in bench.items():
        repo.write(rel, text)
    repo.commit("Initial commit")
    repo.write("pkg/ops/rowscale.py", ROWSCALE.replace("x * w", "w * x"))
    repo.commit(title)
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    tdir = task_dirs(tasks)[0]
    return repo, tasks, tdir


def _view(repo: TinyRepo, commit: str) -> GitTreeView:
    return GitTreeView(SourceStore(GitRepo(repo.path)), commit)


def _plan(tmp_path: Path, files: dict[str, str]):
    """The workload planned for the rowscale task of a tiny framework holding `files`."""
    repo, _, tdir = _task_repo(tmp_path, files)
    task = tdir.load_task()
    return plan_workload(task, _view(repo, task.base_commit), None)


def _forwarding(name: str, module: str, callee: str) -> str:
    """A module whose public `name(x, w)` calls `callee` of `module`: one import further up."""
    return f"from {module} import {callee}\n\n\ndef {name}(x, w):\n    return {callee}(x, w)\n"


# --- source 1: benchmark scripts ---------------------------------------------------------------


def test_workload_from_a_liger_style_benchmark_script(tmp_path: Path) -> None:
    repo, _, tdir = _task_repo(tmp_path, {"benchmark/scripts/benchmark_rowscale.py": LIGER_STYLE})
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert [c.source for c in plan.calls] == [Source.BENCHMARK_SCRIPT] * 3
    assert [c.label for c in plan.calls] == [SizeLabel.SMALL, SizeLabel.TYPICAL, SizeLabel.LARGE]
    # the sweep is N in 2**10..2**14 at M = 4096, bf16: none is estimated at 100 us, so the
    # largest three are kept (the gate decides on the measured times)
    shapes = [c.args[0].shape for c in plan.calls]
    assert shapes == [(4096, 4096), (4096, 8192), (4096, 16384)]
    first = plan.calls[0]
    assert first.entry == Entry("pkg.ops.rowscale", "rowscale", EntryKind.FUNCTION)
    assert first.args[0].dtype == "bfloat16" and first.args[1].shape == (4096,)
    assert first.evidence.startswith("benchmark/scripts/benchmark_rowscale.py:")
    assert first.dims["N"] == 4096 and first.dims["M"] == 4096
    assert [round(c.estimate_us) for c in plan.calls] == [16, 31, 62]
    assert plan.metric is Metric.KERNEL_TIME


def test_a_forward_benchmark_is_no_workload_of_a_backward_only_pr(tmp_path: Path) -> None:
    """A benchmark that times only the forward cannot reach a PR of backward kernels alone:
    its call site is passed over and the notes say why, and only why."""
    from eval.workload_plan import from_benchmarks

    repo, _, tdir = _task_repo(tmp_path, {"benchmark/scripts/benchmark_rowscale.py": LIGER_STYLE})
    task = tdir.load_task()
    view = _view(repo, task.base_commit)
    calls, note = from_benchmarks(task, view, Mode.BACKWARD)
    assert calls == [] and "runs no backward (the PR changes only backward kernels)" in note
    assert "could not be evaluated" not in note
    assert from_benchmarks(task, view, Mode.FORWARD)[0]  # the same script, for a forward PR


def test_workload_from_a_triton_perf_report_benchmark(tmp_path: Path) -> None:
    repo, _, tdir = _task_repo(tmp_path, {"benchmarks/ops/benchmark_rowscale.py": FLA_STYLE})
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls, plan.tried
    g, w = plan.calls[-1].args
    assert g.shape == (16 * 128 * 2**7, 8 * 128) and g.rule == "logsigmoid"
    assert w.shape == (1024,) and w.rule == "normal" and g.dtype == "bfloat16"


# flash-linear-attention's benchmark_abc.py: inputs built per provider; a call is read with the
# provider of the branch that reaches it (its q was planned (B, T, H, D) from the `flash` branch
# beside a (B, H, T, D) g: H and T swapped, and the base failed "invalid argument" at T=8192)
PROVIDERS = (
    FLA_STYLE.split("def benchmark")[0].replace(
        "line_vals=['fused']", "line_vals=['other', 'fused', 'fused_bwd', 'flash']"
    )
    + """def benchmark(T, provider):
    B, H, D = 16, 4, 128
    if provider.endswith('_slow'):
        kind = 'slow'
    else:
        kind = provider
    q = torch.randn(B, H, T, D, device='cuda', dtype=torch.bfloat16)
    if provider.startswith('flash'):
        q = torch.randn(B, T, H, D, device='cuda', dtype=torch.bfloat16)
    if provider.startswith('fused'):
        g = F.logsigmoid(torch.randn(B, H, T, D, device='cuda', dtype=torch.bfloat16))
    if kind == 'other':
        g = torch.randn(B, H, T, device='cuda', dtype=torch.bfloat16)
        results = triton.testing.do_bench(lambda: q + g)
    elif kind == 'fused':
        results = triton.testing.do_bench(lambda: rowscale(q, g))
    elif provider == 'flash':
        results = triton.testing.do_bench(lambda: q * 2)
    return results
"""
)


def test_a_perf_report_call_reads_the_inputs_of_its_own_provider(tmp_path: Path) -> None:
    repo, _, tdir = _task_repo(tmp_path, {"benchmarks/ops/benchmark_rowscale.py": PROVIDERS})
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls, plan.tried
    for call in plan.calls:
        q, g = call.args
        T = call.dims["T"]
        assert q.shape == g.shape == (16, 4, T, 128), (q.shape, g.shape)
        assert g.rule == "logsigmoid"


# a rowscale whose docstring gives its layout (flash-linear-attention's form, with the flag
# that chose between two while both were accepted)
DOCUMENTED = ROWSCALE.replace(
    "def rowscale(x, w):\n",
    '''def rowscale(x, w, head_first=False):
    """Scales each row.

    Args:
        x (torch.Tensor):
            inputs of shape `[B, H, T, D]` if `head_first=True` else `[B, T, H, D]`.
        w (torch.Tensor):
            weights of shape `[D]`.

    Returns:
        o (torch.Tensor):
            outputs of shape `[B, H, T, D]` if `head_first=True` else `[B, T, H, D]`.
    """
''',
)
LAYOUT_BENCH = (
    FLA_STYLE.split("def benchmark")[0]
    + """def benchmark(T, provider):
    B, H, D = 16, 8, 128
    x = torch.randn(SHAPE, device='cuda', dtype=torch.bfloat16)
    w = torch.randn(D, device='cuda', dtype=torch.bfloat16)
    return triton.testing.do_bench(lambda: rowscale(x, wCALL))
"""
)


def _layout_bench(shape: str, call: str = "") -> str:
    return LAYOUT_BENCH.replace("SHAPE", shape).replace("CALL", call)


def test_a_benchmark_written_for_another_layout_is_passed_over(tmp_path: Path) -> None:
    """flash-linear-attention's benchmark_fla.py kept 2024's head-first tensors for an op
    documented [B, T, H, K] (call 69: "invalid argument" at T=8192, a tie at T=2048); the next
    script, in the documented layout, gives the workload."""
    repo, _, tdir = _task_repo(tmp_path, {
        "pkg/ops/rowscale.py": DOCUMENTED,
        "benchmarks/ops/benchmark_a_stale.py": _layout_bench("B, H, T, D"),
        "benchmarks/ops/benchmark_b.py": _layout_bench("B, T, H, D"),
    })  # fmt: skip
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls, plan.tried
    assert {c.evidence.split(":")[0] for c in plan.calls} == {"benchmarks/ops/benchmark_b.py"}
    assert all(c.args[0].shape == (16, c.dims["T"], 8, 128) for c in plan.calls)
    # the plan says which script was passed over, and why
    assert "passed over: benchmarks/ops/benchmark_a_stale.py:" in plan.tried[0]
    assert "where rowscale's docstring puts T in [B, T, H, D]" in plan.tried[0]


def test_the_documented_layout_follows_the_flag_the_call_passes(tmp_path: Path) -> None:
    repo, _, tdir = _task_repo(tmp_path, {
        "pkg/ops/rowscale.py": DOCUMENTED,
        "benchmarks/ops/benchmark_a.py": _layout_bench("B, H, T, D", ", head_first=True"),
    })  # fmt: skip
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls, plan.tried
    assert all(c.args[0].shape == (16, 8, c.dims["T"], 128) for c in plan.calls)
    # a sweep value that also names another dimension (T = H = 8 at the first point) tells
    # nothing and is not held against the call
    from eval.workload_layout import documented_layouts, layout_mismatch

    fn = next(n for n in ast.parse(DOCUMENTED).body if getattr(n, "name", "") == "rowscale")
    assert documented_layouts(fn, {}) == {"x": ["B", "T", "H", "D"], "w": ["D"]}
    x = plan.calls[0].args[0]
    assert layout_mismatch(fn, [replace(x, shape=(16, 8, 8, 128))], {"T": 8}) == ""
    why = layout_mismatch(fn, [replace(x, shape=(16, 8, 1024, 128))], {"T": 1024})
    assert why == (
        "its x (16, 8, 1024, 128) has T=1024 at dimension 2, where rowscale's docstring puts "
        "T in [B, T, H, D]"
    )


def test_a_string_test_of_a_script_evaluates() -> None:
    import ast

    from eval.workload_scripts import Unknown, _literal

    expr = ast.parse("p.startswith('flash') or p.endswith(('_bwd', '_fwd'))", mode="eval").body
    assert _literal(expr, {"p": "gla_bwd"}) is True
    assert _literal(expr, {"p": "gla"}) is False
    with pytest.raises(Unknown):
        _literal(expr, {})


def test_a_benchmark_of_another_kernel_gives_no_workload(tmp_path: Path) -> None:
    other = LIGER_STYLE.replace("pkg.ops.rowscale import rowscale", "pkg.ops.other import other")
    repo, _, tdir = _task_repo(tmp_path, {"benchmark/scripts/benchmark_other.py": other})
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls == () and "no captured launch" in plan.why


def test_a_benchmark_of_the_public_op_one_import_away_gives_the_workload(tmp_path: Path) -> None:
    # flash-linear-attention's benchmarks call `chunk_gated_delta_rule` (chunk.py), which
    # imports the targets of wy_fast.py; a package __init__ that re-exports is no such hop
    bench = FLA_STYLE.replace(
        "from pkg.ops.rowscale import rowscale", "from pkg.ops.api import scaled_rows"
    )
    bench = bench.replace("rowscale(g, w)", "scaled_rows(g, w)")
    other = FLA_STYLE.replace("from pkg.ops.rowscale import rowscale", "from pkg.ops import other")
    other = other.replace("rowscale(g, w)", "other(g, w)")
    plan = _plan(tmp_path, {
        "pkg/ops/api.py": _forwarding("scaled_rows", "pkg.ops.rowscale", "rowscale"),
        "pkg/ops/__init__.py": "from pkg.ops.rowscale import rowscale\n"
        "from pkg.ops.other import other\n",
        "pkg/ops/other.py": "def other(x, w):\n    return x\n",
        "benchmarks/ops/benchmark_a_other.py": other,
        "benchmarks/ops/benchmark_scaled_rows.py": bench,
    })  # fmt: skip
    assert plan.calls, plan.tried
    first = plan.calls[0]
    assert first.entry == Entry("pkg.ops.api", "scaled_rows", EntryKind.FUNCTION)
    assert first.evidence.startswith("benchmarks/ops/benchmark_scaled_rows.py:")
    assert "one import away" in plan.tried[0]


def test_a_benchmark_of_an_op_two_imports_away_gives_the_workload(tmp_path: Path) -> None:
    # flash-linear-attention's `chunk_retention` (retention/chunk.py) calls `chunk_simple_gla`
    # (simple_gla/chunk.py), which calls the kernels of common/chunk_o.py: ten of its
    # optimization tasks had no workload while only one hop was followed (2026-12-04)
    bench = FLA_STYLE.replace(
        "from pkg.ops.rowscale import rowscale", "from pkg.ops.outer import outer_rows"
    )
    bench = bench.replace("rowscale(g, w)", "outer_rows(g, w)")
    plan = _plan(tmp_path, {
        "pkg/ops/api.py": _forwarding("scaled_rows", "pkg.ops.rowscale", "rowscale"),
        "pkg/ops/outer.py": _forwarding("outer_rows", "pkg.ops.api", "scaled_rows"),
        "benchmarks/ops/benchmark_outer_rows.py": bench,
    })  # fmt: skip
    assert plan.calls, plan.tried
    assert plan.calls[0].entry == Entry("pkg.ops.outer", "outer_rows", EntryKind.FUNCTION)
    assert "two imports away" in plan.tried[0]


def test_a_pr_of_several_kernels_is_timed_where_its_named_kernel_runs(tmp_path: Path) -> None:
    # flash-linear-attention #8d8bfcd4d0 changes KDA kernels and `chunk_gla_fwd_kernel_o`; its
    # plan timed the first benchmark calling any target (`chunk_gla`), which launches none of
    # the KDA kernels: 1.00x on an H100 (call 76) said nothing of the PR's main change
    from curation.curate import main as curate
    from mining.crawl import main as crawl

    colscale = ROWSCALE.replace("rowscale", "colscale")
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops/__init__.py", "")
    repo.write("pkg/ops/rowscale.py", ROWSCALE)
    repo.write("pkg/ops/colscale.py", colscale)
    repo.write("tests/test_rowscale.py", "from pkg.ops.rowscale import rowscale\n")
    # sorted first: the old search took this script (it calls a target, the side kernel)
    repo.write("benchmarks/ops/benchmark_a_colscale.py",
               FLA_STYLE.replace("rowscale", "colscale"))  # fmt: skip
    repo.write("benchmarks/ops/benchmark_rowscale.py", FLA_STYLE)
    repo.commit("Initial commit")
    # rowscale's kernel changes most: the task is named after it
    repo.write("pkg/ops/rowscale.py", ROWSCALE.replace("x * w", "w * x").replace(
        "row = tl.program_id(0)", "row = tl.program_id(0).to(tl.int64)"))  # fmt: skip
    repo.write("pkg/ops/colscale.py", colscale.replace("x * w", "w * x"))
    repo.commit("Speed up rowscale and colscale (#3)")
    work, tasks = tmp_path / "work", tmp_path / "tasks"
    assert crawl([str(repo.path), "--out", str(work), "--quiet", "--no-github"]) == 0
    assert curate(["--work", str(work), "--out", str(tasks), "--quiet"]) == 0
    task = task_dirs(tasks)[0].load_task()
    assert task.task_id.endswith("__rowscale_kernel")
    assert {k.name for k in task.kernels} == {"rowscale_kernel", "colscale_kernel"}
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.calls, plan.tried
    assert plan.calls[0].entry == Entry("pkg.ops.rowscale", "rowscale", EntryKind.FUNCTION)
    assert plan.calls[0].evidence.startswith("benchmarks/ops/benchmark_rowscale.py:")
    # with only the side kernel's benchmark, that one is timed, and the plan says so
    repo.rm("benchmarks/ops/benchmark_rowscale.py")
    plan = plan_workload(task, _view(repo, repo.commit("Drop the rowscale benchmark")), None)
    assert plan.calls and plan.calls[0].entry.name == "colscale"
    assert "none reaches rowscale_kernel, the kernel the task is named after" in plan.tried[0]


@pytest.mark.parametrize("layer_imports", ["pkg.ops", None])
def test_a_module_of_the_target_s_name_counts_only_when_it_imports_the_target(
    tmp_path: Path, layer_imports: str | None
) -> None:
    # Liger-Kernel's `transformers/layer_norm.py` wraps `ops/layer_norm.py` through the
    # package's re-export (`from liger_kernel.ops import LigerLayerNormFunction`): one import
    # away. flash-linear-attention's `simple_gla/parallel.py` merely shares `nsa/parallel.py`'s
    # file name: a benchmark of it is not the task's (it was, when a file name sufficed)
    layer = (_forwarding("layer_rows", layer_imports, "rowscale") if layer_imports
             else "def layer_rows(x, w):\n    return x * w\n")  # fmt: skip
    bench = FLA_STYLE.replace(
        "from pkg.ops.rowscale import rowscale", "from pkg.layers.rowscale import layer_rows"
    ).replace("rowscale(g, w)", "layer_rows(g, w)")
    plan = _plan(tmp_path, {
        "pkg/ops/__init__.py": "from pkg.ops.rowscale import rowscale\n",
        "pkg/layers/rowscale.py": layer,
        "benchmarks/ops/benchmark_layer_rows.py": bench,
    })  # fmt: skip
    if layer_imports:
        assert plan.calls[0].entry == Entry("pkg.layers.rowscale", "layer_rows", EntryKind.FUNCTION)
        assert "one import away" in plan.tried[0]
    else:
        assert plan.calls == ()


REGISTRY = """from dataclasses import dataclass, field
from typing import Callable

import torch.nn.functional as F


def rows_cols(T, D, **kw):
    return (T, D)


def cols(T, D, **kw):
    if D < 0:
        raise ValueError(D)
    return (D,)


squash = F.logsigmoid


def unit_gate(t):
    return t.sigmoid().clamp(min=1e-3)


@dataclass
class Spec:
    shape_fn: Callable
    requires_grad: bool = True
    dtype: str = 'default'
    transform: Callable | None = None


@dataclass
class Op:
    name: str
    import_path: str
    inputs: dict
    func_name: str | None = None
    extra_kwargs: dict = field(default_factory=dict)
    post_init: Callable | None = None
    dim_constraints: dict | None = None
    default_shapes: dict | None = None


SHAPE_CONFIGS = {
    'small': {'T': 1024, 'D': 256},
    'odd': {'T': 4096, 'D': 96},
    'mid': {'T': 8192, 'D': 1024},
    'big': {'T': 32768, 'D': 2048},
}
_rows = SHAPE_CONFIGS
_pair = {'x': Spec(rows_cols, transform=squash), 'w': Spec(cols, False, transform=unit_gate)}
OPS = {}


def register_op(op):
    OPS[op.name] = op


register_op(Op(name='other', import_path='pkg.ops.other', inputs={**_pair}))
register_op(Op(name='scaled', import_path='pkg.ops.rowscale', func_name='rowscale',
               inputs={**_pair}, post_init=lambda inputs, **kw: None))
register_op(Op('rowscale', 'pkg.ops.rowscale', {**_pair, 'n': Spec(cols, dtype='long')},
               dim_constraints={'D': [256, 1024, 2048]}, extra_kwargs={'eps': 1e-6},
               default_shapes=_rows))
"""


def test_a_workload_from_the_ops_registry_that_replaced_the_scripts(tmp_path: Path) -> None:
    # flash-linear-attention declares its benchmarks in benchmarks/ops/registry.py since
    # 2026-03-24: 16 of its optimization tasks had no workload while only scripts were read
    plan = _plan(tmp_path, {"benchmarks/ops/registry.py": REGISTRY})
    assert plan.calls, plan.tried
    assert [c.dims for c in plan.calls] == [{"T": 1024, "D": 256}, {"T": 8192, "D": 1024},
                                            {"T": 32768, "D": 2048}]  # fmt: skip
    first = plan.calls[0]
    assert first.entry == Entry("pkg.ops.rowscale", "rowscale", EntryKind.FUNCTION)
    assert first.evidence.startswith("benchmarks/ops/registry.py:")
    x, w, n, eps = first.args
    assert (x.shape, x.dtype, x.rule, x.keyword) == ((1024, 256), "bfloat16", "logsigmoid", True)
    assert (w.shape, w.rule, w.grad) == ((256,), "sigmoid", False)
    assert (n.dtype, n.rule) == ("int64", "index")
    assert (eps.tensor, eps.value) == (False, 1e-6)
    # the op whose inputs are changed after they are built is passed over, and says so
    assert "post_init" in plan.tried[0]


# --- source 1b: the tests' own calls, scaled (2026-12-05) --------------------------------------

# flash-linear-attention style: module-level case lists (a reduced set under an `if`), stacked
# parametrize decorators and `pytest.param` cases, a layout chosen by a parameter, keys
# normalized, a reference implementation imported from the target module beside the wrapper
TEST_STYLE = """import os

import pytest
import torch
import torch.nn.functional as F

from pkg.ops.rowscale import rowscale, rowscale_ref

if os.getenv("SMALL_TESTS") == "1":
    test_t_list = [16]
else:
    test_t_list = [63, 300]


@pytest.mark.parametrize("B", [2])
@pytest.mark.parametrize("T", test_t_list)
@pytest.mark.parametrize(("D", "dtype"), [pytest.param(*case, id="D{}".format(case[0]))
                                          for case in [(32, torch.float32), (128, torch.bfloat16)]])
@pytest.mark.parametrize("transposed", [False, True])
def test_rowscale(B, T, D, dtype, transposed):
    if transposed:
        x = torch.randn(D, B * T, dtype=dtype)
    else:
        x = torch.randn(B * T, D, dtype=dtype)
    w = F.normalize(torch.randn(D, dtype=torch.float32), p=2, dim=-1).to(dtype)
    x = x.to("cuda").requires_grad_(True)
    ref = rowscale_ref(x.clone(), w)
    tri = rowscale(x.clone(), w)
    torch.testing.assert_close(ref, tri)
"""


def test_workload_from_the_tests_own_call_scaled_up(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {
        "pkg/ops/rowscale.py": ROWSCALE + "\n\ndef rowscale_ref(x, w):\n    return x * w\n",
        "tests/test_rowscale.py": TEST_STYLE,
    })  # fmt: skip
    assert [c.source for c in plan.calls] == [Source.TEST_CALL] * 3, plan.tried
    small, typical, large = plan.calls
    # the wrapper, not the reference beside it; the largest case (B=2, T=300, D=128, bf16,
    # and of the two layouts the branch its parameter takes) scaled along T by powers of two
    assert small.entry == Entry("pkg.ops.rowscale", "rowscale", EntryKind.FUNCTION)
    line = TEST_STYLE.splitlines().index("    tri = rowscale(x.clone(), w)") + 1
    assert small.evidence == f"tests/test_rowscale.py:{line}"
    x, w = small.args
    assert x.dtype == "bfloat16" and w.dtype == "bfloat16" and w.rule == "l2norm"
    assert small.dims["D"] == 128
    # T grows by powers of two up to MAX_SEQ_LEN (16384), the batch takes the rest
    b, t = small.dims["B"], small.dims["T"]
    assert t == 300 * 32 and b % 2 == 0 and math.log2(b // 2).is_integer()
    assert x.shape in ((b * t, 128), (128, b * t))
    assert small.estimate_us >= 100
    from eval.workload_plan import estimate

    half = (replace(x, shape=(b * t // 2, 128)), w)
    assert estimate(half, small.mode)[1] < 100  # the smallest power of two that reaches it
    assert [c.dims["B"] for c in plan.calls] == [b, 4 * b, 16 * b]
    assert typical.label is SizeLabel.TYPICAL and large.label is SizeLabel.LARGE
    assert "T=300" in plan.tried[-1] or any("T=300" in n for n in plan.tried)


def test_a_test_call_grows_the_batch_past_a_long_sequence(tmp_path: Path) -> None:
    from eval.workload_plan import MAX_SEQ_LEN

    test = TEST_STYLE.replace("test_t_list = [63, 300]", "test_t_list = [8192]")
    test = test.replace('"B", [2]', '"B", [1]')
    plan = _plan(tmp_path, {
        "pkg/ops/rowscale.py": ROWSCALE + "\n\ndef rowscale_ref(x, w):\n    return x * w\n",
        "tests/test_rowscale.py": test,
    })  # fmt: skip
    assert plan.calls, plan.tried
    dims = [(c.dims["B"], c.dims["T"]) for c in plan.calls]
    assert all(t <= MAX_SEQ_LEN for _, t in dims)
    assert dims[-1] == (dims[0][0] * 16, MAX_SEQ_LEN)  # the batch took what the sequence could not


def test_a_test_calls_vocabulary_takes_a_model_configurations(tmp_path: Path) -> None:
    # Liger-Kernel's cross-entropy tests run V=512; its benchmark model configurations say
    # what a vocabulary is (Llama 3: 128256): the workload takes the median model's
    test = """import pytest
import torch
from pkg.ops.rowscale import rowscale


@pytest.mark.parametrize("B, T, V", [(2, 128, 512), (3, 47, 31)])
def test_ce(B, T, V):
    x = torch.randn(B * T, V)
    w = torch.randn(V)
    y = rowscale(x, w)
"""
    plan = _plan(tmp_path, {"pkg/configuration_tiny.py": CONFIGS, "tests/test_ce.py": test})
    assert [c.source for c in plan.calls] == [Source.TEST_CALL] * 3, plan.tried
    small = plan.calls[0]
    assert small.dims["V"] == 32000 and small.args[0].shape[1] == 32000
    assert small.args[1].shape == (32000,) and small.estimate_us >= 100
    assert any("V=32000 from pkg/configuration_tiny.py" in t for t in plan.tried)


def test_a_test_call_starts_from_its_largest_round_case() -> None:
    from eval.workload_plan import scaled_test_calls
    from eval.workload_scripts import find_calls

    test = """import pytest
import torch
from pkg.ops.rowscale import rowscale


@pytest.mark.parametrize("T", [64, 100])
@pytest.mark.parametrize("D", [128, 256, 300])
def test_rows(T, D):
    y = rowscale(torch.randn(T, D), torch.randn(D))
"""
    (sc,), _ = find_calls("tests/t.py", test, {"pkg.ops.rowscale"}, set(), test=True)
    calls, note = scaled_test_calls(sc, Mode.FORWARD)
    # D=300 moves the most bytes, but a model's width is round: D=256; T=100 is the token
    # dimension, which scales, so its oddness does not count
    assert calls[0].dims["D"] == 256 and calls[0].dims["T"] % 100 == 0, note


def test_a_test_that_runs_no_backward_is_timed_forward_only() -> None:
    """flash-linear-attention #d0b67c5e63: its `test_chunk` makes the inputs require
    gradients and calls `chunk_iplr_delta_rule` forward only (that op had no backward at the
    commit); the PR changes backward kernels too, and a full plan failed on the CPU count:
    "Backward pass ... is not implemented yet". A test, or a helper it calls, that runs one
    keeps the task's mode; another test of the module that does says nothing."""
    from eval.workload_plan import scaled_test_calls
    from eval.workload_scripts import find_calls

    test = """import pytest
import torch
from pkg.ops.rowscale import rowscale


def check(x, w):
    rowscale(x, w).sum().backward()


@pytest.mark.parametrize("T", [64])
def test_fwd(T):
    x = torch.randn(T, 256).requires_grad_()
    y = rowscale(x, torch.randn(256))


@pytest.mark.parametrize("T", [64])
def test_bwd(T):
    x = torch.randn(T, 256).requires_grad_()
    y = rowscale(x, torch.randn(256))
    y.backward(torch.ones_like(y))


@pytest.mark.parametrize("T", [64])
def test_helper(T):
    x = torch.randn(T, 256).requires_grad_()
    y = rowscale(x, torch.randn(256))
    check(x, torch.randn(256))


@pytest.mark.parametrize("T", [64])
def test_grad(T):
    x = torch.randn(T, 256).requires_grad_()
    y = rowscale(x, torch.randn(256))
    (dx,) = torch.autograd.grad(y.sum(), [x])
"""
    found, _ = find_calls("tests/t.py", test, {"pkg.ops.rowscale"}, set(), test=True)
    modes = {}
    for sc in found:
        calls, note = scaled_test_calls(sc, Mode.FULL)
        assert calls, note
        modes[sc.function.name] = calls[0].mode
    assert modes == {"test_fwd": Mode.FORWARD, "test_bwd": Mode.FULL,
                     "test_helper": Mode.FULL, "test_grad": Mode.FULL}  # fmt: skip
    # a PR of backward kernels alone: a forward-only test cannot reach them, and the search
    # goes on to the next (#315's forward-only fallback would have timed none of them)
    fwd, bwd = (sc for sc in found if sc.function.name in ("test_fwd", "test_bwd"))
    calls, note = scaled_test_calls(fwd, Mode.BACKWARD)
    assert calls == [] and note.endswith("runs no backward (the PR changes only backward kernels)")
    assert scaled_test_calls(bwd, Mode.BACKWARD)[0][0].mode is Mode.BACKWARD


MODULE_TEST = """import pytest
import torch

from pkg.ops import RowScale


@pytest.mark.parametrize("N", [4096])
@pytest.mark.parametrize("D", [256])
@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_module(N, D, dtype):
    layer = RowScale(D, 0.5).to(dtype).to("cuda")
    x = torch.randn(N, D, dtype=dtype)
    y = layer(x)
"""

MODULE_CLASS = """from pkg.ops.rowscale import rowscale


class RowScale:
    def __init__(self, hidden_size, scale=1.0, bias=False):
        self.hidden_size = hidden_size

    def __call__(self, x):
        return rowscale(x, x[0])
"""


INLINE_CALL = MODULE_TEST.replace(
    '    layer = RowScale(D, 0.5).to(dtype).to("cuda")\n', ""
).replace("    y = layer(x)", "    y = RowScale(D, 0.5).to(dtype)(x)")


# built, cast, then called; or built and called in one expression (flash-linear-attention's
# `FusedLinearCrossEntropyLoss()(x, target, weight, bias)`)
@pytest.mark.parametrize("test", [MODULE_TEST, INLINE_CALL], ids=["built-then-called", "inline"])
def test_a_test_module_built_with_positional_arguments_gets_their_names(
    tmp_path: Path, test: str
) -> None:
    plan = _plan(tmp_path, {
        "pkg/ops/layer.py": MODULE_CLASS,
        "pkg/ops/__init__.py": "from .layer import RowScale\n",
        "tests/test_module.py": test,
    })  # fmt: skip
    assert plan.calls, plan.tried
    entry = plan.calls[0].entry
    assert (entry.module, entry.name, entry.kind) == ("pkg.ops", "RowScale", EntryKind.MODULE)
    assert entry.init == {"hidden_size": 256, "scale": 0.5}
    assert entry.dtype == "bfloat16"  # `.to(dtype)`, not the `.to("cuda")` after it
    assert plan.calls[0].dims["N"] % 4096 == 0 and plan.calls[0].args[0].shape[1] == 256


def test_a_test_that_calls_only_the_reference_gives_no_test_call(tmp_path: Path) -> None:
    test = TEST_STYLE.replace("    tri = rowscale(x.clone(), w)\n", "")
    plan = _plan(tmp_path, {
        "pkg/ops/rowscale.py": ROWSCALE + "\n\ndef rowscale_ref(x, w):\n    return x * w\n",
        "tests/test_rowscale.py": test,
    })  # fmt: skip
    assert plan.calls == ()
    assert any(n.startswith("test_call:") and "never calls" in n for n in plan.tried)


@pytest.mark.parametrize(
    ("name", "is_workload"),
    [("rowscale_ref", False), ("NAIVE_rowscale", False), ("RowScaleRef", False),
     ("TorchRowScale", False), ("torchrowscale", True), ("rowscale_deref", True)],
)  # fmt: skip
def test_a_reference_is_known_by_its_name_not_by_a_prefix_or_suffix(
    name: str, is_workload: bool
) -> None:
    from eval.workload_scripts import find_calls

    test = (f"import torch\nfrom pkg.ops.rs import {name}\n\n\ndef test_rs():\n"
            f"    x = torch.randn(64, 64)\n    {name}(x)\n")  # fmt: skip
    calls, _ = find_calls("tests/test_rs.py", test, {"pkg.ops.rs"}, set(), test=True)
    assert bool(calls) is is_workload


FIXTURE_STYLE = """import pytest
import torch

from pkg.ops.rowscale import rowscale


@pytest.fixture
def device():
    if not torch.cuda.is_available():
        pytest.skip("CUDA not available")
    return torch.device("cuda")


@pytest.fixture
def sizes():
    \"\"\"Rows and columns.\"\"\"
    return {"input_batch": 16, "output_batch": 20, "feature_dim": 4096}


@pytest.fixture
def other_sizes():
    return {"input_batch": 3, "feature_dim": 8}


def test_rowscale_sized_by_a_fixture(device, sizes):
    params = sizes
    x = torch.randn(params["input_batch"], params["feature_dim"], device=device)
    w = torch.randn(params["feature_dim"], device=device)
    out = rowscale(x, w)
"""


def test_a_fixture_sizes_the_test_call_and_its_batch_is_scaled(tmp_path: Path) -> None:
    plan = _plan(tmp_path, {"pkg/ops/rowscale.py": ROWSCALE, "tests/test_rs.py": FIXTURE_STYLE})
    assert [c.source for c in plan.calls] == [Source.TEST_CALL] * 3, plan.tried
    small, typical, large = plan.calls
    assert large.dims["input_batch"] == 16 * small.dims["input_batch"]
    # the test's own fixture (`sizes`), not the one defined after it; `input_batch` (a name
    # ending in `_batch`) grows by powers of two until the estimate reaches 100 µs, and
    # `output_batch` with it
    assert small.dims["feature_dim"] == 4096
    assert small.dims["input_batch"] % 16 == 0 and small.estimate_us >= 100
    assert small.args[0].shape == (small.dims["input_batch"], 4096)
    assert typical.dims["input_batch"] == 4 * small.dims["input_batch"]
    # every `*_batch` size grows by the same factor: the test's ratios hold at every scale
    assert small.dims["output_batch"] * 16 == small.dims["input_batch"] * 20


def test_a_cold_wall_time_test_call_is_a_services_sequence_of_batch_sizes(tmp_path: Path) -> None:
    repo, _, tdir = _task_repo(
        tmp_path,
        {"pkg/ops/rowscale.py": ROWSCALE, "tests/test_rs.py": FIXTURE_STYLE},
        "Avoid recompilation and autotuning in prod (#5)",
    )
    task = tdir.load_task()
    plan = plan_workload(task, _view(repo, task.base_commit), None)
    assert plan.metric is Metric.COLD_WALL_TIME
    assert [c.source for c in plan.calls] == [Source.TEST_CALL] * 8, plan.tried
    # eight distinct batch sizes, ascending, the three labelled ones where a kernel-time plan
    # has them (1x, 4x, 16x the smallest that reaches 100 us)
    S, T, L, P = SizeLabel.SMALL, SizeLabel.TYPICAL, SizeLabel.LARGE, SizeLabel.STEP
    assert [c.label for c in plan.calls] == [S, P, P, T, P, P, P, L]
    rows = [c.dims["input_batch"] for c in plan.calls]
    assert rows == [rows[0] * k for k in (1, 2, 3, 4, 6, 8, 12, 16)]
    assert [c.args[0].shape[0] for c in plan.calls] == rows
    assert "x2, x3, x4, x6, x8, x12, x16" in plan.tried[-1]
    # the same test under a kernel-time title: the three sizes alone
    kernel_time = _plan(
        tmp_path / "k", {"pkg/ops/rowscale.py": ROWSCALE, "tests/test_rs.py": FIXTURE_STYLE}
    )
    assert [c.dims["input_batch"] for c in kernel_time.calls] == [rows[0], rows[3], rows[7]]


def test_a_tensor_the_test_writes_out_keeps_its_values() -> None:
    import torch

    from eval.workload_inputs import make_tensor
    from eval.workload_scripts import evaluate, find_calls

    test = """import torch
from pkg.ops.rs import rowslice


def test_rowslice():
    from pkg.ops.modes import Mode

    x = torch.randn(16, 256)
    table = torch.tensor([[0, 1], [2, 3]], dtype=torch.int32)
    rowslice(x, torch.tensor([5], device="cuda"), table, torch.tensor(16, dtype=torch.int32),
             Mode.FAST)
"""
    calls, why = find_calls("tests/test_rs.py", test, {"pkg.ops.rs"}, set(), test=True)
    assert why == "" and len(calls) == 1
    _, args, _ = evaluate(calls[0], {})
    _, pos, table, valid, mode = args
    # a scalar tensor (Megatron-LM's valid-token count), and a member of an imported class the
    # harness resolves in the variant's tree (`ActivationType.SQUARED_RELU`)
    assert (valid.shape, valid.dtype, valid.params) == ((), "int32", {"values": 16})
    assert not mode.tensor and mode.value == {"ref": "pkg.ops.modes:Mode.FAST"}
    from eval.workload_harness import _value

    ref = {"value": {"ref": "collections:OrderedDict.fromkeys"}}
    assert _value(torch, ref) == __import__("collections").OrderedDict.fromkeys
    assert (pos.shape, pos.dtype, pos.rule, pos.params) == (
        (1,),
        "int64",
        "values",
        {"values": [5]},
    )
    assert (table.shape, table.dtype, table.rule) == ((2, 2), "int32", "values")
    spec = {
        "shape": list(table.shape),
        "dtype": table.dtype,
        "rule": table.rule,
        "params": table.params,
    }
    built = make_tensor(torch, spec, torch.Generator().manual_seed(0), "cpu")
    assert built.dtype == torch.int32 and built.tolist() == [[0, 1], [2, 3]]
    spec = {"shape": [], "dtype": valid.dtype, "rule": valid.rule, "params": valid.params}
    assert make_tensor(torch, spec, torch.Generator().manual_seed(0), "cpu").item() == 16


def test_an_integer_tensor_filled_in_a_loop_gives_no_call() -> None:
    """NSA's block indices: `torch.full(..., T, dtype=torch.long)`, then rows set in a loop
    the reader does not follow; random values could address memory out of bounds."""
    from eval.workload_scripts import Unknown, evaluate, find_calls

    test = """import torch
from pkg.ops.rs import gather_rows


def test_gather():
    x = torch.randn(64, 256)
    idx = torch.full((64, 4), 64, dtype=torch.long)
    for i in range(64):
        idx[i] = torch.randperm(64)[:4]
    gather_rows(x, idx)
"""
    calls, _ = find_calls("tests/test_rs.py", test, {"pkg.ops.rs"}, set(), test=True)
    with pytest.raises(Unknown):
        evaluate(calls[0], {})
    # a float tensor so built is drawn (its values do not address memory)
    floats = test.replace("dtype=torch.long", "dtype=torch.float32")
    calls, _ = find_calls("tests/test_rs.py", floats, {"pkg.ops.rs"}, set(), test=True)
    _, args, _ = evaluate(calls[0], {})
    assert args[1].rule == "normal" and args[1].dtype == "float32"


@pytest.mark.parametrize(
    ("module", "reached"),
    [("pkg.ops.nsa.parallel", True), ("ops.nsa.parallel", True), ("parallel", False),
     ("pkg.ops.gla.parallel", False)],
)  # fmt: skip
def test_a_sibling_package_s_module_of_the_same_name_is_not_the_task_s(
    module: str, reached: bool
) -> None:
    """flash-linear-attention's NSA kernels live in `fla/ops/nsa/parallel.py`: a test of
    `fla.ops.simple_gla.parallel` does not reach them (it did when any module named
    `parallel` counted), nor a bare `parallel` (its tests' `from utils import assert_close`
    named `fla/ops/nsa/utils.py` so); a dotted tail of the target's name does."""
    from eval.workload_scripts import find_calls

    test = (f"import torch\nfrom {module} import attend\n\n\ndef test_attend():\n"
            f"    q = torch.randn(2, 64, 4, 32)\n    attend(q)\n")  # fmt: skip
    calls, _ = find_calls("tests/test_a.py", test, {"pkg.ops.nsa.parallel"}, set(), test=True)
    assert bool(calls) is reached


HELPER_STYLE = """import pytest
import torch

from pkg.ops.rowscale import rowscale


def _make_inputs(T, D, dtype=torch.bfloat16):
    x = torch.randn(T, D, dtype=dtype)
    w = _weights(D)
    return x, w


def _weights(D):
    return torch.randn(D, dtype=torch.float32)


@pytest.mark.parametrize("T, D", [(128, 4096)])
def test_rowscale(T, D):
    x, w = _make_inputs(T, D)
    out = rowscale(x, w)
"""


def test_inputs_built_by_a_helper_of_the_test_module(tmp_path: Path) -> None:
    # Megatron-LM's fused-MoE tests and sixteen flash-linear-attention benchmark scripts build
    # their inputs in a module-level helper: its body is replayed with the call's arguments
    plan = _plan(tmp_path, {"pkg/ops/rowscale.py": ROWSCALE, "tests/test_rs.py": HELPER_STYLE})
    assert [c.source for c in plan.calls] == [Source.TEST_CALL] * 3, plan.tried
    x, w = plan.calls[0].args
    t = plan.calls[0].dims["T"]
    assert t % 128 == 0 and t > 128 and x.shape == (t, 4096) and x.dtype == "bfloat16"
    assert w.shape == (4096,) and w.dtype == "float32"  # through a helper of the helper


def test_a_test_reads_tensors_kept_through_operations_and_layouts() -> None:
    from eval.workload_scripts import evaluate, find_calls

    test = """import pytest
import torch
import torch.nn.functional as F
from pkg.ops.dplr import dplr


@pytest.mark.parametrize("B, T, H, D", [(2, 64, 4, 32)])
@pytest.mark.parametrize("head_first", [True])
@pytest.mark.parametrize("gate_logit_normalizer", [4])
def test_dplr(B, T, H, D, head_first, gate_logit_normalizer):
    if head_first:
        a = torch.rand(B, H, T, D, dtype=torch.bfloat16)
        gk = torch.randn(B, H, T, D)
    else:
        a = torch.rand(B, T, H, D, dtype=torch.bfloat16)
        gk = torch.randn(B, T, H, D)
    a = F.normalize(a, p=2, dim=-1)
    b = -a
    gk = F.logsigmoid(gk) / gate_logit_normalizer
    w = gk.clamp_(-64).requires_grad_(True)
    h0 = torch.randn(B, H, D, D).half()
    out = dplr(a.clone(), b.clone(), w, initial_state=h0.clone(), head_first=head_first)
"""
    calls, why = find_calls("tests/test_dplr.py", test, {"pkg.ops.dplr"}, set(), test=True)
    assert why == "" and len(calls) == 1
    _, args, _ = evaluate(calls[0], calls[0].sweeps[0])
    a, b, w, h0, head_first = args
    assert a.shape == b.shape == w.shape == (2, 4, 64, 32)  # the branch `head_first` takes
    assert (a.rule, b.rule, w.rule) == ("l2norm", "l2norm", "logsigmoid")
    assert a.dtype == "bfloat16" and w.dtype == "float32" and w.grad
    assert h0.keyword and h0.shape == (2, 4, 32, 32) and h0.dtype == "float16"
    assert head_first.value is True and not head_first.tensor


def test_the_input_rule_follows_what_the_test_does_to_a_tensor() -> None:
    from eval.workload_scripts import evaluate, find_calls

    test = """import pytest
import torch
import torch.nn.functional as F
from pkg.ops.gates import gates


@pytest.mark.parametrize("T", [64])
def test_gates(T):
    beta = torch.rand(T, 4).sigmoid()
    dt = torch.exp(torch.randn(T, 4))
    a = torch.randn(T, 4)
    a = a.abs()
    p = torch.randn(T, 4).softmax(-1)
    lp = F.logsigmoid(torch.randn(T, 4))
    x = torch.randn(T, 4) if T > 32 else None
    bias = torch.randn(4) if T < 32 else None
    y = gates(beta, dt, a, p, lp, x, bias=bias)
"""
    calls, why = find_calls("tests/test_gates.py", test, {"pkg.ops.gates"}, set(), test=True)
    assert why == ""
    _, args, _ = evaluate(calls[0], calls[0].sweeps[0])
    assert [a.rule for a in args[:-1]] == ["sigmoid", "positive", "positive", "probs",
                                           "logsigmoid", "normal"]  # fmt: skip
    assert args[-1].keyword and not args[-1].tensor and args[-1].value is None  # the `else`


def test_a_dict_with_an_unpacked_dict_keeps_its_items() -> None:
    # `default_shapes={**_layer_shapes, 'big': {...}}`: the unpacked items were dropped silently
    import ast

    from eval.workload_scripts import Unknown, _literal

    node = ast.parse("{**base, 'x': 1}", mode="eval").body
    assert _literal(node, {"base": {"y": 2}}) == {"y": 2, "x": 1}
    with pytest.raises(Unknown):
        _literal(node, {"base": 3})


def test_the_sigmoid_input_rule_is_in_the_unit_interval() -> None:
    from eval.workload_inputs import make_tensor

    gen = torch.Generator().manual_seed(0)
    t = make_tensor(torch, {"shape": [64], "dtype": "float32", "rule": "sigmoid"}, gen, "cpu")
    assert float(t.min()) > 0 and float(t.max()) < 1


# --- sources 2 and 3: model configurations and the captured launch, scaled ---------------------


def _capture(tokens: int = 8, cols: int = 64) -> Captured:
    t = {"shape": [tokens, cols], "dtype": "torch.float32", "stride": [cols, 1]}
    rec = {
        "grid": [tokens],
        "params": ["x_ptr", "w_ptr", "out_ptr", "n_cols"],
        "args": [t, {"shape": [cols], "dtype": "torch.float32", "stride": [1]}, t, cols],
        "kwargs": {"BLOCK": cols},
        "constexprs": {"BLOCK": cols},
        "numel": 2 * tokens * cols + cols,
    }
    return Captured("rowscale_kernel", "pkg/ops/rowscale.py", rec)


def test_the_scaling_rule_reaches_100_us_along_the_token_dimension() -> None:
    calls, _ = scaled_calls(_capture(), Mode.FORWARD)
    assert [c.label for c in calls] == [SizeLabel.SMALL, SizeLabel.TYPICAL, SizeLabel.LARGE]
    small = calls[0]
    assert small.estimate_us >= 100
    tokens = small.args[0].shape[0]
    assert tokens % 8 == 0 and math.log2(tokens // 8).is_integer()
    # the smallest power of two that reaches the bar: half of it does not
    half = 8 * ((tokens // 8) // 2)
    assert (2 * half * 64 * 4 + 64 * 4 + half * 64 * 4) / 4.3e12 * 1e6 < 100
    assert small.args[1].shape == (64,)  # the weight has no token dimension
    assert small.grid == (tokens,)  # one program per row stays so
    assert small.args[3].value == 64 and small.args[4].keyword and small.args[4].value == 64
    assert [c.args[0].shape[0] for c in calls] == [tokens, 4 * tokens, 16 * tokens]
    assert small.entry.kind is EntryKind.KERNEL and small.entry.module == "pkg.ops.rowscale"
    # a cold_wall_time sequence: eight token counts, the grid following each
    seq, _ = scaled_calls(_capture(), Mode.FORWARD, steps=SERVICE_STEPS)
    assert [c.args[0].shape[0] for c in seq] == [k * tokens for k in SERVICE_STEPS]
    assert [c.grid for c in seq] == [(k * tokens,) for k in SERVICE_STEPS]
    assert [c.label for c in seq].count(SizeLabel.STEP) == 5


def _decode_capture() -> Captured:
    """A decode-step kernel's launch (made up for this test): one program per batch row, 2 rows,
    reading and writing a state cache of 4 lines through an index tensor; the convolution
    width 4 is a constexpr, the weight's row stride is that width."""

    def t(shape: list[int]) -> dict[str, object]:
        return {"shape": shape, "dtype": "torch.float32", "stride": list(_contig(shape))}

    rec = {
        "grid": [2, 1],
        "params": ["x_ptr", "x_b_stride", "state_ptr", "state_b_stride", "w_ptr",
                   "w_c_stride", "state_indices_ptr", "batch", "state_len"],
        "args": [t([2, 3, 64]), 192, t([4, 3, 64, 8]), 1536, t([64, 4]), 4,
                 {"shape": [2], "dtype": "torch.int32", "stride": [1],
                  "int_stats": {"min": 0, "max": 2, "negative": 0.0, "monotone": False}},
                 2, 2],
        "kwargs": {"WIDTH": 4, "BLOCK_DIM": 64},
        "constexprs": {"WIDTH": 4, "BLOCK_DIM": 64},
        "numel": 6000,
    }  # fmt: skip
    return Captured("conv_update_kernel", "pkg/ops/conv.py", rec)


def _contig(shape: list[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def test_a_decode_launch_scales_its_batch_not_its_cache_or_its_constexprs() -> None:
    calls, _ = scaled_calls(_decode_capture(), Mode.FORWARD)
    assert calls
    small = {a.name: a for a in calls[0].args}
    rows = small["x_ptr"].shape[0]
    assert rows > 2 and small["x_ptr"].shape[1:] == (3, 64)
    # the grid runs over the batch (not over the cache, the largest tensor); the cache grows
    # with it, two lines a row as captured, and every row gets its own line
    assert small["state_ptr"].shape == (2 * rows, 3, 64, 8)
    slots = small["state_indices_ptr"]
    assert slots.shape == (rows,) and slots.rule == "slots" and slots.params == {"high": 2 * rows}
    assert small["w_ptr"].shape == (64, 4)
    assert calls[0].grid == (rows, 1)
    assert small["batch"].value == rows
    # state_len equals the batch in the capture, but a name tells them apart; the width is a
    # constexpr and the weight's stride follows its tensor, not the token count
    assert small["state_len"].value == 2
    assert small["WIDTH"].value == 4 and small["w_c_stride"].value == 4
    assert small["x_b_stride"].value == 192 and small["state_b_stride"].value == 1536


def _varlen_capture() -> Captured:
    """A variable-length chunked kernel's launch (made up for this test, in the layout
    flash-linear-attention's varlen kernels use): tensors [1, T, H, K] whose leading dimension
    is a batch of one, the sequences given by `cu_seqlens`, one program per chunk and head."""

    def t(shape: list[int], dtype: str = "torch.float16") -> dict[str, object]:
        return {"shape": shape, "dtype": dtype, "stride": list(_contig(shape))}

    rec = {
        "grid": [19, 3],
        "params": ["k", "h", "dk", "cu_seqlens", "T", "H", "K", "BT"],
        "args": [t([1, 1000, 3, 128]), t([1, 19, 3, 128, 128]), t([1, 1000, 3, 128]),
                 {"shape": [11], "dtype": "torch.int32", "stride": [1],
                  "int_stats": {"min": 0, "max": 1000, "negative": 0.0, "monotone": True}},
                 1000, 3, 128, 64],
        "kwargs": {"BT": 64},
        "constexprs": {"BT": 64},
        "numel": 2 * 1000 * 3 * 128 + 19 * 3 * 128 * 128,
    }  # fmt: skip
    return Captured("chunk_bwd_kernel_dk", "pkg/ops/chunk.py", rec)


def test_a_captured_launch_of_a_backward_kernel_is_timed_as_the_launch(tmp_path: Path) -> None:
    """flash-linear-attention #449: its kernel-level calls were planned in backward mode (every
    kernel the PR changes is a backward one), so the harness ran the launch in the untimed
    forward and timed an empty backward."""
    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    bwd = "rowscale_bwd_kernel"
    task = replace(task, kernels=tuple(replace(k, name=bwd) for k in task.kernels))
    assert workload_mode(task) is Mode.BACKWARD
    cap = replace(_capture(), kernel=bwd)
    plan = plan_workload(task, _view(repo, task.base_commit), cap)
    assert plan.calls and {c.source for c in plan.calls} == {Source.SCALED_TEST_CALL}
    assert {(c.entry.kind, c.mode) for c in plan.calls} == {(EntryKind.KERNEL, Mode.FORWARD)}


def test_a_launch_whose_work_does_not_grow_with_its_tensors_is_not_scaled() -> None:
    """Doubling a batch of one changes neither the grid, nor a scalar, nor `cu_seqlens`: the
    kernel would do the test's work on larger tensors (what the H200 timed for
    flash-linear-attention #449: 800 MB "moved" in 1.7 us). No scaled call, and the reason."""
    calls, why = scaled_calls(_varlen_capture(), Mode.BACKWARD)
    assert calls == []
    assert "do not grow with the leading dimension (1)" in why and "chunk_bwd_kernel_dk" in why
    # a launch whose grid follows its rows still scales (the first test's kernel)
    assert scaled_calls(_capture(), Mode.FORWARD)[0]


def test_a_launch_whose_leading_dimension_counts_the_sequences_is_not_scaled() -> None:
    """flash-linear-attention #479's recurrent backward: its largest tensors are the initial
    states, one per sequence of `cu_seqlens`; scaled as tokens, 1024 sequences' programs read
    offsets of three entries. No scaled call, and the reason."""
    cap = _varlen_capture()
    rec = dict(cap.record)
    rec["args"] = list(rec["args"])
    states = {"shape": [10, 3, 128, 128], "dtype": "torch.float32",
              "stride": list(_contig([10, 3, 128, 128]))}  # fmt: skip
    rec["params"] = [*rec["params"][:1], "h0", *rec["params"][2:]]
    rec["args"][1] = states  # ten sequences: cu_seqlens has 11 entries
    rec["grid"] = [1, 30]
    calls, why = scaled_calls(replace(cap, record=rec), Mode.FORWARD)
    assert calls == []
    assert "leading dimension (10) of its largest tensor counts the sequences of cu_seqlens" in why


def test_launch_options_equal_to_the_token_count_stay_the_tests() -> None:
    """A batch of 4 launched with 4 warps and 4 stages (flash-linear-attention #d0b67c5e63's
    test): scaled as tokens, the plan asked for 64 warps, more than a block can hold."""
    cap = _capture(tokens=4)
    rec = {**cap.record, "kwargs": {**cap.record["kwargs"], "num_warps": 4, "num_stages": 4}}
    calls, _ = scaled_calls(replace(cap, record=rec), Mode.FORWARD)
    assert calls and calls[0].args[0].shape[0] > 4
    for c in calls:
        options = {a.name: a.value for a in c.args if a.name in ("num_warps", "num_stages")}
        assert options == {"num_warps": 4, "num_stages": 4}


def test_labels_stay_an_index_and_a_token_named_constexpr_scales() -> None:
    """A cross-entropy launch (made up for this test): its labels index a vocabulary-sized
    table, not cache lines; `T: tl.constexpr` (flash-linear-attention's style) is the token
    count and scales, `num_warps` equal to it by chance does not."""
    cap = _capture(tokens=8, cols=64)
    rec = dict(cap.record)
    rec["params"] = ["x_ptr", "w_ptr", "out_ptr", "n_cols", "y_ptr"]
    rec["args"] = [
        *rec["args"][:4],
        {
            "shape": [8],
            "dtype": "torch.int64",
            "stride": [1],
            "int_stats": {"min": 3, "max": 60, "negative": 0.0, "monotone": False},
        },
    ]
    rec["kwargs"] = {"BLOCK": 64, "T": 8, "num_warps": 8}
    rec["constexprs"] = {"BLOCK": 64, "T": 8}  # fmt: skip
    call = scaled_calls(replace(cap, record=rec), Mode.FORWARD)[0][0]
    args = {a.name: a for a in call.args}
    rows = args["x_ptr"].shape[0]
    assert args["y_ptr"].rule == "index" and args["y_ptr"].shape == (rows,)
    assert args["T"].value == rows and args["num_warps"].value == 8


def test_slots_are_distinct_cache_lines() -> None:
    from eval.workload_inputs import make_tensor

    gen = torch.Generator().manual_seed(0)
    spec = {"shape": [64], "dtype": "int32", "rule": "slots", "params": {"high": 128}}
    t = make_tensor(torch, spec, gen, "cpu")
    assert t.dtype == torch.int32 and len(set(t.tolist())) == 64
    assert int(t.min()) >= 0 and int(t.max()) < 128


def test_a_stride_follows_its_tensor_when_the_tokens_grow() -> None:
    cap = _capture(tokens=8, cols=64)
    rec = dict(cap.record)
    # a column-major input: its column stride is the token count and grows with it
    rec["params"] = ["x_ptr", "w_ptr", "out_ptr", "n_cols", "stride_x_col"]
    x = {"shape": [8, 64], "dtype": "torch.float32", "stride": [1, 8]}
    rec["args"] = [x, rec["args"][1], rec["args"][2], 64, 8]
    call = scaled_calls(replace(cap, record=rec), Mode.FORWARD)[0][0]
    rows = call.args[0].shape[0]
    assert call.args[0].stride == (1, rows) and call.args[4].value == rows
    # a row-major input whose row stride (and width) happen to equal the token count keeps them
    square = _capture(tokens=8, cols=8)
    rec = dict(square.record)
    rec["params"] = ["x_ptr", "w_ptr", "out_ptr", "n_cols", "x_row_stride"]
    rec["args"] = [*rec["args"][:3], 8, 8]
    call = scaled_calls(replace(square, record=rec), Mode.FORWARD)[0][0]
    assert call.args[0].shape[0] > 8 and call.args[3].value == 8 and call.args[4].value == 8


def test_offsets_scale_with_the_tokens_and_labels_keep_their_range() -> None:
    cap = _capture(tokens=64)
    rec = dict(cap.record)
    rec["params"] = [*rec["params"], "cu_seqlens", "labels"]
    rec["args"] = [*rec["args"],
                   {"shape": [5], "dtype": "torch.int32", "stride": [1],
                    "int_stats": {"min": 0, "max": 64, "negative": 0.0, "monotone": True}},
                   {"shape": [64], "dtype": "torch.int64", "stride": [1],
                    "int_stats": {"min": -100, "max": 999, "negative": 0.25,
                                  "monotone": False}}]  # fmt: skip
    call = scaled_calls(replace(cap, record=rec), Mode.FORWARD)[0][0]
    tokens = call.args[0].shape[0]
    cu, labels = call.args[4], call.args[5]
    assert cu.rule == "offsets" and cu.params["total"] == tokens and cu.shape == (5,)
    assert labels.rule == "labels" and labels.shape == (tokens,)
    assert labels.params == {"high": 1000, "ignore": 0.25, "ignore_index": -100}


def test_model_configurations_map_onto_the_kernels_named_sizes(tmp_path: Path) -> None:
    cap = _capture(cols=64)
    rec = dict(cap.record)
    rec["params"] = ["x_ptr", "w_ptr", "out_ptr", "hidden_size"]
    repo = TinyRepo(tmp_path / "cfg")
    repo.write("pkg/models/configuration_tiny.py", CONFIGS)
    sha = repo.commit("configs")
    calls, note = from_models(replace(cap, record=rec), _view(repo, sha), Mode.FORWARD)
    assert "3 configurations" in note
    assert [c.source for c in calls] == [Source.MODEL_CONFIG] * 3
    assert [c.args[1].shape for c in calls] == [(2048,), (4096,), (8192,)]
    assert [c.args[3].value for c in calls] == [2048, 4096, 8192]
    assert [c.dims["hidden_size"] for c in calls] == [2048, 4096, 8192]
    assert all(c.estimate_us >= 100 for c in calls)
    assert calls[0].evidence.startswith("pkg/models/configuration_tiny.py:")


def test_a_block_constexpr_covers_the_models_width_as_a_power_of_two(tmp_path: Path) -> None:
    # the kernel's BLOCK (a constexpr, 64 = n_cols at the capture) is the wrapper's
    # next_power_of_2(n_cols): at a model width of 3072 it is 4096, never 3072
    rec = {**_capture(cols=64).record, "params": ["x_ptr", "w_ptr", "out_ptr", "hidden_size"]}
    repo = TinyRepo(tmp_path / "cfg")
    repo.write("examples/run.sh", "--hidden-size 3072 --num-attention-heads 24\n")
    sha = repo.commit("a model of hidden size 3072")
    cap = Captured("rowscale_kernel", "pkg/ops/rowscale.py", rec)
    [call] = from_models(cap, _view(repo, sha), Mode.FORWARD)[0]
    assert call.args[1].shape == (3072,) and call.args[3].value == 3072
    assert call.args[4].name == "BLOCK" and call.args[4].value == 4096


def test_a_model_size_that_shares_its_value_with_another_size_is_left_out(tmp_path: Path) -> None:
    # flash-linear-attention style: `V` (a value head dimension, not a vocabulary) is 64 as
    # `K` is; renamed by value, K and V would both become the vocabulary
    t = {"shape": [8, 64], "dtype": "torch.float32", "stride": [64, 1]}
    rec = {"grid": [8], "params": ["q_ptr", "o_ptr", "K", "V", "BK"], "args": [t, t, 64, 64],
           "kwargs": {"BK": 64}, "constexprs": {"K": 64, "V": 64, "BK": 64},
           "numel": 2 * 8 * 64}  # fmt: skip
    repo = TinyRepo(tmp_path / "cfg")
    repo.write("pkg/models/configuration_tiny.py", CONFIGS)
    sha = repo.commit("configs")
    cap = Captured("attn_kernel", "pkg/ops/attn.py", rec)
    calls, why = from_models(cap, _view(repo, sha), Mode.FORWARD)
    assert calls == [] and "vocab_size shares its value with K" in why


VOCABS = """
LLAMA2 = dict(hidden_size=8192, vocab_size=32000)
QWEN = dict(hidden_size=2048, vocab_size=152064)
LLAMA3 = dict(hidden_size=4096, vocab_size=128256)
"""


def test_a_width_the_launchs_labels_index_is_the_vocabulary(tmp_path: Path) -> None:
    # Liger-Kernel's cross entropy names its vocabulary `n_cols`: read as a hidden size, a
    # model's 2048 columns met labels up to the test's vocabulary (call 69: 3266 invalid reads)
    x = {"shape": [8, 1000], "dtype": "torch.float32", "stride": [1000, 1]}
    y = {"shape": [8], "dtype": "torch.int64", "stride": [1], "int_stats": {"min": 3, "max": 997}}
    loss = {"shape": [8], "dtype": "torch.float32", "stride": [1]}
    rec = {"grid": [8], "params": ["x_ptr", "y_ptr", "loss_ptr", "n_cols"],
           "args": [x, y, loss, 1000], "kwargs": {}, "constexprs": {},
           "numel": 8 * 1000 + 16}  # fmt: skip
    repo = TinyRepo(tmp_path / "cfg")
    repo.write("pkg/models/configuration_tiny.py", CONFIGS + VOCABS)
    sha = repo.commit("configs")
    cap = Captured("ce_kernel", "pkg/ops/ce.py", rec)
    calls, note = from_models(cap, _view(repo, sha), Mode.FORWARD)
    assert calls, note
    # small, typical and large by the vocabulary, not by the models' hidden sizes
    assert [c.dims["vocab_size"] for c in calls] == [32000, 128256, 152064]
    for c in calls:
        assert c.args[0].shape[1] == c.args[3].value == c.dims["vocab_size"]
        assert "hidden_size" not in c.dims and c.args[1].params["high"] <= 32000
    # without an integer tensor reaching into it, the width stays a hidden size
    rec["args"] = [x, {**y, "int_stats": {"min": 0, "max": 7}}, loss, 1000]
    calls, _ = from_models(replace(cap, record=rec), _view(repo, sha), Mode.FORWARD)
    assert calls and all("hidden_size" in c.dims for c in calls)


def test_a_model_size_the_grid_or_the_batch_shares_is_not_renamed(tmp_path: Path) -> None:
    # flash-linear-attention #300 and #d0b67c5e63: batch 2 and 2 heads, the grid's last axis
    # B*H; renaming the heads by value renamed the batch too, and the kept grid ran half of
    # the (b, h) pairs of the renamed tensors
    def launch(batch: int, heads: int) -> Captured:
        shape = [batch, 64, heads, 32]
        t = {"shape": shape, "dtype": "torch.float32", "stride": list(_contig(shape))}
        rec = {"grid": [1, batch * heads], "params": ["q", "o", "H"], "args": [t, t, heads],
               "kwargs": {}, "constexprs": {}, "numel": 2 * math.prod(shape)}  # fmt: skip
        return Captured("heads_kernel", "pkg/ops/heads.py", rec)

    repo = TinyRepo(tmp_path / "cfg")
    repo.write("pkg/models/configuration_tiny.py", CONFIGS)
    sha = repo.commit("configs")
    calls, why = from_models(launch(2, 2), _view(repo, sha), Mode.FORWARD)
    assert calls == [] and "num_heads (2) equals the token count" in why
    calls, why = from_models(launch(3, 2), _view(repo, sha), Mode.FORWARD)
    assert calls == [] and "num_heads (2) divides the launch grid (1, 6)" in why


LAUNCH_SH = """#!/bin/bash
# a made-up MoE training launch, Megatron-LM style
MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --num-experts 64
    --moe-router-topk 4
    --moe-ffn-hidden-size 1024
    --seq-length=4096
)
"""
LAUNCH_YAML = """MODEL_ARGS:
  --hidden-size: 2048
  --ffn-hidden-size: 8192
  --num-attention-heads: 16
  --kv-channels: 64
"""


def test_model_configurations_from_the_examples_launch_arguments(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "launch")
    repo.write("examples/moe/train_moe.sh", LAUNCH_SH)
    repo.write("examples/dense/model.yaml", LAUNCH_YAML)
    # a test's and a mock run's arguments are no model
    repo.write("examples/tests/tiny.sh", "--hidden-size 64 --num-attention-heads 2\n")
    repo.write("examples/mock/run_mock.sh", "--hidden-size 128\n")
    repo.write("scripts/other.sh", "--hidden-size 256\n")  # outside the examples
    sha = repo.commit("examples")
    configs = dict(model_configs(_view(repo, sha)))
    assert sorted(configs) == ["examples/dense/model.yaml:2", "examples/moe/train_moe.sh:5"]
    # an MoE model's expert width is its intermediate size; head_dim from --kv-channels, or
    # hidden / heads
    assert configs["examples/moe/train_moe.sh:5"] == {
        "hidden_size": 4096, "intermediate_size": 1024, "num_heads": 32, "num_experts": 64,
        "top_k": 4, "head_dim": 128}  # fmt: skip
    assert configs["examples/dense/model.yaml:2"] == {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_heads": 16,
        "head_dim": 64,
    }
    # an MoE test call takes hidden size, expert width, experts and top-k from one MoE model
    point = {"max_tokens": 64, "hidden_size": 128, "ffn_hidden": 256, "topk": 2, "num_experts": 4}
    widened, why = model_widths(point, list(configs.items()))
    assert widened == {"max_tokens": 64, "hidden_size": 4096, "ffn_hidden": 1024, "topk": 4,
                       "num_experts": 64}  # fmt: skip
    assert why.endswith("from examples/moe/train_moe.sh:5")
    # one-letter names keep the test's values; a dense call takes the median dense width
    assert model_widths({"E": 4, "K": 128}, list(configs.items()))[0] == {"E": 4, "K": 128}
    assert model_widths({"hidden_size": 8}, list(configs.items()))[0] == {"hidden_size": 4096}


def test_the_metric_is_cold_wall_time_for_compilation_prs(tmp_path: Path) -> None:
    _, _, tdir = _task_repo(tmp_path, {}, "Avoid recompilation and autotuning in prod (#5)")
    task = tdir.load_task()
    metric, why = choose_metric(task)
    assert metric is Metric.COLD_WALL_TIME and "recompilation" in why
    plain = replace(task, title="Speed up rowscale", body="")
    assert choose_metric(plain)[0] is Metric.KERNEL_TIME
    k = task.kernels[0]
    lost = replace(k, signature_before="def k(x, B: tl.constexpr)", signature_after="def k(x, B)")
    assert choose_metric(replace(plain, kernels=(lost,)))[0] is Metric.COLD_WALL_TIME


# --- valid inputs ------------------------------------------------------------------------------


def _make(rule: str, shape: list[int], dtype: str, **params: object):
    from eval.workload_inputs import make_tensor

    gen = torch.Generator().manual_seed(0)
    spec = {"shape": shape, "dtype": dtype, "rule": rule, "params": params}
    return make_tensor(torch, spec, gen, "cpu")


def test_index_tensors_are_valid_never_uniform_noise() -> None:
    labels = _make("labels", [10000], "int64", high=50, ignore=0.3, ignore_index=-100)
    kept = labels[labels != -100]
    assert kept.min() >= 0 and kept.max() < 50
    assert 0.25 < float((labels == -100).float().mean()) < 0.35
    cu = _make("offsets", [9], "int32", total=4096)
    assert cu[0] == 0 and cu[-1] == 4096 and bool((cu[1:] >= cu[:-1]).all())
    assert cu.dtype == torch.int32
    top = _make("topk", [512, 8], "int64", high=64)
    assert top.min() >= 0 and top.max() < 64
    assert all(len(set(row.tolist())) == 8 for row in top)
    with pytest.raises(ValueError, match="impossible"):
        _make("topk", [4, 8], "int64", high=4)


def test_the_rule_table_chooses_by_name_dtype_and_captured_values() -> None:
    from eval.workload_inputs import rule_for

    assert rule_for("cu_seqlens", "int32") == "offsets"
    assert rule_for("labels", "int64") == "labels"
    assert rule_for("topk_ids", "int32") == "topk"
    assert rule_for("topk_weights", "float32") == "probs"
    assert rule_for("x", "bfloat16") == "normal"
    assert rule_for("block_table", "int32") == "index"
    assert rule_for("starts", "int64", {"min": 0, "max": 9, "monotone": True}) == "offsets"
    assert rule_for("t", "int64", {"min": -100, "max": 9, "negative": 0.1}) == "labels"
    assert rule_for("ids", "int64", {"min": 0, "max": 9, "row_distinct": True}) == "topk"


def test_strided_inputs_keep_the_captured_layout() -> None:
    from eval.workload_inputs import make_tensor

    spec = {"shape": [4, 6], "dtype": "float32", "stride": [1, 4], "rule": "normal"}
    t = make_tensor(torch, spec, torch.Generator().manual_seed(1), "cpu")
    assert t.stride() == (1, 4) and tuple(t.shape) == (4, 6)


# --- the output comparison ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "close", "far"),
    [("float32", 1e-5, 1e-2), ("bfloat16", 5e-3, 0.2), ("float16", 1e-3, 0.1)],
)
def test_outputs_compare_by_the_dtype_tolerance(dtype: str, close: float, far: float) -> None:
    from eval.workload_inputs import compare

    g = torch.randn(1000, generator=torch.Generator().manual_seed(0)).to(getattr(torch, dtype))
    near = (g.float() * (1 + close)).to(g.dtype)
    assert compare(torch, {"out": g}, {"out": near}) == (True, "")
    off = (g.float() + far).to(g.dtype)
    ok, why = compare(torch, {"out": g}, {"out": off})
    assert not ok and "outside rtol" in why and dtype in why


def test_integer_outputs_nans_and_shapes_must_match_exactly() -> None:
    from eval.workload_inputs import compare

    ints = torch.arange(10)
    assert not compare(torch, {"o": ints}, {"o": ints + (ints == 3)})[0]
    nan = torch.tensor([1.0, float("nan")])
    assert compare(torch, {"o": nan}, {"o": nan.clone()})[0]
    assert not compare(torch, {"o": nan}, {"o": torch.tensor([1.0, 2.0])})[0]
    assert "shape" in compare(torch, {"o": ints}, {"o": ints[:5]})[1]
    assert "structure" in compare(torch, {"o": ints}, {"p": ints})[1]


# --- the optimization gate ---------------------------------------------------------------------


def _t(ms: float, spread: float = 0.02) -> Timing:
    return Timing(ms, ms * (1 - spread), ms * (1 + spread), 100)


def _result(base: float, gold: float, spread: float = 0.02, matches: bool = True):
    calls = [CallResult(lb, _t(base, spread), _t(gold, spread), base_matches=matches,
                        mismatch="" if matches else "base: out: 3 of 9 elements differ")
             for lb in (SizeLabel.SMALL, SizeLabel.LARGE)]  # fmt: skip
    return summarize_result("t", Metric.KERNEL_TIME, calls)


def test_the_gate_verifies_a_gold_that_is_clearly_faster() -> None:
    ok, why = workload_verdict(_result(base=1.0, gold=0.5))
    assert ok and "2.00x" in why


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (_result(1.0, 0.95), "not faster enough"),  # 1.05x
        (_result(1.0, 0.85, spread=0.15), "spreads overlap"),  # 1.18x, but noisy
        (_result(0.08, 0.04), "too small"),  # 2x, but the gold runs 40 us per size
        (_result(1.0, 0.5, matches=False), "outputs differ"),
    ],
)
def test_the_gate_refuses_a_gain_it_cannot_trust(result, words: str) -> None:
    ok, why = workload_verdict(result)
    assert not ok and words in why


def test_a_failed_size_fails_the_gate_and_names_the_ratios_of_the_others() -> None:
    good = _result(base=1.0, gold=0.98)
    first, last = good.calls
    broken = replace(last, base=None, gold=None, error="base: RuntimeError: invalid argument")
    ok, why = workload_verdict(replace(good, calls=(first, broken)))
    assert not ok and why.startswith("workload failed (large: base: RuntimeError")
    assert why.endswith("; the sizes both ran: small 1.02x")


def test_the_import_profile_is_summed_by_package_and_leaves_the_crash_last() -> None:
    """Every timing process runs with `PYTHONPROFILEIMPORTTIME`: #1187's 10-13 s of framework
    import a process on an H100 (0.5 s on a CPU host) get a name. The report's lines leave the
    log, so a crash's last words are still its error."""
    from eval.sandbox import ScriptRun
    from eval.workload_run import import_profile

    log = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:      1500 |       1500 |   torch._C\n"
        "import time:    700000 |     900000 | transformers\n"
        "import time:     30000 |     30000 |     transformers.utils.hub\n"
        "import time:      4000 |       4000 |       liger_kernel.ops.utils\n"
        "Traceback (most recent call last):\n"
        "ValueError: the entry failed\n"
        "import time:       300 |        300 | late_module\n"
    )
    spent, rest = import_profile(log, top=2)
    assert spent == {"transformers": 0.73, "liger_kernel": 0.0}
    assert rest == "Traceback (most recent call last):\nValueError: the entry failed\n"
    assert ScriptRun(1, False, 1.0, None, rest).last_words() == "ValueError: the entry failed"
    assert import_profile("") == ({}, "")
    # `eval workload`'s line sums each phase over the processes, the packages apart
    from eval.workload_cli import _phases

    phases = {"base-0 imports": 4.0, "base-0 entry": 11.0, "gold-0 entry": 12.0,
              "base-0 import transformers": 8.0, "gold-0 import transformers": 9.0}  # fmt: skip
    line = _phases(replace(_result(base=1.0, gold=0.5), phases=phases))
    assert line == "; inside: imports 4, entry 23, import transformers 17"


def test_a_size_whose_gold_launches_no_target_does_not_count() -> None:
    """Liger-Kernel #1000's largest size tied to 0.1% on the H200: a call that never reaches
    the task's kernels times something else."""
    good = _result(base=1.0, gold=0.5)
    first, last = good.calls
    launched = (replace(first, gold_launched=("_rms_norm_backward_kernel", "_fwd")),
                replace(last, gold_launched=("_fwd",)))  # fmt: skip
    result = replace(good, calls=launched)
    ok, why = workload_verdict(result, ["_rms_norm_backward_kernel"])
    assert not ok and "large call launches no target kernel" in why and "_fwd" in why
    assert workload_verdict(result)[0]  # no kernel names given: not checked
    reached = replace(good, calls=(launched[0], replace(last, gold_launched=None)))
    assert workload_verdict(reached, ["_rms_norm_backward_kernel"])[0]  # not recorded: no claim


def test_a_workload_that_never_launches_the_named_kernel_does_not_time_the_task() -> None:
    """flash-linear-attention #8d8bfcd4d0 (H100, call 76): its `chunk_gla` workload launched
    `chunk_gla_fwd_kernel_o`, a side target, and none of the KDA kernels the PR is about."""
    good = _result(base=1.0, gold=0.5)
    first = good.calls[0]
    side = replace(
        good, calls=tuple(replace(c, gold_launched=("side_kernel",)) for c in good.calls)
    )
    kernels = ["main_kernel", "side_kernel"]
    assert workload_verdict(side, kernels)[0]  # every call launches a target
    ok, why = workload_verdict(side, kernels, "main_kernel")
    assert not ok and why == (
        "the workload's gold never launches the kernel the task is named after (main_kernel; "
        "it launched side_kernel)"
    )
    # the reasons count as one kind, whatever kernel each names
    from eval.gate import reason_kind

    assert (
        reason_kind(why) == "the workload's gold never launches the kernel the task is named after"
    )
    # launched by one size is enough; not recorded at all: no claim
    one = replace(side, calls=(replace(first, gold_launched=("main_kernel",)), side.calls[1]))
    assert workload_verdict(one, kernels, "main_kernel")[0]
    assert workload_verdict(good, kernels, "main_kernel")[0]


def test_another_files_kernel_of_the_targets_name_does_not_time_the_task() -> None:
    """A workload that launches `fused_recurrent_fwd_kernel` from another op's file (several
    flash-linear-attention ops define one; 77 of release 1.24.8's tasks have such a name) does
    not reach the PR's kernel: the gate matches `name@path` (`eval.targets.watched_kernels`)
    against the harness's `name@file` entries; a log of bare names (before 2026-12-08) still
    matches by name."""
    good = _result(base=1.0, gold=0.5)
    target = "fused_recurrent_fwd_kernel@fla/ops/gla/fused_recurrent.py"
    other = "fused_recurrent_fwd_kernel@/tmp/swp/gold/fla/ops/retention/fused_recurrent.py"
    mine = "fused_recurrent_fwd_kernel@/tmp/swp/gold/fla/ops/gla/fused_recurrent.py"
    elsewhere = replace(good, calls=tuple(replace(c, gold_launched=(other,)) for c in good.calls))
    ok, why = workload_verdict(elsewhere, [target], target)
    assert not ok and why.endswith("(it launched fused_recurrent_fwd_kernel)")
    reached = replace(
        good, calls=tuple(replace(c, gold_launched=(other, mine)) for c in good.calls)
    )
    assert workload_verdict(reached, [target], target)[0]
    bare = replace(good, calls=tuple(replace(c, gold_launched=("fused_recurrent_fwd_kernel",))
                                      for c in good.calls))  # fmt: skip
    assert workload_verdict(bare, [target], target)[0]
    # the named-kernel rule alone: the side target launched from its own file, the named one
    # only from another file
    side = "side_kernel@fla/ops/gla/utils.py"
    named_elsewhere = replace(good, calls=tuple(
        replace(c, gold_launched=(other, "side_kernel@/x/fla/ops/gla/utils.py"))
        for c in good.calls))  # fmt: skip
    ok, why = workload_verdict(named_elsewhere, [target, side], target)
    assert not ok and why.startswith(
        "the workload's gold never launches the kernel the task is named after "
        "(fused_recurrent_fwd_kernel; it launched "
    )


def test_a_gold_faster_than_the_gpu_can_move_its_tensors_is_no_measurement() -> None:
    """flash-linear-attention #449's first plan on the H200 (2026-12-06): the gold "moved" 800
    MB in 1.7 us, about 100x the copy peak, because the launch kept the test's grid. Its base
    and gold times, and their outputs (the gate read a mismatch first), say nothing; 1.3x the
    peak, what a forward-and-backward estimate may give, is no such sign."""
    good = _result(base=1.0, gold=0.5)
    first, last = good.calls
    wrong = replace(last, gold_efficiency=107.0, base_matches=False)
    skipped = replace(good, calls=(replace(first, gold_efficiency=1.3), wrong))
    ok, why = workload_verdict(skipped)
    assert not ok and "large call ran at 107x the GPU's measured peak" in why
    assert workload_verdict(replace(good, calls=(replace(first, gold_efficiency=1.3), last)))[0]


def test_decide_uses_the_workload_for_optimization_tasks(tmp_path: Path) -> None:
    _, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    task = replace(task, task_type=TypeDecision(TaskType.OPTIMIZATION, ()))
    env = Environment("H200", "", "", "", "", "", "")
    node = "tests/test_rowscale.py::test_x"

    def run(v: Variant) -> RunResult:
        return RunResult(task.task_id, v, 0, 0, FailureClass.NONE, True,
                         (TestOutcome(node, "passed", 0.1),), 1.0)  # fmt: skip

    base, gold = [run(Variant.BASE)], [run(Variant.GOLD)]
    none = decide(task, [node], base, gold, env)[0]
    assert none.status is VerificationStatus.UNVERIFIED and "no workload" in none.reason
    fast = decide(task, [node], base, gold, env, workload=_result(1.0, 0.5))[0]
    assert fast.status is VerificationStatus.VERIFIED
    slow = decide(task, [node], base, gold, env, workload=_result(1.0, 0.97))[0]
    assert slow.status is VerificationStatus.UNVERIFIED and "1.03x" in slow.reason


def test_an_optimization_for_a_newer_gpu_that_shows_no_gain_here_is_out_of_scope(
    tmp_path: Path,
) -> None:
    """Liger-Kernel #1267 on an H100 (call 70, 2026-12-07): 1.00x, its gold changes the warps
    only on Blackwell. That is no measured failure of the PR: out of scope here, with both
    the ratio and the line that says why; a gain, or a Blackwell GPU, judges it as any."""
    from eval.gate import optimization_verdict
    from eval.workload_cli import _record_verdict

    _, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    gated = replace(task, requires=Hardware(evidence=("pkg/ce.py:3: the gold's change tests "
                                                      "for a Blackwell GPU (blackwell)",),
                                            arch="blackwell"))  # fmt: skip
    h100 = "NVIDIA H100 80GB HBM3"
    status, why = optimization_verdict(gated, _result(1.0, 0.999), h100)
    assert status is VerificationStatus.OUT_OF_SCOPE
    assert why.startswith("gold not faster enough on the workload: gold 1.998 vs base 2 ms")
    assert why.endswith(f"tests for a Blackwell GPU (pkg/ce.py:3) and this GPU ({h100}) is not "
                        "one: its gain may show only there")  # fmt: skip
    assert optimization_verdict(gated, _result(1.0, 0.999), "NVIDIA B200")[0] is (
        VerificationStatus.UNVERIFIED
    )
    assert optimization_verdict(task, _result(1.0, 0.999), h100)[0] is (
        VerificationStatus.UNVERIFIED
    )
    assert optimization_verdict(gated, _result(1.0, 0.5), h100)[0] is VerificationStatus.VERIFIED
    noisy = optimization_verdict(gated, _result(1.0, 0.85, spread=0.15), h100)
    assert noisy[0] is VerificationStatus.UNVERIFIED  # a gain it cannot trust is no such sign
    _record_verdict(tdir, gated, replace(_result(1.0, 0.999), environment=f"{h100}; torch 2.11"))
    assert tdir.load_task().verification.status is VerificationStatus.OUT_OF_SCOPE


def test_a_workload_measured_before_any_reference_run_is_the_reason_of_the_verdict(
    tmp_path: Path,
) -> None:
    from eval.workload_cli import _record_verdict

    _, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    _record_verdict(tdir, task, _result(1.0, 0.97))
    slow = tdir.load_task().verification
    assert slow.status is VerificationStatus.UNVERIFIED and "1.03x (needs 1.1x)" in slow.reason
    assert slow.checked_at
    _record_verdict(tdir, task, _result(1.0, 0.5))
    fast = tdir.load_task().verification  # the tests still have to pass with the gold
    assert fast.status is VerificationStatus.UNVERIFIED
    assert "2.00x" in fast.reason and "no reference run yet" in fast.reason


def test_a_remeasured_workload_keeps_the_tests_of_a_verdict_restored_from_a_release(
    tmp_path: Path,
) -> None:
    """Liger-Kernel #1112 (2026-12-07, eighth session): verified on the H200 with day-2 reference
    runs that no state keeps (its verdict and lists come back from the release), timed again on
    an H100 at 1.11x; the workload's recorder took it back to "its tests have no reference run
    yet". The release's lists say the gold passed every kept test, so the workload decides, in
    the recorder and in `eval rejudge` (which puts right a state the old recorder wrote)."""
    from curation.model import Verification
    from eval.__main__ import main as eval_main
    from eval.workload_cli import _record_verdict

    _, tasks, tdir = _task_repo(tmp_path, {})
    node = "tests/test_rowscale.py::test_rowscale[1]"
    task = tdir.load_task()
    assert task.task_type.type is TaskType.OPTIMIZATION
    task = replace(task, tests=replace(task.tests, node_ids=(node,), pass_to_pass=(node,)))
    released = Verification(VerificationStatus.VERIFIED, "1 tests pass with the gold; workload "
                            "(kernel_time, 2 sizes): gold 1 vs base 2 ms kernel time, 2.00x",
                            "2026-12-02T17:45:19+00:00", "NVIDIA H200")  # fmt: skip
    write_record(tdir.path(TaskFile.TASK), replace(task, verification=released))
    fast = replace(_result(1.0, 0.8), measured_at="2026-12-07T21:47:25+00:00")
    line = _record_verdict(tdir, tdir.load_task(), fast)
    now = tdir.load_task().verification
    assert now.status is VerificationStatus.VERIFIED, now.reason
    assert now.reason.startswith("1 tests pass with the gold; ") and "1.25x" in now.reason
    assert now.checked_at == fast.measured_at and "the released reference" in line
    # the old recorder's verdict, then rejudged from the stored result
    tdir.record_verification(Verification(VerificationStatus.UNVERIFIED, "1.25x; its tests have "
                                          "no reference run yet", fast.measured_at))  # fmt: skip
    write_record(tdir.path(TaskFile.WORKLOAD_RESULT), fast)
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0
    assert tdir.load_task().verification == now
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0  # the same verdict: unchanged
    assert tdir.load_task().verification == now
    slow = replace(_result(1.0, 0.97), measured_at="2026-12-08T00:00:00+00:00")
    _record_verdict(tdir, tdir.load_task(), slow)
    assert tdir.load_task().verification.status is VerificationStatus.UNVERIFIED
    # lists that do not say the gold passed every kept test decide nothing
    write_record(
        tdir.path(TaskFile.TASK),
        replace(task, verification=released, tests=replace(task.tests, pass_to_pass=())),
    )
    _record_verdict(tdir, tdir.load_task(), fast)
    assert "no reference run yet" in tdir.load_task().verification.reason


# --- scores ------------------------------------------------------------------------------------


def test_the_half_gain_completion_rule_and_the_do_nothing_prediction() -> None:
    # gold 2x faster than base: the bar is 1.5x over the base
    assert perf_score(True, 2.0, 1.0, 2.0 / 1.5).gain_met
    assert not perf_score(True, 2.0, 1.0, 2.0 / 1.49).gain_met
    assert not perf_score(True, 2.0, 1.0, 2.0).gain_met  # the setup state itself
    assert not perf_score(False, 2.0, 1.0, 1.0).gain_met  # fast but wrong
    s = perf_score(True, 2.0, 1.0, 1.0 * 1.02)  # within 3% of the gold
    assert s.fast_gold and s.fast_1 and s.pmr == pytest.approx(1 / 1.02)
    assert not perf_score(True, 2.0, 1.0, 1.1).fast_gold


def test_efficiency_is_the_fraction_of_the_peak_of_the_gpu_it_ran_on() -> None:
    h200 = "NVIDIA H200; torch 2.11.0+cu130; triton 3.6.0"
    assert efficiency(int(4.3e9), 0, 1.0, h200) == pytest.approx(1.0)  # 4.3 GB in 1 ms
    assert efficiency(0, int(790e9), 2.0, h200) == pytest.approx(0.5)
    assert efficiency(100, 0, None, h200) is None
    # a GPU whose peaks were never measured gets none, not a fraction of the H200's
    assert efficiency(int(4.3e9), 0, 1.0, "NVIDIA B200; torch 2.11.0") is None
    assert efficiency(int(4.3e9), 0, 1.0, "") is None
    # the name is read from the GPU part only: a package called H200 names no GPU
    assert efficiency(int(4.3e9), 0, 1.0, "NVIDIA A100; torch H200") is None
    # the whole name: an H100 PCIe (2 TB/s) is not the H100 80GB HBM3 that was measured
    assert efficiency(int(4.3e9), 0, 1.0, "NVIDIA H100 PCIe; torch 2.11") is None
    for gpu, peaks in PEAKS.items():
        one_ms = int(peaks.bytes_per_s / 1e3)
        assert efficiency(one_ms, 0, 1.0, f"{gpu}; torch 2.11") == pytest.approx(1.0)


def test_a_stored_efficiency_is_given_on_the_gpu_that_ran_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from eval import perf_scores
    from eval.perf_scores import Peaks, rebased

    name = "NVIDIA H100 80GB HBM3"
    monkeypatch.setitem(perf_scores.PEAKS, name, Peaks(bytes_per_s=2.15e12, bf16_flops=600e12))
    h100, h200 = f"{name}; torch 2.11.0+cu130; triton 3.6.0", "NVIDIA H200"
    # an H100 result stored as a fraction of the H200's copy peak is twice that of the H100's
    assert rebased(0.4, 0, h200, h100) == pytest.approx(0.8)
    assert rebased(0.4, 0, name, h100) == pytest.approx(0.4)
    assert rebased(None, 0, h200, h100) is None
    assert rebased(0.4, 0, h200, "NVIDIA B200; torch 2.11") is None  # never measured
    # with FLOPs counted the stored value may be the FLOP fraction: only its own GPU's stands
    assert rebased(0.4, 10**12, h200, h100) is None
    assert rebased(0.4, 10**12, name, h100) == pytest.approx(0.4)


def test_scores_read_the_workload_times_of_a_prediction(tmp_path: Path) -> None:
    from core.files import write_record
    from eval.score import workload_flags, workload_times

    calls = [CallResult(SizeLabel.TYPICAL, _t(2.0), _t(1.0), _t(1.9), True, False,
                        "prediction: out differs", bytes_moved=10**9)]  # fmt: skip
    result = summarize_result("t", Metric.KERNEL_TIME, calls)
    (tmp_path / "t").mkdir()
    write_record(tmp_path / "t" / "workload_result.json", result)
    got = workload_times(tmp_path, "t")
    assert got is not None and got.prediction_total_ms == pytest.approx(1.9)
    assert got.calls[0].prediction_matches is False
    assert workload_flags(got) == ["workload_outputs_differ"]
    assert workload_times(tmp_path, "other") is None
    # a prediction whose workload run failed (no time of its own) is judged on that failure
    why = "prediction: tampered: time.perf_counter replaced during the call"
    broke = [CallResult(SizeLabel.TYPICAL, _t(2.0), _t(1.0), None, True, None, error=why)]
    (tmp_path / "u").mkdir()
    write_record(
        tmp_path / "u" / "workload_result.json", summarize_result("u", Metric.KERNEL_TIME, broke)
    )
    got = workload_times(tmp_path, "u")
    assert got is not None and got.prediction_total_ms is None
    assert workload_flags(got) == ["workload_error"]


def test_a_predictions_efficiency_is_what_the_gold_moves_over_its_times() -> None:
    from eval.score import prediction_efficiency

    h200 = "NVIDIA H200; torch 2.11.0+cu130; triton 3.6.0"
    # the gold moves 0.8 and 0.4 of the peak in its 1 ms and 2 ms; the prediction takes 2 and 2
    # ms: (0.8 * 1 + 0.4 * 2) / (2 + 2); the plan's byte estimate (here 10x too much) is not read
    calls = [
        CallResult(SizeLabel.SMALL, _t(3.0), _t(1.0), _t(2.0), bytes_moved=10**12,
                   gold_efficiency=0.8, peaks="NVIDIA H200"),
        CallResult(SizeLabel.LARGE, _t(3.0), _t(2.0), _t(2.0), bytes_moved=10**12,
                   gold_efficiency=0.4, peaks="NVIDIA H200"),
    ]  # fmt: skip
    result = summarize_result("t", Metric.KERNEL_TIME, calls, h200)
    assert prediction_efficiency(result) == pytest.approx(0.4)
    # a stored H200 fraction on an H100 is given on the H100's own peak
    h100 = summarize_result("t", Metric.KERNEL_TIME, calls, "NVIDIA H100 80GB HBM3; torch 2.11")
    assert prediction_efficiency(h100) == pytest.approx(0.4 * 4.3 / 3.047)
    # no gold efficiency on a call (a cold sequence, an unmeasured GPU), or no prediction time
    cold = [replace(calls[0], gold_efficiency=None), calls[1]]
    assert prediction_efficiency(summarize_result("t", Metric.KERNEL_TIME, cold, h200)) is None
    untimed = [calls[0], replace(calls[1], prediction=None)]
    assert prediction_efficiency(summarize_result("t", Metric.KERNEL_TIME, untimed, h200)) is None
    b200 = summarize_result("t", Metric.KERNEL_TIME, calls, "NVIDIA B200; torch 2.11")
    assert prediction_efficiency(b200) is None
    # a cold sequence stored with gold efficiencies (before 2026-12-05) gives none either,
    # as the report shows none for it
    assert prediction_efficiency(summarize_result("t", Metric.COLD_WALL_TIME, calls, h200)) is None


# --- the harness, end to end on the CPU --------------------------------------------------------


def _rowscale_workload(task_id: str) -> Workload:
    args = (ArgSpec("x", True, (64, 32), "float32"), ArgSpec("w", True, (32,), "float32"))
    call = WorkloadCall(SizeLabel.SMALL, Source.BENCHMARK_SCRIPT, "test", Entry(
        "pkg.ops.rowscale", "rowscale"), args)  # fmt: skip
    kernel = WorkloadCall(SizeLabel.LARGE, Source.SCALED_TEST_CALL, "test",
                          Entry("pkg.ops.rowscale", "rowscale_kernel", EntryKind.KERNEL),
                          (*args[:1], args[1], ArgSpec("out", True, (64, 32), "float32",
                           rule="zeros"), ArgSpec("n_cols", False, value=32),
                           ArgSpec("BLOCK", False, value=32, keyword=True)),
                          grid=(64,))  # fmt: skip
    return Workload(task_id, Metric.KERNEL_TIME, "default", (call, kernel))


def test_a_first_harness_process_cut_by_its_limit_runs_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling and autotuning from a cold cache can outlast a process's limit: the first
    round's process runs again, and the cut attempt is named in the seconds and the log."""
    import dataclasses

    from eval import workload_run
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    settings = MeasureSettings(rounds=2, cpu_ok=True, trusted_unsandboxed=True, timeout_s=300)
    original = workload_run._run_once
    made: list[str] = []

    def run_once(tree, workload, settings, trusted, cache, save=True):  # type: ignore[no-untyped-def]
        made.append(tree.name)
        result, run = original(tree, workload, settings, trusted, cache, save)
        if made.count(tree.name) == 1:
            return {"error": "timed out"}, dataclasses.replace(run, timed_out=True, output=None)
        return result, run

    monkeypatch.setattr(workload_run, "_run_once", run_once)
    lines: list[str] = []
    store = SourceStore(GitRepo(repo.path))
    result = measure_task(task, tdir, store, tmp_path / "scratch", settings, progress=lines.append)
    # base-0 and gold-0 each cut once and run again; the second round runs once each
    assert made == ["base", "base", "gold", "gold", "gold", "base"]
    assert {"base-0 cut", "gold-0 cut", "base-0", "gold-0"} <= set(result.seconds)
    assert lines[0].startswith("base-0: cut at its limit after") and len(lines) == 6
    assert [c.error for c in result.calls] == ["", ""]
    assert result.base_total_ms and result.gold_total_ms


def test_the_harness_times_base_and_gold_and_compares_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval import workload_run
    from eval.perf_scores import efficiency
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    settings = MeasureSettings(rounds=2, cpu_ok=True, trusted_unsandboxed=True, timeout_s=300)
    store = SourceStore(GitRepo(repo.path))
    saves: list[tuple[str, bool]] = []
    caches: dict[str, set[Path]] = {}
    seen: list[tuple[str, list[str]]] = []
    original = workload_run._run_once

    def run_once(tree, workload, settings, trusted, cache, save=True):  # type: ignore[no-untyped-def]
        saves.append((tree.name, save))
        caches.setdefault(tree.name, set()).add(cache)
        seen.append((tree.name, sorted(p.name for p in cache.iterdir())))
        got = original(tree, workload, settings, trusted, cache, save)
        # what Triton would leave: a compiled kernel, and an entry still being written
        (cache / f"k-{tree.name}").mkdir(exist_ok=True)
        (cache / f"k-{tree.name}" / "kernel.cubin").write_text(tree.name)
        (cache / "tmp.pid_7").mkdir(exist_ok=True)
        return got

    monkeypatch.setattr(workload_run, "_run_once", run_once)
    gpu = "NVIDIA H200; torch 2.11.0+cu130; triton 3.6.0"
    result = measure_task(task, tdir, store, tmp_path / "scratch", settings, environment=gpu)
    # only a variant's first process writes its outputs (gigabytes at realistic sizes)
    assert [save for _, save in saves] == [True, True, False, False]
    # the gold's first process starts from a copy of what the base's compiled and autotuned
    # (the kernels the PR left alone: #643, 7 of 8); the base never sees what the gold made
    (base_cache,), (gold_cache,) = caches["base"], caches["gold"]
    assert base_cache != gold_cache and base_cache.parent == gold_cache.parent
    assert seen == [("base", []), ("gold", ["k-base"]), ("gold", ["k-base", "k-gold", "tmp.pid_7"]),
                    ("base", ["k-base", "tmp.pid_7"])]  # fmt: skip
    pred = workload_run.warm_cache(settings, tmp_path / "scratch", Variant.PREDICTION, task.task_id)
    assert "trusted" not in pred.parts
    assert [c.error for c in result.calls] == ["", ""]
    for c in result.calls:
        assert c.base is not None and c.gold is not None and c.base.reps >= 6
        assert c.base_matches is True  # w * x == x * w
    assert result.base_total_ms and result.gold_total_ms and result.speedup
    # the wrapper call's efficiency is the rate of what it read (x, w) and gave back (out);
    # the bare kernel keeps the plan's estimate (0 here: the workload gives none), and both
    # rows keep the plan's bytes, by which runs of one plan are told apart
    wrapper = result.calls[0]
    moved = 64 * 32 * 4 + 32 * 4 + 64 * 32 * 4
    assert wrapper.gold is not None and wrapper.gold_efficiency == pytest.approx(
        efficiency(moved, 0, wrapper.gold.median_ms, gpu))  # fmt: skip
    assert result.calls[1].gold_efficiency is None
    assert [c.bytes_moved for c in result.calls] == [0, 0]
    # where the time went: each harness process, the trees, the comparison
    assert set(result.seconds) == {"prepare", "base-0", "gold-0", "gold-1", "base-1", "compare"}
    assert all(s >= 0 for s in result.seconds.values()) and result.seconds["base-0"] > 0
    # and inside each process: imports, inputs, the first (compiling) call, the timed calls
    procs = ("base-0", "gold-0", "gold-1", "base-1")
    phases = ("imports", "entry", "inputs", "outputs", "timing")
    own = {k for k in result.phases if " import " not in k}
    assert own == {f"{p} {phase}" for p in procs for phase in phases}
    # and the import profile (`-X importtime`) of each process by top-level package: torch's
    # own modules take most of a process's "imports"
    assert all(result.phases[f"{p} import torch"] > 0 for p in procs)
    assert all(k.split(" import ")[0] in procs for k in set(result.phases) - own)
    assert result.phases["base-0 imports"] > 0 and result.phases["base-0 timing"] > 0
    assert result.phases["base-0 entry"] > 0  # the framework's import, apart from the inputs
    assert sum(v for k, v in result.phases.items() if k.startswith("base-0") and k in own) <= (
        result.seconds["base-0"] + 0.05)  # fmt: skip
    # the harness saw which Triton kernels each size launched: the wrapper and the bare kernel
    # both reach the target
    # both reach the target, named with the file that defines it
    assert [[kernel_name(k) for k in c.gold_launched or ()] for c in result.calls] == [
        ["rowscale_kernel"]] * 2  # fmt: skip
    assert all(same_kernel(k, w) for c in result.calls for k in c.gold_launched or ()
               for w in watched_kernels(task))  # fmt: skip
    # the file relative to the variant's tree: no scratch folder in a published result
    assert {k for c in result.calls for k in c.gold_launched or ()} == {
        "rowscale_kernel@pkg/ops/rowscale.py"}  # fmt: skip
    # a prediction that computes something else is caught by the comparison
    kernel = "@triton.jit\n" + ROWSCALE.split("@triton.jit\n")[1].split("\n\n\ndef ")[0]
    wrong = {
        "task_id": task.task_id,
        "kernels": {"rowscale_kernel": kernel.replace("x * w", "x + w")},
    }
    built: dict[str, object] = {}  # each tree gets the framework's compiled extensions

    def install(tree, python, cache_root, trusted=None):  # type: ignore[no-untyped-def]
        built[tree.name] = trusted() if trusted is not None else None
        return ""

    monkeypatch.setattr(workload_run, "install_extensions", install)
    pred = measure_task(task, tdir, store, tmp_path / "scratch2",
                        replace(settings, rounds=1), wrong)  # fmt: skip
    assert [c.prediction_matches for c in pred.calls] == [False, False], pred.calls
    assert "prediction" in pred.calls[0].mismatch
    # never in the prediction's tree: a miss builds in the setup state's (the base tree)
    assert built == {
        "base": None,
        "gold": None,
        "prediction": tmp_path / "scratch2" / task.task_id / "base",
    }


def test_a_cold_round_starts_triton_on_the_harness_kernel_before_the_timed_calls(
    tmp_path: Path,
) -> None:
    """A cold_wall_time round's first call held Triton's one-time start in the process (the
    driver utilities built into the emptied cache), which both variants paid and which moved
    Megatron-LM #5608's totals by hundreds of ms: the harness's own kernel takes it first, in
    its own phase, and the result says so (scripts/workload_agreement.py compares it only with
    measurements made so: tests/test_workload_agreement.py)."""
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    cold = replace(_rowscale_workload(task.task_id), metric=Metric.COLD_WALL_TIME)
    tdir.store(TaskFile.WORKLOAD, cold)
    settings = MeasureSettings(cold_rounds=1, cpu_ok=True, trusted_unsandboxed=True,
                               timeout_s=300)  # fmt: skip
    result = measure_task(task, tdir, SourceStore(GitRepo(repo.path)), tmp_path / "scratch",
                          settings)  # fmt: skip
    assert [c.error for c in result.calls] == ["", ""]
    assert result.runtime_warmed is True
    for proc in ("base-0", "gold-0"):
        assert result.phases[f"{proc} runtime"] > 0
        assert result.phases[f"{proc} imports"] >= 0
    # stored, and read back (the kernel-time test above has no such phase or flag)
    tdir.store(TaskFile.WORKLOAD_RESULT, result)
    again = tdir.load(TaskFile.WORKLOAD_RESULT, type(result))
    assert again is not None and again.runtime_warmed is True


@pytest.mark.skipif(not shutil.which("bwrap"), reason="the sandbox needs bubblewrap")
def test_a_sandboxed_harness_runs_on_the_wheelhouse_venv(tmp_path: Path) -> None:
    """Call 18 on the H200 (Megatron-LM #4460, `eval workload --wheelhouse`): the harness's
    Python was the task's wheelhouse venv, which the sandbox did not show, so every process
    failed with "prlimit: failed to execute .../venvs/.../bin/python". The venv is now mounted
    read-only beside the harness, and its own packages import there."""
    from envbuild.wheelhouse import prepare_venv
    from eval.workload_run import MeasureSettings, measure_task
    from tests.test_wheelhouse import build_wheel

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    house = tmp_path / "house"
    house.mkdir()
    wheel = build_wheel(tmp_path, "tpbdep", "1.0")
    wheel.rename(house / wheel.name)
    python = prepare_venv(house, tmp_path / "venvs")  # under the sandbox's private /tmp
    settings = MeasureSettings(rounds=1, cpu_ok=True, timeout_s=300, python=str(python),
                               venv=python.parent.parent)  # fmt: skip
    store = SourceStore(GitRepo(repo.path))
    result = measure_task(task, tdir, store, tmp_path / "scratch", settings)
    assert [c.error for c in result.calls] == ["", ""]
    assert all(c.base is not None and c.gold is not None for c in result.calls)
    # without the mount the same venv is not there inside the sandbox
    blind = replace(settings, venv=None)
    result = measure_task(task, tdir, store, tmp_path / "scratch2", blind)
    assert all("bin/python" in c.error for c in result.calls), result.calls


def test_an_anchored_prediction_runs_two_processes_and_takes_the_base_from_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`eval workload --anchored` (issue 10, the harness's cost): the gate measured base and
    gold; a prediction is timed with the gold once beside it, and the reference's base times
    stand in while the gold's total agrees with the reference's (on the H200 two days agreed
    within 1.3%). Six harness processes become two (call 12: about 25 s each, most of it the
    framework's import). A gold that drifted, another machine or another metric: the full
    protocol, saying why."""
    from eval import workload_run
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    settings = MeasureSettings(rounds=2, cpu_ok=True, trusted_unsandboxed=True, timeout_s=300)
    store = SourceStore(GitRepo(repo.path))
    ref = measure_task(task, tdir, store, tmp_path / "s0", replace(settings, rounds=1),
                       environment="cpu")  # fmt: skip
    kernel = "@triton.jit\n" + ROWSCALE.split("@triton.jit\n")[1].split("\n\n\ndef ")[0]
    gold = {"task_id": task.task_id, "kernels": {"rowscale_kernel": kernel}}
    monkeypatch.setattr(workload_run, "ANCHOR_DRIFT", 1e9)  # CPU times drift: accept any
    got = measure_task(task, tdir, store, tmp_path / "s1", settings, gold, "cpu", ref)
    assert set(got.seconds) == {"prepare", "gold-0", "prediction-0", "compare"}
    assert got.anchor.startswith(f"base from the reference measured {ref.measured_at}")
    assert [c.base for c in got.calls] == [c.base for c in ref.calls]
    assert [c.prediction_matches for c in got.calls] == [True, True]
    assert got.base_total_ms == ref.base_total_ms and got.prediction_total_ms
    # the gold drifted: the full protocol (base, gold, prediction, two rounds), and why
    monkeypatch.setattr(workload_run, "ANCHOR_DRIFT", -1.0)
    lines: list[str] = []
    full = measure_task(task, tdir, store, tmp_path / "s2", settings, gold, "cpu", ref,
                        lines.append)  # fmt: skip
    assert lines[2].startswith("not anchored: the gold's total is") and len(lines) == 9
    assert len([k for k in full.seconds if k[-2:] in ("-0", "-1")]) == 8  # 2 tried, then 6
    assert {"anchor gold-0", "anchor prediction-0"} <= set(full.seconds)
    assert full.anchor.startswith("not anchored: the gold's total is")
    # another machine's reference is never an anchor
    other = replace(ref, environment="NVIDIA H200")
    assert workload_run.anchor_problem(other, _rowscale_workload(task.task_id), "cpu") == (
        "the reference ran on NVIDIA H200")  # fmt: skip
    cold = replace(_rowscale_workload(task.task_id), metric=Metric.COLD_WALL_TIME)
    assert workload_run.anchor_problem(ref, cold, "cpu") == "the metric is cold_wall_time"
    short = replace(ref, calls=ref.calls[:1])
    assert "other sizes" in str(workload_run.anchor_problem(short, _rowscale_workload("t"), "cpu"))
    # the command refuses --anchored without predictions
    from eval.__main__ import main as eval_main

    argv = ["workload", "--tasks", str(tdir.root.parent), "--anchored", "--out", str(tmp_path)]
    assert eval_main(argv) == 1


def test_a_prediction_that_replaces_a_timer_loses_its_workload_times(tmp_path: Path) -> None:
    # under TRITON_INTERPRET=1 a kernel body is Python: this one makes the host clock stand still
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    settings = MeasureSettings(rounds=1, cpu_ok=True, trusted_unsandboxed=True, timeout_s=300)
    kernel = "@triton.jit\n" + ROWSCALE.split("@triton.jit\n")[1].split("\n\n\ndef ")[0]
    body = "    row = tl.program_id(0)\n"
    forged = kernel.replace(body, body + "    import time\n    time.perf_counter = lambda: 0.0\n")
    pred = {"task_id": task.task_id, "kernels": {"rowscale_kernel": forged}}
    store = SourceStore(GitRepo(repo.path))
    result = measure_task(task, tdir, store, tmp_path / "scratch", settings, pred)
    first = result.calls[0]
    assert first.prediction is None  # its times were dropped
    assert "prediction: tampered: time.perf_counter replaced" in first.error
    assert first.base is not None and first.gold is not None


def test_plan_only_command_writes_workloads_and_a_summary(tmp_path: Path, capsys) -> None:
    from eval.__main__ import main

    repo, tasks, tdir = _task_repo(
        tmp_path, {"benchmark/scripts/benchmark_rowscale.py": LIGER_STYLE}
    )
    task = tdir.load_task()
    if task.task_type.type is not TaskType.OPTIMIZATION:  # the classifier's call, not ours
        pytest.skip(f"curated as {task.task_type.type}")
    out = tmp_path / "out"
    rc = main(["workload", "--plan-only", "--tasks", str(tasks), "--out", str(out),
               "--repo-path", f"{task.framework}={repo.path}"])  # fmt: skip
    assert rc == 0
    plan = json.loads(tdir.path(TaskFile.WORKLOAD).read_text())
    assert [c["source"] for c in plan["calls"]] == ["benchmark_script"] * 3
    summary = json.loads((out / "workload_summary.json").read_text())
    assert list(summary["planned"]) == [tdir.id]
    assert "workloads of 1 tasks" in capsys.readouterr().out
    # without CUDA the measurement is skipped with one line, not an error
    rc = main(["workload", "--tasks", str(tasks), "--out", str(out),
               "--repo-path", f"{task.framework}={repo.path}"])  # fmt: skip
    assert rc == 0 and "no CUDA device" in capsys.readouterr().err


def test_a_name_imported_from_a_package_above_the_target_and_valid_labels() -> None:
    from eval.workload_scripts import evaluate, find_calls

    script = """import torch
from pkg.ops import rowscale


def bench(input):
    BT, V = input.x, input.extra_benchmark_config["V"]
    x = torch.randn(BT, V, dtype=torch.float32, device="cuda")
    target = torch.randint(V, (BT, 1), device="cuda").squeeze(1)
    return rowscale(x, target)


common_configs = {"x_name": "BT", "x_values": [1024], "extra_benchmark_configs": [{"V": 512}]}
"""
    modules = {"pkg.ops.rowscale"}
    none, _ = find_calls("benchmarks/b.py", script, modules, set())
    assert none == []  # the package is above the target, but nothing says the name is in it
    calls, why = find_calls("benchmarks/b.py", script, modules, set(), frozenset({"rowscale"}))
    assert why == "" and len(calls) == 1
    _, args, _ = evaluate(calls[0], calls[0].sweeps[0])
    x, target = args
    assert x.shape == (1024, 512) and target.shape == (1024,)
    assert target.rule == "labels" and target.params["high"] == 512


# --- what a call times: forward, forward and backward, or the backward alone ------------------

SCALE_FN = """import torch

CALLS = {"forward": 0, "backward": 0}


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        CALLS["forward"] += 1
        ctx.save_for_backward(x)
        return x * 3.0

    @staticmethod
    def backward(ctx, dy):
        CALLS["backward"] += 1
        (x,) = ctx.saved_tensors
        return dy * 3.0 + x * 0.0


def scale(x):
    return _Scale.apply(x)
"""


def test_the_mode_follows_the_kernels_the_pr_changes() -> None:
    from types import SimpleNamespace as NS

    def task(*names: str):
        return NS(kernels=[NS(name=n) for n in names])

    assert workload_mode(task("_layer_norm_bwd_kernel", "dx_backward")) is Mode.BACKWARD
    assert workload_mode(task("_layer_norm_fwd_kernel", "_layer_norm_bwd_kernel")) is Mode.FULL
    assert workload_mode(task("rowscale_kernel")) is Mode.FORWARD


@pytest.mark.parametrize("mode", ["full", "backward"])
def test_a_backward_call_times_the_backward_alone_with_the_same_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    import importlib

    from eval import workload_inputs
    from eval.workload_harness import Call

    (tmp_path / "scalefn.py").write_text(SCALE_FN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("scalefn", None)
    mod = importlib.import_module("scalefn")
    spec = {"label": "small", "entry": {"module": "scalefn", "name": "scale", "kind": "function"},
            "args": [{"name": "x", "tensor": True, "shape": [8, 4], "dtype": "float32",
                      "rule": "normal", "params": {}, "grad": True}], "mode": mode}  # fmt: skip
    call = Call(torch, workload_inputs, spec, seed=1, device=torch.device("cpu"), n_inputs=2)
    outs = call.outputs(workload_inputs)
    assert len(outs) == 2  # the output and the input's gradient
    grad = next(v for k, v in outs.items() if k.startswith("grad"))
    torch.testing.assert_close(grad, call.grads[0][0] * 3.0)  # the kept upstream gradient
    before = dict(mod.CALLS)
    for r in range(6):
        call(r % 2)
    forwards = mod.CALLS["forward"] - before["forward"]
    assert mod.CALLS["backward"] - before["backward"] == 6
    # the backward mode runs each input set's forward once and keeps its graph
    assert forwards == (2 if mode == "backward" else 6)
    x = call.sets[1][0][0]
    torch.testing.assert_close(x.grad, call.grads[1][0] * 3.0)  # one backward's, not summed


def test_the_gate_judges_the_total_and_names_a_size_where_the_gold_is_slower() -> None:
    """Liger-Kernel #815 on the H200: the gold is 1.6x slower at the small size (0.20 vs
    0.13 ms) and 2.9x / 4.3x faster at the typical and large ones, 3.28x in total. The metric is
    the total, so it passes, and the reason says where the gold loses."""
    calls = [CallResult(SizeLabel.SMALL, _t(0.1265), _t(0.2026), base_matches=True),
             CallResult(SizeLabel.TYPICAL, _t(1.0947), _t(0.3758), base_matches=True),
             CallResult(SizeLabel.LARGE, _t(2.9228), _t(0.6866), base_matches=True)]  # fmt: skip
    result = summarize_result("t", Metric.KERNEL_TIME, calls)
    assert result.separated
    ok, why = workload_verdict(result)
    assert ok and "3.28x" in why and "slower on small: gold 0.2026 vs base 0.1265 ms" in why
    # the totals' spreads: a 1.18x total whose spreads overlap still fails
    noisy = summarize_result(
        "t",
        Metric.KERNEL_TIME,
        [CallResult(SizeLabel.SMALL, _t(1.0, 0.15), _t(0.85, 0.15), base_matches=True)],
    )
    assert not noisy.separated and "spreads overlap" in workload_verdict(noisy)[1]
    # #815's workload_result.json was measured on 2026-12-02 while the rule was per size, and
    # stored `separated: false`; `eval rejudge` (2026-12-03) read that flag and withdrew the
    # task. The gate judges the calls by today's rule, whatever flag was stored.
    stale = replace(result, separated=False)
    assert workload_verdict(stale)[0]


SANITIZER_LOG_CLEAN = """========= COMPUTE-SANITIZER
harness output
========= ERROR SUMMARY: 0 errors
"""
SANITIZER_LOG_ERRORS = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at rowscale_kernel+0x1d0
=========     by thread (31,0,0) in block (63,0,0)
=========     Address 0x7f3a00002000 is out of bounds
========= ERROR SUMMARY: 2 errors
"""


def test_memcheck_verdicts_read_the_sanitizer_summary() -> None:
    from eval.sandbox import ScriptRun
    from eval.workload_run import memcheck_verdict

    ok = {"calls": [{"label": "small", "ran": True}]}
    run = ScriptRun(0, False, 1.0, b"", SANITIZER_LOG_CLEAN)
    assert memcheck_verdict(run, ok, "small") == "clean on small"
    run = ScriptRun(86, False, 1.0, b"", SANITIZER_LOG_ERRORS)
    assert memcheck_verdict(run, ok, "small") == (
        "2 errors on small: Invalid __global__ read of size 4 bytes"
    )
    # no summary: the sanitizer itself failed (no GPU, no permission); a timeout says so
    run = ScriptRun(1, False, 1.0, None, "Error: Target application terminated before first "
                    "instrumented API call")  # fmt: skip
    assert memcheck_verdict(run, {"error": "x"}, "small").startswith("not run: no memcheck summary")
    assert memcheck_verdict(ScriptRun(None, True, 9.0, None, ""), {}, "small") == (
        "not run: timed out on small"
    )
    # a clean summary over a call that failed checked nothing
    failed = {"calls": [{"label": "small", "error": "RuntimeError: boom"}]}
    run = ScriptRun(0, False, 1.0, b"", SANITIZER_LOG_CLEAN)
    assert memcheck_verdict(run, failed, "small") == (
        "not run: the call failed on small: RuntimeError: boom"
    )


def _stand_in_sanitizer(path: Path, log: str, status: int) -> Path:
    """An executable that takes compute-sanitizer's arguments, runs the command after them and
    prints `log` (the real tool needs a GPU; tests/test_workload.py's GPU test runs it)."""
    path.write_text(
        "#!/bin/sh\n"
        'while [ "$1" != "${1#-}" ]; do shift; shift; done\n'
        '"$@"\nrc=$?\n'
        f"printf '%s' {shlex.quote(log)}\n"
        f"[ $rc -ne 0 ] && exit $rc\nexit {status}\n"
    )
    path.chmod(0o755)
    return path


def test_memcheck_runs_the_golds_smallest_call_once_under_the_sanitizer(tmp_path: Path) -> None:
    from eval.workload_run import MeasureSettings, measure_task

    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    store = SourceStore(GitRepo(repo.path))
    seen = tmp_path / "seen.json"
    sanitizer = _stand_in_sanitizer(tmp_path / "cs", SANITIZER_LOG_CLEAN, 0)
    settings = MeasureSettings(rounds=1, cpu_ok=True, trusted_unsandboxed=True, timeout_s=300,
                               memcheck=True, sanitizer=str(sanitizer))  # fmt: skip
    result = measure_task(task, tdir, store, tmp_path / "s1", settings)
    assert result.memcheck == "clean on small"
    assert "memcheck" in result.seconds and result.base_total_ms
    # the checked process ran the first call only, once, untimed
    caching = tmp_path / "caching.txt"
    sanitizer.write_text(sanitizer.read_text().replace(
        '"$@"\n', f'cp .tpb_workload_job.json {seen}\n'
                   f'echo "$PYTORCH_NO_CUDA_MEMORY_CACHING" > {caching}\n"$@"\n'))  # fmt: skip
    measure_task(task, tdir, store, tmp_path / "s2", settings)
    job = json.loads(seen.read_text())
    assert job["check_only"] and not job["save_outputs"] and len(job["calls"]) == 1
    # and with PyTorch's caching allocator off: memcheck bounds an access by its cudaMalloc
    assert caching.read_text().strip() == "1"
    bad = _stand_in_sanitizer(tmp_path / "cs2", SANITIZER_LOG_ERRORS, 86)
    result = measure_task(task, tdir, store, tmp_path / "s3", replace(settings, sanitizer=str(bad)))
    assert result.memcheck.startswith("2 errors on small: Invalid __global__ read")


@pytest.mark.gpu
def test_memcheck_on_the_gpu(tmp_path: Path) -> None:
    from eval.memcheck import find_sanitizer
    from eval.timing import cuda_available
    from eval.workload_run import MeasureSettings, measure_task

    if not cuda_available() or find_sanitizer() is None:
        pytest.skip("needs CUDA and compute-sanitizer")
    repo, _, tdir = _task_repo(tmp_path, {})
    task = tdir.load_task()
    tdir.store(TaskFile.WORKLOAD, _rowscale_workload(task.task_id))
    settings = MeasureSettings(rounds=1, trusted_unsandboxed=True, timeout_s=300, memcheck=True)
    result = measure_task(task, tdir, SourceStore(GitRepo(repo.path)), tmp_path / "s", settings)
    assert result.memcheck == "clean on small", result.memcheck


def test_the_harness_builds_a_module_entry_with_its_keywords_and_casts_it(
    tmp_path: Path, monkeypatch
) -> None:
    from eval import workload_harness, workload_inputs

    (tmp_path / "tinymods.py").write_text(
        "import torch\n\n\nclass Scale(torch.nn.Module):\n"
        "    def __init__(self, hidden_size, scale=1.0):\n        super().__init__()\n"
        "        self.w = torch.nn.Parameter(torch.full((hidden_size,), scale))\n\n"
        "    def forward(self, x):\n        return x * self.w\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    x = ArgSpec("x", True, (4, 8), "bfloat16")
    entry = Entry("tinymods", "Scale", EntryKind.MODULE, init={"hidden_size": 8, "scale": 2.0},
                  dtype="bfloat16")  # fmt: skip
    call = WorkloadCall(SizeLabel.SMALL, Source.TEST_CALL, "tests/t.py:1", entry, (x,), {},
                        Mode.FORWARD)  # fmt: skip
    from core.records import to_json

    built = workload_harness.Call(torch, workload_inputs, to_json(call), 7, "cpu", 1)
    assert built.fn.w.dtype == torch.bfloat16 and float(built.fn.w.detach()[0]) == 2.0
    out = built()
    assert out.dtype == torch.bfloat16 and out.shape == (4, 8)


TUNED = """import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128})],
                 key=["n_cols"])
@triton.jit
def tuned_rowscale_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for start in range(0, n_cols, BLOCK):
        mask = start + offs < n_cols
        x = tl.load(x_ptr + row * n_cols + start + offs, mask=mask)
        tl.store(out_ptr + row * n_cols + start + offs, 2 * x, mask=mask)
"""


def test_an_autotuned_kernels_captured_meta_parameters_give_way_to_the_autotuner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A captured launch of an autotuned kernel holds the config the autotuner chose (`BLOCK`);
    passed again, Triton refuses the launch ("Conflicting meta-parameters", every
    flash-linear-attention kernel-level plan on 2026-12-05): the harness leaves it out. On the
    CPU, where the interpreter has no driver to benchmark configs with, the autotuner keeps the
    captured config alone."""
    from eval import workload_harness as harness
    from eval import workload_inputs

    (tmp_path / "tunedpkg").mkdir()
    (tmp_path / "tunedpkg" / "__init__.py").write_text("")
    (tmp_path / "tunedpkg" / "k.py").write_text(TUNED)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = {"entry": {"module": "tunedpkg.k", "name": "tuned_rowscale_kernel", "kind": "kernel"},
            "grid": [4], "mode": "forward", "label": "small",
            "args": [{"name": "x_ptr", "tensor": True, "shape": [4, 100], "dtype": "float32"},
                     {"name": "out_ptr", "tensor": True, "shape": [4, 100], "dtype": "float32",
                      "rule": "zeros"},
                     {"name": "n_cols", "tensor": False, "value": 100},
                     {"name": "BLOCK", "tensor": False, "value": 64, "keyword": True},
                     {"name": "num_warps", "tensor": False, "value": 4,
                      "keyword": True}]}  # fmt: skip
    tuners = harness._autotuners(harness._resolve(spec["entry"]))
    options = workload_inputs.LAUNCH_OPTIONS
    assert harness._autotuned(tuners, options) >= {"BLOCK", "num_warps"}
    call = harness.Call(torch, workload_inputs, spec, 0, torch.device("cpu"), 1)
    x, out = call(0)[:2]
    assert torch.equal(out, 2 * x)
    assert [c.kwargs for c in call.target.configs] == [{"BLOCK": 64}]
    assert call.target.configs[0].num_warps == 4
    # a plain jitted kernel keeps every argument it was given
    plain = harness._autotuners(harness._resolve(spec["entry"]).fn)
    assert harness._autotuned(plain, options) == set()


def test_a_calls_error_names_where_it_arose_and_the_frameworks_line(tmp_path: Path) -> None:
    """A failing call's one-line error names the innermost frame of the exception a wrapper
    reraised (Triton's interpreter turns a kernel's numpy error into an InterpreterError) and
    the innermost line of the variant's tree (call 72 named neither)."""
    import importlib.util

    from eval.workload_harness import where

    tree = tmp_path / "tree"
    (tree / "fw").mkdir(parents=True)
    (tree / "fw" / "ops.py").write_text("def kernel(run):\n    return run('x')\n")
    spec = importlib.util.spec_from_file_location("fw_ops_where", tree / "fw" / "ops.py")
    assert spec is not None and spec.loader is not None
    ops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ops)

    def interpreter(value):  # type: ignore[no-untyped-def]
        try:
            return int(value)
        except ValueError as e:
            raise RuntimeError(repr(e)) from e

    with pytest.raises(RuntimeError) as got:
        ops.kernel(interpreter)
    said = where(got.value, [str(tree)])
    assert said.startswith(" (at test_workload.py:") and " in interpreter; " in said
    assert said.endswith("; ops.py:2 in kernel)")
    # with no tree only the innermost frame is named; with no traceback, nothing
    assert where(got.value, []) == said.split(";")[0] + ")"
    assert where(ValueError("never raised"), [str(tree)]) == ""


def test_a_gold_or_prediction_cache_is_seeded_from_the_bases_alone(tmp_path: Path) -> None:
    """`seed_cache` copies the base's entries a cache lacks (a kernel directory, an autotuning
    file), never one being written, never over what the cache holds, and copies rather than
    links: a prediction writing into a seeded file leaves the base's as it was."""
    from eval.workload_run import seed_cache

    base, pred = tmp_path / "base", tmp_path / "pred"
    (base / "h1").mkdir(parents=True)
    (base / "h1" / "k.cubin").write_text("base")
    (base / "h1" / "tmp.pid_9_x").mkdir()  # Triton's write under way, in the entry
    (base / "h2").mkdir()
    (base / "h2" / "k.autotune.json").write_text("{}")
    (base / "tmp.pid_3").mkdir()
    (base / "loose.json").write_text("1")
    (pred / "h2").mkdir(parents=True)
    (pred / "h2" / "k.autotune.json").write_text("mine")
    assert seed_cache(pred, tmp_path / "none") == 0
    assert seed_cache(pred, base) == 2
    assert sorted(p.name for p in pred.iterdir()) == ["h1", "h2", "loose.json"]
    assert (pred / "h2" / "k.autotune.json").read_text() == "mine"
    assert [p.name for p in (pred / "h1").iterdir()] == ["k.cubin"]
    (pred / "h1" / "k.cubin").write_text("forged")
    assert (base / "h1" / "k.cubin").read_text() == "base"
    assert seed_cache(pred, base) == 0


def test_a_seeded_cache_serves_tritons_own_kernels_and_compiles_only_a_changed_one(
    tmp_path: Path,
) -> None:
    """Triton itself (ahead of time for an sm_90 target, no GPU needed; the seeding
    benchmark's kernel) compiles a kernel into the base's cache; in a cache seeded from it the
    same kernel is found, nothing is compiled, and a changed kernel (the gold's or a
    prediction's) is compiled beside it."""

    from eval.workload_run import seed_cache

    pytest.importorskip("triton")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_seed_cache import compile_kernels

    def compiled(cache: Path, offset: float) -> list[str]:
        try:
            return compile_kernels(cache, 1, offset)[1]
        except SystemExit as exc:  # no ptxas for sm_90 on this machine
            pytest.skip(str(exc))

    base, pred = tmp_path / "base", tmp_path / "pred"
    same = compiled(base, 1.0)
    assert seed_cache(pred, base) == len(list(base.iterdir())) > 0
    seeded = sorted(p.name for p in pred.iterdir())
    entry = {str(p.relative_to(pred)): p.stat().st_mtime_ns for p in pred.rglob("*")}
    assert compiled(pred, 1.0) == same
    # found, not rebuilt: no file written or added
    assert {str(p.relative_to(pred)): p.stat().st_mtime_ns for p in pred.rglob("*")} == entry
    changed = compiled(pred, 2.0)
    assert changed != same and len(sorted(p.name for p in pred.iterdir())) > len(seeded)
    assert sorted(p.name for p in base.iterdir()) == seeded  # the base's cache as it was


def test_the_seeding_benchmark_script(capsys: pytest.CaptureFixture[str]) -> None:

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_seed_cache import main as bench_seed_cache

    pytest.importorskip("triton")
    try:
        code = bench_seed_cache(["--kernels", "2"])
    except SystemExit as exc:  # no ptxas for sm_90 on this machine
        pytest.skip(str(exc))
    assert code == 0
    out = capsys.readouterr().out
    assert "seeding:" in out and "for 2 entries" in out and "nothing built" in out


def test_a_lost_gpu_context_ends_the_process_and_keeps_what_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An illegal memory access is sticky: after it every CUDA call of the process fails, and
    the cleanup raising after the call lost the process's result, the calls already measured
    included. The harness now stops at such a call, keeps the rows before it, and names the
    calls it did not run; a call that fails with the context intact does not stop it."""
    from core.records import to_json
    from eval import workload_harness

    def call(label: SizeLabel, module: str) -> dict:  # type: ignore[type-arg]
        return to_json(WorkloadCall(label, Source.TEST_CALL, "test", Entry(module, "f"), ()))

    job = {"calls": [call(SizeLabel.SMALL, "tpb_no_such_module"),
                     call(SizeLabel.TYPICAL, "tpb_no_such_module_either"),
                     call(SizeLabel.LARGE, "tpb_never_reached")],
           "metric": "kernel_time", "cpu_ok": True, "syspath": []}  # fmt: skip
    got = workload_harness.run(job)["calls"]
    assert [r["label"] for r in got] == ["small", "typical", "large"]
    assert all("not run" not in r["error"] for r in got)  # the context is fine on the CPU
    lost = iter(["", "CUDA error: an illegal memory access was encountered"])
    monkeypatch.setattr(workload_harness, "context_lost", lambda torch: next(lost))
    got = workload_harness.run(job)["calls"]
    assert [r["label"] for r in got] == ["small", "typical", "large"]
    assert "tpb_no_such_module_either" in got[1]["error"]
    assert got[2]["error"] == ("not run: the GPU context was lost at typical (CUDA error: an "
                               "illegal memory access was encountered)")  # fmt: skip


def test_a_context_is_lost_when_synchronizing_fails() -> None:
    from types import SimpleNamespace

    from eval.workload_harness import context_lost

    def gpu(sync):  # type: ignore[no-untyped-def]
        return SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True, synchronize=sync))

    def sticky() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    assert context_lost(gpu(sticky)) == (
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert context_lost(gpu(lambda: None)) == ""
    assert context_lost(SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False))) == ""


DEVICE_FNS = """
import triton
import triton.language as tl

from tinyops import helpers


@triton.jit
def bump_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, helpers.add_one(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""

# (the interpreter wants triton.language beside a jit function)
HELPERS = "import triton\nimport triton.language as tl\n" + DEVICE_FUNCTIONS


def test_the_workload_log_names_the_device_functions_a_launch_reaches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workload's gold reaches a device-function target (flash-linear-attention #720's `exp`)
    through the kernel that calls it, here through a module (`helpers.add_one`) and another
    device function: the size's `launched` names it, so the named-kernel and target checks of
    the gate see it."""
    import importlib

    from eval.launch_capture import callee_functions, kernel_key, launching_classes
    from eval.workload_harness import LaunchLog

    pkg = tmp_path / "tinyops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "kernels.py").write_text(DEVICE_FNS)
    monkeypatch.syspath_prepend(str(tmp_path))
    kernels = importlib.import_module("tinyops.kernels")
    x = torch.zeros(8)
    with LaunchLog(launching_classes(), callee_functions, kernel_key) as log:
        kernels.bump_kernel[(1,)](x, 8, BLOCK=8)
    assert {kernel_name(n) for n in log.names} == {"bump_kernel", "add_one", "plus_one"}
    # code made from a string names no file: its entry is the bare name, which matches by name
    from types import SimpleNamespace as NS

    made = NS(fn=NS(__name__="k", __code__=compile("pass", "<string>", "exec")))
    assert kernel_key(made) == "k"
    from eval.launch_capture import relative_key

    assert relative_key("k@/tmp/swp/gold/fla/ops/a.py", "/tmp/swp/gold/") == "k@fla/ops/a.py"
    assert relative_key("k@/usr/lib/x/a.py", "/tmp/swp/gold") == "k@/usr/lib/x/a.py"
    assert relative_key("k", "/tmp/swp/gold") == "k"
    # each with the file that defines it: the gate tells `tinyops/helpers.py`'s `add_one` from
    # another file's of the name
    files = {kernel_name(n): n.partition("@")[2] for n in log.names}
    assert files["add_one"].endswith("/tinyops/helpers.py")
    assert files["bump_kernel"].endswith("/tinyops/kernels.py")
    assert torch.equal(x, torch.ones(8))
    with LaunchLog(launching_classes()) as plain:  # without it: the launched kernel alone
        kernels.bump_kernel[(1,)](x, 8, BLOCK=8)
    assert plain.names == {"bump_kernel"}
