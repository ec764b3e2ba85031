"""The crawl itself: first-parent history -> candidate records with kernel changes.

Reads: a `GitRepo` and the work directory's state. Writes: candidate records through `WorkDir`.
Rules: every blob is read once per run through the batched reader and parsed at most once per
(blob, path); files that cannot hold Triton code are dropped by a byte test before parsing; a
file that cannot be analysed (binary, huge, not UTF-8, submodule, symlink, or unparsable in both
versions) is kept in the record with its reason and left out of the kernel diff on both sides,
so it never shows up as deleted kernels. When only one version of a file parses, the other is
read as far as tree-sitter recovers it and every change in that file is marked `uncertain`.
A path that is not analysed (`tools/x`, `__init__.PY`) holds no kernels, also when a rename
links it to one that is.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from core.frameworks import Framework
from mining.errors import MiningError, NoNetworkError, StateError
from mining.git import (
    MODE_SUBMODULE,
    MODE_SYMLINK,
    NULL_SHA,
    BlobReader,
    CommitMeta,
    GitRepo,
    NumStat,
    RawChange,
)
from mining.kernel_diff import diff_kernels
from mining.kernels import (
    NO_KERNELS,
    FileKernels,
    Layout,
    UnparsableSource,
    might_contain_kernels,
    scan_file,
)
from mining.model import (
    Candidate,
    CrawlSummary,
    FileChange,
    GithubInfo,
    Kernel,
    KernelChange,
    PrRef,
    SkipReason,
)
from mining.paths import is_analysable_path, is_python_path, is_test_path
from mining.prs import RevertLinker, parse_pr, parse_revert, revert_target_pr
from mining.store import WorkDir

if TYPE_CHECKING:
    from mining.github import GithubEnricher

log = logging.getLogger(__name__)

# A blob's analysis: its kernels, or why it was not analysed.
Analysis = FileKernels | SkipReason


@dataclass(frozen=True)
class CrawlOptions:
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None  # at most this many new commits this run
    jobs: int = 1
    max_file_bytes: int = 2_000_000
    chunk_commits: int = 400
    cache_entries: int = 20_000


class Crawler:
    def __init__(
        self,
        repo: GitRepo,
        framework: Framework,
        workdir: WorkDir,
        branch: str,
        options: CrawlOptions | None = None,
        enricher: GithubEnricher | None = None,
    ):
        self.repo = repo
        self.framework = framework
        self.workdir = workdir
        self.branch = branch
        self.options = options or CrawlOptions()
        self.enricher = enricher
        self.summary = CrawlSummary()
        self._cache: OrderedDict[tuple[str, str], Analysis] = OrderedDict()
        self._linker = RevertLinker()

    # -- planning ----------------------------------------------------------------------------

    def plan(self) -> tuple[str, list[CommitMeta], int]:
        """(tip, commits to scan oldest first, orphaned records dropped)."""
        tip = self.repo.resolve(self.branch)
        history = self.repo.first_parent_commits(tip)
        index = {c.sha: i for i, c in enumerate(history)}
        state = self.workdir.state
        if history and state.root_commit and state.root_commit != history[0].sha:
            raise StateError(
                f"{self.workdir.state_path} was written for another repository (root commit "
                f"{state.root_commit[:12]}, this one starts at {history[0].sha[:12]}); "
                "use another --out or --name",
                repo=str(self.repo.path),
            )
        if history:
            state.root_commit = history[0].sha
        start = 0
        orphans = 0
        last = self.workdir.state.last_commit
        if last is not None and last in index:
            start = index[last] + 1
        elif last is not None:
            base = self.repo.merge_base(last, tip) if self.repo.has_commit(last) else None
            log.warning(
                "history was rewritten since the last run (%s is no longer on %s); rescanning "
                "from %s",
                last[:12],
                self.branch,
                base[:12] if base else "the root",
            )
            start = index[base] + 1 if base in index else 0
            orphans = self.workdir.drop_orphans(set(index))
        for c in history[:start]:
            self._linker.observe(c.sha, c.subject)
        todo = [c for c in history[start:] if self._in_window(c)]
        if self.options.limit is not None:
            todo = todo[: self.options.limit]
        return tip, todo, orphans

    def _in_window(self, c: CommitMeta) -> bool:
        when = c.committed_datetime
        if self.options.since and when < self.options.since:
            return False
        return not (self.options.until and when > self.options.until)

    # -- running -----------------------------------------------------------------------------

    def run(
        self,
        progress: Callable[[int], None] | None = None,
        on_plan: Callable[[int], None] | None = None,
    ) -> CrawlSummary:
        """Scan the planned commits; `on_plan` hears how many, `progress` each chunk done."""
        t0 = time.perf_counter()
        tip, todo, orphans = self.plan()
        if on_plan:
            on_plan(len(todo))
        if orphans:
            log.warning("moved %d records of rewritten commits to orphaned.jsonl", orphans)
        if not todo:
            self.summary.seconds = time.perf_counter() - t0
            return self.summary
        first = todo[0]
        stop_after = first.parents[0] if first.parents else None
        raw = self.repo.raw_changes(tip, stop_after=stop_after)
        executor: Executor | None = None
        if self.options.jobs > 1:
            from mining.workers import worker_pool

            executor = worker_pool(self.options.jobs)
        try:
            with self.repo.blob_reader() as reader:
                step = self.options.chunk_commits
                for lo in range(0, len(todo), step):
                    chunk = todo[lo : lo + step]
                    self._scan_chunk(chunk, raw, reader, executor)
                    self.workdir.checkpoint(chunk[-1].sha)
                    if progress:
                        progress(len(chunk))
        finally:
            if executor:
                executor.shutdown(cancel_futures=True)
        self.summary.seconds = time.perf_counter() - t0
        return self.summary

    def _scan_chunk(
        self,
        chunk: list[CommitMeta],
        raw: dict[str, list[RawChange]],
        reader: BlobReader,
        executor: Executor | None,
    ) -> None:
        wanted: dict[tuple[str, str], None] = {}
        for c in chunk:
            for ch in raw.get(c.sha, ()):
                for key in _blob_keys(ch):
                    if key not in self._cache:
                        wanted[key] = None
        self._analyse(list(wanted), reader, executor)

        found: list[tuple[CommitMeta, list[RawChange], list[KernelChange], dict[str, SkipReason]]]
        found = []
        recorded = self.workdir.recorded_commits
        for c in chunk:
            self.summary.commits_scanned += 1
            changes = raw.get(c.sha, [])
            if any(is_analysable_path(ch.path) for ch in changes):
                self.summary.commits_with_python += 1
            kernel_changes, skipped, partly = self._diff_commit(changes)
            for reason in skipped.values():
                self.summary.count_skip(str(reason))
            if skipped:
                log.info(
                    "%s: skipped %s",
                    c.sha[:12],
                    ", ".join(f"{p} ({r})" for p, r in sorted(skipped.items())),
                )
            self.summary.partly_parsed_files += len(partly)
            for path, line in sorted(partly.items()):
                log.info(
                    "%s: %s does not parse in one version (line %d); its changes are uncertain",
                    c.sha[:12],
                    path,
                    line,
                )
            if kernel_changes and c.sha not in recorded:
                found.append((c, changes, kernel_changes, skipped))
            elif not kernel_changes:
                self._linker.observe(c.sha, c.subject)
        if not found:
            return
        stats = self.repo.numstats(c.sha for c, *_ in found)
        for c, changes, kernel_changes, skipped in found:
            cand = self._candidate(c, changes, kernel_changes, skipped, stats.get(c.sha, {}))
            self._linker.observe(c.sha, c.subject)
            self.workdir.append(cand)
            self.summary.candidates += 1
            for kc in kernel_changes:
                self.summary.count_change(str(kc.change))
                self.summary.count_kind(str(kc.kernel.kind))
                self.summary.uncertain_changes += kc.uncertain

    def _analyse(
        self, keys: Sequence[tuple[str, str]], reader: BlobReader, executor: Executor | None
    ) -> None:
        """Fill the cache for (blob, path) keys: read in one batch, byte-filter, parse."""
        if not keys:
            return
        self.repo.prefetch_blobs(sha for sha, _ in keys)
        by_sha: dict[str, list[str]] = {}
        for sha, path in keys:
            by_sha.setdefault(sha, []).append(path)
        to_parse: list[tuple[str, str, bytes]] = []
        for sha, data in reader.read(list(by_sha)):
            for path in by_sha[sha]:
                key = (sha, path)
                if data is None:
                    self._remember(key, SkipReason.MISSING_BLOB)
                elif b"\0" in data[:8192]:
                    self._remember(key, SkipReason.BINARY)
                elif not might_contain_kernels(path, data):
                    self._remember(key, NO_KERNELS)
                elif len(data) > self.options.max_file_bytes:
                    self._remember(key, SkipReason.TOO_LARGE)
                else:
                    to_parse.append((sha, path, data))
        if executor is not None and len(to_parse) > 8:
            results: Iterable[Analysis] = executor.map(_parse_blob, to_parse, chunksize=4)
        else:
            results = map(_parse_blob, to_parse)
        for (sha, path, _), result in zip(to_parse, results, strict=True):
            self._remember((sha, path), result)

    def _remember(self, key: tuple[str, str], value: Analysis) -> None:
        self._cache[key] = value
        if len(self._cache) > self.options.cache_entries:
            self._cache.popitem(last=False)

    def _lookup(self, key: tuple[str, str]) -> Analysis:
        value = self._cache.get(key)
        if value is None:  # evicted within the chunk: never happens with sane cache sizes
            raise MiningError(f"blob {key[0][:12]} of {key[1]} left the cache before use")
        return value

    def _side(self, blob: str, path: str) -> Analysis:
        if blob == NULL_SHA or not is_analysable_path(path):
            return NO_KERNELS
        return self._lookup((blob, path))

    def _diff_commit(
        self, changes: list[RawChange]
    ) -> tuple[list[KernelChange], dict[str, SkipReason], dict[str, int]]:
        """(kernel changes, skipped paths with reasons, paths that parse in one version only
        with the line of the syntax error)."""
        before: dict[str, tuple[Kernel, ...]] = {}
        after: dict[str, tuple[Kernel, ...]] = {}
        layouts_before: dict[str, Layout] = {}
        layouts_after: dict[str, Layout] = {}
        renames: dict[str, str] = {}
        skipped: dict[str, SkipReason] = {}
        partly: dict[str, int] = {}
        broken: set[str] = set()
        for ch in changes:
            if not (
                is_analysable_path(ch.path) or (ch.old_path and is_analysable_path(ch.old_path))
            ):
                continue
            mode_skip = _mode_skip(ch)
            if mode_skip:
                skipped[ch.path] = mode_skip
                continue
            old_path = ch.old_path or ch.path
            # A rename between an analysed path and one that is not (`x.py` -> `x`,
            # `__init__.PY` -> `__init__.py`): the side that is not analysed holds no kernels,
            # exactly as it would in a commit that touched it alone.
            old = self._side(ch.old_blob, old_path)
            new = self._side(ch.new_blob, ch.path)
            if isinstance(old, SkipReason):
                skipped[ch.path] = old
                continue
            if isinstance(new, SkipReason):
                skipped[ch.path] = new
                continue
            if old.error_line is not None and new.error_line is not None:
                skipped[ch.path] = SkipReason.UNPARSABLE
                continue
            error_line = old.error_line if old.error_line is not None else new.error_line
            if error_line is not None:
                partly[ch.path] = error_line
                broken.update((old_path, ch.path))
            if ch.status == "R" and ch.old_path:
                renames[ch.old_path] = ch.path
            if old.kernels:
                before[old_path] = old.kernels
                layouts_before[old_path] = old.layout
            if new.kernels:
                after[ch.path] = new.kernels
                layouts_after[ch.path] = new.layout
        if not before and not after:
            return [], skipped, partly
        found = diff_kernels(before, after, renames, layouts_before, layouts_after)
        if broken:
            found = [
                replace(kc, uncertain=True) if {kc.file, kc.old_file} & broken else kc
                for kc in found
            ]
        return found, skipped, partly

    def _candidate(
        self,
        c: CommitMeta,
        changes: list[RawChange],
        kernel_changes: list[KernelChange],
        skipped: dict[str, SkipReason],
        stats: Mapping[str, NumStat],
    ) -> Candidate:
        repo = self.framework.repo
        pr = parse_pr(c.subject, c.body, repo, self.framework.pr_rules) or PrRef(
            id=c.sha, number=None, source="none", url=None
        )
        revert = parse_revert(c.subject, c.body)
        if revert is not None:
            revert = self._linker.link(revert, revert_target_pr(c.subject, c.body))
        files = []
        for ch in changes:
            st = stats.get(ch.path)
            files.append(
                FileChange(
                    path=ch.path,
                    old_path=ch.old_path,
                    status=ch.status,
                    additions=st.additions if st else None,
                    deletions=st.deletions if st else None,
                    is_test=is_test_path(ch.path),
                    is_python=is_python_path(ch.path),
                    skipped=skipped.get(ch.path),
                )
            )
        github = None
        if self.enricher is not None and pr.number is not None and pr.source != "gitlab":
            github = self._enrich(repo, pr.number)
        return Candidate(
            id=self.workdir.unique_id(pr.id, c.sha),
            framework=self.framework.name,
            repo=repo,
            pr=pr,
            commit=c.sha,
            parent=c.parents[0] if c.parents else None,
            is_merge=c.is_merge,
            authored_at=c.authored_at,
            committed_at=c.committed_at,
            author=c.author,
            subject=c.subject,
            body=c.body,
            revert=revert,
            files=tuple(files),
            kernel_changes=tuple(kernel_changes),
            github=github,
            root=not c.parents,
        )

    def _enrich(self, repo: str, number: int) -> GithubInfo | None:
        enricher = self.enricher
        if enricher is None:
            return None
        try:
            return enricher.enrich(repo, number)
        except NoNetworkError as exc:
            log.warning("GitHub enrichment off for the rest of this run: %s", exc)
            self.enricher = None
            return None


def _blob_keys(ch: RawChange) -> list[tuple[str, str]]:
    if _mode_skip(ch):
        return []
    keys = []
    old_path = ch.old_path or ch.path
    if ch.old_blob != NULL_SHA and is_analysable_path(old_path):
        keys.append((ch.old_blob, old_path))
    if ch.new_blob != NULL_SHA and is_analysable_path(ch.path):
        keys.append((ch.new_blob, ch.path))
    return keys


def _mode_skip(ch: RawChange) -> SkipReason | None:
    modes = (ch.old_mode, ch.new_mode)
    if MODE_SUBMODULE in modes:
        return SkipReason.SUBMODULE
    if MODE_SYMLINK in modes:
        return SkipReason.SYMLINK
    return None


def _parse_blob(item: tuple[str, str, bytes]) -> Analysis:
    _, path, data = item
    try:
        return scan_file(data, path)
    except UnicodeDecodeError:
        return SkipReason.NON_UTF8
    except UnparsableSource as exc:
        log.debug("%s", exc)
        return SkipReason.UNPARSABLE
