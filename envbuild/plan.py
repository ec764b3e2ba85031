"""Plan one task's environment: resolve pins, pick the recipe, render and tag the three layers.

Reads: a `Task` and its repository at the base commit (pin files, requirement files, the tree
sha). Writes nothing itself: `write_plan` puts env.json and the Dockerfiles in the task
directory, `materialize` fills build-context directories for the builder.

Layer tags are content hashes, so tasks share layers: the base layer depends only on CUDA,
Python and the base image; the env layer on that plus the pins, the recipe and the contents of
the requirement files; the task layer on that plus the base commit's tree (a git tree sha is a
content hash of every file in it) and the PR's test files.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from core.frameworks import framework as framework_entry
from curation.model import Task
from curation.taskdir import TaskDir, TaskFile
from envbuild.dockerfile import (
    digest_files,
    placeholder_values,
    render_base,
    render_env,
    render_task,
    write_layers,
)
from envbuild.model import EnvSpec, LayerKind, Pin, PinSource
from envbuild.recipes import Recipe, recipe_for
from envbuild.releases import ReleaseTable
from envbuild.versions import ResolvedVersions, resolve_versions
from mining.git import GitRepo


@dataclass(frozen=True)
class Plan:
    spec: EnvSpec
    versions: ResolvedVersions
    recipe: Recipe
    requirement_files: dict[str, bytes]  # repository path -> content at the base commit
    test_files: dict[str, bytes]  # the PR's test files at its merge commit


def plan_task(task: Task, repo: GitRepo, releases: ReleaseTable | None = None) -> Plan:
    meta = repo.commit_meta(task.base_commit)
    when = datetime.fromisoformat(meta.committed_at)
    releases = releases or ReleaseTable.load()
    versions = resolve_versions(repo, task.base_commit, when, releases=releases)
    versions = replace(
        versions, extra=(*versions.extra, *date_pins(task, versions, releases, when))
    )
    recipe = recipe_for(task.framework, [f.path for f in task.files_changed])
    req_files = repo.read_files(task.base_commit, recipe.requirement_files)
    test_files = repo.read_files(task.merge_commit, task.tests.changed_in_pr)

    base_image = versions.base_image.value if versions.base_image else None
    base = render_base(versions.python.value, versions.cuda.value, base_image)
    values = placeholder_values(
        versions.torch,
        versions.triton,
        versions.cuda,
        versions.python,
        {"torch_nightly": _torch_nightly(versions.torch.value, when)},
    )
    reqs = {f"reqs/{p}": data for p, data in sorted(req_files.items())}
    env = render_env(
        base,
        recipe,
        versions.torch,
        versions.triton,
        versions.cuda,
        versions.python,
        versions.extra,
        sorted(req_files),
        values=values,
        torch_in_base=base_image is not None,
        context_digest=digest_files(reqs) if reqs else "",
    )
    tests_digest = digest_files({f"src/{p}": d for p, d in sorted(test_files.items())})
    context = hashlib.sha256(
        f"git-tree:{repo.tree_sha(task.base_commit)}\ntests:{tests_digest}".encode()
    ).hexdigest()
    layer = render_task(
        env, recipe, task.task_id, base_commit=task.base_commit, context_digest=context
    )
    spec = EnvSpec(
        task_id=task.task_id,
        framework=task.framework,
        recipe=recipe.name,
        base_commit=task.base_commit,
        commit_date=meta.committed_at,
        python=versions.python,
        torch=versions.torch,
        triton=versions.triton,
        cuda=versions.cuda,
        extra_pins=(*((versions.base_image,) if versions.base_image else ()), *versions.extra),
        layers=(base, env, layer),
    )
    return Plan(spec, versions, recipe, req_files, test_files)


def date_pins(
    task: Task, versions: ResolvedVersions, releases: ReleaseTable, when: datetime
) -> tuple[Pin, ...]:
    """The framework's `date_pinned` packages the repository does not pin itself, each at its
    newest release before the base commit."""
    pinned = {p.name for p in versions.extra}
    out = []
    for name in framework_entry(task.framework).tests.date_pinned:
        rel = releases.newest_package_before(name, when.date())
        if name in pinned or rel is None:
            continue
        where = f"newest {name} release before {when:%Y-%m-%d}: {rel.version} of {rel.date}"
        out.append(Pin(name, rel.version, PinSource.DATE, where, spec=f"{name}=={rel.version}"))
    return tuple(out)


def _torch_nightly(torch: str, when: datetime) -> str:
    """`2.8.0a0` at a commit of 2025-05-01 -> `2.8.0.dev20250501` (the nightly of that day)."""
    release = torch.split("a", 1)[0].split("+", 1)[0].split(".dev", 1)[0]
    return f"{release}.dev{when:%Y%m%d}"


def write_plan(plan: Plan, tdir: TaskDir) -> None:
    """env.json and the three Dockerfiles into the task directory."""
    tdir.store(TaskFile.ENV, plan.spec)
    write_layers(plan.spec, tdir)


def materialize(plan: Plan, repo: GitRepo, dest: Path) -> dict[LayerKind, Path]:
    """Build-context directories of the three layers under `dest` (the task's src/ has no .git:
    nothing past the base commit can be looked up inside the image)."""
    from envbuild.builder import prepare_context

    base, env, task = plan.spec.layers
    dirs = {kind: dest / str(kind) for kind in LayerKind}
    for d in dirs.values():
        if d.exists():
            shutil.rmtree(d)
    prepare_context(base, {}, dirs[LayerKind.BASE])
    prepare_context(
        env, {f"reqs/{p}": data for p, data in plan.requirement_files.items()}, dirs[LayerKind.ENV]
    )
    src = dest / "src-tree"
    if src.exists():
        shutil.rmtree(src)
    repo.archive(plan.spec.base_commit, src)
    for path, data in plan.test_files.items():
        target = src / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    prepare_context(task, {"src": src}, dirs[LayerKind.TASK])
    shutil.rmtree(src)
    return dirs


def pin_sources(spec: EnvSpec) -> Mapping[str, str]:
    """name -> "file" | "date" | "default" for the four main pins."""
    pins: list[Pin] = [spec.python, spec.torch, spec.triton, spec.cuda]
    return {p.name: str(p.source) for p in pins}
