"""The git gateway: the only module of the project that runs git or GitPython.

Reads: a local repository (work tree or bare), or clones one bare and blob-less into a cache.
Rules: history is read with one `git log` per pass, blob contents through one long-lived
`git cat-file --batch` process fed in batches, never one subprocess per file. Blob-less clones
get the blobs a batch needs in one `git fetch` before the batch is read, never one lazy fetch per
object.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mining.errors import GitError, NoNetworkError

log = logging.getLogger(__name__)

NULL_SHA = "0" * 40
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
MODE_SUBMODULE = "160000"
MODE_SYMLINK = "120000"

_NETWORK_ERRORS = re.compile(
    r"Could not resolve host|unable to access|Connection (refused|timed out)|"
    r"Network is unreachable|Could not read from remote|Failed to connect",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CommitMeta:
    sha: str
    parents: tuple[str, ...]
    authored_at: str  # ISO 8601 with offset
    committed_at: str
    author: str
    subject: str
    body: str

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def committed_datetime(self) -> datetime:
        return datetime.fromisoformat(self.committed_at)


@dataclass(frozen=True)
class RawChange:
    """One entry of `git log --raw` against the first parent."""

    status: str  # A, M, D, R, C, T (score dropped)
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    path: str
    old_path: str | None  # renames and copies only


@dataclass(frozen=True)
class NumStat:
    additions: int | None  # None for binary files
    deletions: int | None


def _no_lazy_fetch() -> dict[str, str]:
    """The environment for reading objects of a partial clone: never let a missing blob turn
    into one network round-trip per object."""
    return {**os.environ, "GIT_NO_LAZY_FETCH": "1"}


def _run(args: Sequence[str], cwd: Path, *, input: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, input=input, capture_output=True, check=False
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed or not on PATH") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        if _NETWORK_ERRORS.search(err):
            raise NoNetworkError(f"git {args[0]} needs the network: {err.splitlines()[-1]}")
        raise GitError(f"git {' '.join(args[:3])} failed: {err}", repo=str(cwd))
    return proc.stdout


def _run_quiet(args: Sequence[str], cwd: Path) -> str | None:
    """Stripped stdout of a git command that may fail, None when it does."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


class GitRepo:
    """A repository on disk, opened through GitPython and read with batched git commands."""

    def __init__(self, path: Path | str):
        import git  # GitPython loads lazily: `import mining` stays light

        self.path = Path(path).resolve()
        try:
            self._repo = git.Repo(self.path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise GitError(f"not a git repository: {self.path}") from exc
        self.git_dir = Path(self._repo.git_dir)
        promisor = _run_quiet(["config", "--get", "remote.origin.promisor"], self.path)
        self.is_partial = promisor == "true"
        self._present: set[str] | None = None
        self._renames = True  # off once a blob that rename detection needs is found missing

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def clone_or_fetch(cls, url: str, dest: Path) -> GitRepo:
        """Clone `url` bare and blob-less into `dest`, or fetch into an existing clone there."""
        import git

        if (dest / "HEAD").exists():
            repo = cls(dest)
            log.info("fetching %s into %s", url, dest)
            try:
                repo._repo.git.fetch("origin", "--prune", "--no-tags")
            except git.GitCommandError as exc:
                raise _classify(exc, url) from exc
            return repo
        dest.parent.mkdir(parents=True, exist_ok=True)
        log.info("cloning %s (bare, blob-less) into %s", url, dest)
        try:
            git.Repo.clone_from(
                url, dest, bare=True, multi_options=["--filter=blob:none", "--no-tags"]
            )
        except git.GitCommandError as exc:
            raise _classify(exc, url) from exc
        repo = cls(dest)
        # A bare clone maps remote branches straight onto local ones; keep them updating.
        repo._repo.git.config("remote.origin.fetch", "+refs/heads/*:refs/heads/*")
        return repo

    # -- refs and commits --------------------------------------------------------------------

    def default_branch(self) -> str:
        """The branch origin's HEAD names in a clone, else the branch HEAD points at."""
        out = _run_quiet(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"], self.path)
        if out:
            return out.removeprefix("refs/remotes/")
        out = _run_quiet(["symbolic-ref", "-q", "HEAD"], self.path)
        if not out:
            raise GitError(
                "HEAD is detached and origin/HEAD is unset; pass --branch", repo=str(self.path)
            )
        return out.removeprefix("refs/heads/")

    def resolve(self, rev: str) -> str:
        out = _run(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], self.path)
        return out.decode().strip()

    def has_commit(self, sha: str) -> bool:
        return _run_quiet(["cat-file", "-t", sha], self.path) == "commit"

    def missing_commits(self, shas: Iterable[str]) -> list[str]:
        """The given names that are no full sha of a commit in this repository, in order, in
        one git call. Nothing is fetched: a blob-less clone answers from what it holds."""
        wanted = list(dict.fromkeys(shas))
        full = [s for s in wanted if _FULL_SHA.fullmatch(s)]
        found: set[str] = set()
        if full and self.is_partial:
            # --batch-check would fetch a missing object from the promisor remote
            out = _run(["cat-file", "--batch-all-objects", "--batch-check=%(objectname) "
                        "%(objecttype)"], self.path)  # fmt: skip
            found = {line[:-7] for line in out.decode().splitlines() if line.endswith(" commit")}
        elif full:
            out = _run(
                ["cat-file", "--batch-check=%(objectname) %(objecttype)"], self.path,
                input="\n".join(full).encode() + b"\n",
            )  # fmt: skip
            found = {line[:-7] for line in out.decode().splitlines() if line.endswith(" commit")}
        return [s for s in wanted if s not in found]

    def merge_base(self, a: str, b: str) -> str | None:
        return _run_quiet(["merge-base", a, b], self.path)

    def commit_meta(self, rev: str) -> CommitMeta:
        """Metadata of one commit."""
        fmt = "%H%x00%P%x00%aI%x00%cI%x00%an <%ae>%x00%s%x00%b"
        out = _run(["show", "-s", f"--format={fmt}", rev, "--"], self.path)
        sha, parents, a_at, c_at, author, subject, body = out.decode("utf-8", "replace").split(
            "\x00", 6
        )
        return CommitMeta(sha, tuple(parents.split()), a_at, c_at, author, subject, body.strip())

    def first_parent_commits(self, tip: str) -> list[CommitMeta]:
        """The first-parent chain ending at `tip`, oldest first."""
        fmt = "%x01%H%x00%P%x00%aI%x00%cI%x00%an <%ae>%x00%s%x00%b"
        out = _run(["log", "--first-parent", "--reverse", f"--format={fmt}", tip, "--"], self.path)
        commits = []
        for rec in out.split(b"\x01")[1:]:
            sha, parents, a_at, c_at, author, subject, body = rec.decode("utf-8", "replace").split(
                "\x00", 6
            )
            commits.append(
                CommitMeta(
                    sha=sha,
                    parents=tuple(parents.split()),
                    authored_at=a_at,
                    committed_at=c_at,
                    author=author,
                    subject=subject,
                    body=body.rstrip("\n"),
                )
            )
        return commits

    # -- changes -----------------------------------------------------------------------------

    def raw_changes(self, tip: str, stop_after: str | None = None) -> dict[str, list[RawChange]]:
        """Changes of every first-parent commit up to `tip` against its first parent.

        One `git log --raw` pass; `stop_after` excludes that commit and its ancestors. The root
        commit is diffed against the empty tree.
        """
        rev = f"{stop_after}..{tip}" if stop_after else tip
        # --root: the root commit against the empty tree, whatever log.showRoot says
        args = ["log", "--first-parent", "--diff-merges=first-parent", "--root", "--raw"]
        out = self._log_renames([*args, "-z", "--no-abbrev", "--format=%x01%H", rev, "--"])
        return {sha: changes for sha, changes, _ in _parse_log_z(out)}

    def numstats(self, shas: Iterable[str]) -> dict[str, dict[str, NumStat]]:
        """Added/deleted line counts per path for the given commits, in one git call."""
        shas = list(shas)
        if not shas:
            return {}
        args = ["log", "--stdin", "--no-walk=unsorted", "--diff-merges=first-parent", "--root"]
        try:
            out = self._log_renames(
                [*args, "--numstat", "-z", "--format=%x01%H"], "\n".join(shas).encode() + b"\n"
            )
        except GitError as exc:
            if "unable to read" not in str(exc) or len(shas) == 1:
                raise
            # Line counts need every blob: one commit at a time, none for a commit missing one.
            stats: dict[str, dict[str, NumStat]] = {}
            for sha in shas:
                try:
                    stats.update(self.numstats([sha]))
                except GitError as one:
                    if "unable to read" not in str(one):
                        raise
                    log.warning("%s: no line counts, a blob is missing", sha[:12])
            return stats
        return {sha: stats for sha, _, stats in _parse_log_z(out)}

    def _log_renames(self, args: list[str], input: bytes | None = None) -> bytes:
        """`git log` with rename detection, or without it where a blob it needs is missing.

        Rename detection reads the blobs of added and deleted files; a mirror that lacks one
        (a snapshot without its largest files) makes git fail outright. Renames then show as a
        deletion and an addition, which the kernel diff still pairs as moves.
        """
        if self._renames:
            try:
                return _run([*args[:1], "-M", *args[1:]], self.path, input=input)
            except GitError as exc:
                if "unable to read" not in str(exc):
                    raise
                log.warning("renames not detected, a blob is missing: %s", str(exc).split(": ")[-1])
                self._renames = False
        return _run([*args[:1], "--no-renames", *args[1:]], self.path, input=input)

    # -- blobs -------------------------------------------------------------------------------

    def prefetch_blobs(self, shas: Iterable[str]) -> None:
        """In a blob-less clone, fetch the missing blobs among `shas` in one request."""
        if not self.is_partial:
            return
        wanted = sorted({s for s in shas if s != NULL_SHA})
        if not wanted:
            return
        missing = self._missing_objects(wanted)
        if not missing:
            return
        log.info("fetching %d blobs from the promisor remote", len(missing))
        _run(
            [
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "origin",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
            ],
            self.path,
            input="\n".join(missing).encode() + b"\n",
        )

    def _missing_objects(self, shas: list[str]) -> list[str]:
        # Listing what is on disk never touches the promisor remote; listed once per instance.
        if self._present is None:
            out = _run(
                ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], self.path
            )
            self._present = set(out.decode().split())
        missing = [s for s in shas if s not in self._present]
        self._present.update(missing)  # fetched right after this call
        return missing

    def blob_reader(self) -> BlobReader:
        return BlobReader(self.path)

    # -- snapshots of one commit (curation, envbuild, eval) -----------------------------------

    def list_tree(self, commit: str, suffixes: tuple[str, ...] = ()) -> dict[str, str]:
        """path -> blob sha of every regular file at `commit` (optionally only these suffixes)."""
        out = _run(["ls-tree", "-r", "-z", "--full-tree", commit], self.path)
        files: dict[str, str] = {}
        for entry in out.split(b"\x00"):
            if not entry:
                continue
            meta, _, path_b = entry.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            path = path_b.decode("utf-8", "surrogateescape")
            if kind != "blob" or mode in (MODE_SYMLINK, MODE_SUBMODULE):
                continue
            if suffixes and not path.endswith(suffixes):
                continue
            files[path] = sha
        return files

    def files_containing(self, commit: str, text: str, suffix: str = ".py") -> list[str]:
        """Paths ending in `suffix` at `commit` whose content holds `text` (a fixed string),
        sorted; [] when none does, or when git cannot tell (a partial clone that lacks a blob
        is never fetched for this)."""
        args = ["git", "grep", "-l", "-F", "-e", text, commit, "--", f"*{suffix}"]
        proc = subprocess.run(args, cwd=self.path, capture_output=True, env=_no_lazy_fetch(),
                              check=False)  # fmt: skip
        if proc.returncode != 0:  # 1: no match; otherwise an object git could not read
            return []
        prefix = f"{commit}:"
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        return sorted(line.removeprefix(prefix) for line in lines)

    def read_files(self, commit: str, paths: Iterable[str]) -> dict[str, bytes]:
        """Contents of `paths` at `commit`, in one batch; paths absent there are left out."""
        tree = self.list_tree(commit)
        wanted = {p: tree[p] for p in paths if p in tree}
        return self.read_blobs(wanted)

    def read_blobs(self, blobs: dict[str, str]) -> dict[str, bytes]:
        """name -> content for a name -> blob sha mapping, in one batch."""
        self.prefetch_blobs(blobs.values())
        by_sha: dict[str, list[str]] = {}
        for name, sha in blobs.items():
            by_sha.setdefault(sha, []).append(name)
        out: dict[str, bytes] = {}
        with self.blob_reader() as reader:
            for sha, data in reader.read(list(by_sha)):
                if data is not None:
                    for name in by_sha[sha]:
                        out[name] = data
        return out

    def diff(self, old: str, new: str, paths: Sequence[str] | None = None) -> bytes:
        """A unified diff (with renames, binary as `Binary files differ`) of two commits, as
        bytes: a file's CRLF line ends and non-UTF-8 bytes stay as they are."""
        args = ["diff", "--no-color", "--no-ext-diff", "-M", "--full-index", old, new, "--"]
        return _run([*args, *(paths or [])], self.path)

    def tree_sha(self, commit: str) -> str:
        """The sha of the commit's root tree: a content hash of every file in it."""
        return _run(["rev-parse", f"{commit}^{{tree}}"], self.path).decode().strip()

    def describe_tag(self, commit: str) -> str | None:
        """The newest tag reachable from `commit`, if any."""
        return _run_quiet(["describe", "--tags", "--abbrev=0", commit], self.path)

    def absent_paths(self, commit: str) -> list[str]:
        """Files of `commit` whose blobs this (partial) clone does not hold."""
        if self._present is None:
            out = _run(
                ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], self.path
            )
            self._present = set(out.decode().split())
        return sorted(p for p, sha in self.list_tree(commit).items() if sha not in self._present)

    def archive(
        self, commit: str, dest: Path, paths: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> None:
        """Write the tree of `commit` (only `paths` when given, without `exclude`) into `dest`
        (no .git: no history beyond the commit)."""
        dest.mkdir(parents=True, exist_ok=True)
        spec = (
            [*(paths or ["."]), *(f":(exclude,literal){p}" for p in exclude)] if exclude else paths
        )
        data = _run(["archive", "--format=tar", commit, "--", *spec], self.path)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)


class BlobReader:
    """A long-lived `git cat-file --batch` fed many object ids at a time."""

    def __init__(self, cwd: Path):
        env = _no_lazy_fetch()
        self._proc = subprocess.Popen(
            ["git", "cat-file", "--batch"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def read(self, shas: Sequence[str]) -> Iterator[tuple[str, bytes | None]]:
        """Yield (sha, content) in order; content is None for missing objects."""
        assert self._proc.stdin and self._proc.stdout
        stdin, stdout = self._proc.stdin, self._proc.stdout
        payload = b"".join(s.encode() + b"\n" for s in shas)

        # Feed the request from a thread so a large answer cannot deadlock the pipes.
        def feed() -> None:
            stdin.write(payload)
            stdin.flush()

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        for sha in shas:
            header = stdout.readline()
            if not header:
                raise GitError("git cat-file --batch ended early")
            parts = header.split()
            if len(parts) == 2 and parts[1] == b"missing":
                yield sha, None
                continue
            size = int(parts[2])
            data = stdout.read(size)
            stdout.read(1)  # the newline after each object
            yield sha, data
        writer.join()

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout:
            self._proc.stdout.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def file_diff(path: str, old: bytes | None, new: bytes | None) -> bytes:
    """A git-style unified diff of one file's two versions (None: the file does not exist on
    that side), with `a/<path>` and `b/<path>` names, as `git apply -p1` takes it."""
    import tempfile

    if old == new:
        return b""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sides = []
        for side, data in (("a", old), ("b", new)):
            if data is None:
                sides.append("/dev/null")
                continue
            target = root / side / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            sides.append(f"{side}/{path}")
        proc = subprocess.run(
            ["git", "diff", "--no-index", "--no-color", "--no-ext-diff", "--no-prefix",
             "--full-index", "--binary", *sides],
            cwd=root, capture_output=True, check=False,
        )  # fmt: skip
    if proc.returncode not in (0, 1):  # 1: the files differ
        raise GitError(f"git diff --no-index failed for {path}: {proc.stderr.decode()[:200]}")
    out = proc.stdout
    # A created or deleted file is named after its one real side on both sides of the header.
    if old is None or new is None:
        out = out.replace(b"diff --git b/", b"diff --git a/", 1)
        out = out.replace(f" a/{path} a/{path}\n".encode(), f" a/{path} b/{path}\n".encode(), 1)
        out = out.replace(f"diff --git a/{path} a/{path}".encode(),
                          f"diff --git a/{path} b/{path}".encode(), 1)  # fmt: skip
    return out


def apply_patch(workdir: Path, patch: bytes | str, *, reverse: bool = False) -> None:
    """Apply a unified diff to a directory tree that need not be a repository (`git apply`)."""
    if isinstance(patch, str):
        patch = patch.encode("utf-8", "surrogateescape")
    if not patch.strip():
        return
    args = ["apply", "--whitespace=nowarn", "--recount"]
    if reverse:
        args.append("--reverse")
    try:
        _run([*args, "-"], workdir, input=patch)
    except GitError as exc:
        raise GitError(f"patch does not apply in {workdir}: {exc}") from exc


def init_bare(path: Path) -> GitRepo:
    """An empty bare repository at `path` (for slim bundles of base trees)."""
    path.mkdir(parents=True, exist_ok=True)
    _run(["init", "-q", "--bare", "."], path)  # in `path` itself: a relative path stays one
    return GitRepo(path)


def commit_snapshot(repo: GitRepo, tree: Path, ref: str, message: str) -> str:
    """Commit the files under `tree` as one root commit at `ref` in `repo`; returns its sha."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env_args = ["--git-dir", str(repo.git_dir), "--work-tree", str(tree)]
        index = Path(tmp) / "index"
        env = dict(os.environ, GIT_INDEX_FILE=str(index))
        for args in (["add", "-A", "-f", "."], ["write-tree"]):
            proc = subprocess.run(
                ["git", *env_args, *args], cwd=tree, env=env, capture_output=True, check=False
            )
            if proc.returncode != 0:
                raise GitError(f"git {args[0]} failed: {proc.stderr.decode().strip()}")
        tree_sha = proc.stdout.decode().strip()
        ident = dict(
            env,
            GIT_AUTHOR_NAME="triton-pr-bench",
            GIT_AUTHOR_EMAIL="bench@localhost",
            GIT_COMMITTER_NAME="triton-pr-bench",
            GIT_COMMITTER_EMAIL="bench@localhost",
        )
        proc = subprocess.run(
            ["git", "--git-dir", str(repo.git_dir), "commit-tree", tree_sha, "-m", message],
            env=ident,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(f"git commit-tree failed: {proc.stderr.decode().strip()}")
        sha = proc.stdout.decode().strip()
    _run(["update-ref", ref, sha], repo.git_dir)
    return sha


def gc(repo: GitRepo) -> None:
    """Pack the repository tightly (bundles travel to other machines)."""
    _run(["gc", "-q", "--aggressive", "--prune=now"], repo.git_dir)


def _classify(exc: Exception, url: str) -> Exception:
    text = str(exc)
    if _NETWORK_ERRORS.search(text):
        return NoNetworkError(
            f"cannot reach {url} (no network?); pass --repo-path with a local clone", repo=url
        )
    return GitError(f"git failed for {url}: {text.strip().splitlines()[-1]}", repo=url)


def _parse_log_z(
    out: bytes,
) -> Iterator[tuple[str, list[RawChange], dict[str, NumStat]]]:
    """Parse `git log -z --format=%x01%H` output with --raw and/or --numstat sections."""
    for rec in out.split(b"\x01")[1:]:
        fields = rec.split(b"\x00")
        sha = fields[0].decode().strip()
        changes: list[RawChange] = []
        stats: dict[str, NumStat] = {}
        i = 1
        n = len(fields)
        while i < n:
            f = fields[i].lstrip(b"\n")
            if not f:
                i += 1
                continue
            if f.startswith(b":"):
                old_mode, new_mode, old_blob, new_blob, status = f[1:].decode().split()
                letter = status[0]
                if letter in "RC":
                    old_path = fields[i + 1].decode("utf-8", "surrogateescape")
                    path = fields[i + 2].decode("utf-8", "surrogateescape")
                    i += 3
                else:
                    old_path = None
                    path = fields[i + 1].decode("utf-8", "surrogateescape")
                    i += 2
                changes.append(
                    RawChange(letter, old_mode, new_mode, old_blob, new_blob, path, old_path)
                )
                continue
            # numstat: "add\tdel\tpath" or, for renames, "add\tdel\t" then old, new
            add, dele, rest = f.decode("utf-8", "surrogateescape").split("\t", 2)
            stat = NumStat(None if add == "-" else int(add), None if dele == "-" else int(dele))
            if rest:
                stats[rest] = stat
                i += 1
            else:
                stats[fields[i + 2].decode("utf-8", "surrogateescape")] = stat
                i += 3
        yield sha, changes, stats
