"""How each framework is installed at a commit: the install recipes, chosen per task.

Reads: the framework's registry entry (`core.frameworks`): its recipe and requirement files.
Writes nothing. A recipe is plain data: the shell steps of the environment layer (pinned
dependencies) and of the task layer (the framework's source at the base commit), the
environment variables the tests need, and when the recipe applies.

Recipes:
- `source-pythonpath`: the source tree on `PYTHONPATH`, its requirements pip-installed
  (Megatron-LM: its CI runs the unit tests from the checkout this way).
- `vllm-precompiled`: `VLLM_USE_PRECOMPILED=1 pip install -e .`: the Python files of the
  commit over the compiled extensions of the nearest nightly wheel; right for tasks that touch
  only Python and Triton code (every Triton task does).
- `pytorch-nightly-overlay`: the nightly wheel of the commit's date, with the commit's Python
  files copied over the installed package (Triton and Inductor code is pure Python); falls back
  to `pytorch-source` (a full source build) when the task changes C++/CUDA files.
- `pip-editable`: `pip install -e .` for any other repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.frameworks import framework as framework_entry
from envbuild.errors import EnvBuildError

# {torch_nightly}: "<torch version of version.txt>.dev<YYYYMMDD of the commit>", e.g.
# 2.8.0.dev20250501; {cuda_tag}: "cu128" for CUDA 12.8.
PLACEHOLDERS = ("{python}", "{torch}", "{triton}", "{cuda}", "{cuda_tag}", "{torch_nightly}")


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    # RUN steps of the env layer; may use the PLACEHOLDERS, filled from the resolved pins
    env_steps: tuple[str, ...]
    # RUN steps of the task layer, run in the source directory after it is copied in
    task_steps: tuple[str, ...]
    env_vars: dict[str, str] = field(default_factory=dict)
    # requirement files of the repository (at the base commit) the env layer installs, if present
    requirement_files: tuple[str, ...] = ()
    test_packages: tuple[str, ...] = ("pytest", "pytest-timeout")
    # the recipe cannot serve tasks that change files with these suffixes (compiled code)
    refuses_suffixes: tuple[str, ...] = ()
    fallback: str | None = None  # the recipe to use instead when refused

    def refuses(self, changed_paths: list[str]) -> bool:
        return (
            any(p.endswith(self.refuses_suffixes) for p in changed_paths)
            if self.refuses_suffixes
            else False
        )


SRC_DIR = "/workspace/src"

RECIPES: dict[str, Recipe] = {
    "source-pythonpath": Recipe(
        name="source-pythonpath",
        description="source tree on PYTHONPATH; requirements pip-installed",
        env_steps=(),
        task_steps=(),
        env_vars={"PYTHONPATH": SRC_DIR},
        requirement_files=("requirements.txt",),
    ),
    "vllm-precompiled": Recipe(
        name="vllm-precompiled",
        description="VLLM_USE_PRECOMPILED=1 pip install -e . (Python over prebuilt binaries)",
        env_steps=(),
        task_steps=("VLLM_USE_PRECOMPILED=1 pip install --no-cache-dir -e .",),
        requirement_files=(
            "requirements/common.txt",
            "requirements/cuda.txt",
            "requirements-cuda.txt",
        ),
        refuses_suffixes=(".cu", ".cuh", ".cpp", ".h", ".hpp", "CMakeLists.txt"),
        fallback="pip-editable",
    ),
    "pytorch-nightly-overlay": Recipe(
        name="pytorch-nightly-overlay",
        description="nightly wheel of the commit date, the commit's Python files over it",
        env_steps=(
            'pip install --no-cache-dir --pre "torch=={torch_nightly}" '
            "--index-url https://download.pytorch.org/whl/nightly/{cuda_tag}",
        ),
        task_steps=(
            "SITE=\"$(python -c 'import torch, os; print(os.path.dirname(torch.__file__))')\" "
            '&& cp -r torch/. "$SITE/"',
        ),
        refuses_suffixes=(".cu", ".cuh", ".cpp", ".h", ".hpp", ".c", "CMakeLists.txt", ".yaml"),
        fallback="pytorch-source",
    ),
    "pytorch-source": Recipe(
        name="pytorch-source",
        description="full source build (python setup.py develop); slow, for tasks touching C++",
        env_steps=(),
        task_steps=(
            "pip install --no-cache-dir -r requirements.txt",
            "USE_CUDA=1 python setup.py develop",
        ),
    ),
    "pip-editable": Recipe(
        name="pip-editable",
        description="pip install -e . of the repository at the base commit",
        env_steps=(),
        task_steps=("pip install --no-cache-dir -e .",),
        requirement_files=("requirements.txt",),
    ),
}


def recipe_for(framework: str, changed_paths: list[str] | None = None) -> Recipe:
    """The recipe of `framework` (from its registry entry; others get `pip-editable`), or its
    fallback when the task changes files the recipe cannot serve. The entry's
    `requirement_files`, when it names any, replace the recipe's."""
    install = framework_entry(framework).install
    if install.recipe not in RECIPES:
        raise EnvBuildError(f"framework {framework!r} names unknown recipe {install.recipe!r}")
    recipe = RECIPES[install.recipe]
    seen = {install.recipe}
    while changed_paths and recipe.refuses(changed_paths) and recipe.fallback:
        if recipe.fallback in seen:
            break
        seen.add(recipe.fallback)
        recipe = RECIPES[recipe.fallback]
    if install.requirement_files and recipe.name == install.recipe:
        recipe = replace(recipe, requirement_files=install.requirement_files)
    return recipe
