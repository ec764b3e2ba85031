"""Commit message -> pull request reference, and revert / re-apply detection and linking.

Reads: a commit's subject and body (plain strings; this module runs no git).
Writes: nothing; returns `PrRef` and `RevertRef` values.
Refuses: to guess. A subject that only mentions a revert in passing ("Fix revert of weights") is
not a revert, and a number that is not in one of the recognised PR forms is not a PR.

Recognised PR forms, in priority order:

* ``Pull Request resolved: https://github.com/<owner>/<name>/pull/N`` in the body (PyTorch's
  ghstack / internal-land trailer) -> ``trailer``
* a subject ending in ``(#N)`` (GitHub squash merge) -> ``squash``
* ``Merge pull request #N from user/branch`` (GitHub merge commit) -> ``merge``
* a subject starting ``group/project!N`` or a body line ``See merge request group/project!N``
  (Megatron-LM's internal GitLab history) -> ``gitlab``; these are not GitHub PRs, so no url.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from dataclasses import replace

from core.frameworks import PR_RULES
from mining.model import PrRef, RevertRef

log = logging.getLogger(__name__)

__all__ = [
    "RevertLinker",
    "normalize_subject",
    "parse_pr",
    "parse_revert",
    "revert_target_pr",
]

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")

_TRAILER_RE = re.compile(
    r"^[ \t]*Pull Request resolved:[ \t]*<?https?://github\.com/"
    r"(?P<owner>[A-Za-z0-9][A-Za-z0-9-]*)/(?P<name>[A-Za-z0-9._-]+)/pull/(?P<num>\d+)",
    re.MULTILINE | re.IGNORECASE,
)
# `$` (not `\Z`) tolerates a trailing newline; `\s*` the stray spaces some tools leave.
_SQUASH_RE = re.compile(r"\(#(?P<num>\d+)\)\s*$")
_MERGE_RE = re.compile(r"^Merge pull request #(?P<num>\d+) from \S")
# A GitLab project path has at least one slash; `!N` right after it is a merge request.
_GITLAB_PATH = r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+"
_GITLAB_SUBJECT_RE = re.compile(rf"^\s*(?P<path>{_GITLAB_PATH})!(?P<num>\d+)(?=\s|:|$)")
_GITLAB_BODY_RE = re.compile(
    rf"^[ \t]*See merge request (?P<path>{_GITLAB_PATH})!(?P<num>\d+)[ \t]*$", re.MULTILINE
)


def _github_url(repo: str, number: int) -> str | None:
    return f"https://github.com/{repo}/pull/{number}" if _REPO_RE.match(repo) else None


def parse_pr(subject: str, body: str, repo: str, rules: Collection[str] = PR_RULES) -> PrRef | None:
    """Return the PR (or GitLab merge request) a commit came from, or None when none is named.

    `rules` are the framework's PR message rules (its registry entry's `pr_rules`)."""
    # Several trailers appear when a landed commit quotes another; the last one is its own.
    trailers = list(_TRAILER_RE.finditer(body)) if "trailer" in rules else []
    if trailers:
        m = trailers[-1]
        number = int(m["num"])
        # The trailer names the repository it was landed from; trust it over `repo`, which may
        # be a mirror or a fork.
        url = f"https://github.com/{m['owner']}/{m['name']}/pull/{number}"
        return PrRef(id=f"#{number}", number=number, source="trailer", url=url)

    m2 = _SQUASH_RE.search(subject) if "squash" in rules else None
    if m2:
        number = int(m2["num"])
        return PrRef(id=f"#{number}", number=number, source="squash", url=_github_url(repo, number))

    m3 = _MERGE_RE.match(subject) if "merge" in rules else None
    if m3:
        number = int(m3["num"])
        return PrRef(id=f"#{number}", number=number, source="merge", url=_github_url(repo, number))

    if "gitlab" not in rules:
        return None
    m4 = _GITLAB_SUBJECT_RE.match(subject)
    if m4 is None:
        bodies = list(_GITLAB_BODY_RE.finditer(body))
        m4 = bodies[-1] if bodies else None
    if m4:
        number = int(m4["num"])
        return PrRef(id=f"!{number}", number=number, source="gitlab", url=None)
    return None


# --- reverts -------------------------------------------------------------------------------

# Trailing PR markers, possibly several: `Reapply "X (#1)" (#2) (#3)`.
_TRAILING_PRS_RE = re.compile(r"(?:\s*\([\w./-]*#\d+\))+\s*$")
# An optional conventional-commit or bracket tag before the verb: `ci: Revert "X"`, `[dev] ...`.
_TAG = r"(?:(?:[A-Za-z][\w-]*(?:\([^)]*\))?!?:|\[[^\]]*\])\s*)?"
_QUOTED_REVERT_RE = re.compile(rf"^{_TAG}Revert\s+\"(?P<target>.+)\"$")
_QUOTED_REAPPLY_RE = re.compile(
    rf"^{_TAG}(?:Reapply|Re-apply|Reland|Re-land)\s+\"(?P<target>.+)\"$"
)
# GitHub cuts long titles with an ellipsis, leaving the opening quote unbalanced.
_TRUNCATED_REVERT_RE = re.compile(rf"^{_TAG}Revert\s+\"(?P<target>.+(?:…|\.\.\.))$")
_TRUNCATED_REAPPLY_RE = re.compile(
    rf"^{_TAG}(?:Reapply|Re-apply|Reland|Re-land)\s+\"(?P<target>.+(?:…|\.\.\.))$"
)
# The digit look-ahead keeps hex-only words ("Revert defaced") from passing for a sha.
_SHA = r"(?P<sha>(?=[a-f]*\d)[0-9a-f]{7,40})"
_SHA_REVERT_RE = re.compile(rf"^{_TAG}Revert\s+(?:commit\s+)?{_SHA}\.?$")
_SHA_REAPPLY_RE = re.compile(
    rf"^{_TAG}(?:Reapply|Re-apply|Reland|Re-land)\s+(?:commit\s+)?{_SHA}\.?$"
)
_BRACKET_RELAND_RE = re.compile(
    r"^\[(?:Reland|Re-land|Reapply|Re-apply)\]\s*:?\s*(?P<target>.+)$", re.I
)
# `Reland: X` / `Reapply - X`: the verb as a tag, then the original subject.
_TAGGED_REAPPLY_RE = re.compile(
    r"^(?:Reapply|Re-apply|Reland|Re-land)\s*(?::|-)\s+(?P<target>.+)$", re.I
)
# `Reland X` is PyTorch's word for a re-apply and means nothing else.
_RELAND_RE = re.compile(r"^Re-?land\s+(?:of\s+)?(?P<target>.+)$", re.I)
# `Reapply` / `Replay` are ordinary verbs too ("Replay buffer ..."), so without quotes they
# count only when a merge-request or PR reference opens or closes what follows:
# `Replay !4110 - X`, `Replay of: !2997 - X`, `Replay (!3904) X`, `Re-apply X !3439`.
_REF = r"(?:[\w.-]+(?:/[\w.-]+)+)?[!#]\d+"
_REF_REAPPLY_RE = re.compile(
    rf"^(?:Reapply|Re-apply|Replay)(?:\s+of)?\s*:?\s+"
    rf"(?P<target>[`'\"(]?{_REF}\b.*|.*\s\(?{_REF}\)?)$",
    re.I,
)
# Conventional commits' own revert type: `revert: X`, `revert(scope): X`, `Revert: X`.
_CONVENTIONAL_REVERT_RE = re.compile(r"^revert(?:\([^)]*\))?!?:\s*(?P<target>.+)$", re.I)
_PR_REVERT_RE = re.compile(
    rf"^{_TAG}(?:Revert|Reverts|Revert of|Reverting)\s+(?:PR\s*)?#(?P<num>\d+)\b", re.I
)
_PAREN_SHA_RE = re.compile(r"\((?P<sha>[0-9a-f]{7,40})\)$")
_PR_MARKER_RE = re.compile(r"\([\w./-]*#(\d+)\)")
_REVERTS_COMMIT_RE = re.compile(r"This reverts commit (?P<sha>[0-9a-f]{40})\b")
# GitHub's "Revert" button writes `Reverts owner/name#N` as the PR body; PyTorch's revert bot
# writes `Reverted https://github.com/owner/name/pull/N on behalf of ...`.
_REVERTS_PR_BODY_RE = re.compile(
    r"^[ \t]*(?:Reverts [\w.-]+/[\w.-]+#(?P<num>\d+)[ \t]*$"
    r"|Reverted https?://github\.com/[\w.-]+/[\w.-]+/pull/(?P<num2>\d+)\b)",
    re.M,
)


def _strip_trailing_prs(subject: str) -> str:
    return _TRAILING_PRS_RE.sub("", subject).strip()


def parse_revert(subject: str, body: str) -> RevertRef | None:
    """Return the revert or re-apply a commit message declares, or None.

    Only the explicit forms count: `Revert "X"`, `Revert <sha>`, `revert: X`, `Revert #N`,
    `Reapply "X"` / `Re-apply` / `Reland`, `[Reland] X`, `Reland: X`, optionally behind a
    conventional-commit tag (`ci: Revert "X"`). For a revert the body's
    `This reverts commit <sha>` gives the target commit; for a re-apply that sha is the revert
    being undone, not the original, so it is left for `RevertLinker` to resolve by subject.
    """
    s = _strip_trailing_prs(subject.strip())
    m = _REVERTS_COMMIT_RE.search(body)
    body_sha = m["sha"] if m else None

    for rx in (_QUOTED_REVERT_RE, _TRUNCATED_REVERT_RE):
        hit = rx.match(s)
        if hit:
            return RevertRef(kind="revert", target_subject=hit["target"], target_commit=body_sha)
    for rx in (_QUOTED_REAPPLY_RE, _TRUNCATED_REAPPLY_RE):
        hit = rx.match(s)
        if hit:
            return RevertRef(kind="reapply", target_subject=hit["target"], target_commit=None)

    hit = _SHA_REVERT_RE.match(s)
    if hit:
        return RevertRef(kind="revert", target_subject=None, target_commit=body_sha or hit["sha"])
    hit = _SHA_REAPPLY_RE.match(s)
    if hit:
        return RevertRef(kind="reapply", target_subject=None, target_commit=hit["sha"])

    hit = (
        _BRACKET_RELAND_RE.match(s)
        or _TAGGED_REAPPLY_RE.match(s)
        or _RELAND_RE.match(s)
        or _REF_REAPPLY_RE.match(s)
    )
    if hit:
        target = hit["target"].strip()
        if len(target) > 2 and target[0] == target[-1] and target[0] in "`'\"":
            target = target[1:-1].strip()
        return RevertRef(kind="reapply", target_subject=target, target_commit=None)

    if _PR_REVERT_RE.match(s):
        return RevertRef(kind="revert", target_subject=None, target_commit=body_sha)

    hit = _CONVENTIONAL_REVERT_RE.match(s)
    if hit:
        # The text after `revert:` is usually a description, rarely the exact old subject;
        # it is kept so the linker can try, and a wrong guess simply fails to link.
        target = hit["target"].strip()
        sha_in_parens = _PAREN_SHA_RE.search(target)
        if sha_in_parens:
            target = target[: sha_in_parens.start()].rstrip()
        sha = body_sha or (sha_in_parens["sha"] if sha_in_parens else None)
        return RevertRef(kind="revert", target_subject=target, target_commit=sha)

    # A bare `This reverts commit` is trusted only when the subject still starts with the
    # verb: a squash body may quote a revert of one of its many commits.
    if body_sha and re.match(rf"^{_TAG}Revert\b", s, re.I):
        return RevertRef(kind="revert", target_subject=None, target_commit=body_sha)
    return None


def revert_target_pr(subject: str, body: str) -> int | None:
    """The PR number a revert or re-apply names, or None.

    Looks at `Revert #N` / `revert of #N`, a body line `Reverts owner/name#N`, the `(#N)` that
    ends a quoted target (`Revert "X (#N)" (#M)`), and for `revert: X (#N) (#M)` the marker
    before the revert's own.
    """
    subject = subject.strip()
    s = _strip_trailing_prs(subject)
    m = _PR_REVERT_RE.match(s)
    if m:
        return int(m["num"])
    m = _REVERTS_PR_BODY_RE.search(body)
    if m:
        return int(m["num"] or m["num2"])
    ref = parse_revert(subject, body)
    if ref is None:
        return None
    # A quoted revert's own `(#N)` would name the revert PR, not the original change.
    if ref.target_subject and parse_revert(ref.target_subject, "") is None:
        m = _SQUASH_RE.search(ref.target_subject)
        if m:
            return int(m["num"])
    if _CONVENTIONAL_REVERT_RE.match(s):
        markers = _PR_MARKER_RE.findall(subject[len(s) :])
        if len(markers) >= 2:
            return int(markers[-2])
    return None


_WS_RE = re.compile(r"\s+")


def normalize_subject(subject: str) -> str:
    """Subject as compared when linking: trailing `(#N)` markers removed, whitespace collapsed."""
    return _WS_RE.sub(" ", _strip_trailing_prs(subject)).strip()


_MR_IN_TEXT_RE = re.compile(r"(?:^|[\s(`'\"])(?:[\w.-]+(?:/[\w.-]+)+)?!(?P<num>\d+)\b")
# What is left of a `(#N)` marker that the ellipsis cut through.
_PARTIAL_PR_RE = re.compile(r"\s*\([\w./-]*#?\d*$")


def _truncated_prefix(subject: str) -> str | None:
    for tail in ("…", "..."):
        if subject.endswith(tail):
            return _PARTIAL_PR_RE.sub("", subject[: -len(tail)]).rstrip()
    return None


class RevertLinker:
    """Resolves a revert's target commit from the history seen so far.

    Feed every commit oldest first with `observe`; `link` then finds the most recent earlier
    commit whose normalised subject equals the revert's target subject. Exact lookups are dict
    hits; only targets cut short with an ellipsis (rare) scan the history backwards.
    """

    # A truncated title is matched by prefix; looking further back than this finds stale,
    # unrelated commits more often than the real target.
    max_prefix_scan = 20_000

    def __init__(self) -> None:
        self._by_subject: dict[str, str] = {}
        self._by_pr: dict[int, str] = {}
        self._by_mr: dict[int, str] = {}
        self._by_short: dict[str, list[str]] = {}
        self._order: list[tuple[str, str]] = []

    def observe(self, sha: str, subject: str) -> None:
        """Record one commit; call in chronological order, oldest first."""
        # Case is folded: a revert often re-capitalises the subject it quotes.
        norm = normalize_subject(subject).casefold()
        self._by_subject[norm] = sha
        m = _SQUASH_RE.search(subject)
        if m:
            self._by_pr[int(m["num"])] = sha
        m = _GITLAB_SUBJECT_RE.match(subject)
        if m:
            self._by_mr[int(m["num"])] = sha
        self._by_short.setdefault(sha[:7], []).append(sha)
        self._order.append((norm, sha))

    def resolve_sha(self, sha: str) -> str | None:
        """Expand an abbreviated sha to one observed commit, or None when unknown or ambiguous."""
        hits = [s for s in self._by_short.get(sha[:7], ()) if s.startswith(sha)]
        return hits[0] if len(hits) == 1 else None

    def link(self, ref: RevertRef, target_pr: int | None = None) -> RevertRef:
        """Return `ref` with `target_commit` filled in when history names it; else `ref` as is.

        Call it before observing the revert itself. Tries, in order: an abbreviated sha in
        `ref`, the exact target subject, a prefix of an ellipsis-truncated one, `target_pr`
        (from `revert_target_pr`), and a GitLab `!N` named in the target subject.
        """
        if ref.target_commit:
            if len(ref.target_commit) < 40:
                full = self.resolve_sha(ref.target_commit)
                if full:
                    return replace(ref, target_commit=full)
            return ref
        sha: str | None = None
        if ref.target_subject:
            norm = normalize_subject(ref.target_subject).casefold()
            sha = self._by_subject.get(norm)
            if sha is None:
                prefix = _truncated_prefix(norm)
                if prefix:
                    sha = self._find_prefix(prefix)
        if sha is None and target_pr is not None:
            sha = self._by_pr.get(target_pr)
        if sha is None and ref.target_subject and parse_revert(ref.target_subject, "") is None:
            # `Replay !4110 - X` names the GitLab merge request rather than its exact subject;
            # the guard keeps `Revert "Revert "P!N - X""` from jumping to the original MR.
            m = _MR_IN_TEXT_RE.search(ref.target_subject)
            if m:
                sha = self._by_mr.get(int(m["num"]))
        return replace(ref, target_commit=sha) if sha else ref

    def _find_prefix(self, prefix: str) -> str | None:
        # Too short a prefix would match half the history.
        if len(prefix) < 20:
            return None
        for norm, sha in reversed(self._order[-self.max_prefix_scan :]):
            if norm.startswith(prefix):
                return sha
        return None
