"""`python -m curation.curate`: candidates -> task directories, with a summary (the CLI layer).

Reads: `<work>/<framework>/candidates.jsonl`, `summary.json` (for the repository path) and
`state.json` of the mining stage (checked against the repository by `curation.sources`), and
the earlier `rejected.jsonl` and `curation_summary.json`. Writes: `<out>/<task_id>/` for each
kept candidate, `<out>/rejected.jsonl` (one line per rejected candidate with its reason) and
`<out>/curation_summary.json` (totals and one section per framework); both are merged: a run
replaces what belongs to the frameworks it curated and keeps the others'.
Refuses, in one line and before writing anything: candidates that do not belong to the
repository they are curated against, a task directory `--only-new` cannot read, a `--config`
that does not read, a dedup threshold outside (0, 1], and earlier rejects or summaries that are
not what this module writes. A candidate that fails to build is a failure in the summary; the
others go on. A curator's edits and decisions (curation.json) are never overwritten.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from core.errors import CoreError, RecordError, one_line
from core.files import output_lock, read_json, read_jsonl, write_json, write_jsonl
from core.records import from_args, from_json
from curation.errors import CurationError
from curation.filters import FilterConfig, judge_all
from curation.model import Task
from curation.sources import Source, load_sources
from curation.taskdir import TaskDir, TaskFile, task_dirs
from mining.errors import MiningError
from mining.git import GitRepo
from mining.model import Candidate

log = logging.getLogger("curation.curate")


def load_filter_config(path: Path | None) -> FilterConfig:
    """The `[filters]` table of a TOML file; a file that cannot be read or parsed, an unknown
    key or a value of the wrong type is a one-line `CurationError` naming the file."""
    if path is None:
        return FilterConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8")).get("filters", {})
    except (OSError, UnicodeDecodeError) as exc:
        raise CurationError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CurationError(f"{path}: not valid TOML ({exc})") from None
    known = {f.name for f in fields(FilterConfig)}
    unknown = set(data) - known if isinstance(data, dict) else set()
    if unknown:
        raise CurationError(
            f"{path}: unknown [filters] keys {sorted(unknown)}; known: {sorted(known)}"
        )
    try:
        return from_json(FilterConfig, data, where=f"{path}: [filters]")
    except RecordError as exc:
        raise CurationError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m curation.curate",
        description="Filter mined candidates, type and grade them, extract their context and "
        "tests, detect near-duplicates and draft each task's requirement into a task directory.",
    )
    p.add_argument(
        "--work",
        type=Path,
        default=Path("work"),
        help="mining work directory (default: %(default)s)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("tasks"),
        help="task directories go here (default: %(default)s)",
    )
    p.add_argument(
        "--framework", action="append", default=[], help="only this framework (repeatable)"
    )
    p.add_argument(
        "--repo-path",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="repository of a framework, when summary.json does not say (repeatable)",
    )
    p.add_argument("--config", type=Path, help="TOML file with a [filters] table of thresholds")
    p.add_argument(
        "--llm-endpoint",
        help="OpenAI-compatible API root (e.g. http://127.0.0.1:8000/v1) to draft requirements; "
        "the key is read from $OPENAI_API_KEY; without it a template drafts them",
    )
    p.add_argument("--llm-model", default="gpt-4o-mini", help="model name for --llm-endpoint")
    p.add_argument(
        "--codebert-model",
        help="CodeBERTScore model (path or hub name) to confirm near-duplicates; "
        "without it (or when it cannot load) MinHash token scores decide",
    )
    p.add_argument(
        "--dedup-threshold",
        type=float,
        default=0.8,
        help="similarity of a near-duplicate (default: %(default)s)",
    )
    p.add_argument(
        "--only-new", action="store_true", help="skip candidates whose task directory exists"
    )
    p.add_argument(
        "--requirements-only",
        action="store_true",
        help="only draft the requirement of every task directory under --out again from its "
        "task.json (after `eval reference` recorded the gold's launches); no mining, no "
        "repository; a curator's edit is kept",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p


@dataclass(frozen=True)
class CurateSettings:
    """What to curate and how: the command line's options, with its defaults."""

    work: Path = Path("work")
    out: Path = Path("tasks")
    framework: list[str] = field(default_factory=list)
    repo_path: list[str] = field(default_factory=list)  # NAME=PATH
    config: Path | None = None
    llm_endpoint: str | None = None
    llm_model: str = "gpt-4o-mini"
    codebert_model: str | None = None
    dedup_threshold: float = 0.8
    only_new: bool = False
    requirements_only: bool = False
    quiet: bool = False


def run(args: CurateSettings) -> dict[str, Any]:
    """Curate every candidate under `args.work` into task directories under `args.out`; the
    summary (also curation_summary.json). The library entry of the curation stage."""
    with output_lock(args.out):
        return _run_locked(args)


def redraft(args: CurateSettings) -> Counter[str]:
    """`--requirements-only`: each task directory's requirement drafted again from its task.json
    (of the `--framework`s given, else all); counts by origin (`curator`: an edit kept). A
    directory whose task.json does not read is a one-line `CurationError` before any write."""
    from curation.build import with_requirement
    from curation.requirement import LlmDrafter

    drafter = LlmDrafter(args.llm_endpoint, args.llm_model) if args.llm_endpoint else None
    with output_lock(args.out):
        tasks = []
        for tdir in task_dirs(args.out):
            try:
                task = tdir.load_task()
            except RecordError as exc:
                raise CurationError(f"{tdir.path(TaskFile.TASK)}: {exc}") from None
            if not args.framework or task.framework in args.framework:
                tasks.append((tdir, task))
        counts: Counter[str] = Counter()
        for tdir, task in tasks:
            task = with_requirement(task, tdir, drafter)
            tdir.write_task(task)
            counts[task.requirement_origin] += 1
    return counts


def _run_locked(args: CurateSettings) -> dict[str, Any]:
    from mining.store import repo_paths as recorded_paths

    try:
        repo_paths = recorded_paths(args.work, args.repo_path)
    except ValueError as exc:
        raise CurationError(str(exc)) from None
    cfg = load_filter_config(args.config)
    if not 0.0 < args.dedup_threshold <= 1.0:
        raise CurationError(f"--dedup-threshold must be in (0, 1], got {args.dedup_threshold}")
    # Everything that can refuse the run is read before anything is written.
    sources = load_sources(args.work, args.framework, repo_paths)
    rejected_path = args.out / REJECTED
    summary_path = args.out / SUMMARY
    old_rejected = _read_rejected(rejected_path)
    old_summary = _read_summary(summary_path)
    plans = [_plan(src, cfg, args) for src in sources]
    args.out.mkdir(parents=True, exist_ok=True)
    tasks, failures = _build_tasks(plans, args)
    tasks = _dedup(tasks, args.dedup_threshold, args.codebert_model)
    for task in tasks:
        TaskDir(args.out / task.task_id).write_task(task)
    curated = {src.framework for src in sources}
    # Rejects and summaries of frameworks not curated this time stay as they were.
    rejected = [r for r in old_rejected if r["framework"] not in curated]
    rejected += [r for plan in plans for r in plan.rejected]
    write_jsonl(rejected_path, rejected)
    sections = {k: v for k, v in old_summary.get("frameworks", {}).items() if k not in curated}
    for plan in plans:
        fw = plan.source.framework
        fw_tasks = [t for t in tasks if t.framework == fw]
        current = {t.task_id for t in fw_tasks}
        stale = [d.id for d in task_dirs(args.out)
                 if d.id.startswith(f"{plan.prefix}__") and d.id not in current]  # fmt: skip
        fw_failures = [f for f in failures if f["framework"] == fw]
        sections[fw] = _summary(fw_tasks, plan.rejected, fw_failures, stale)
    summary = _total(sections, tasks)
    write_json(summary_path, summary)
    return summary


REJECTED = "rejected.jsonl"
SUMMARY = "curation_summary.json"


@dataclass
class _Plan:
    """What one framework's curation will do: its rejects and the task of each kept candidate
    (with the existing task, under --only-new)."""

    source: Source
    prefix: str  # task ids of this framework start with `<prefix>__`
    rejected: list[dict[str, Any]]
    build: list[tuple[Candidate, TaskDir]]
    existing: list[Task]
    clashes: list[dict[str, str]]


def _plan(src: Source, cfg: FilterConfig, args: CurateSettings) -> _Plan:
    from curation.build import substantive_changes, task_id, task_id_prefix

    plan = _Plan(src, task_id_prefix(src.framework), [], [], [], [])
    owner: dict[str, str] = {}
    for c, v in judge_all(src.candidates, cfg):
        if not v.kept:
            assert v.reason is not None
            plan.rejected.append({"framework": src.framework, "id": c.id, "commit": c.commit,
                                  "subject": c.subject, "reason": str(v.reason),
                                  "detail": v.detail})  # fmt: skip
            continue
        tdir = TaskDir(args.out / task_id(c, substantive_changes(c)))
        if tdir.id in owner:
            # two candidates must never write one directory; the later one is reported
            why = f"task id {tdir.id} is taken by candidate {owner[tdir.id]}"
            plan.clashes.append({"framework": src.framework, "id": c.id, "error": why})
            continue
        owner[tdir.id] = c.id
        if args.only_new and tdir.exists():
            plan.existing.append(_existing(tdir))
        else:
            plan.build.append((c, tdir))
    return plan


def _existing(tdir: TaskDir) -> Task:
    """The task an earlier run wrote (--only-new), refused in one line when it is broken."""
    try:
        task = tdir.load_task()
        datetime.fromisoformat(task.merged_at)
    except (CoreError, ValueError) as exc:
        raise CurationError(
            f"{exc} (--only-new keeps existing task directories: repair or remove "
            f"{tdir.root}, or run without --only-new to rebuild it)"
        ) from None
    return task


def _build_tasks(
    plans: list[_Plan], args: CurateSettings
) -> tuple[list[Task], list[dict[str, str]]]:
    from rich.progress import Progress

    from curation.build import TaskBuilder
    from curation.requirement import LlmDrafter

    drafter = LlmDrafter(args.llm_endpoint, args.llm_model) if args.llm_endpoint else None
    tasks: list[Task] = []
    failures: list[dict[str, str]] = []
    for plan in plans:
        src = plan.source
        tasks.extend(plan.existing)
        failures.extend(plan.clashes)
        builder = TaskBuilder(GitRepo(src.repo_path), drafter)
        with Progress(disable=args.quiet, transient=True) as bar:
            job = bar.add_task(f"{src.framework}: tasks", total=len(plan.build))
            for cand, tdir in plan.build:
                bar.advance(job)
                try:
                    tasks.append(builder.build(cand, tdir))
                except Exception as exc:  # one broken candidate must not stop the others
                    if isinstance(exc, CoreError | CurationError | MiningError | ValueError):
                        log.error("%s (%s): %s", cand.id, src.framework, exc)
                    else:  # a bug: its traceback helps
                        log.exception("%s (%s): %s", cand.id, src.framework, exc)
                    failures.append({"framework": src.framework, "id": cand.id,
                                     "error": one_line(exc)})  # fmt: skip
    return tasks, failures


def _read_rejected(path: Path) -> list[dict[str, Any]]:
    """The rejects of earlier runs (refused, one line, when the file is not what we write)."""
    if not path.exists():
        return []
    rows = []
    for number, row in read_jsonl(path):
        if not isinstance(row.get("framework"), str) or "id" not in row:
            raise CurationError(f"{path}:{number}: a reject needs a framework and an id")
        rows.append(row)
    return rows


def _read_summary(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = read_json(path)
    sections = data.get("frameworks", {}) if isinstance(data, dict) else None
    if not isinstance(sections, dict) or not all(isinstance(v, dict) for v in sections.values()):
        raise CurationError(f"{path}: frameworks: expected an object of summaries")
    return data


def _dedup(tasks: list[Task], threshold: float, codebert: str | None) -> list[Task]:
    from curation.dedup import TaskKernels, find_task_duplicates

    items = [
        TaskKernels(
            task_id=t.task_id,
            date=t.merged_at,
            kernels=tuple(
                k.after_src or k.before_src or "" for k in t.kernels if k.role == "kernel"
            ),
        )
        for t in tasks
    ]
    try:
        report = find_task_duplicates(items, threshold=threshold, codebert_model=codebert)
    except ValueError as exc:  # ids and dates were checked before; this is the last guard
        raise CurationError(f"near-duplicate detection: {exc}") from None
    if report.note:
        log.warning("%s", report.note)
    return [replace(t, dedup=report.infos.get(t.task_id)) for t in tasks]


def _summary(
    tasks: list[Task],
    rejected: list[dict[str, Any]],
    failures: list[dict[str, str]],
    stale: list[str],
) -> dict[str, Any]:
    clusters = Counter(t.dedup.cluster for t in tasks if t.dedup)
    return {
        "kept": len(tasks),
        "rejected": len(rejected),
        "failed": failures,
        "stale_task_dirs": stale,
        "rejected_by_reason": dict(Counter(r["reason"] for r in rejected)),
        "by_framework": dict(Counter(t.framework for t in tasks)),
        "by_type": dict(Counter(str(t.task_type.type) for t in tasks)),
        "by_difficulty": {
            str(k): v for k, v in sorted(Counter(t.difficulty.level for t in tasks).items())
        },
        "by_status": dict(Counter(str(t.curation_status) for t in tasks)),
        "by_requirement_origin": dict(Counter(t.requirement_origin for t in tasks)),
        "duplicate_clusters": sum(1 for n in clusters.values() if n > 1),
        "tasks_in_duplicate_clusters": sum(n for n in clusters.values() if n > 1),
    }


_COUNTS = (
    "rejected_by_reason",
    "by_framework",
    "by_type",
    "by_difficulty",
    "by_status",
    "by_requirement_origin",
)


def _total(sections: dict[str, dict[str, Any]], tasks: list[Task]) -> dict[str, Any]:
    """The summary over every framework's latest curation (`frameworks`: one section each);
    duplicate clusters are those among the tasks of this run."""
    clusters = Counter(t.dedup.cluster for t in tasks if t.dedup)
    total: dict[str, Any] = {
        "kept": sum(s.get("kept", 0) for s in sections.values()),
        "rejected": sum(s.get("rejected", 0) for s in sections.values()),
        "failed": [f for s in sections.values() for f in s.get("failed", [])],
        "stale_task_dirs": [d for s in sections.values() for d in s.get("stale_task_dirs", [])],
    }
    for key in _COUNTS:
        counts: Counter[str] = Counter()
        for s in sections.values():
            counts.update(s.get(key, {}))
        total[key] = dict(sorted(counts.items())) if key == "by_difficulty" else dict(counts)
    total["duplicate_clusters"] = sum(1 for n in clusters.values() if n > 1)
    total["tasks_in_duplicate_clusters"] = sum(n for n in clusters.values() if n > 1)
    total["frameworks"] = dict(sorted(sections.items()))
    return total


def print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    table = Table(title=f"curation: {summary['kept']} kept, {summary['rejected']} rejected")
    table.add_column("group")
    table.add_column("value")
    table.add_column("count", justify="right")
    for group in _COUNTS:
        for key, n in sorted(summary[group].items()):
            table.add_row(group, key, str(n))
    table.add_row(
        "duplicates",
        "clusters / tasks in them",
        f"{summary['duplicate_clusters']} / {summary['tasks_in_duplicate_clusters']}",
    )
    if summary["failed"]:
        table.add_row(
            "failed", ", ".join(f["id"] for f in summary["failed"]), str(len(summary["failed"]))
        )
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    from rich.logging import RichHandler

    logging.basicConfig(
        level=logging.INFO,
        format="%(name)s: %(message)s",
        handlers=[RichHandler(show_time=False, show_path=False, level=logging.WARNING)],
    )
    args = build_parser().parse_args(argv)
    settings = from_args(CurateSettings, args)
    if settings.requirements_only:
        try:
            counts = redraft(settings)
        except (CurationError, CoreError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        by_origin = ", ".join(f"{n} {origin}" for origin, n in sorted(counts.items()))
        print(f"{sum(counts.values())} requirements drafted again ({by_origin or 'none'}) "
              f"in {settings.out}")  # fmt: skip
        return 0
    try:
        summary = run(settings)
    except (CurationError, CoreError, MiningError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_summary(summary)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
