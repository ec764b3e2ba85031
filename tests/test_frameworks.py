"""One framework entry, read by every stage through `core.frameworks.framework()`."""

from __future__ import annotations

import pytest

from core.errors import FrameworkError
from core.frameworks import PR_RULES, framework, known_frameworks, resolve_framework
from envbuild.recipes import RECIPES, recipe_for
from mining.prs import parse_pr


def test_registry_entries_hold_repo_rules_recipe_and_requirement_files() -> None:
    meg = framework("megatron-lm")
    assert meg.repo == "NVIDIA/Megatron-LM" and meg.branch == "main"
    assert meg.install.recipe == "source-pythonpath"
    assert "megatron/core/requirements.txt" in meg.install.requirement_files
    assert set(known_frameworks()) >= {"pytorch", "vllm", "megatron-lm"}
    for fw in known_frameworks().values():
        assert set(fw.pr_rules) <= set(PR_RULES) and fw.install.recipe in RECIPES


def test_envbuild_reads_the_recipe_and_requirement_files_from_the_entry() -> None:
    recipe = recipe_for("megatron-lm")
    assert recipe.name == "source-pythonpath"
    assert recipe.requirement_files == framework("megatron-lm").install.requirement_files
    # a repository the registry does not name gets the defaults
    assert recipe_for("someone__else").name == "pip-editable"
    assert framework("someone__else").pr_rules == PR_RULES


def test_pr_rules_decide_which_messages_name_a_pr() -> None:
    assert parse_pr("Add kernel (#5)", "", "o/r", ("squash",)) is not None
    assert parse_pr("Add kernel (#5)", "", "o/r", ("merge", "gitlab")) is None
    assert parse_pr("grp/proj!7 - tweak", "", "o/r", ("squash",)) is None
    assert parse_pr("grp/proj!7 - tweak", "", "o/r", ("gitlab",)) is not None


def test_resolve_framework_names_the_choices_on_an_unknown_spec() -> None:
    assert resolve_framework("NVIDIA/Megatron-LM").name == "megatron-lm"
    assert resolve_framework("owner/thing").name == "owner__thing"
    with pytest.raises(FrameworkError, match="unknown framework 'nope'"):
        resolve_framework("nope")


def test_test_hints_of_the_kernel_libraries() -> None:
    liger = framework("liger-kernel").tests
    assert liger.pythonpath == ("src",) and liger.date_pinned == ("transformers",)
    fla = framework("flash-linear-attention").tests
    assert fla.min_timeout_s >= 300 and fla.date_pinned == ("transformers",)
    assert framework("megatron-lm").tests.date_pinned == ("pydantic", "omegaconf")
    assert framework("someone__else").tests.min_timeout_s == 0.0
