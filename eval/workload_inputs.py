"""How a workload's inputs are built and how its outputs are compared: the two tables.

Reads and writes nothing; torch is handed in by the caller (the harness runs in a subprocess
and imports only this module and `eval.timing` from the project).

Input rules (`RULES`, chosen per argument by `rule_for`): float tensors are random normal in
their dtype; index, offset, label and routing tensors are never uniform noise: each is built so
that the kernel gets valid data (labels in [0, vocab) with the captured fraction of
ignore_index, offsets monotone and ending at the total length, top-k indices distinct per row).
Every tensor comes from one seeded generator, so base, gold and prediction see the same inputs.

Output tolerances (`TOLERANCES`, by dtype): an output matches the gold's when every element is
within `atol + rtol * |gold|`, NaNs in the same places, except at most `outliers` of the
elements (a reduction in another order moves a few low-precision values by one ulp more).
Integer and boolean outputs must be equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# a launch's compiler options, not arguments: the plan takes no model size from them, and the
# harness leaves them to an autotuner that sets them itself
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})

# --- input rules -------------------------------------------------------------------------------

RULES = {
    "normal": "random normal in the argument's dtype (float tensors)",
    "positive": "|normal| + 0.5 (scales, variances, norms' weights that must not be 0)",
    "logsigmoid": "log-sigmoid of a normal, at least -5 (gates in log space)",
    "sigmoid": "sigmoid of a normal, in (0, 1) (betas, gates)",
    "l2norm": "a normal scaled to unit L2 norm over the last dimension (delta-rule keys)",
    "probs": "softmax of a normal over the last dimension (routing weights, probabilities)",
    "labels": "integers in [0, high), a fraction `ignore` of them set to `ignore_index`",
    "offsets": "monotone from 0 to `total` in `segments` + 1 steps (cu_seqlens, offsets)",
    "topk": "per row, `k` distinct integers in [0, high) (expert ids, top-k indices)",
    "index": "integers in [0, high) (gather positions, block tables, token ids)",
    "slots": "distinct integers in [0, high): one cache line per row (a decode batch's state "
    "indices; random ones would make rows race on a line)",
    "mask": "booleans, a fraction `p` of them true",
    "zeros": "all zero (accumulators, outputs the call overwrites)",
    "values": "the `values` a test wrote out (`torch.tensor([5])`: a position, a small table)",
}

# (argument-name pattern, dtype kind, rule): the first row that matches decides.
# dtype kind: "int" (integer tensors), "float", "bool" or "any".
NAME_RULES: tuple[tuple[str, str, str], ...] = (
    (
        r"cu_seqlens|cu_seq_lens|seq_?offsets|offsets|indptr|seq_starts|chunk_indices",
        "int",
        "offsets",
    ),
    (r"label|target|^y$", "int", "labels"),
    (
        r"topk_(ids|idx|indices)|expert_(ids|indices)|selected_experts|top_?k_index|^indices$",
        "int",
        "topk",
    ),
    (r"topk_weights|routing_weights|router_probs|probs|gates?$", "float", "probs"),
    (r"mask", "bool", "mask"),
    (r"mask", "int", "mask"),
    (r"eps|scale|var|rstd|inv_freq", "float", "positive"),
    (r".", "int", "index"),
    (r".", "bool", "mask"),
    (r".", "float", "normal"),
)

INT_DTYPES = {"int8", "uint8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
FLOAT_DTYPES = {
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
}


def dtype_kind(dtype: str) -> str:
    d = dtype.removeprefix("torch.")
    if d == "bool":
        return "bool"
    if d in INT_DTYPES:
        return "int"
    return "float"


def rule_for(name: str, dtype: str, stats: Mapping[str, Any] | None = None) -> str:
    """The input rule of an argument, from its name and dtype, and, for an integer tensor the
    tests launched, from what its values were (sorted and starting at 0: offsets)."""
    kind = dtype_kind(dtype)
    if kind == "int" and stats:
        if stats.get("monotone") and stats.get("min") == 0 and not stats.get("negative"):
            by_name = _by_name(name, kind)
            return by_name if by_name in ("offsets", "labels") else "offsets"
        if stats.get("negative"):
            return "labels"
        if stats.get("row_distinct"):
            return "topk"
    return _by_name(name, kind)


def _by_name(name: str, kind: str) -> str:
    for pattern, k, rule in NAME_RULES:
        if k in (kind, "any") and re.search(pattern, name, re.I):
            return rule
    return "normal"


# --- building tensors --------------------------------------------------------------------------


def torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, name.removeprefix("torch."))


def make_tensor(torch: Any, spec: Mapping[str, Any], gen: Any, device: Any) -> Any:
    """The tensor an `ArgSpec` (as JSON) describes, drawn from `gen` on `device`."""
    shape = [int(x) for x in spec["shape"]]
    dtype = torch_dtype(torch, spec["dtype"])
    rule = spec.get("rule") or "normal"
    p = dict(spec.get("params") or {})
    n = 1
    for x in shape:
        n *= x
    if rule in ("normal", "positive", "probs", "logsigmoid", "sigmoid", "l2norm"):
        work = torch.float32 if dtype.itemsize == 1 else dtype  # fp8: drawn in fp32, then cast
        x = torch.randn(shape, generator=gen, device=device, dtype=work)
        if rule == "positive":
            x = x.abs_() + 0.5
        elif rule == "logsigmoid":
            x = torch.nn.functional.logsigmoid(x.float()).clamp_min(-5.0)
        elif rule == "sigmoid":
            x = torch.sigmoid(x.float())
        elif rule == "probs" and shape:
            x = torch.softmax(x.float(), dim=-1)
        elif rule == "l2norm" and shape:
            x = torch.nn.functional.normalize(x.float(), p=2.0, dim=-1)
        values = x.to(dtype)
    elif rule == "zeros":
        values = torch.zeros(shape, device=device, dtype=dtype)
    elif rule == "mask":
        frac = float(p.get("p", 0.5))
        values = (torch.rand(shape, generator=gen, device=device) < frac).to(dtype)
    elif rule == "labels":
        high = max(1, int(p.get("high", 2)))
        values = torch.randint(0, high, shape, generator=gen, device=device, dtype=torch.int64)
        ignore = float(p.get("ignore", 0.0))
        if ignore > 0:
            drop = torch.rand(shape, generator=gen, device=device) < ignore
            values[drop] = int(p.get("ignore_index", -100))
        values = values.to(dtype)
    elif rule == "offsets":
        values = offsets(torch, n, int(p.get("total", n)), gen, device).to(dtype)
        values = values.reshape(shape)
    elif rule == "topk":
        high = int(p.get("high", shape[-1] if shape else 1))
        values = topk_rows(torch, shape, high, gen, device).to(dtype)
    elif rule == "values":
        values = torch.tensor(p["values"], device=device, dtype=dtype).reshape(shape)
    elif rule == "slots" and n <= int(p.get("high", 0)):
        perm = torch.randperm(int(p["high"]), generator=gen, device=device)
        values = perm[:n].reshape(shape).to(dtype)
    elif rule in ("index", "slots"):
        high = max(1, int(p.get("high", 2)))
        low = int(p.get("low", 0))
        values = torch.randint(low, high, shape, generator=gen, device=device, dtype=torch.int64)
        values = values.to(dtype)
    else:
        raise ValueError(f"unknown input rule {rule!r} (known: {', '.join(RULES)})")
    stride = spec.get("stride")
    if stride is not None and list(stride) != list(values.stride()):
        strided = torch.empty_strided(shape, [int(s) for s in stride], dtype=dtype, device=device)
        strided.copy_(values)
        values = strided
    if spec.get("grad") and values.is_floating_point():
        values.requires_grad_(True)
    return values


def offsets(torch: Any, points: int, total: int, gen: Any, device: Any) -> Any:
    """`points` monotone offsets from 0 to `total`: `points - 1` segments of random lengths
    (each within half and one and a half of the mean) that sum to `total`."""
    segments = max(1, points - 1)
    if points < 2:
        return torch.tensor([0] * points, device=device, dtype=torch.int64)
    weights = torch.rand(segments, generator=gen, device=device, dtype=torch.float64) + 0.5
    cuts = torch.cumsum(weights, 0) / weights.sum() * total
    cuts = cuts.round().long().clamp_(0, total)
    cuts[-1] = total
    out = torch.zeros(points, device=device, dtype=torch.int64)
    out[1:] = torch.cummax(cuts, 0).values
    return out


def topk_rows(torch: Any, shape: list[int], high: int, gen: Any, device: Any) -> Any:
    """Rows of `shape[-1]` distinct integers in [0, high) (a random permutation's prefix)."""
    k = shape[-1] if shape else 1
    if k > high:
        raise ValueError(f"top-k of {k} distinct values in [0, {high}) is impossible")
    rows = 1
    for x in shape[:-1]:
        rows *= x
    keys = torch.rand(rows, high, generator=gen, device=device)
    return keys.argsort(dim=1)[:, :k].reshape(shape)


# --- comparing outputs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    outliers: float  # fraction of elements allowed outside rtol/atol


TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(1e-7, 1e-7, 0.0),
    "float32": Tolerance(1e-4, 1e-4, 1e-5),
    "float16": Tolerance(1e-2, 1e-3, 1e-4),
    "bfloat16": Tolerance(2e-2, 1e-2, 1e-4),
    "float8_e4m3fn": Tolerance(0.125, 0.0625, 1e-3),
    "float8_e5m2": Tolerance(0.25, 0.125, 1e-3),
    "float8_e4m3fnuz": Tolerance(0.125, 0.0625, 1e-3),
    "float8_e5m2fnuz": Tolerance(0.25, 0.125, 1e-3),
}
EXACT = Tolerance(0.0, 0.0, 0.0)  # integers and booleans


def tolerance(dtype: str) -> Tolerance:
    d = dtype.removeprefix("torch.")
    if dtype_kind(d) != "float":
        return EXACT
    return TOLERANCES.get(d, TOLERANCES["float32"])


def flatten(value: Any, path: str = "out") -> Iterator[tuple[str, Any]]:
    """(path, tensor) of every tensor in a call's output (tuples, lists, dicts, dataclass-like
    objects with tensor attributes are walked; other values are left out)."""
    if type(value).__module__.startswith("torch") and hasattr(value, "dtype"):
        yield path, value
    elif isinstance(value, tuple | list):
        for i, v in enumerate(value):
            yield from flatten(v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            yield from flatten(value[k], f"{path}.{k}")


def compare(torch: Any, gold: Mapping[str, Any], other: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether `other`'s outputs (path -> tensor) match the gold's within the gold dtype's
    tolerance; the reason when they do not."""
    if set(gold) != set(other):
        missing = sorted(set(gold) ^ set(other))
        return False, f"outputs differ in structure: {', '.join(missing[:3])}"
    for path in sorted(gold):
        g, o = gold[path], other[path]
        if tuple(g.shape) != tuple(o.shape):
            return False, f"{path}: shape {list(o.shape)} != gold {list(g.shape)}"
        tol = tolerance(str(g.dtype))
        if tol is EXACT:
            bad = int((g.cpu() != o.cpu()).sum())
            if bad:
                return False, f"{path}: {bad} of {g.numel()} elements differ ({g.dtype})"
            continue
        gf, of = g.detach().float(), o.detach().float().to(g.device)
        nan_g, nan_o = torch.isnan(gf), torch.isnan(of)
        if bool((nan_g != nan_o).any()):
            return False, f"{path}: NaNs in other places than the gold's"
        close = torch.isclose(of, gf, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
        bad = int((~close).sum())
        if bad > tol.outliers * g.numel():
            worst = float((of - gf).abs().nan_to_num(0.0).max())
            return False, (
                f"{path}: {bad} of {g.numel()} elements outside rtol {tol.rtol} atol "
                f"{tol.atol} ({g.dtype}; max abs diff {worst:.3g})"
            )
    return True, ""
