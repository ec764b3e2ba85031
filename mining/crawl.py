"""`python -m mining.crawl`: crawl framework histories into candidate PRs (the CLI layer).

Reads: a local clone (`--repo-path`) or a bare blob-less clone it keeps under `--cache-dir`.
Writes, per framework, under `--out/<framework>/`: candidates.jsonl, state.json, summary.json,
crawl.log. A rerun scans only commits that arrived since the last one.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import CoreError
from core.files import output_lock
from core.frameworks import DEFAULT_FRAMEWORKS, Framework, resolve_framework
from core.records import from_args
from mining.errors import MiningError, NoNetworkError

if TYPE_CHECKING:
    from mining.crawler import Crawler
    from mining.git import GitRepo
    from mining.model import CrawlSummary

log = logging.getLogger("mining.crawl")

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triton-pr-bench"
DEFAULT_JOBS = min(4, os.cpu_count() or 1)
DEFAULT_GITHUB_API = os.environ.get("GITHUB_API_URL", "https://api.github.com")


def _date(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mining.crawl",
        description=(
            "Walk the first-parent history of each framework's default branch and write one "
            "candidate record per PR whose Python changes touch a Triton kernel "
            "(@triton.jit / autotune / heuristics functions, jit helpers, triton.jit(fn) "
            "assignments, Inductor template strings), with function-level kernel changes."
        ),
        epilog="Reruns resume from state.json: only new commits are scanned.",
    )
    p.add_argument(
        "frameworks",
        nargs="*",
        default=list(DEFAULT_FRAMEWORKS),
        help="registry names (pytorch, vllm, megatron-lm), owner/name GitHub repositories, or "
        "paths of local clones; default: %(default)s",
    )
    p.add_argument(
        "--repo-path",
        type=Path,
        help="use this existing clone or bare mirror instead of cloning (one framework only; "
        "name it as owner/name to keep PR links and GitHub enrichment)",
    )
    p.add_argument(
        "--branch", help="branch to walk (default: the registry's, else the repository's HEAD)"
    )
    p.add_argument(
        "--name",
        help="name of the framework's sub-directory under --out (default: the registry name, "
        "owner__name, or the clone's directory name); one framework only",
    )
    p.add_argument(
        "--out", type=Path, default=Path("work"), help="work directory (default: %(default)s)"
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        help="where bare blob-less clones and the GitHub cache live (default: %(default)s)",
    )
    p.add_argument("--since", type=_date, help="skip commits committed before this date")
    p.add_argument("--until", type=_date, help="skip commits committed after this date")
    p.add_argument(
        "--limit", type=int, help="scan at most N new commits this run (the next run continues)"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        help="processes parsing Python files with tree-sitter (default: %(default)s)",
    )
    p.add_argument(
        "--max-file-bytes",
        type=int,
        default=2_000_000,
        help="files larger than this are skipped as too_large (default: %(default)s)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=400,
        help="commits between two checkpoints of state.json (default: %(default)s)",
    )
    p.add_argument(
        "--no-github",
        action="store_true",
        help="do not enrich with the GitHub API even when GITHUB_TOKEN is set",
    )
    p.add_argument(
        "--github-api",
        default=DEFAULT_GITHUB_API,
        help="GitHub REST API root, for GitHub Enterprise (default: $GITHUB_API_URL or "
        "%(default)s); enrichment needs GITHUB_TOKEN and is cached under --cache-dir",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log skipped files to stderr too")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p


@dataclasses.dataclass(frozen=True)
class CrawlSettings:
    """How to crawl: the command line's options, with its defaults."""

    out: Path = Path("work")
    repo_path: Path | None = None
    branch: str | None = None
    cache_dir: Path = DEFAULT_CACHE
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None
    jobs: int = DEFAULT_JOBS
    max_file_bytes: int = 2_000_000
    checkpoint_every: int = 400
    no_github: bool = False
    github_api: str = DEFAULT_GITHUB_API
    quiet: bool = False


def open_repo(fw: Framework, repo_path: Path | None, cache_dir: Path) -> GitRepo:
    from mining.git import GitRepo

    if repo_path is not None:
        return GitRepo(repo_path)
    if fw.path is not None:
        return GitRepo(fw.path)
    dest = cache_dir / "repos" / f"{fw.repo.replace('/', '__')}.git"
    try:
        return GitRepo.clone_or_fetch(fw.url, dest)
    except NoNetworkError as exc:
        raise NoNetworkError(
            f"cannot clone or fetch {fw.repo} (no network?); pass --repo-path with a local clone"
        ) from exc


def crawl_one(fw: Framework, args: CrawlSettings) -> dict[str, object]:
    """Crawl one framework into `args.out/<name>/`; the crawl's summary (also summary.json).
    The library entry of the mining stage; raises `MiningError` / `CoreError`."""
    with output_lock(args.out / fw.name):
        return _crawl_locked(fw, args)


def _crawl_locked(fw: Framework, args: CrawlSettings) -> dict[str, object]:
    from mining.crawler import Crawler, CrawlOptions
    from mining.github import GithubEnricher
    from mining.store import WorkDir

    repo = open_repo(fw, args.repo_path, args.cache_dir)
    branch = args.branch or fw.branch or repo.default_branch()
    workdir = WorkDir(args.out / fw.name, fw.name, fw.repo, branch)
    handler = logging.FileHandler(workdir.root / "crawl.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO)
    logging.getLogger("mining").addHandler(handler)
    enricher = None
    if not args.no_github and fw.repo:
        enricher = GithubEnricher(
            os.environ.get("GITHUB_TOKEN"), args.cache_dir / "github", base_url=args.github_api
        )
    options = CrawlOptions(
        since=args.since,
        until=args.until,
        limit=args.limit,
        jobs=max(1, args.jobs),
        max_file_bytes=args.max_file_bytes,
        chunk_commits=max(1, args.checkpoint_every),
    )
    crawler = Crawler(repo, fw, workdir, branch, options, enricher)
    try:
        summary = _run_with_progress(crawler, fw.name, quiet=args.quiet)
    finally:
        workdir.close()
        logging.getLogger("mining").removeHandler(handler)
        handler.close()
    result = {
        "framework": fw.name,
        "repo": fw.repo or str(repo.path),
        "repo_path": str(repo.path),
        "branch": branch,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "total_candidates": len(workdir.state.recorded),
        **summary.__dict__,
    }
    workdir.write_summary(result)
    return result


def _run_with_progress(crawler: Crawler, name: str, *, quiet: bool) -> CrawlSummary:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    if quiet:
        return crawler.run()
    with Progress(
        "[bold]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        task = bar.add_task(f"{name}: planning", total=None)
        return crawler.run(
            progress=lambda n: bar.advance(task, n),
            on_plan=lambda n: bar.update(task, total=n, description=f"{name}: commits"),
        )


def print_summary(results: list[dict[str, object]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="crawl summary")
    for col in (
        "framework",
        "commits scanned",
        "new candidates",
        "all candidates",
        "kernel changes",
        "by kernel kind",
        "uncertain",
        "skipped files",
        "seconds",
    ):
        table.add_column(col)
    for r in results:
        changes = r["kernel_changes"]
        kinds = r["kernel_kinds"]
        skipped = r["skipped_files"]
        assert isinstance(changes, dict) and isinstance(kinds, dict) and isinstance(skipped, dict)
        table.add_row(
            str(r["framework"]),
            str(r["commits_scanned"]),
            str(r["candidates"]),
            str(r["total_candidates"]),
            ", ".join(f"{k} {v}" for k, v in sorted(changes.items())) or "-",
            ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "-",
            str(r["uncertain_changes"]),
            ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())) or "-",
            f"{r['seconds']:.1f}",
        )
    Console(stderr=True).print(table)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rich.logging import RichHandler

    console = RichHandler(show_time=False, show_path=False)
    console.setLevel(logging.INFO if args.verbose else logging.WARNING)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", handlers=[console])
    if (args.repo_path or args.name) and len(args.frameworks) != 1:
        print("error: --repo-path and --name need exactly one framework", file=sys.stderr)
        return 2
    results = []
    settings = from_args(CrawlSettings, args)
    try:
        for spec in args.frameworks:
            fw = resolve_framework(spec)
            if args.name:
                fw = dataclasses.replace(fw, name=args.name)
            results.append(crawl_one(fw, settings))
    except KeyboardInterrupt:
        print("interrupted: rerun the same command to resume", file=sys.stderr)
        return 130
    except (MiningError, CoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if results:
            print_summary(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
