"""The workload harness: runs in its own process (sandboxed for predictions), inside one
variant's source tree, and times the workload's calls there.

    python eval/workload_harness.py [JOB.json]   (default: .tpb_workload_job.json in the cwd)

Reads: the job (the workload's calls as JSON, the seed, the metric, where to write), the
variant's tree (imported from the working directory). Writes, in the working directory: the
result file the job names (per call: repetition times in ms, or the error's last line) and,
when asked, each call's outputs (`torch.save` of {path: tensor}) for the trusted harness to
compare. Imports from the project only `eval.timing`, `eval.workload_inputs`,
`eval.launch_capture` and `eval.triton_names` (no Triton or torch at their module level),
`eval.parallel_compile` (a kernel-time job's autotuning compiles its configs on
`compile_workers` threads), and for a
cold job `eval.triton_warmup`, before the variant's tree is put on the path.

Rules: every call's inputs come from `seed + call index` on one generator, so base, gold and
prediction get the same tensors; FULL calls run backward of every floating output with a
seeded upstream gradient (made once per input set, outside the timing), and their outputs
include the inputs' gradients; BACKWARD calls run the forward once per input set, untimed, keep
its graph and time the backward alone (outputs as FULL, from a fresh forward). `kernel_time`
times each call with `eval.timing.bench_times` (warm-up, L2 flushed, >= `rep_ms` of work);
`cold_wall_time` times each call once from a process whose Triton cache the caller emptied,
compilation and autotuning included (with `warm_runtime`, after a kernel of the harness's own,
`eval.triton_warmup`, took Triton's one-time start in the process: phase `runtime`). A
`check_only` job runs each call once, untimed, for a checker the caller runs the harness under
(compute-sanitizer memcheck). Without CUDA (tests,
TRITON_INTERPRET=1) the job must say `cpu_ok` and times are host wall times.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

_PROJECT = str(Path(__file__).resolve().parents[1])


def _from_project(name: str) -> Any:
    """The project's module `eval.<name>`, imported with the project on the path only for the
    import (before the variant's tree is put there)."""
    sys.path.insert(0, _PROJECT)
    try:
        return importlib.import_module(f"eval.{name}")
    finally:
        sys.path.remove(_PROJECT)


def _load_project() -> tuple[Any, Any, Any]:
    return (
        _from_project("timing"),
        _from_project("workload_inputs"),
        _from_project("launch_capture"),
    )


def _flop_counter(programs: int, roots: list[str]) -> Any:
    """`eval.flop_count.DotFlops` over the variant's tree `roots` (Triton at its module level:
    imported only for a count)."""
    return _from_project("flop_count").DotFlops(programs, roots)


def count_flops(call: Call, counter: Any) -> dict[str, Any]:
    """The matrix-product FLOPs of what a call's timing would time, counted by `counter` (a
    `DotFlops` whose hooks are in place): a BACKWARD call's kept forward runs first, uncounted."""
    if call.mode == "backward":
        call.graph(0)
    with counter.counting():
        call(0)
    return dict(counter.summary())


def _warm_runtime(torch: Any, device: Any) -> float:
    """`eval.triton_warmup.warm` (Triton at its module level: imported only for a cold job)."""
    return float(_from_project("triton_warmup").warm(torch, device))


def _autotuners(kernel: Any) -> list[Any]:
    """The `@triton.autotune` wrappers around `kernel` (autotune over heuristics over the
    jitted function: each wraps the next as `.fn`)."""
    found, obj = [], kernel
    for _ in range(8):
        if obj is None:
            break
        if isinstance(getattr(obj, "configs", None), list | tuple):
            found.append(obj)
        obj = getattr(obj, "fn", None)
    return found


def _autotuned(tuners: list[Any], options: frozenset[str]) -> frozenset[str]:
    """The meta-parameters the autotuners set themselves (their configs' keys and the launch
    `options`, `workload_inputs.LAUNCH_OPTIONS`): a launch that passes them again is refused
    ("Conflicting meta-parameters"; flash-linear-attention's `BT`, `BK`, found by
    scripts/preflight_plans.py on 2026-12-05), so the captured values give way to the
    autotuner's choice."""
    names = {k for t in tuners for c in t.configs for k in (getattr(c, "kwargs", None) or {})}
    return frozenset(names | options) if tuners else frozenset()


def _pin_config(tuners: list[Any], values: dict[str, Any]) -> None:
    """Leave each autotuner one config: the captured launch's `values` (CPU checks,
    scripts/preflight_plans.py; a GPU run autotunes as the framework does)."""
    for t in tuners:
        if t.configs:
            first = t.configs[0]
            meta = {k: values.get(k, v) for k, v in (getattr(first, "kwargs", None) or {}).items()}
            opts = {k: values[k] for k in ("num_warps", "num_stages") if k in values}
            t.configs = [type(first)(meta, **opts)]


def _resolve(entry: dict[str, Any]) -> Any:
    obj: Any = importlib.import_module(entry["module"])
    for part in entry["name"].split("."):
        obj = getattr(obj, part)
    return obj


class Call:
    """One workload call made runnable: inputs built, the entry resolved."""

    def __init__(
        self, torch: Any, inputs: Any, spec: dict[str, Any], seed: int, device: Any, n_inputs: int
    ) -> None:
        self.torch = torch
        self.spec = spec
        self.device = device
        self.entry = spec["entry"]
        t0 = time.perf_counter()
        self.target = _resolve(self.entry)  # the first call's imports the framework
        self.resolve_s = time.perf_counter() - t0
        kind = self.entry.get("kind", "function")
        tuned: frozenset[str] = frozenset()
        if kind == "module":
            mod = self.target(**self.entry.get("init", {}))
            self.fn = mod.to(device) if hasattr(mod, "to") else mod
            if self.entry.get("dtype") and hasattr(self.fn, "to"):
                self.fn = self.fn.to(dtype=getattr(torch, self.entry["dtype"]))
        elif kind == "kernel":
            tuners = _autotuners(self.target)
            tuned = _autotuned(tuners, inputs.LAUNCH_OPTIONS)
            if tuned and device.type == "cpu":
                # the interpreter has no driver to benchmark configs with: the captured one
                _pin_config(tuners, {a["name"]: a.get("value") for a in spec["args"]
                                     if a.get("keyword") and a["name"] in tuned})  # fmt: skip
            self.fn = self.target[tuple(spec.get("grid") or (1,))]
        elif self.entry.get("method"):
            self.fn = getattr(self.target, self.entry["method"])
        else:
            self.fn = self.target
        self.sets = []
        for i in range(n_inputs):
            gen = torch.Generator(device=device)
            gen.manual_seed(seed * 1000 + i)
            pos, kw = [], {}
            for a in spec["args"]:
                if a.get("keyword") and a["name"] in tuned:
                    continue  # the autotuner sets it (the captured launch had its choice)
                v = inputs.make_tensor(torch, a, gen, device) if a["tensor"] else _value(torch, a)
                if a.get("keyword"):
                    kw[a["name"]] = v
                else:
                    pos.append(v)
            self.sets.append((pos, kw, gen))
        # a bare kernel is timed as its launch; plans before 2026-12-06 could give one a
        # backward mode, which timed nothing (flash-linear-attention #449)
        self.mode = "forward" if kind == "kernel" else spec.get("mode") or "forward"
        self.full = self.mode in ("full", "backward")  # gradients are made and compared
        self.grads: dict[int, list[Any]] = {}  # per input set: made once, outside any timing
        self.graphs: dict[int, tuple[Any, list[Any]]] = {}  # BACKWARD: kept forward, its outputs

    def __call__(self, i: int = 0) -> Any:
        if self.mode == "backward":
            return self._backward_only(i)
        out = self._forward(i)
        if self.full:
            self._backward(i, out)
        return out

    def _clear_grads(self, i: int) -> None:
        pos, kw, _ = self.sets[i]
        for t in [*pos, *kw.values()]:
            if getattr(t, "grad", None) is not None:
                t.grad = None

    def _forward(self, i: int) -> Any:
        pos, kw, _ = self.sets[i]
        if self.full:
            self._clear_grads(i)
        out = self.fn(*pos, **kw)
        if self.entry.get("kind") == "kernel":
            out = [*pos, *kw.values()]  # a kernel's outputs are the arguments it writes
        return out

    def _outs_and_grads(self, i: int, out: Any) -> tuple[list[Any], list[Any]]:
        torch = self.torch
        outs = [t for t in _tensors(out) if t.requires_grad and t.is_floating_point()]
        if i not in self.grads:
            gen = self.sets[i][2]
            self.grads[i] = [
                torch.randn(t.shape, generator=gen, device=t.device, dtype=t.dtype) for t in outs
            ]
        return outs, self.grads[i]

    def _backward(self, i: int, out: Any) -> None:
        outs, grads = self._outs_and_grads(i, out)
        if outs:
            self.torch.autograd.backward(outs, grads)

    def graph(self, i: int) -> tuple[Any, list[Any]]:
        """BACKWARD: input set `i`'s forward, run once and kept (outputs, and those of them a
        gradient flows back into)."""
        if i not in self.graphs:
            out = self._forward(i)
            self.graphs[i] = (out, self._outs_and_grads(i, out)[0])
        return self.graphs[i]

    def _backward_only(self, i: int) -> Any:
        out, outs = self.graph(i)
        self._clear_grads(i)
        if outs:
            self.torch.autograd.backward(outs, self.grads[i], retain_graph=True)
        return out

    def outputs(self, inputs: Any) -> dict[str, Any]:
        """Outputs (and gradients) of input set 0 from a fresh forward and backward."""
        out = self._forward(0)
        if self.full:
            self._backward(0, out)
        out = dict(inputs.flatten(out))
        if self.full:
            pos, kw, _ = self.sets[0]
            for j, t in enumerate([*pos, *kw.values()]):
                if getattr(t, "grad", None) is not None:
                    out[f"grad[{j}]"] = t.grad
        return {k: v.detach().cpu() for k, v in out.items()}


def _value(torch: Any, a: dict[str, Any]) -> Any:
    """A plain argument: a dtype (`{"dtype": "bfloat16"}`), a member of the variant's code
    (`{"ref": "module:Class.MEMBER"}`), or the value itself."""
    v = a.get("value")
    if isinstance(v, dict) and "dtype" in v:
        return getattr(torch, v["dtype"])
    if isinstance(v, dict) and "ref" in v:
        module, _, name = v["ref"].partition(":")
        return _resolve({"module": module, "name": name})
    return v


def _tensors(x: Any) -> list[Any]:
    if hasattr(x, "requires_grad") and hasattr(x, "dtype"):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in _tensors(v)]
    return []


class LaunchLog:
    """The names of the Triton kernels launched while it is active (`JITFunction.run`, and the
    interpreter's `run` under TRITON_INTERPRET=1): whether a size reaches the task's kernels."""

    def __init__(
        self,
        classes: list[type],
        callees: Callable[[Any, tuple[type, ...]], dict[str, Any]] | None = None,
        key: Callable[[Any], str] | None = None,
    ) -> None:
        self.names: set[str] = set()
        self._classes = classes
        self._restore: list[tuple[type, Any]] = []
        # the device functions a launched kernel calls (`launch_capture.callee_functions`): a
        # target that is one is reached through its callers
        self._callees = callees
        # how a launched function is named (`launch_capture.kernel_key`: `name@file`, so the
        # gate tells a target from another file's kernel of its name); default: its name
        self._key = key or (lambda fn: getattr(getattr(fn, "fn", None), "__name__", "") or "?")
        self._seen: set[int] = set()

    def __enter__(self) -> LaunchLog:
        for cls in self._classes:
            original = cls.__dict__.get("run")
            if original is None:
                continue
            self._restore.append((cls, original))

            def run(kernel: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                self.names.add(self._key(kernel))
                if self._callees is not None and id(kernel) not in self._seen:
                    self._seen.add(id(kernel))
                    found = self._callees(kernel, tuple(self._classes)).values()
                    self.names.update(self._key(f) for f in found)
                return _original(kernel, *args, **kwargs)

            cls.run = run  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, original in reversed(self._restore):
            cls.run = original
        self._restore.clear()


class TimerGuard:
    """The functions the timing rests on, as they were before any code of the variant's tree
    was imported: a prediction that replaces one (say `torch.cuda.Event.elapsed_time`, or
    `time.perf_counter` from a kernel body run by the interpreter) is caught after the call
    it timed, and that call's times are dropped."""

    def __init__(self, torch: Any, timing: Any) -> None:
        event = getattr(torch.cuda, "Event", None)
        self._watched: list[tuple[str, Any, str]] = [
            ("time.perf_counter", time, "perf_counter"),
            ("eval.timing.bench_times", timing, "bench_times"),
            ("torch.cuda.synchronize", torch.cuda, "synchronize"),
            ("torch.cuda._sleep", torch.cuda, "_sleep"),
            ("torch.cuda.Event", torch.cuda, "Event"),
            *((f"torch.cuda.Event.{a}", event, a) for a in ("record", "elapsed_time",
                                                             "synchronize") if event),
        ]  # fmt: skip
        self._seen = [getattr(obj, attr, None) for _, obj, attr in self._watched]

    def replaced(self) -> list[str]:
        return [name for (name, obj, attr), was in zip(self._watched, self._seen, strict=True)
                if getattr(obj, attr, None) is not was]  # fmt: skip


def where(exc: BaseException, roots: list[str]) -> str:
    """Where a call's error arose, for its one-line message: the innermost frame of the
    chain's first exception (the one a `raise ... from` or a handler hides: Triton's
    interpreter reraises a kernel's numpy error as an InterpreterError) and, when that frame is
    not in the variant's tree (`roots`), the innermost frame there too (the kernel's line)."""
    chain, seen = [exc], {id(exc)}
    while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and id(nxt) not in seen:
        chain.append(nxt)
        seen.add(id(nxt))
    tbs = [traceback.extract_tb(e.__traceback__) for e in reversed(chain)]  # the first one first
    tbs = [tb for tb in tbs if tb]
    if not tbs:
        return ""

    def name(f: traceback.FrameSummary) -> str:
        return f"{Path(f.filename).name}:{f.lineno} in {f.name}"

    tops = tuple(os.path.abspath(r) + os.sep for r in roots)

    def own(f: traceback.FrameSummary) -> bool:
        return os.path.abspath(f.filename).startswith(tops)  # never, with no roots

    inner = tbs[0][-1]
    parts = [name(inner)]
    mine = next(([f for f in tb if own(f)] for tb in tbs if any(own(f) for f in tb)), [])
    if mine and not own(inner):
        parts.append(name(mine[-1]))
    return f" (at {'; '.join(parts)})"


def run(job: dict[str, Any]) -> dict[str, Any]:
    begin = time.perf_counter()
    timing, inputs, launch_capture = _load_project()
    _from_project("triton_names").apply(os.environ)  # an older Triton's forms (eval.compat)
    import torch

    guard = TimerGuard(torch, timing)  # before the variant's tree is on the path
    counting = int(job.get("count_flops") or 0)  # programs a launch runs; 0: a timing job
    if counting and os.environ.get("TRITON_INTERPRET") != "1":
        return {"error": "counting FLOPs runs the kernels in Triton's interpreter: it needs "
                         "TRITON_INTERPRET=1"}  # fmt: skip
    # a count runs the kernels in the interpreter, on CUDA tensors where there is a GPU (the
    # framework's own code then takes its GPU paths: flash-linear-attention's device contexts,
    # Megatron-LM's `torch.cuda` calls fail on a CPU-only torch), else on the CPU
    cuda = torch.cuda.is_available()
    if not cuda and not job.get("cpu_ok") and not counting:
        return {"error": "no CUDA device: workload timing needs a GPU"}
    device = torch.device("cuda" if cuda else "cpu")
    # a cold round times the task's compilation, not Triton's one-time start in this process
    # (eval.triton_warmup); before the variant's tree is on the path, so no variant's code runs
    warmed = _warm_runtime(torch, device) if job.get("warm_runtime") else None
    # autotuning compiles its configs on threads (kernel times only: the caller sends 0 where
    # compilation is measured), patched before the variant's tree is on the path
    _from_project("parallel_compile").install(int(job.get("compile_workers") or 0))
    for p in reversed(job.get("syspath") or []):
        sys.path.insert(0, p)
    out_dir = Path(job.get("outputs_dir") or ".")
    check_only = bool(job.get("check_only"))
    results = []
    # where this process's time went: imports, then per call its entry (the first one imports
    # the framework: on the H200, 2026-12-03, most of the 9-13 s first read as "inputs"), its
    # inputs, the first (compiling, autotuning) call that saves the outputs, and the timed or
    # checked calls
    phases = {"imports": time.perf_counter() - begin, "entry": 0.0, "inputs": 0.0, "outputs": 0.0,
              "timing": 0.0}  # fmt: skip
    if warmed is not None:
        phases["imports"] -= warmed
        phases["runtime"] = warmed
    for i, spec in enumerate(job["calls"]):
        row: dict[str, Any] = {"label": spec["label"]}
        lost = ""
        try:
            t0 = time.perf_counter()
            big = sum(1 for a in spec["args"] if a["tensor"]) and spec.get("bytes_moved", 0) > 2**31
            call = Call(
                torch,
                inputs,
                spec,
                int(job.get("seed", 0)) + i,
                device,
                1 if big or check_only or counting or job["metric"] == "cold_wall_time" else 2,
            )
            phases["entry"] += call.resolve_s
            phases["inputs"] += time.perf_counter() - t0 - call.resolve_s
            t0 = time.perf_counter()
            untimed = check_only or counting
            if job.get("save_outputs") and job["metric"] != "cold_wall_time" and not untimed:
                # before any timing: a kernel that accumulates into its arguments would give
                # outputs that depend on how many repetitions ran
                classes = launch_capture.launching_classes()
                with LaunchLog(
                    classes, launch_capture.callee_functions, launch_capture.kernel_key
                ) as launched:
                    saved = call.outputs(inputs)
                here = os.getcwd()  # the variant's tree
                row["launched"] = sorted(
                    launch_capture.relative_key(n, here) for n in launched.names
                )
                torch.save(saved, out_dir / f"outputs-{i}.pt")
                row["outputs"] = f"outputs-{i}.pt"
            phases["outputs"] += time.perf_counter() - t0
            t_timing = time.perf_counter()
            if counting:
                with _flop_counter(counting, job.get("syspath") or []) as counter:
                    row.update(count_flops(call, counter))
            elif check_only:
                # one call, untimed, nothing saved: the run a checker (compute-sanitizer
                # memcheck) watches
                call(0)
                if cuda:
                    torch.cuda.synchronize()
                row["ran"] = True
            elif job["metric"] == "cold_wall_time":
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                call(0)
                if cuda:
                    torch.cuda.synchronize()
                row["times_ms"] = [(time.perf_counter() - t0) * 1e3]
                if job.get("save_outputs"):
                    torch.save(call.outputs(inputs), out_dir / f"outputs-{i}.pt")
                    row["outputs"] = f"outputs-{i}.pt"
            elif cuda:
                row["times_ms"] = timing.bench_times(
                    call, n_inputs=len(call.sets), rep_ms=float(job.get("rep_ms", 100))
                )
            else:
                call(0)
                times = []
                for r in range(int(job.get("cpu_reps", 3))):
                    t0 = time.perf_counter()
                    call(r % len(call.sets))
                    times.append((time.perf_counter() - t0) * 1e3)
                row["times_ms"] = times
            phases["timing"] += time.perf_counter() - t_timing
            del call
            replaced = guard.replaced()
            if replaced:
                row.pop("times_ms", None)
                row["error"] = f"tampered: {', '.join(replaced)} replaced during the call"
                results.append(row)
                break
        except Exception as exc:
            row["error"] = f"{last_line(exc, 400)}{where(exc, job.get('syspath') or [])}"
            lost = context_lost(torch)
        results.append(row)
        if cuda and not lost:
            try:
                torch.cuda.empty_cache()
            except Exception as exc:
                lost = last_line(exc, 200)
        if lost:
            # every later CUDA call of this process would fail with the same error, and the
            # cleanup raising here once lost the calls already measured with the process
            why = f"not run: the GPU context was lost at {spec['label']} ({lost})"
            results += [{"label": s["label"], "error": why} for s in job["calls"][i + 1 :]]
            break
    return {"calls": results, "phases": {k: round(v, 2) for k, v in phases.items()}}


def context_lost(torch: Any) -> str:
    """After a call's error, whether this process's CUDA context is gone, as the error a
    synchronization then raises ("" when it is fine, or with no GPU): an illegal memory access
    is sticky, so every later CUDA call fails with it (flash-linear-attention #479's gold at
    its typical size: int32 offsets past 2^31)."""
    if not torch.cuda.is_available():
        return ""
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        return last_line(exc, 200)
    return ""


def last_line(exc: BaseException, width: int) -> str:
    """An exception as Python's traceback ends with it ("TypeError: ..."), cut to `width`."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()[:width]


def main() -> int:
    # `eval.sandbox.run_script` starts the script with no argument: the job lies in the tree
    job_path = Path(sys.argv[1] if len(sys.argv) > 1 else ".tpb_workload_job.json")
    job = json.loads(job_path.read_text())
    result = run(job)
    tmp = Path(job["result"] + ".tmp")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, job["result"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
