"""`python -m curation.curate`: candidates -> task directories, with a summary (the CLI layer).

Reads: `<work>/<framework>/candidates.jsonl` and `summary.json` (for the repository path) of
the mining stage. Writes: `<out>/<task_id>/` for each kept candidate, `<out>/rejected.jsonl`
(one line per rejected candidate with its reason) and `<out>/curation_summary.json`.
A curator's edits and decisions (curation.json) are never overwritten.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from core.errors import CoreError
from core.files import output_lock, write_json, write_jsonl
from core.records import from_args
from curation.errors import CurationError
from curation.filters import FilterConfig, judge_all
from curation.model import Task
from curation.taskdir import TaskDir, task_dirs
from mining.model import Candidate

log = logging.getLogger("curation.curate")


@dataclass(frozen=True)
class Source:
    """The candidates of one framework and the repository they came from."""

    framework: str
    candidates: list[Candidate]
    repo_path: Path


def load_sources(work: Path, only: list[str], repo_paths: dict[str, Path]) -> list[Source]:
    from mining.store import read_candidates

    sources = []
    for cand_file in sorted(work.glob("*/candidates.jsonl")):
        name = cand_file.parent.name
        if only and name not in only:
            continue
        path = repo_paths.get(name)
        if path is None:
            raise CurationError(
                f"{cand_file.parent / 'summary.json'} names no repository: "
                f"pass --repo-path {name}=PATH"
            )
        sources.append(Source(name, read_candidates(cand_file), path))
    if not sources:
        raise CurationError(f"no candidates.jsonl under {work}: run `python -m mining.crawl` first")
    return sources


def load_filter_config(path: Path | None) -> FilterConfig:
    if path is None:
        return FilterConfig()
    data = tomllib.loads(path.read_text()).get("filters", {})
    known = {f.name for f in fields(FilterConfig)}
    unknown = set(data) - known
    if unknown:
        raise CurationError(
            f"{path}: unknown [filters] keys {sorted(unknown)}; known: {sorted(known)}"
        )
    return FilterConfig(**data)


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
    quiet: bool = False


def run(args: CurateSettings) -> dict[str, Any]:
    """Curate every candidate under `args.work` into task directories under `args.out`; the
    summary (also curation_summary.json). The library entry of the curation stage."""
    with output_lock(args.out):
        return _run_locked(args)


def _run_locked(args: CurateSettings) -> dict[str, Any]:
    from rich.progress import Progress

    from curation.build import TaskBuilder, substantive_changes, task_id
    from curation.requirement import LlmDrafter
    from mining.git import GitRepo
    from mining.store import repo_paths as recorded_paths

    try:
        repo_paths = recorded_paths(args.work, args.repo_path)
    except ValueError as exc:
        raise CurationError(str(exc)) from None
    cfg = load_filter_config(args.config)
    drafter = LlmDrafter(args.llm_endpoint, args.llm_model) if args.llm_endpoint else None
    args.out.mkdir(parents=True, exist_ok=True)
    rejected: list[dict[str, Any]] = []
    tasks: list[Task] = []
    failures: list[dict[str, str]] = []
    for src in load_sources(args.work, args.framework, repo_paths):
        verdicts = judge_all(src.candidates, cfg)
        kept = [(c, v) for c, v in verdicts if v.kept]
        for c, v in verdicts:
            if not v.kept:
                assert v.reason is not None
                rejected.append(
                    {
                        "framework": src.framework,
                        "id": c.id,
                        "commit": c.commit,
                        "subject": c.subject,
                        "reason": str(v.reason),
                        "detail": v.detail,
                    }
                )
        builder = TaskBuilder(GitRepo(src.repo_path), drafter)
        with Progress(disable=args.quiet, transient=True) as bar:
            job = bar.add_task(f"{src.framework}: tasks", total=len(kept))
            for cand, _ in kept:
                tdir = TaskDir(args.out / task_id(cand, substantive_changes(cand)))
                bar.advance(job)
                if args.only_new and tdir.exists():
                    tasks.append(tdir.load_task())
                    continue
                try:
                    tasks.append(builder.build(cand, tdir))
                except Exception as exc:  # one broken candidate must not stop the others
                    log.exception("%s (%s): %s", cand.id, src.framework, exc)
                    failures.append({"framework": src.framework, "id": cand.id, "error": str(exc)})
    tasks = _dedup(tasks, args.dedup_threshold, args.codebert_model)
    for task in tasks:
        TaskDir(args.out / task.task_id).write_task(task)
    write_jsonl(args.out / "rejected.jsonl", rejected)
    current = {t.task_id for t in tasks}
    stale = [d.id for d in task_dirs(args.out) if d.id not in current]
    summary = _summary(tasks, rejected, failures, stale)
    write_json(args.out / "curation_summary.json", summary)
    return summary


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
    report = find_task_duplicates(items, threshold=threshold, codebert_model=codebert)
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


def print_summary(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    table = Table(title=f"curation: {summary['kept']} kept, {summary['rejected']} rejected")
    table.add_column("group")
    table.add_column("value")
    table.add_column("count", justify="right")
    for group in (
        "rejected_by_reason",
        "by_framework",
        "by_type",
        "by_difficulty",
        "by_status",
        "by_requirement_origin",
    ):
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
    try:
        summary = run(from_args(CurateSettings, args))
    except (CurationError, CoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_summary(summary)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
