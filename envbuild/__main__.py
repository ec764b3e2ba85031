"""`python -m envbuild`: pin, render, lint (and with --build, build) each task's environment."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import CoreError
from core.files import output_lock, write_json
from core.records import from_args
from envbuild.errors import EnvBuildError
from mining.errors import MiningError

log = logging.getLogger("envbuild")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m envbuild",
        description="For each task directory: resolve Python/torch/triton/CUDA from the "
        "repository at the base commit (else from release dates), choose the framework's "
        "install recipe, render base/env/task Dockerfiles tagged by content hash, lint them "
        "with hadolint, and write env.json + Dockerfiles into the task directory.",
    )
    p.add_argument("--tasks", type=Path, default=Path("tasks"), help="task directories")
    p.add_argument(
        "--work", type=Path, default=Path("work"), help="mining work dir (for repository paths)"
    )
    p.add_argument(
        "--repo-path", action="append", default=[], metavar="NAME=PATH",
        help="repository of a framework, when the crawl's summary.json does not say",
    )  # fmt: skip
    p.add_argument("--task", action="append", default=[], help="only this task id (repeatable)")
    p.add_argument("--no-lint", action="store_true", help="skip hadolint")
    p.add_argument("--build", action="store_true", help="build the images through Docker")
    p.add_argument("--docker-host", help="Docker engine URL (default: $DOCKER_HOST)")
    p.add_argument(
        "--network", default="none", help="network mode of builds (default: %(default)s)"
    )
    p.add_argument(
        "--context-dir", type=Path, help="where build contexts are prepared (default: a temp dir)"
    )
    return p


@dataclass(frozen=True)
class EnvSettings:
    """Which task directories to plan (and build): the command line's options and defaults."""

    tasks: Path = Path("tasks")
    work: Path = Path("work")
    repo_path: list[str] = field(default_factory=list)  # NAME=PATH
    task: list[str] = field(default_factory=list)  # only these task ids
    no_lint: bool = False
    build: bool = False
    docker_host: str | None = None
    network: str = "none"
    context_dir: Path | None = None


def _repo_paths(args: EnvSettings) -> dict[str, Path]:
    from mining.store import repo_paths

    try:
        return repo_paths(args.work, args.repo_path)
    except ValueError as exc:
        raise EnvBuildError(str(exc)) from None


def run(args: EnvSettings) -> dict[str, Any]:
    """Plan (and with `build`, build) the environments of the selected tasks; the summary (also
    env_summary.json). The library entry of the envbuild stage; raises `EnvBuildError`."""
    with output_lock(args.tasks):
        return _run_locked(args)


def _run_locked(args: EnvSettings) -> dict[str, Any]:
    from rich.progress import Progress

    from curation.taskdir import TaskFile, task_dirs
    from envbuild.lint import lint
    from envbuild.plan import pin_sources, plan_task, write_plan
    from envbuild.releases import ReleaseTable
    from mining.git import GitRepo

    repos: dict[str, GitRepo] = {}
    paths = _repo_paths(args)
    releases = ReleaseTable.load()
    tdirs = [t for t in task_dirs(args.tasks) if not args.task or t.id in args.task]
    if not tdirs:
        raise EnvBuildError(f"no task directories under {args.tasks}")
    rows: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []  # tasks whose environment could not be planned, and why
    builder = None
    if args.build:
        from envbuild.builder import Builder

        builder = Builder.connect(args.docker_host, log_dir=args.tasks / "_build_logs")
    with Progress(transient=True) as bar:
        job = bar.add_task("environments", total=len(tdirs))
        for tdir in tdirs:
            bar.advance(job)
            task = tdir.load_task()
            if task.framework not in paths:
                raise EnvBuildError(
                    f"no repository for {task.framework}: pass --repo-path {task.framework}=PATH",
                    task_id=task.task_id,
                )
            repo = repos.setdefault(task.framework, GitRepo(paths[task.framework]))
            try:
                plan = plan_task(task, repo, releases)
            except (EnvBuildError, MiningError) as exc:  # one task's pins must not stop the rest
                failed.append({"task_id": task.task_id, "error": str(exc)})
                log.warning("%s: not pinned: %s", task.task_id, exc)
                continue
            write_plan(plan, tdir)
            findings = [] if args.no_lint else [
                f"{layer.kind}:{f}" for layer in plan.spec.layers for f in lint(layer.dockerfile)
                if f.level in ("error", "warning")
            ]  # fmt: skip
            row: dict[str, Any] = {
                "task_id": task.task_id,
                "recipe": plan.recipe.name,
                "pins": {
                    p.name: {"value": p.value, "source": str(p.source), "where": p.where}
                    for p in (plan.spec.python, plan.spec.torch, plan.spec.triton, plan.spec.cuda)
                },
                "sources": dict(pin_sources(plan.spec)),
                "base_image": plan.versions.base_image.value if plan.versions.base_image else None,
                "layers": {str(layer.kind): layer.tag for layer in plan.spec.layers},
                "lint": findings,
            }
            if builder is not None:
                row["build"] = _build(builder, plan, repo, args, tdir.path(TaskFile.BUILD_LOG))
            rows.append(row)
    summary = {**_summary(rows), "failed": failed}
    write_json(args.tasks / "env_summary.json", {**summary, "tasks": rows})
    return summary


def _build(builder: Any, plan: Any, repo: Any, args: EnvSettings, log_path: Path) -> Any:
    from envbuild.plan import materialize

    with tempfile.TemporaryDirectory(dir=args.context_dir) as tmp:
        dirs = materialize(plan, repo, Path(tmp))
        results = builder.build(plan.spec, dirs, log_path, network_mode=args.network)
    return [{"kind": str(r.kind), "tag": r.tag, "reused": r.reused} for r in results]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    layers: dict[str, Counter[str]] = {"base": Counter(), "env": Counter(), "task": Counter()}
    for r in rows:
        for kind, tag in r["layers"].items():
            layers[kind][tag] += 1
    sources: dict[str, Counter[str]] = {}
    for r in rows:
        for name, src in r["sources"].items():
            sources.setdefault(name, Counter())[src] += 1
    return {
        "tasks": len(rows),
        "distinct_layers": {k: len(v) for k, v in layers.items()},
        "tasks_per_layer": {k: dict(v.most_common()) for k, v in layers.items() if k != "task"},
        "pin_sources": {k: dict(v) for k, v in sources.items()},
        "recipes": dict(Counter(r["recipe"] for r in rows)),
        "lint_findings": sum(len(r["lint"]) for r in rows),
    }


def print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"environments of {summary['tasks']} tasks")
    t.add_column("what")
    t.add_column("value")
    for kind, n in summary["distinct_layers"].items():
        t.add_row(f"distinct {kind} layers", str(n))
    for kind, per in summary["tasks_per_layer"].items():
        t.add_row(f"tasks per {kind} layer", ", ".join(f"{n}" for n in per.values()))
    for name, per in summary["pin_sources"].items():
        t.add_row(f"{name} pinned from", ", ".join(f"{k} {v}" for k, v in sorted(per.items())))
    t.add_row("recipes", ", ".join(f"{k} {v}" for k, v in summary["recipes"].items()))
    t.add_row("lint findings (warning/error)", str(summary["lint_findings"]))
    t.add_row("not pinned (env_summary.json says why)", str(len(summary["failed"])))
    Console(stderr=True).print(t)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        summary = run(from_args(EnvSettings, args))
    except (EnvBuildError, CoreError, MiningError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_summary(summary)
    return 1 if summary["lint_findings"] or summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
