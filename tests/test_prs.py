"""Commit message -> PR reference, revert detection and revert linking."""

from __future__ import annotations

import pytest

from mining.model import PrRef, RevertRef
from mining.prs import RevertLinker, normalize_subject, parse_pr, parse_revert, revert_target_pr

SHA_A = "4003d70f189143d95538be4166287b562e6cf5c5"
SHA_B = "509384db98e2762b6a2f5c95063bcaef21e3575d"
SHA_C = "9119fae3346b981dd67620fe92a52d63a43cf6b4"
SHA_D = "1169ce23fcc699111eed04c83d80c0c8f3b5409c"


# --- parse_pr ------------------------------------------------------------------------------


def test_pytorch_trailer() -> None:
    body = (
        "Stack from [ghstack](https://github.com/ezyang/ghstack):\n"
        "* __->__ #118302\n\n"
        "The persistent reduction heuristic picked XBLOCK=1 for tiny rnumel.\n\n"
        "Pull Request resolved: https://github.com/pytorch/pytorch/pull/118302\n"
        "Approved by: https://github.com/jansel\n"
    )
    ref = parse_pr("[inductor] Fix persistent reduction for small rnumel", body, "pytorch/pytorch")
    assert ref == PrRef(
        id="#118302",
        number=118302,
        source="trailer",
        url="https://github.com/pytorch/pytorch/pull/118302",
    )


def test_trailer_wins_over_squash_marker() -> None:
    body = "Pull Request resolved: https://github.com/pytorch/pytorch/pull/120001\n"
    ref = parse_pr("[triton] Bump pin (#119999)", body, "pytorch/pytorch")
    assert ref is not None
    assert (ref.source, ref.number) == ("trailer", 120001)


def test_vllm_squash() -> None:
    subject = "[Kernel] Add fused MoE Triton config for H200 (#9876)"
    body = "Signed-off-by: Jane Doe <jane@example.com>\n"
    ref = parse_pr(subject, body, "vllm-project/vllm")
    assert ref == PrRef(
        id="#9876",
        number=9876,
        source="squash",
        url="https://github.com/vllm-project/vllm/pull/9876",
    )


def test_squash_takes_last_marker_and_tolerates_trailing_space() -> None:
    ref = parse_pr('Reapply "fix checkpointing error (#3203)" (#3283) (#3285)  ', "", "o/r")
    assert ref is not None
    assert (ref.source, ref.number, ref.id) == ("squash", 3285, "#3285")


def test_squash_marker_not_at_end_is_not_a_pr() -> None:
    assert parse_pr('Revert "Fix rope scaling (#2105)"', "", "NVIDIA/Megatron-LM") is None


def test_github_merge_commit() -> None:
    subject = "Merge pull request #412 from alice/fix-layernorm-kernel"
    ref = parse_pr(subject, "Fix layernorm backward for fp16", "org/proj")
    assert ref == PrRef(
        id="#412", number=412, source="merge", url="https://github.com/org/proj/pull/412"
    )


def test_megatron_gitlab_subject() -> None:
    subject = "ADLR/megatron-lm!4110 - Renaming Chunk to Block During Memory Management"
    ref = parse_pr(subject, "", "NVIDIA/Megatron-LM")
    assert ref == PrRef(id="!4110", number=4110, source="gitlab", url=None)


def test_any_gitlab_project_path() -> None:
    ref = parse_pr("group/sub-group/proj!7 - tweak", "", "NVIDIA/Megatron-LM")
    assert ref == PrRef(id="!7", number=7, source="gitlab", url=None)


def test_gitlab_merge_branch_with_merge_request_line() -> None:
    subject = "Merge branch 'dnarayanan/fix_from_checkpoint_args' into 'main'"
    body = "Fix loading args from checkpoint\n\nSee merge request ADLR/megatron-lm!2374"
    ref = parse_pr(subject, body, "NVIDIA/Megatron-LM")
    assert ref == PrRef(id="!2374", number=2374, source="gitlab", url=None)


def test_no_pr() -> None:
    assert parse_pr("ci(hotfix): Restart on zmq error", "", "NVIDIA/Megatron-LM") is None
    assert (
        parse_pr("Merge branch 'main' of https://github.com/NVIDIA/Megatron-LM", "", "x/y") is None
    )
    # A merge request mentioned in passing is not this commit's own.
    assert parse_pr("fix (moe): hotfix for CI breakage caused by !2801", "", "x/y") is None
    assert parse_pr("Fix issue #12 in the loader", "", "x/y") is None


def test_url_only_for_owner_name_repos() -> None:
    ref = parse_pr("Add kernel (#5)", "", "/srv/mirrors/vllm")
    assert ref is not None
    assert ref.url is None
    assert ref.id == "#5"


# --- parse_revert --------------------------------------------------------------------------


def test_quoted_revert_with_body_sha() -> None:
    body = f"This reverts commit {SHA_A}.\n"
    ref = parse_revert('Revert "Update moe github test cases. (#3077)"', body)
    assert ref == RevertRef(
        kind="revert", target_subject="Update moe github test cases. (#3077)", target_commit=SHA_A
    )


def test_quoted_revert_strips_own_squash_marker() -> None:
    ref = parse_revert('Revert "Default UVM level to 0. (#2450)" (#2713)', "")
    assert ref == RevertRef(
        kind="revert", target_subject="Default UVM level to 0. (#2450)", target_commit=None
    )


def test_nested_revert() -> None:
    ref = parse_revert('Revert "Revert "ADLR/megatron-lm!3059 - update golden values""', "")
    assert ref is not None
    assert ref.kind == "revert"
    assert ref.target_subject == 'Revert "ADLR/megatron-lm!3059 - update golden values"'


def test_revert_behind_conventional_tag() -> None:
    ref = parse_revert('ci: Revert "ci: Add secrets detector (#3180)" (#3330)', "")
    assert ref is not None
    assert (ref.kind, ref.target_subject) == ("revert", "ci: Add secrets detector (#3180)")


def test_truncated_revert_title() -> None:
    ref = parse_revert(
        'Revert "Add single-process checkpoint save to avoid forked multiproce… (#3630)', ""
    )
    assert ref is not None
    assert ref.target_subject == "Add single-process checkpoint save to avoid forked multiproce…"


@pytest.mark.parametrize(
    ("subject", "target"),
    [
        (
            'Reapply "Add MTP support for hybrid models (#2363)" (#3207)',
            "Add MTP support for hybrid models (#2363)",
        ),
        ('Re-apply "[inductor] Split reductions"', "[inductor] Split reductions"),
        (
            'Reland "[dynamo] Trace through triton.autotune"',
            "[dynamo] Trace through triton.autotune",
        ),
        (
            "[Reland] Use block pointers in Triton templates (#120321)",
            "Use block pointers in Triton templates",
        ),
        ("[reland] Use block pointers", "Use block pointers"),
        ("Reland: fused softmax kernel", "fused softmax kernel"),
        ("Reapply - Add grpo loop functional test (#2411)", "Add grpo loop functional test"),
        ("Reland of fused rope kernel (#2200)", "fused rope kernel"),
        ("Replay !4110 - Renaming Chunk to Block", "!4110 - Renaming Chunk to Block"),
        (
            "Replay `ADLR/megatron-lm!3689 - Full model CUDA graphs`",
            "ADLR/megatron-lm!3689 - Full model CUDA graphs",
        ),
        ("Re-apply m4_remove_encoder_pp_fixed !3439", "m4_remove_encoder_pp_fixed !3439"),
    ],
)
def test_reapply_forms(subject: str, target: str) -> None:
    body = f"This reverts commit {SHA_B}.\n"  # the revert being undone: not the target
    assert parse_revert(subject, body) == RevertRef(
        kind="reapply", target_subject=target, target_commit=None
    )


def test_revert_and_reapply_by_sha() -> None:
    full = "3955c49ed9af5e5b38dccdd30c1323c00b9bcd29"
    assert parse_revert(f"Reapply {full} (#3146)", "") == RevertRef("reapply", None, full)
    assert parse_revert("Revert 3955c49", "") == RevertRef("revert", None, "3955c49")
    assert parse_revert("Revert commit 3955c49ed9.", "") == RevertRef("revert", None, "3955c49ed9")


def test_conventional_revert() -> None:
    ref = parse_revert("revert: revert community-bot bump to v1.8.7 (5adbee2) (#6288)", "")
    assert ref == RevertRef("revert", "revert community-bot bump to v1.8.7", "5adbee2")
    ref = parse_revert("revert(dist_checkpointing): remove streaming dequantization (#6275)", "")
    assert ref == RevertRef("revert", "remove streaming dequantization", None)


def test_revert_by_pr_number() -> None:
    assert parse_revert("revert of #2658 (#3736)", "") == RevertRef("revert", None, None)
    assert revert_target_pr("revert of #2658 (#3736)", "") == 2658
    assert revert_target_pr("Revert PR #77", "") == 77


def test_revert_target_pr_sources() -> None:
    assert revert_target_pr('Revert "Fix RL offload (#3112)" (#3141)', "") == 3112
    assert revert_target_pr('Revert "Tweak"', "Reverts NVIDIA/Megatron-LM#5001\n") == 5001
    pytorch_body = (
        f"This reverts commit {SHA_A}.\n\n"
        "Reverted https://github.com/pytorch/pytorch/pull/118302 on behalf of "
        "https://github.com/bot due to breaking trunk\n"
    )
    assert revert_target_pr('Revert "[inductor] Fix persistent reduction"', pytorch_body) == 118302
    assert revert_target_pr("revert: replace rampup scheduler (#3779) (#4404)", "") == 3779
    # The inner (#2916) names the revert PR being re-reverted, not an original change.
    assert revert_target_pr('Revert "Reapply "Remove FA3 args (#2898)" (#2916)"', "") is None
    assert revert_target_pr("Add kernel (#12)", "") is None


def test_bare_reverts_commit_line_needs_revert_subject() -> None:
    body = f"This reverts commit {SHA_C}.\n"
    assert parse_revert("Revert the autotune change", body) == RevertRef("revert", None, SHA_C)
    # A squash whose body quotes one of its commits' revert messages is not itself a revert.
    squash_body = f'* Add kernel\n\n* Revert "wip"\n\nThis reverts commit {SHA_C}.\n'
    assert parse_revert("Add fused attention kernel (#88)", squash_body) is None


@pytest.mark.parametrize(
    "subject",
    [
        "Fix revert of weights",
        "Revert active-buffer-size-gb arg name. (#2257)",
        "ci: revert unify legacy scope names (#5316) (#5709)",
        "Reapply rotary embedding after cache update",
        "Replay buffer for RL rollouts (#4000)",
        "Revert defaced",
        "Add reland helper script",
        "Inference fixes: re-enable EP syncs accidentally reverted by #4306 (#4587)",
    ],
)
def test_no_false_revert(subject: str) -> None:
    assert parse_revert(subject, "") is None


# --- RevertLinker --------------------------------------------------------------------------


def test_normalize_subject() -> None:
    assert normalize_subject("  Fix   rope\tscaling (#12) (#13) ") == "Fix rope scaling"
    assert normalize_subject("Upgrade deps (NVIDIA#2289)") == "Upgrade deps"


def test_linker_links_by_subject_most_recent_first() -> None:
    linker = RevertLinker()
    linker.observe(SHA_A, "Add MTP support for hybrid models (#2363)")
    linker.observe(SHA_B, "Unrelated change (#2364)")
    linker.observe(SHA_C, "Add MTP support for hybrid models (#2400)")  # landed again later
    ref = parse_revert('Revert "Add MTP support  for hybrid models (#2400)"', "")
    assert ref is not None
    assert linker.link(ref).target_commit == SHA_C


def test_linker_nested_revert_and_reapply() -> None:
    linker = RevertLinker()
    linker.observe(SHA_A, "Make check_large_grads non-fatal (#2307)")
    revert = parse_revert('Revert "Make check_large_grads non-fatal (#2307)"', "")
    assert revert is not None
    assert linker.link(revert).target_commit == SHA_A
    linker.observe(SHA_B, 'Revert "Make check_large_grads non-fatal (#2307)"')

    reapply = parse_revert('Reapply "Make check_large_grads non-fatal (#2307)"', "")
    assert reapply is not None
    assert linker.link(reapply).target_commit == SHA_A  # the original, not the revert

    revert2 = parse_revert('Revert "Revert "Make check_large_grads non-fatal (#2307)""', "")
    assert revert2 is not None
    assert linker.link(revert2).target_commit == SHA_B


def test_linker_keeps_and_expands_explicit_sha() -> None:
    linker = RevertLinker()
    linker.observe(SHA_A, "Something")
    linker.observe(SHA_D, "Something")
    ref = RevertRef("revert", "Something", SHA_A)
    assert linker.link(ref) == ref  # the message named the commit; history does not override
    short = parse_revert(f"Revert {SHA_A[:10]}", "")
    assert short is not None
    assert linker.link(short).target_commit == SHA_A
    unknown = RevertRef("revert", None, "1234567")
    assert linker.link(unknown) == unknown


def test_linker_truncated_title_case_and_pr_fallbacks() -> None:
    linker = RevertLinker()
    linker.observe(
        SHA_A, "Add single-process checkpoint save to avoid forked multiprocessing (#3600)"
    )
    linker.observe(SHA_B, "Replace rampup batch size scheduler with step schedules (#3779)")
    linker.observe(SHA_C, "Update RNG sharding to include EP rank (#2658)")
    linker.observe(SHA_D, "ADLR/megatron-lm!4110 - Renaming Chunk to Block")

    cut = parse_revert(
        'Revert "Add single-process checkpoint save to avoid forked multiproce… (#3630)', ""
    )
    assert cut is not None
    assert linker.link(cut).target_commit == SHA_A

    subject = "revert: replace rampup batch size scheduler with step schedules (#3779) (#4404)"
    conv = parse_revert(subject, "")
    assert conv is not None
    assert linker.link(conv, revert_target_pr(subject, "")).target_commit == SHA_B

    by_pr = parse_revert("revert of #2658 (#3736)", "")
    assert by_pr is not None
    assert linker.link(by_pr).target_commit is None
    assert (
        linker.link(by_pr, revert_target_pr("revert of #2658 (#3736)", "")).target_commit == SHA_C
    )

    replay = parse_revert("Replay (!4110) Renaming Chunk to Block", "")
    assert replay is not None
    assert linker.link(replay).target_commit == SHA_D


def test_linker_unknown_target_stays_unlinked() -> None:
    linker = RevertLinker()
    linker.observe(SHA_A, "Fix rope")
    ref = RevertRef("revert", "Never landed here", None)
    assert linker.link(ref) is ref


def test_linker_scales_to_a_long_history() -> None:
    linker = RevertLinker()
    for i in range(100_000):
        linker.observe(f"{i:040x}", f"Change number {i} (#{i})")
    ref = parse_revert('Revert "Change number 99998 (#99998)"', "")
    assert ref is not None
    assert linker.link(ref).target_commit == f"{99998:040x}"
