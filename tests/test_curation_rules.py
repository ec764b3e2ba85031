"""Filters, task types and the difficulty formula, on candidates mined from tiny real repos."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.classify import classify, pr_title
from curation.difficulty import LEVELS, grade, level, score
from curation.filters import FilterConfig, judge_all, substantive_changes
from curation.model import RejectReason, TaskType
from mining.crawl import main as crawl
from mining.model import Candidate
from mining.store import read_candidates
from tests.gitrepo import TinyRepo
from tests.kernels_src import (
    ADD_KERNEL,
    ADD_KERNEL_REFORMATTED,
    ADD_KERNEL_SCALED,
    HELPER_KERNEL,
    PLAIN_MODULE,
    SCALE_KERNEL,
)

MATMUL_KERNEL = """import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.atomic_add(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc,
                  mask=(rm[:, None] < M) & (rn[None, :] < N))
"""


def mine(repo: TinyRepo, tmp_path: Path) -> list[Candidate]:
    out = tmp_path / "work"
    assert crawl([str(repo.path), "--out", str(out), "--quiet", "--no-github", "--jobs", "1"]) == 0
    return read_candidates(out / repo.path.name / "candidates.jsonl")


@pytest.fixture
def repo(tmp_path: Path) -> TinyRepo:
    r = TinyRepo(tmp_path / "fw")
    r.write("pkg/plain.py", PLAIN_MODULE)
    r.commit("Initial commit")
    r.write("pkg/ops/add.py", ADD_KERNEL)
    r.commit("Add the add kernel (#1)")
    return r


def verdicts(repo: TinyRepo, tmp_path: Path, cfg: FilterConfig | None = None):
    return {c.id: v for c, v in judge_all(mine(repo, tmp_path), cfg)}


def test_new_kernel_is_kept(repo: TinyRepo, tmp_path: Path) -> None:
    v = verdicts(repo, tmp_path)["#1"]
    assert v.kept and v.reason is None


def test_formatting_only_is_not_substantive(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/add.py", ADD_KERNEL_REFORMATTED)
    repo.commit("Reformat (#2)")
    v = verdicts(repo, tmp_path)["#2"]
    assert v.reason is RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE
    assert "formatting_only" in v.detail


def test_pure_move_and_deletion_are_not_substantive(repo: TinyRepo, tmp_path: Path) -> None:
    repo.mv("pkg/ops/add.py", "pkg/kernels/add.py")
    repo.commit("Move (#2)")
    repo.rm("pkg/kernels/add.py")
    repo.commit("Delete (#3)")
    v = verdicts(repo, tmp_path)
    assert v["#2"].reason is RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE
    assert v["#3"].reason is RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE


def test_kernel_in_tests_or_benchmarks_only(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("tests/test_ref_kernel.py", SCALE_KERNEL)
    repo.write("benchmarks/bench_scale.py", SCALE_KERNEL.replace("scale_kernel", "bench_kernel"))
    repo.commit("Reference kernel for tests (#2)")
    assert verdicts(repo, tmp_path)["#2"].reason is RejectReason.TESTS_DOCS_BENCHMARKS_ONLY


def test_revert_and_reverted_later(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Scale the sum (#2)")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.commit('Revert "Scale the sum (#2)" (#3)')
    v = verdicts(repo, tmp_path)
    assert v["#3"].reason is RejectReason.REVERT
    assert v["#2"].reason is RejectReason.REVERTED_LATER
    assert v["#1"].kept


def test_giant_refactor_threshold(repo: TinyRepo, tmp_path: Path) -> None:
    for i in range(5):
        repo.write(f"pkg/ops/k{i}.py", SCALE_KERNEL.replace("scale_kernel", f"k{i}_kernel"))
    repo.commit("Many kernels at once (#2)")
    v = verdicts(repo, tmp_path, FilterConfig(max_kernels=3))
    assert v["#2"].reason is RejectReason.GIANT_REFACTOR
    assert verdicts(repo, tmp_path / "again", FilterConfig(max_kernels=10))["#2"].kept


def test_constant_tweak_is_too_small_but_block_size_is_not(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/add.py", ADD_KERNEL.replace("program_id(0)", "program_id(1)"))
    repo.commit("Use axis 1 (#2)")
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit("Scale (#3)")
    repo.write("pkg/ops/scale.py", SCALE_KERNEL.replace("num_warps=8", "num_warps=4"))
    repo.commit("Fewer warps (#4)")
    v = verdicts(repo, tmp_path)
    assert v["#2"].reason is RejectReason.TOO_SMALL
    assert v["#4"].kept


def typed(repo: TinyRepo, tmp_path: Path) -> dict[str, TaskType]:
    out = {}
    for c, v in judge_all(mine(repo, tmp_path)):
        if v.kept:
            out[c.id] = classify(c, substantive_changes(c)).type
    return out


def test_task_types(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.write("tests/test_add.py", "def test_scaled():\n    assert True\n")
    repo.commit("Fix wrong result of the add kernel (#2)")
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit("Scale (#3)")
    repo.write(
        "pkg/ops/scale.py",
        SCALE_KERNEL.replace("num_warps=8", "num_warps=4").replace(
            '{"BLOCK": 128}', '{"BLOCK": 1024}'
        ),
    )
    repo.commit("Tune scale configs for H100 (#4)")
    repo.write(
        "pkg/ops/scale.py",
        SCALE_KERNEL.replace("n, alpha,", "n, alpha, beta,").replace("* alpha", "* alpha + beta"),
    )
    repo.commit("Support an offset in scale (#5)")
    types = typed(repo, tmp_path)
    assert types["#1"] is TaskType.NEW_OP
    assert types["#2"] is TaskType.BUG_FIX
    assert types["#3"] is TaskType.NEW_OP
    assert types["#4"] is TaskType.OPTIMIZATION
    assert types["#5"] is TaskType.FEATURE


def test_title_words_do_not_outvote_the_code(repo: TinyRepo, tmp_path: Path) -> None:
    """A PR that only adds a kernel is a new op even when its title says it is fused, fast or
    optimized; "fused" alone is no optimization signal."""
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit("perf: fused and optimized scale kernel for faster training (#2)")
    repo.write("pkg/ops/square.py", HELPER_KERNEL)
    repo.commit("Fix slow squares with a fused square kernel (#3)")
    types = typed(repo, tmp_path)
    assert types["#2"] is TaskType.NEW_OP
    assert types["#3"] is TaskType.NEW_OP


def test_type_evidence_is_recorded(repo: TinyRepo, tmp_path: Path) -> None:
    [cand] = [c for c in mine(repo, tmp_path) if c.id == "#1"]
    decision = classify(cand, substantive_changes(cand))
    assert any("only adds kernels: add_kernel" in e for e in decision.evidence)


def test_difficulty_formula_levels() -> None:
    cuts = (0.0, 6.59, 6.6, 9.0, 11.6, 14.79, 14.8, 20.0)
    assert [level(s) for s in cuts] == [1, 1, 2, 3, 4, 4, 5, 5]
    zero = dict.fromkeys(
        (
            "changed_lines",
            "kernel_lines",
            "kernels",
            "helpers",
            "params",
            "uses_dot",
            "uses_atomic",
            "loops",
            "masks",
            "files",
            "diff_lines",
        ),
        0.0,
    )
    assert score(zero) == 0.0
    assert score({**zero, "uses_dot": 1.0}) == pytest.approx(1.0)
    assert score({**zero, "changed_lines": 10.0}) == pytest.approx(1.0)  # log2(1 + 10/10)
    # the PR's whole source diff counts too, not only the kernels' lines
    assert score({**zero, "diff_lines": 50.0}) == pytest.approx(0.5)  # 0.5 x log2(1 + 50/50)
    assert len(LEVELS) == 4


def test_difficulty_grows_with_kernel_features(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/square.py", HELPER_KERNEL)
    repo.commit("Square (#2)")
    repo.write("pkg/ops/mm.py", MATMUL_KERNEL)
    repo.commit("Matmul (#3)")
    cands = {c.id: c for c in mine(repo, tmp_path)}
    d_add = grade(cands["#1"], substantive_changes(cands["#1"]))
    d_sq = grade(cands["#2"], substantive_changes(cands["#2"]))
    d_mm = grade(cands["#3"], substantive_changes(cands["#3"]))
    assert d_mm.features["uses_dot"] == 1.0 and d_mm.features["uses_atomic"] == 1.0
    assert d_mm.features["loops"] == 1.0
    assert d_sq.features["helpers"] == 1.0
    assert d_add.score < d_mm.score
    assert d_add.level <= d_mm.level


def test_identifier_renaming_is_not_substantive(repo: TinyRepo, tmp_path: Path) -> None:
    doc = '    """Sum one BLOCK of x and y."""\n'
    with_doc = ADD_KERNEL.replace(
        "    pid = tl.program_id(0)\n", doc + "    pid = tl.program_id(0)\n"
    )
    repo.write("pkg/ops/add.py", with_doc)
    repo.commit("Document the kernel (#2)")
    renamed = with_doc.replace("BLOCK", "TILE").replace("offs", "offsets")
    repo.write("pkg/ops/add.py", renamed)
    repo.commit("Rename block to tile (#3)")
    v = verdicts(repo, tmp_path)
    assert v["#2"].reason is RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE
    assert "docstring only" in v["#2"].detail
    assert v["#3"].reason is RejectReason.NO_SUBSTANTIVE_KERNEL_CHANGE
    assert "identifiers renamed" in v["#3"].detail


def test_gitlab_merge_titles(repo: TinyRepo, tmp_path: Path) -> None:
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Merge branch 'fix_add_scaling' into 'main'\n\nSee merge request ADLR/x!12")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.write("pkg/ops/scale.py", SCALE_KERNEL)
    repo.commit(
        "Merge branch 'fix_scale' into 'main'\n\nfeat(ops): Support scaling by alpha\n\n"
        "See merge request ADLR/x!13"
    )
    cands = {c.id: c for c in mine(repo, tmp_path)}
    assert pr_title(cands["!12"]) == "fix add scaling"  # no MR title: the branch name
    decision = classify(cands["!12"], substantive_changes(cands["!12"]))
    assert decision.type is TaskType.BUG_FIX
    assert any("title says 'fix'" in e for e in decision.evidence)
    assert pr_title(cands["!13"]) == "feat(ops): Support scaling by alpha"
    decision = classify(cands["!13"], substantive_changes(cands["!13"]))
    assert decision.type is TaskType.FEATURE
    assert any("conventional 'feat'" in e for e in decision.evidence)


def test_tuned_launch_parameters_are_an_optimization_task(repo: TinyRepo, tmp_path: Path) -> None:
    tuned = ADD_KERNEL.replace("BLOCK=256)", "BLOCK=1024)")
    repo.write("pkg/ops/add.py", tuned)
    repo.commit("Bigger blocks for add (#2)")
    repo.write("pkg/ops/add.py", tuned.replace("return out", "return out  # done"))
    repo.commit("Comment in the wrapper (#3)")
    cands = {c.id: c for c in mine(repo, tmp_path)}
    assert [str(kc.change) for kc in cands["#2"].kernel_changes] == ["launch_changed"]
    assert "#3" not in cands  # the launch itself is unchanged: not a candidate
    v = {c.id: v for c, v in judge_all(list(cands.values()))}
    assert v["#2"].kept
    assert classify(cands["#2"], substantive_changes(cands["#2"])).type is TaskType.OPTIMIZATION


def test_a_kernel_file_that_does_not_parse_on_one_side_is_rejected_with_its_reason(
    repo: TinyRepo, tmp_path: Path
) -> None:
    from dataclasses import replace

    from curation.filters import judge

    repo.write("pkg/ops/add.py", ADD_KERNEL.replace("x + y, mask=mask)", "x * y, mask=mask))"))
    repo.commit("Fix the add kernel (#2)")  # committed with a syntax error, as happens
    cand = next(c for c in mine(repo, tmp_path) if c.id == "#2")
    assert any(kc.uncertain for kc in cand.kernel_changes)
    assert judge(cand, set()).reason is RejectReason.UNPARSABLE_SOURCE
    cand = next(c for c in mine(repo, tmp_path) if c.id == "#1")
    assert judge(cand, set()).kept
    broken = replace(cand, kernel_changes=tuple(replace(kc, uncertain=True)
                                                 for kc in cand.kernel_changes))  # fmt: skip
    verdict = judge(broken, set())
    assert verdict.reason is RejectReason.UNPARSABLE_SOURCE and "does not parse" in verdict.detail


def test_a_backend_of_an_existing_op_is_a_feature_and_a_rewritten_op_an_optimization(
    repo: TinyRepo, tmp_path: Path
) -> None:
    backend = ADD_KERNEL.replace("add_kernel", "add_kernel_npu").replace("def add(", "def add_npu(")
    repo.write("pkg/ops/backends/_ascend/add.py", backend)
    repo.commit("Add the add op for NPU (#2)")
    # the wrapper `add` now launches a new kernel and the old one is gone: a rewrite
    blocked = ADD_KERNEL.replace("add_kernel", "add_kernel_blocked").replace(
        "mask = offs < n", "mask = (offs < n) & (offs >= 0)"
    )
    repo.write("pkg/ops/add.py", blocked)
    repo.commit("Blocked add (#3)")
    types = typed(repo, tmp_path)
    assert types["#2"] is TaskType.FEATURE
    assert types["#3"] is TaskType.OPTIMIZATION
