"""Near-duplicate detection: a kernel copied between frameworks clusters, unrelated ones do not."""

from __future__ import annotations

import logging
import sys
import types

import pytest

from curation.dedup import DedupItem, find_duplicates, jaccard, shingles, tokenize

# A vector add as one framework has it.
VEC_ADD = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)], key=["n_elements"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Element-wise sum of two contiguous vectors."""
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


def add(x, y):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, output, n_elements)
    return output
'''

# The same kernel after a copy into another framework: comments, quotes and layout changed, the
# kernel renamed.
VEC_ADD_COPY = """
import triton
import triton.language as tl

# Ported from the other framework.
@triton.autotune(
    configs=[
        triton.Config({'BLOCK_SIZE': 1024}, num_warps=4),
    ],
    key=['n_elements'],
)
@triton.jit
def _vec_add_fwd(x_ptr, y_ptr, out_ptr, n_elements,
                 BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)  # one program per block
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)

    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


def add(x, y):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']),)
    _vec_add_fwd[grid](x, y, output, n_elements)
    return output
"""

SOFTMAX = """
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    row_in = tl.load(in_ptr + row * in_row_stride + cols, mask=valid, other=-float("inf"))
    shifted = row_in - tl.max(row_in, axis=0)
    num = tl.exp(shifted)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=valid)
"""

LAYERNORM = """
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK_N)
    inb = cols < N
    a = tl.load(X + cols, mask=inb, other=0.0).to(tl.float32)
    mean = tl.sum(a, axis=0) / N
    centred = tl.where(inb, a - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=inb)
    b = tl.load(B + cols, mask=inb)
    tl.store(Y + cols, centred * rstd * w + b, mask=inb)
"""


def _items() -> list[DedupItem]:
    # The copy is listed first but merged later: the original must still name the cluster.
    return [
        DedupItem("sglang-12", "2024-06-02T10:00:00Z", VEC_ADD_COPY),
        DedupItem("vllm-7", "2024-05-01T09:00:00+00:00", VEC_ADD),
        DedupItem("vllm-9", "2024-04-01T09:00:00Z", SOFTMAX),
        DedupItem("torch-3", "2024-03-01T09:00:00Z", LAYERNORM),
    ]


def test_tokenize_ignores_comments_docstrings_quotes_and_layout():
    a = tokenize('def f(a, b,):\n    """doc"""\n    return g("x")  # why\n')
    b = tokenize("def f(a,\n      b):\n    return g('x')\n")
    assert a == b
    assert "doc" not in " ".join(a)


def test_copied_kernel_is_clustered_under_the_earliest_task():
    report = find_duplicates(_items())
    copy, orig = report.infos["sglang-12"], report.infos["vllm-7"]
    assert copy.cluster == orig.cluster == "vllm-7"
    assert copy.nearest == "vllm-7" and orig.nearest == "sglang-12"
    assert copy.similarity == orig.similarity >= 0.8
    assert copy.method == "minhash"
    assert report.note is None
    assert [(a, b) for a, b, _, _ in report.duplicate_pairs()] == [("sglang-12", "vllm-7")]


def test_unrelated_kernels_stay_alone():
    report = find_duplicates(_items())
    for tid in ("vllm-9", "torch-3"):
        info = report.infos[tid]
        assert info.cluster == tid
        assert info.similarity < 0.8
        if info.nearest is None:
            assert info.similarity == 0.0
    exact = jaccard(shingles(tokenize(SOFTMAX)), shingles(tokenize(LAYERNORM)))
    assert exact < 0.3


def test_cluster_id_ties_on_date_break_by_id():
    items = [
        DedupItem("b", "2024-01-01T00:00:00", VEC_ADD),
        DedupItem("a", "2024-01-01T00:00:00Z", VEC_ADD_COPY),
        DedupItem("c", "2023-12-31T23:00:00-02:00", VEC_ADD),  # 01:00 UTC: latest
    ]
    report = find_duplicates(items)
    assert {i.cluster for i in report.infos.values()} == {"a"}
    assert report.infos["b"].nearest == "c" and report.infos["b"].similarity == 1.0


def test_empty_code_and_single_item():
    report = find_duplicates([DedupItem("x", "2024-01-01", ""), DedupItem("y", "2024-01-02", "")])
    assert report.infos["x"].cluster == "x" and report.infos["x"].nearest is None
    assert report.pairs == []


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="duplicate task ids"):
        find_duplicates([DedupItem("a", "2024-01-01", "x"), DedupItem("a", "2024-01-02", "y")])
    with pytest.raises(ValueError, match="not ISO"):
        find_duplicates([DedupItem("a", "yesterday", "x")])
    with pytest.raises(ValueError, match="threshold"):
        find_duplicates([], threshold=0.0)


def test_codebert_unavailable_falls_back_to_token_scores(monkeypatch, caplog):
    # Setting the module to None makes `import code_bert_score` fail even where it is installed.
    monkeypatch.setitem(sys.modules, "code_bert_score", None)
    with caplog.at_level(logging.WARNING, logger="curation.dedup"):
        report = find_duplicates(_items(), codebert_model="neulab/codebert-python")
    assert report.note is not None and report.note.startswith("CodeBERTScore unavailable")
    assert "token scores used" in report.note
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    assert report.infos["sglang-12"].cluster == "vllm-7"
    assert all(m == "minhash" for _, _, _, m in report.pairs)


def test_codebert_model_load_failure_falls_back(monkeypatch):
    def score(**kwargs):
        raise OSError(f"cannot find weights for {kwargs['model_type']}")

    monkeypatch.setitem(sys.modules, "code_bert_score", types.SimpleNamespace(score=score))
    report = find_duplicates(_items(), codebert_model="/nonexistent/model")
    assert report.note is not None and "/nonexistent/model" in report.note
    assert report.infos["vllm-7"].method == "minhash"


def test_codebert_scores_replace_token_scores_when_available(monkeypatch):
    calls = []

    def score(cands, refs, lang, model_type):
        calls.append((lang, model_type, len(cands)))
        f1 = [
            0.97 if {c, r} == {VEC_ADD, VEC_ADD_COPY} else 0.5
            for c, r in zip(cands, refs, strict=True)
        ]
        return f1, f1, f1, f1

    monkeypatch.setitem(sys.modules, "code_bert_score", types.SimpleNamespace(score=score))
    report = find_duplicates(_items(), codebert_model="neulab/codebert-python")
    assert calls and calls[0][:2] == ("python", "neulab/codebert-python")
    assert report.note is None
    info = report.infos["sglang-12"]
    assert (info.cluster, info.nearest, info.similarity, info.method) == (
        "vllm-7",
        "vllm-7",
        0.97,
        "codebertscore",
    )


def test_a_kernel_copied_among_many_others_is_found_kernel_by_kernel() -> None:
    from curation.dedup import TaskKernels, find_task_duplicates

    others = tuple(
        VEC_ADD.replace("vec_add", f"other{i}").replace("x + y", f"x * {i} - y")
        + f"\n# variant {i}\n" * 3
        for i in range(6)
    )
    big = TaskKernels("fw_b__9__many", "2025-02-01T00:00:00Z", (*others, SOFTMAX))
    source = TaskKernels("fw_a__1__softmax", "2024-01-01T00:00:00Z", (SOFTMAX,))
    unrelated = TaskKernels("fw_a__2__layernorm", "2024-03-01T00:00:00Z", (LAYERNORM,))
    report = find_task_duplicates([big, source, unrelated])
    assert report.infos["fw_b__9__many"].cluster == "fw_a__1__softmax"
    assert report.infos["fw_b__9__many"].nearest == "fw_a__1__softmax"
    assert report.infos["fw_b__9__many"].similarity == 1.0
    assert report.infos["fw_a__2__layernorm"].cluster == "fw_a__2__layernorm"
