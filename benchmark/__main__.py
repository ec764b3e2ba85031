"""`python -m benchmark {build,push,regenerate}`: the dataset's command line."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from benchmark.errors import BenchmarkError
from core.errors import CoreError

if TYPE_CHECKING:
    from benchmark.build import BuildResult


def _date(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmark", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile task directories into a HuggingFace dataset folder")
    b.add_argument("--tasks", type=Path, default=Path("tasks"))
    b.add_argument("--out", type=Path, default=Path("dist/triton-pr-bench"))
    b.add_argument("--version", required=True, help="the new version, e.g. 1.0.0")
    b.add_argument(
        "--cutoff", type=_date,
        help="first release only: tasks merged from this date on form `test`, earlier ones `dev`",
    )  # fmt: skip
    b.add_argument("--only-approved", action="store_true", help="publish approved tasks only")
    b.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    b.add_argument(
        "--allow-empty", action="store_true",
        help="record the version even when it adds no task (its number is then used up)",
    )  # fmt: skip
    b.add_argument("--push-to-hub", metavar="REPO", help="then upload the folder (needs HF_TOKEN)")
    b.add_argument("--hub-endpoint", help="Hub API root (default: huggingface.co)")
    u = sub.add_parser("push", help="upload a built folder to the Hub (needs HF_TOKEN)")
    u.add_argument("folder", type=Path)
    u.add_argument("repo", help="owner/name of the dataset repository")
    u.add_argument("--hub-endpoint")
    u.add_argument("--private", action="store_true")
    r = sub.add_parser(
        "regenerate",
        help="new framework release: crawl since the last run, curate new candidates, pin "
        "their environments, (optionally) run references, build a new dataset version",
    )
    r.add_argument("frameworks", nargs="+", help="registry names, owner/name or paths")
    r.add_argument(
        "--repo-path", action="append", default=[], metavar="NAME=PATH",
        help="a local clone per framework (else the crawl clones/fetches)",
    )  # fmt: skip
    r.add_argument("--work", type=Path, default=Path("work"))
    r.add_argument("--tasks", type=Path, default=Path("tasks"))
    r.add_argument("--out", type=Path, default=Path("dist/triton-pr-bench"))
    r.add_argument("--version", required=True)
    r.add_argument("--cutoff", type=_date, help="needed when the folder has no release yet")
    r.add_argument("--reference", action="store_true", help="run references for new tasks (GPU)")
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--no-github", action="store_true")
    r.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    r.add_argument(
        "--allow-empty", action="store_true", help="record the version even with no new task"
    )
    return p


def _print_result(res: BuildResult) -> None:
    head = "would build" if res.dry_run else "built"
    print(f"{head} version {res.version}: {len(res.added)} new tasks")
    for name, ids in sorted(res.splits.items()):
        mark = " (new)" if name in res.new_splits else " (frozen)"
        print(f"  {name}{mark}: {len(ids)} tasks")
    for tid in res.added:
        print(f"  + {tid}")
    for tid in res.withdrawn:
        print(f"  - {tid} (withdrawn; kept in its frozen split)")
    for tid, status in sorted(res.rejudged.items()):
        print(f"  ~ {tid} (released; now {status}: its split's default config follows)")
    if res.noted:
        print(f"  {len(res.noted)} released task(s), unverified before and now, with a new verdict "
              "(the manifest's verdicts; the card counts them)")  # fmt: skip
    if res.skipped:
        print(f"  {len(res.skipped)} task directories left out:")
        for tid, why in sorted(res.skipped.items()):
            print(f"    {tid}: {why[:120]}")


def cmd_build(args: argparse.Namespace) -> int:
    from benchmark.build import build, load_manifest

    if not load_manifest(args.out)["releases"] and args.cutoff is None:
        raise BenchmarkError("the first release needs --cutoff (the date the test split starts)")
    res = build(args.tasks, args.out, args.version, args.cutoff or datetime.now(UTC),
                only_approved=args.only_approved, dry_run=args.dry_run,
                allow_empty=args.allow_empty)  # fmt: skip
    _print_result(res)
    if args.push_to_hub and not args.dry_run:
        from benchmark.hub import push_to_hub

        print(push_to_hub(args.out, args.push_to_hub, endpoint=args.hub_endpoint))
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    from benchmark.hub import push_to_hub

    print(push_to_hub(args.folder, args.repo, endpoint=args.hub_endpoint, private=args.private))
    return 0


def cmd_regenerate(args: argparse.Namespace) -> int:
    from benchmark.build import build, load_manifest
    from core.frameworks import resolve_framework
    from curation.curate import CurateSettings
    from curation.curate import run as curate
    from curation.errors import CurationError
    from curation.taskdir import task_dirs
    from envbuild.__main__ import EnvSettings
    from envbuild.__main__ import run as envbuild
    from envbuild.errors import EnvBuildError
    from eval.errors import EvalError
    from mining.crawl import CrawlSettings, crawl_one
    from mining.errors import MiningError

    if not load_manifest(args.out)["releases"] and args.cutoff is None:
        raise BenchmarkError("the first release needs --cutoff (the date the test split starts)")
    work, tasks = args.work, args.tasks
    tmp = None
    if args.dry_run:
        # Run the pipeline on copies: the real work, tasks and dataset stay untouched.
        tmp = Path(tempfile.mkdtemp(prefix="regenerate-"))
        if work.exists():
            shutil.copytree(work, tmp / "work")
        if tasks.exists():
            shutil.copytree(tasks, tmp / "tasks")
        work, tasks = tmp / "work", tmp / "tasks"
    stage = "crawl"
    try:
        before = {t.id for t in task_dirs(tasks)}
        paths = dict(item.partition("=")[::2] for item in args.repo_path)
        for spec in args.frameworks:
            settings = CrawlSettings(
                out=work,
                repo_path=Path(paths[spec]) if spec in paths else None,
                no_github=args.no_github,
                quiet=True,
            )
            crawl_one(resolve_framework(spec), settings)
        stage = "curation"
        summary = curate(CurateSettings(work=work, out=tasks, only_new=True, quiet=True))
        if summary["failed"]:
            first = summary["failed"][0]
            raise BenchmarkError(
                f"curation failed for {len(summary['failed'])} candidates, first "
                f"{first['framework']} {first['id']}: {first['error']}"
            )
        new = sorted({t.id for t in task_dirs(tasks)} - before)
        print(f"{len(new)} new task directories")
        if new:
            stage = "envbuild"
            envbuild(EnvSettings(tasks=tasks, work=work, task=new))
            if args.reference and not args.dry_run:
                from eval.session import EvalSettings, run_references

                stage = "reference"
                refs, errors = run_references(
                    EvalSettings(tasks=tasks, work=work, task=new, runs=args.runs)
                )
                if errors and not refs:
                    tid, why = next(iter(errors.items()))
                    raise BenchmarkError(f"no reference run succeeded; {tid}: {why}")
        stage = "build"
        res = build(tasks, args.out, args.version, args.cutoff or datetime.now(UTC),
                    dry_run=args.dry_run, allow_empty=args.allow_empty)  # fmt: skip
        _print_result(res)
    except (CoreError, MiningError, CurationError, EnvBuildError, EvalError) as exc:
        raise BenchmarkError(f"{stage} failed: {exc}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"build": cmd_build, "push": cmd_push, "regenerate": cmd_regenerate}[args.cmd](args)
    except (BenchmarkError, CoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
