"""The kernel-watch plugin, run as the eval runner runs it: pytest in a subprocess over a tiny
package with real Triton kernels (interpreted on the CPU, compiled on a GPU)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from eval.pytest_plugin import (
    ArgumentSnapshot,
    WatchConfig,
    match_kernel_events,
    read_plugin_output,
)
from tests.tinyfw import DEVICE_FUNCTIONS

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

PROJECT_ROOT = Path(__file__).resolve().parents[1]

OPS = (
    """
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


def equal_timings(kernel_call, quantiles):
    # The interpreter has no benchmarker; equal times make the first config win.
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}, num_warps=2), triton.Config({"BLOCK": 32}, num_warps=4)],
    key=["n"],
    do_bench=equal_timings,
)
@triton.jit
def tuned_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)


"""
    + DEVICE_FUNCTIONS
    + """

@triton.jit
def unwatched_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, add_one(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def never_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


def scale(x, alpha):
    y = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, alpha, BLOCK=16)
    return y


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    tuned_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out


def bump(x):
    unwatched_kernel[(1,)](x, x.numel(), BLOCK=64)
"""
)

TEST_OPS = """
import os

import torch

from tinypkg.ops import add, bump, scale

ON_GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
DEVICE = "cuda" if ON_GPU else "cpu"


def test_scale():
    for n in (10, 100, 100, 1000):
        x = torch.arange(n, dtype=torch.float32, device=DEVICE)
        torch.testing.assert_close(scale(x, 2.0), x * 2.0)


def test_tuned_add():
    for n in (64, 200):
        x = torch.rand(n, device=DEVICE)
        y = torch.rand(n, device=DEVICE)
        torch.testing.assert_close(add(x, y), x + y)


def test_unwatched():
    x = torch.zeros(8, device=DEVICE)
    bump(x)
    assert x.sum().item() == 8
"""

TEST_NEVER = """
import torch

from tinypkg.ops import never_kernel  # imported, never launched


def test_torch_only():
    assert never_kernel is not None
    assert torch.ones(4).sum().item() == 4
"""

TEST_TORCH_ONLY = """
import torch


def test_torch_only():
    assert torch.ones(4).sum().item() == 4
"""

WATCHED = "scale_kernel,tuned_add_kernel,never_kernel,missing_kernel"


def run_plugin(
    tmp_path: Path,
    *,
    interpret: bool,
    kernels: str = WATCHED,
    extra_path: str = "",
    select: str = "tests",
    **env: str,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the tiny package's tests under the plugin; the completed process and its report."""
    pkg = tmp_path / "tinypkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(textwrap.dedent(OPS))
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_ops.py").write_text(textwrap.dedent(TEST_OPS))
    (tests / "test_never.py").write_text(textwrap.dedent(TEST_NEVER))
    (tests / "test_torch_only.py").write_text(textwrap.dedent(TEST_TORCH_ONLY))
    out = tmp_path / "watch.json"
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [extra_path, str(PROJECT_ROOT), str(tmp_path)])),
        "TPB_KERNELS": kernels,
        "TPB_OUT": str(out),
        "PYTHONDONTWRITEBYTECODE": "1",
        **env,
    }
    full_env.pop("TRITON_INTERPRET", None)
    if interpret:
        full_env["TRITON_INTERPRET"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    cmd += ["-p", "eval.pytest_plugin", select]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=300
    )
    assert out.exists(), proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("interpreted")
    proc, report = run_plugin(tmp, interpret=True, TPB_CAPTURE_MAX="2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "watch.json", report


def test_availability_is_reported(interpreted: tuple[Path, dict[str, Any]]) -> None:
    _, report = interpreted
    cuda = torch.cuda.is_available()
    assert report["available"] == {"torch": True, "cuda": cuda, "triton": triton.__version__}
    why = "TRITON_INTERPRET=1" if cuda else "CUDA is not available"
    assert any(why in n for n in report["notes"]), report["notes"]


def test_plain_kernel_launches_are_captured(interpreted: tuple[Path, dict[str, Any]]) -> None:
    k = interpreted[1]["kernels"]["scale_kernel"]
    assert k["launched"] is True
    assert k["seen"] == k["calls"] == 4
    assert k["total_ms"] is None and k["isolated_ms"] is None and k["isolated_spread"] is None
    assert k["isolated_company"] is None  # nothing timed, nobody counted
    # three distinct shapes, TPB_CAPTURE_MAX=2: the two largest are kept, largest first
    assert [launch["args"][0]["shape"] for launch in k["launches"]] == [[1000], [100]]
    big = k["launches"][0]
    assert big["grid"] == [63]
    assert big["args"][0] == {
        "shape": [1000],
        "dtype": "torch.float32",
        "stride": [1],
        "device": "cpu",
    }
    assert big["args"][2:] == [1000, 2.0]
    assert big["kwargs"] == {"BLOCK": 16}
    assert big["constexprs"] == {"BLOCK": 16}
    assert k["shapes"].startswith("scale_kernel[grid=(63,)](x_ptr=float32[1000], ")
    assert "BLOCK=16" in k["shapes"]


def test_autotuned_kernel_records_the_chosen_config(
    interpreted: tuple[Path, dict[str, Any]],
) -> None:
    k = interpreted[1]["kernels"]["tuned_add_kernel"]
    assert k["launched"] is True
    assert k["seen"] == 2
    assert k["tuning_launches"] == 4  # two configs benchmarked for each of two keys
    assert len(k["launches"]) == 2
    big = k["launches"][0]
    assert big["args"][0]["shape"] == [200] and big["args"][3] == 200
    assert big["grid"] == [13]
    assert big["constexprs"] == {"BLOCK": 16}
    assert big["kwargs"]["BLOCK"] == 16 and big["kwargs"]["num_warps"] == 2
    # the launch after the benchmarking writes what the configs already wrote: its output is
    # still seen as written (H200 call 49: the gold oracle of #c538ba6c7a was flagged
    # modifies_inputs because its autotuning run had recorded no written argument)
    assert k["written"] == ["out_ptr"] and k["written_checked_launches"] == 2


def test_unwatched_and_unlaunched_kernels(interpreted: tuple[Path, dict[str, Any]]) -> None:
    kernels = interpreted[1]["kernels"]
    assert "unwatched_kernel" not in kernels
    for name in ("never_kernel", "missing_kernel"):
        assert kernels[name]["launched"] is False
        assert kernels[name]["calls"] == 0 and kernels[name]["launches"] == []
        assert kernels[name]["shapes"] == ""


def test_read_plugin_output(interpreted: tuple[Path, dict[str, Any]]) -> None:
    timings = read_plugin_output(interpreted[0])
    assert set(timings) == {"scale_kernel", "tuned_add_kernel", "never_kernel", "missing_kernel"}
    scale = timings["scale_kernel"]
    assert (scale.calls, scale.total_ms, scale.isolated_ms) == (4, 0.0, None)
    assert "float32[1000]" in scale.shapes
    assert timings["never_kernel"].calls == 0


def test_a_device_function_is_reached_through_the_kernels_that_call_it(tmp_path: Path) -> None:
    """flash-linear-attention #720 and #664 (new `exp`, `log`, `softplus` device functions,
    `@triton.jit def exp(x): ...`): nothing launches a device function, so no test was kept
    ("no test launches a target kernel"). A launch of a kernel that calls one, directly or
    through another device function, reaches it: its node ids and count are recorded."""
    proc, report = run_plugin(tmp_path, interpret=True, kernels="plus_one,scale_kernel")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    helper = report["kernels"]["plus_one"]
    assert helper["launched"] is True and helper["seen"] == 0
    assert helper["reached_through_callers"] == helper["calls"] == 1  # one bump()
    assert helper["launched_by"] == ["tests/test_ops.py::test_unwatched"]
    assert not any("plus_one" in n for n in report["notes"])  # no "not timed" note
    scale = report["kernels"]["scale_kernel"]  # calls no device function
    assert scale["reached_through_callers"] == 0 and scale["calls"] == 4


def test_the_plugin_puts_triton_2_math_names_back_when_the_task_pins_triton_2(
    tmp_path: Path,
) -> None:
    """TPB_TRITON2_MATH=1 (`eval.compat`, a task pinned below Triton 3.0): the plugin aliases
    libdevice's functions into `tl.math` before any test compiles (eval.triton_names)."""
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    _, report = run_plugin(tmp_path / "on", interpret=True, select="tests/test_torch_only.py",
                           TPB_TRITON2_MATH="1")  # fmt: skip
    [note] = [n for n in report["notes"] if n.startswith("older Triton forms accepted")]
    count = re.search(r"tl\.math: (\d+) libdevice names", note)
    assert count and int(count.group(1)) > 50  # pow, log1p, tanh, ... (about 190 on Triton 3)
    _, report = run_plugin(tmp_path / "off", interpret=True, select="tests/test_torch_only.py")
    assert not any("older Triton forms" in n for n in report["notes"])


def test_without_triton_the_tests_still_run(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "triton"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("triton is hidden for this test")\n')
    tmp = tmp_path / "work"
    tmp.mkdir()
    proc, report = run_plugin(
        tmp, interpret=True, extra_path=str(shim.parent), select="tests/test_torch_only.py"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["available"]["triton"] is None
    assert any("triton is not importable" in n for n in report["notes"])
    assert all(not k["launched"] for k in report["kernels"].values())


def test_no_kernel_named(tmp_path: Path) -> None:
    proc, report = run_plugin(
        tmp_path, interpret=True, kernels=" , ", select="tests/test_torch_only.py"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["kernels"] == {}
    assert any("names no kernel" in n for n in report["notes"])


def test_watch_config_from_env(tmp_path: Path) -> None:
    cfg = WatchConfig.from_env(
        {"TPB_KERNELS": "a, b,,a", "TPB_OUT": str(tmp_path / "o.json"), "TPB_ISOLATED": "0"}
    )
    assert cfg == WatchConfig(("a", "b"), tmp_path / "o.json", 4, isolated=False, profile=True)
    assert WatchConfig.from_env({}).out is None
    assert WatchConfig.from_env({"TPB_CAPTURE_MAX": "many"}).capture_max == 4
    assert WatchConfig.from_env({"TPB_CAPTURE_MAX": "0", "TPB_PROFILE": "0"}).capture_max == 0


def test_a_session_with_failing_tests_replays_no_launch(tmp_path: Path) -> None:
    # the do-nothing predictions' scoring with replays on ran 510 s on the H200 without
    # finishing a task: a failing kernel's launch is not replayed (its time counts for nothing)
    from types import SimpleNamespace

    from eval.pytest_plugin import KernelWatcher

    watcher = KernelWatcher(WatchConfig(("add_kernel",), None, 4, isolated=True, profile=False))
    watcher.cuda = True
    replayed: list[int] = []
    watcher._time_isolated = lambda: replayed.append(1)  # type: ignore[method-assign]
    watcher.pytest_sessionfinish(SimpleNamespace(testsfailed=2), 1)
    assert (
        replayed == [] and "tests failed: the captured launches are not replayed" in watcher.notes
    )
    watcher.pytest_sessionfinish(SimpleNamespace(testsfailed=0), 0)
    assert replayed == [1]


def test_profiler_events_match_whole_names() -> None:
    events = [
        ("scale_kernel", 10.0),
        ("scale_kernel_0d1d2de", 30.0),  # older Triton's signature suffix
        ("fused_scale_kernel", 1000.0),
        ("scale_kernel_bwd", 1000.0),  # another kernel, counted only under its own name
        ("void at::native::vectorized_elementwise_kernel<4>", 1000.0),
    ]
    got = match_kernel_events(events, ["scale_kernel", "scale_kernel_bwd", "add"])
    assert got == {"scale_kernel": (2, 0.04), "scale_kernel_bwd": (1, 1.0), "add": (0, 0.0)}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_kernels_are_profiled_and_timed(tmp_path: Path) -> None:
    proc, report = run_plugin(tmp_path, interpret=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["available"]["cuda"] is True
    for name, seen in (("scale_kernel", 4), ("tuned_add_kernel", 2)):
        k = report["kernels"][name]
        assert k["launched"] and k["seen"] == seen
        # the profiler sees the test's launches, not the autotuner's benchmarking
        assert k["calls"] == seen, (k, report["notes"])
        assert k["total_ms"] > 0
        assert k["isolated_ms"] > 0 and k["isolated_spread"] >= 0
        assert k["isolated_company"] is None or k["isolated_company"] >= 0
        assert k["launches"][0]["args"][0]["device"].startswith("cuda")
    assert report["kernels"]["never_kernel"]["launched"] is False


ON_DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
        ],
    ),
]


@pytest.mark.parametrize("device", ON_DEVICES)
def test_snapshot_keeps_layout_and_aliasing(device: str) -> None:
    base = torch.arange(48, dtype=torch.float32, device=device).reshape(6, 8)
    view = base[1:5, 2:7]  # offset and gaps between rows
    expanded = torch.ones(3, dtype=torch.float16, device=device).expand(4, 3)  # stride 0
    snap = ArgumentSnapshot.take(torch, (view, base, 7), {"e": expanded})
    assert snap is not None
    base.zero_()  # the copy was taken before: later changes do not reach it
    for _ in range(2):
        (v, b, seven), kw = snap.restore(torch)
        assert seven == 7
        assert v.stride() == (8, 1) and v.storage_offset() % 4 == view.storage_offset() % 4
        assert v.device == view.device
        assert torch.equal(v.cpu(), torch.arange(48.0).reshape(6, 8)[1:5, 2:7])
        assert v.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # still aliased
        assert kw["e"].stride() == (0, 1) and torch.equal(kw["e"].cpu(), torch.ones(4, 3).half())
    (v1, _, _), _ = snap.restore(torch)
    (v2, _, _), _ = snap.restore(torch)
    v1.fill_(-1)
    assert v2.min().item() >= 0  # each restore is independent


def test_the_selection_cap_takes_the_tests_that_use_the_targets_modules_first() -> None:
    # flash-linear-attention #813: its test file's first four functions never reach the gate
    # kernels; the selection run (4 tests) took those and timed out compiling them
    import types
    from types import SimpleNamespace as NS

    from eval.pytest_plugin import cap_items

    gate = types.ModuleType("pkg.ops.gate")
    exec("def fused_gate(x):\n    return x\n", gate.__dict__)
    suite = types.ModuleType("tests.test_x")
    suite.__dict__.update(fused_gate=gate.fused_gate, gatemod=gate)
    exec(
        "def test_a():\n    return 1\n\n"
        "def test_b():\n    return 2\n\n"
        "def test_c():\n    f = lambda: fused_gate(1)\n    return f()\n\n"
        "def test_d():\n    return gatemod.fused_gate(2)\n",
        suite.__dict__,
    )
    items = [NS(nodeid=f"tests/test_x.py::{n}[p{i}]", function=getattr(suite, n))
             for n in ("test_a", "test_b", "test_c", "test_d") for i in range(2)]  # fmt: skip
    kept, dropped = cap_items(items, 1, 2, ("pkg.ops.gate",))
    assert [i.nodeid for i in kept] == [
        "tests/test_x.py::test_c[p0]",
        "tests/test_x.py::test_d[p0]",
    ]
    assert len(dropped) == 6
    # beyond those, and without target modules, collection order as before
    kept, _ = cap_items(items, 1, 3, ("pkg.ops.gate",))
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_c[p0]", "test_d[p0]", "test_a[p0]"]
    kept, _ = cap_items(items, 1, 2)
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_a[p0]", "test_b[p0]"]
    assert WatchConfig.from_env({"TPB_SELECT_MODULES": "a.b, c"}).select_modules == ("a.b", "c")


def test_without_pr_tests_the_selection_takes_the_tests_nearest_the_target_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """flash-linear-attention #688 (H200, 2026-12-03): the PR changes no test and its kernel
    sits in a module the tests never name; they reach it through the op (`chunk_kda`) or through
    the models. The cap took collection order, the model tests (alphabetically first), whose
    runs never launched the kernel: "the selection run failed". The op's test goes first now."""
    import sys
    import types
    from types import SimpleNamespace as NS

    from eval.pytest_plugin import cap_items, module_distances

    def module(name: str, code: str = "", **names: object) -> types.ModuleType:
        mod = types.ModuleType(name)
        mod.__dict__.update(names)
        exec(code, mod.__dict__)
        monkeypatch.setitem(sys.modules, name, mod)
        return mod

    wy = module("pkg.ops.kda.wy_fast", "def bwd_fused(x):\n    return x\n")
    chunk = module("pkg.ops.kda.chunk", "def chunk_kda(x):\n    return bwd_fused(x)\n",
                   bwd_fused=wy.bwd_fused)  # fmt: skip
    ops = module("pkg.ops.kda", chunk_kda=chunk.chunk_kda)
    layer = module("pkg.layers.kda", "class KDALayer:\n    pass\n", chunk_kda=ops.chunk_kda)
    model = module("pkg.models.kda", "class KDAModel:\n    pass\n", KDALayer=layer.KDALayer)
    module("pkg.unrelated", "def helper():\n    return 0\n")

    class Lazy:  # a global whose attribute lookups raise (transformers' lazy objects may)
        def __getattribute__(self, name: str) -> object:
            raise RuntimeError(f"no {name} before it loads")

    module("pkg.lazy", lazy=Lazy())
    distance = module_distances(["pkg.ops.kda.wy_fast"])
    assert distance["pkg.ops.kda.wy_fast"] == 0 and distance["pkg.ops.kda.chunk"] == 1
    assert distance["pkg.layers.kda"] == 2 and distance["pkg.models.kda"] == 3
    assert "pkg.unrelated" not in distance
    models = module("tests.models.test_modeling", KDAModel=model.KDAModel)
    exec("def test_modeling():\n    return KDAModel()\n", models.__dict__)
    opstest = module("tests.ops.test_kda", chunk_kda=ops.chunk_kda)
    exec("def test_chunk():\n    return chunk_kda(1)\n", opstest.__dict__)
    other = module("tests.test_misc", helper=sys.modules["pkg.unrelated"].helper)
    exec("def test_misc():\n    return helper()\n", other.__dict__)
    items = [NS(nodeid="tests/models/test_modeling.py::test_modeling[x]",
                function=models.test_modeling),
             NS(nodeid="tests/ops/test_kda.py::test_chunk[x]", function=opstest.test_chunk),
             NS(nodeid="tests/test_misc.py::test_misc", function=other.test_misc)]  # fmt: skip
    kept, dropped = cap_items(items, 1, 1, ("pkg.ops.kda.wy_fast",))
    assert [i.nodeid for i in kept] == ["tests/ops/test_kda.py::test_chunk[x]"]
    assert len(dropped) == 2
    kept, _ = cap_items(items, 1, 3, ("pkg.ops.kda.wy_fast",))
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_chunk[x]", "test_modeling[x]",
                                                       "test_misc"]  # fmt: skip


def test_the_selection_autotunes_with_the_first_config_that_runs(tmp_path: Path) -> None:
    """TPB_AUTOTUNE=first (the selection run): one config of each tuning is compiled and
    timed, not all (flash-linear-attention's chunked kernels tune dozens each); the tests pass
    as before, and the report says the tuning was cut."""
    proc, report = run_plugin(tmp_path, interpret=True, select="tests/test_ops.py",
                              TPB_AUTOTUNE="first")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    k = report["kernels"]["tuned_add_kernel"]
    assert k["launched"] is True and k["tuning_launches"] == 2  # one config for each of two keys
    assert any("first of its configs" in n for n in report["notes"]), report["notes"]


def test_the_selections_first_config_never_reaches_the_autotuning_cache() -> None:
    """A kernel declared with `cache_results=True` (flash-linear-attention's kernels) caches its
    tuning whatever TRITON_CACHE_AUTOTUNING says, under a key that does not know the selection
    took the first config: the task's base and gold runs, which share the cache, would load it.
    In that mode the tuning reads and writes no cache."""
    from triton.runtime.autotuner import Autotuner

    from eval.pytest_plugin import KernelWatcher

    original = Autotuner.__dict__["check_disk_cache"]
    watcher = KernelWatcher(WatchConfig(kernels=(), out=None, autotune="first"))
    watcher.patch()
    try:
        patched = Autotuner.__dict__["check_disk_cache"]
        assert patched is not original
        ran: list[int] = []
        # the original would touch the cache (and needs a real kernel): it is not called
        assert patched(object(), ("key",), [], lambda: ran.append(1)) is False and ran == [1]
    finally:
        watcher.unpatch()
    assert Autotuner.__dict__["check_disk_cache"] is original


def _test_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str):
    """A test module written under `tmp_path` and imported (its functions' source lines are what
    `changed_by_pr` reads)."""
    import importlib

    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_a_functions_parametrizations_with_the_prs_new_values_go_first(
    tmp_path, monkeypatch
) -> None:
    """Liger-Kernel #986 tightens the bfloat16 tolerances of its GEGLU test to 1e-2 (the case
    that fails at the setup state); with one parametrization a function, collection order took
    float32, which passes either way: "no fail-to-pass"."""
    from types import SimpleNamespace as NS

    from eval.pytest_plugin import cap_items, pr_values

    source = (
        "import pytest\n"  # 1
        "\n"  # 2
        "@pytest.mark.parametrize(\n"  # 3
        '    "dtype, atol",\n'  # 4
        "    [\n"  # 5
        '        ("float32", 1e-0),\n'  # 6
        '        ("bfloat16", 1e-2),\n'  # 7: the PR's change
        "    ],\n"  # 8
        ")\n"  # 9
        "def test_geglu(dtype, atol):\n"  # 10
        "    assert atol < 2\n"  # 11
    )
    fn = _test_module(tmp_path, monkeypatch, "test_geglu_mod", source).test_geglu
    path = "test/test_geglu.py"
    items = [NS(nodeid=f"{path}::test_geglu[{d}]", function=fn, callspec=NS(params={"dtype": d,
                "atol": a})) for d, a in (("float32", 1.0), ("bfloat16", 0.01))]  # fmt: skip
    lines = {path: ((7, 7),)}
    assert [pr_values(i, lines) for i in items] == [0, 2]
    kept, _ = cap_items(items, 1, 4, (), lines)
    assert [i.nodeid for i in kept] == [f"{path}::test_geglu[bfloat16]",
                                        f"{path}::test_geglu[float32]"]  # fmt: skip
    # a change in the function's body (line 11) says nothing about its cases: collection order
    # (and, the function being the PR's, PR_CASES of them)
    kept, _ = cap_items(items, 1, 4, (), {path: ((11, 11),)})
    assert [i.nodeid for i in kept] == [f"{path}::test_geglu[float32]",
                                        f"{path}::test_geglu[bfloat16]"]  # fmt: skip


def test_a_function_the_pr_changed_runs_several_cases_before_the_other_functions(
    tmp_path, monkeypatch
) -> None:
    """flash-linear-attention #1135 masks the kernel's load of `g` and changes
    `test_fused_recurrent` to poison the memory past `g` where D is not a power of two; its
    first case is D=64 (nothing read past `g`), the next two D=60 and D=100. One case a function
    kept D=64 alone, which passes at the setup state: "no fail-to-pass"."""
    from types import SimpleNamespace as NS

    from eval.pytest_plugin import PR_CASES, cap_items

    source = (
        "import pytest\n"  # 1
        "\n"  # 2
        '@pytest.mark.parametrize("D", [64, 60, 100, 128])\n'  # 3
        "def test_fused_recurrent(D):\n"  # 4
        "    assert D\n"  # 5: the PR's change
        "\n"  # 6
        '@pytest.mark.parametrize("D", [64, 32])\n'  # 7
        "def test_chunk(D):\n"  # 8
        "    assert D\n"  # 9
    )
    mod = _test_module(tmp_path, monkeypatch, "test_recurrent_mod", source)
    path = "tests/ops/test_kda.py"
    items = [NS(nodeid=f"{path}::{fn}[D{d}]", function=getattr(mod, fn),
                callspec=NS(params={"D": d}))
             for fn, ds in (("test_chunk", (64, 32)), ("test_fused_recurrent", (64, 60, 100, 128)))
             for d in ds]  # fmt: skip
    kept, _ = cap_items(items, 1, 3, (), {path: ((5, 5),)})
    assert PR_CASES == 3
    assert [i.nodeid.split("::")[1] for i in kept] == [
        "test_fused_recurrent[D64]",
        "test_fused_recurrent[D60]",
        "test_fused_recurrent[D100]",
    ]
    # room for more: the other function's first case after them, as before
    kept, _ = cap_items(items, 1, 5, (), {path: ((5, 5),)})
    assert [i.nodeid.split("::")[1] for i in kept][3:] == ["test_chunk[D64]"]
    # no PR change: one case a function, round-robin, as before
    kept, _ = cap_items(items, 1, 5, (), {})
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_chunk[D64]",
                                                       "test_fused_recurrent[D64]"]  # fmt: skip


def test_an_autotuned_launch_is_compared_with_its_own_arguments_before_tuning() -> None:
    """The benchmarked configs write the outputs before the real launch writes the same values:
    the launch is compared with the fingerprint taken before the benchmarking (H200 call 49),
    and only when it gets the same tensors (a fingerprint left by a tuned launch that raised is
    stale for the next launch of other tensors)."""
    from types import SimpleNamespace

    from eval.pytest_plugin import KernelWatcher

    watcher = KernelWatcher(WatchConfig(("k",), None, 4, isolated=False, profile=False))
    tuner = SimpleNamespace(base_fn=SimpleNamespace(__name__="k"))
    kernel = SimpleNamespace(fn=SimpleNamespace(__name__="k"), arg_names=["x", "out"])

    def write(_kernel: Any, *args: Any, **_kw: Any) -> None:
        args[1].fill_(1.0)  # what every config and the launch write into `out`

    bench = watcher._wrap_bench(lambda _tuner, *args, **kw: write(None, *args))
    run = watcher._wrap_run(write)
    x, out = torch.zeros(4), torch.zeros(4)
    bench(tuner, x, out)  # a config benchmarked: `out` already holds the result
    run(kernel, x, out, grid=(1,), warmup=False)
    assert watcher.watches["k"].written == {"out"}
    # a stale fingerprint (taken of other tensors) is not used: this launch changed nothing
    watcher.watches["k"].written.clear()
    bench(tuner, torch.zeros(4), torch.zeros(4))
    run(kernel, x, out, grid=(1,), warmup=False)
    assert watcher.watches["k"].written == set()


def test_a_selection_retry_takes_the_parametrizations_least_like_those_that_ran() -> None:
    """flash-linear-attention #702 (its merge commit's `test_chunk` cases, abridged): the
    selection's first case had gate=False and passed without launching the gate kernel; the
    next cases in collection order have gate=False too. The retry takes those with the most
    values the first run did not have, so a gate=True case runs; other functions keep their
    places, and a function that did not run keeps its order."""
    from types import SimpleNamespace as NS

    from eval.pytest_plugin import cap_items, novel_first

    names = ("B", "T", "D", "gate", "dtype")
    cases = [(1, 63, 64, False, "fp16"), (2, 500, 60, False, "fp16"), (2, 1000, 64, False, "fp16"),
             (2, 1500, 128, True, "fp16"), (4, 2048, 64, True, "fp16")]  # fmt: skip

    def item(fn: str, n: int, values: tuple) -> NS:
        return NS(nodeid=f"tests/ops/test_kda.py::{fn}[c{n}]", function=None,
                  callspec=NS(params=dict(zip(names, values, strict=True))))  # fmt: skip

    chunk = [item("test_chunk", n, c) for n, c in enumerate(cases)]
    other = [item("test_gate", n, c) for n, c in enumerate(cases[:2])]
    ran = [chunk[0]]
    rest = [other[0], *chunk[1:], other[1]]
    ordered = novel_first(rest, ran)
    assert [i.nodeid.split("::")[1] for i in ordered] == [
        "test_gate[c0]", "test_chunk[c3]", "test_chunk[c1]", "test_chunk[c4]", "test_chunk[c2]",
        "test_gate[c1]"]  # fmt: skip
    # c3 differs from the case that ran in B, T, D and gate (4 values), c1 in B, T, D and c4 in
    # B, T, gate (3 each, collection order between them), c2 in B and T: the retry's one case a
    # function is a gate=True one
    kept, _ = cap_items(ordered, 1, 4)
    assert [i.nodeid.split("::")[1] for i in kept] == ["test_gate[c0]", "test_chunk[c3]"]
    assert novel_first(rest, []) == rest
    # unparametrized items (no callspec) are left as they are
    plain = [NS(nodeid="t.py::f"), NS(nodeid="t.py::g")]
    assert novel_first(plain, [NS(nodeid="t.py::f0")]) == plain


def test_a_kernel_of_the_targets_name_in_another_file_is_not_the_target(tmp_path: Path) -> None:
    """77 of release 1.24.8's 455 tasks have a kernel whose name another non-test file of the
    commit defines (flash-linear-attention's `fused_recurrent_fwd_kernel` in several ops;
    #f93ae3e83e's retention `_fwd_recurrence`, whose selection kept a GLA test). Watched as
    `name@path`, a launch counts only when the launched function's code is in that file."""
    kernels = "scale_kernel@tinypkg/other.py,tuned_add_kernel@tinypkg/ops.py,plus_one@tinypkg/x.py"
    proc, report = run_plugin(tmp_path, interpret=True, kernels=kernels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    scale = report["kernels"]["scale_kernel"]  # tinypkg/ops.py's, not the target's
    assert scale["seen"] == 0 and scale["launched_by"] == [] and scale["launches"] == []
    assert [p.endswith("/tinypkg/ops.py") for p in scale["same_name_elsewhere"]] == [True]
    tuned = report["kernels"]["tuned_add_kernel"]  # the target's own file: as before
    assert tuned["seen"] > 0 and tuned["launched_by"] and tuned["same_name_elsewhere"] == []
    # a device function is reached through its callers only when it is the target's file's too
    helper = report["kernels"]["plus_one"]
    assert helper["reached_through_callers"] == 0 and helper["launched_by"] == []
    # the right file: counted
    (tmp_path / "own").mkdir()
    own = "scale_kernel@tinypkg/ops.py,plus_one@tinypkg/ops.py"
    _, report = run_plugin(tmp_path / "own", interpret=True, kernels=own)
    assert report["kernels"]["scale_kernel"]["seen"] == 4
    assert report["kernels"]["plus_one"]["reached_through_callers"] == 1
    # the profiler matches by name: what it counted for a target none of whose launches was
    # seen is another file's kernel, not the target's
    from eval.launch_capture import CaptureStore
    from eval.pytest_plugin import _KernelWatch

    other = _KernelWatch("k", CaptureStore(1), profiled=(3, 1.5), elsewhere={"/t/pkg/gla.py"})
    assert other.to_dict()["launched"] is False and other.to_dict()["calls"] == 0
    both = _KernelWatch("k", CaptureStore(1), seen=1, profiled=(3, 1.5), elsewhere={"/t/x.py"})
    assert both.to_dict()["calls"] == 3 and both.to_dict()["total_ms"] == 1.5
    cfg = WatchConfig.from_env({"TPB_KERNELS": "a@x/a.py, b ,a@y/a.py"})
    assert cfg.kernels == ("a", "b") and cfg.kernel_files == (("a", "x/a.py"), ("a", "y/a.py"))
    # a kernel whose code was made from a string (`exec`: "<string>") names no file: its name
    # decides, as before the file rule
    from types import SimpleNamespace as NS

    made = NS(fn=NS(__name__="k", __code__=compile("pass", "<string>", "exec")))
    watch = _KernelWatch("k", CaptureStore(1), files=frozenset({"pkg/k.py"}))
    assert watch.owns(made) and not watch.elsewhere


def test_the_runs_watch_the_prs_kernels_by_name_and_package_path() -> None:
    from types import SimpleNamespace as NS

    from eval.targets import watched_kernels

    task = NS(kernels=(NS(name="k", file="src/liger_kernel/ops/rms_norm.py"),
                       NS(name="j", file="fla/ops/gla/chunk.py")))  # fmt: skip
    assert watched_kernels(task) == ["k@liger_kernel/ops/rms_norm.py", "j@fla/ops/gla/chunk.py"]  # type: ignore[arg-type]
