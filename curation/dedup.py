"""Near-duplicate detection across tasks: the same kernel change landing in several frameworks.

Reads: one `DedupItem` per task (its id, merge date and the gold kernel sources, or the base ones
when a task adds no new source); optionally a CodeBERTScore model (a local path or a hub name).
Writes: nothing; `find_duplicates` returns a `DedupReport` with one `DedupInfo` per item and
every scored pair.
Refuses: duplicate task ids, thresholds outside (0, 1] and dates that are not ISO 8601
(`ValueError`: those are caller bugs, not data).

How: code is cut into tokens with comments, docstrings and layout dropped, then into shingles of
`SHINGLE_K` consecutive tokens. MinHash + LSH proposes candidate pairs so the work stays near
linear in the number of tasks; each candidate is then scored by the exact Jaccard similarity of
its shingle sets (the token score), or by CodeBERTScore F1 when a model is named and loads. Pairs
at or above the threshold are duplicates; union-find turns them into clusters named after their
earliest member, which is the task a later copy duplicates.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from datasketch import MinHash, MinHashLSH

from curation.model import DedupInfo

log = logging.getLogger(__name__)

SHINGLE_K = 5
METHOD_MINHASH = "minhash"
METHOD_CODEBERT = "codebertscore"

# LSH only proposes candidates; its S-curve loses a good share of pairs sitting right at the
# threshold, so it looks a little lower and the exact score makes the decision.
_LSH_SLACK = 0.15

_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>[rRbBuUfF]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"
        |'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
  | (?P<number>0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?)
  | (?P<name>[^\W\d]\w*)
  | (?P<newline>\n)
  | (?P<space>[ \t\r\f]+|\\\n)
  | (?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%&|^@<>=!]=|\S)
    """,
    re.VERBOSE,
)
_STRING_BODY = re.compile(r"[rRbBuUfF]{0,2}('''|\"\"\"|'|\")([\s\S]*)\1\Z")
_LINE_END = re.compile(r"[ \t]*(?:\#[^\n]*)?(?:\n|\Z)")
_OPENERS = frozenset("([{")
_CLOSERS = frozenset(")]}")


@dataclass(frozen=True)
class DedupItem:
    """One task as dedup sees it: `code` is its gold kernel sources, concatenated."""

    task_id: str
    date: str  # ISO 8601, the PR's merge time
    code: str


@dataclass(frozen=True)
class DedupReport:
    """Per-task dedup facts plus every scored pair `(a, b, score, method)`, best first."""

    infos: dict[str, DedupInfo]
    pairs: list[tuple[str, str, float, str]]
    note: str | None = None
    threshold: float = 0.8

    def duplicate_pairs(self) -> list[tuple[str, str, float, str]]:
        """The scored pairs at or above the threshold."""
        return [p for p in self.pairs if p[2] >= self.threshold]


def tokenize(code: str) -> list[str]:
    """Python-ish tokens of `code` without comments, docstrings and layout.

    String literals keep their content but not their quote style, and a trailing comma before a
    closing bracket is dropped: both are what a formatter changes when a kernel is copied.
    """
    tokens: list[str] = []
    depth = 0
    line_start = True
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup
        text = m.group()
        if kind in ("comment", "space"):
            continue
        if kind == "newline":
            # Inside brackets a newline does not end the logical line.
            line_start = line_start or depth == 0
            continue
        starts_line, line_start = line_start, False
        if kind == "string":
            # A string alone on its logical line is a docstring or a disabled block: a comment.
            if starts_line and depth == 0 and _LINE_END.match(code, m.end()):
                continue
            body = _STRING_BODY.match(text)
            tokens.append(repr(body.group(2)) if body else text)
        elif kind == "number":
            tokens.append(text.lower().replace("_", ""))
        else:
            if text in _OPENERS:
                depth += 1
            elif text in _CLOSERS:
                depth = max(0, depth - 1)
                if tokens and tokens[-1] == ",":
                    tokens.pop()
            tokens.append(text)
    return tokens


def shingles(tokens: Sequence[str], k: int = SHINGLE_K) -> set[bytes]:
    """The set of k consecutive tokens; code shorter than k is one shingle (none when empty)."""
    if not tokens:
        return set()
    if len(tokens) <= k:
        return {"\x1f".join(tokens).encode()}
    return {"\x1f".join(tokens[i : i + k]).encode() for i in range(len(tokens) - k + 1)}


def jaccard(a: set[bytes], b: set[bytes]) -> float:
    """Exact Jaccard similarity of two shingle sets (0.0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def find_duplicates(
    items: Sequence[DedupItem],
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    codebert_model: str | None = None,
) -> DedupReport:
    """Cluster near-duplicate tasks; see the module docstring for the method."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    ids = [it.task_id for it in items]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"duplicate task ids: {', '.join(dupes)}")
    order = {it.task_id: (_parse_date(it), it.task_id) for it in items}

    sets = {it.task_id: shingles(tokenize(it.code)) for it in items}
    candidates = _candidates(sets, threshold, num_perm)
    scores = {pair: jaccard(sets[pair[0]], sets[pair[1]]) for pair in candidates}
    method = METHOD_MINHASH
    note = None
    if codebert_model:
        codes = {it.task_id: it.code for it in items}
        neural, reason = _codebert_scores(list(scores), codes, codebert_model)
        if neural is not None:
            scores, method = neural, METHOD_CODEBERT
        else:
            note = f"CodeBERTScore unavailable: {reason}; token scores used"
            log.warning("%s", note)

    pairs = sorted(
        ((a, b, s, method) for (a, b), s in scores.items()),
        key=lambda p: (-p[2], order[p[0]], order[p[1]]),
    )
    clusters = _clusters(ids, [(a, b) for a, b, s, _ in pairs if s >= threshold], order)
    nearest: dict[str, tuple[str, float]] = {}
    # Pairs come best first, so the first one an item appears in names its nearest neighbour.
    for a, b, s, _ in pairs:
        nearest.setdefault(a, (b, s))
        nearest.setdefault(b, (a, s))
    infos = {
        tid: DedupInfo(
            cluster=clusters[tid],
            nearest=nearest[tid][0] if tid in nearest else None,
            similarity=nearest[tid][1] if tid in nearest else 0.0,
            method=method,
        )
        for tid in ids
    }
    n_dup = sum(1 for p in pairs if p[2] >= threshold)
    log.info("dedup: %d items, %d scored pairs, %d duplicates", len(ids), len(pairs), n_dup)
    return DedupReport(infos=infos, pairs=pairs, note=note, threshold=threshold)


def _parse_date(item: DedupItem) -> datetime:
    try:
        when = datetime.fromisoformat(item.date)
    except ValueError as exc:
        raise ValueError(f"task {item.task_id}: date {item.date!r} is not ISO 8601") from exc
    # Naive and aware datetimes do not compare; GitHub dates are UTC, so naive ones are too.
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _candidates(
    sets: dict[str, set[bytes]], threshold: float, num_perm: int
) -> set[tuple[str, str]]:
    """Candidate pairs `(a, b)` with a < b in input order, proposed by MinHash LSH."""
    lsh = MinHashLSH(threshold=max(0.05, threshold - _LSH_SLACK), num_perm=num_perm)
    sketches: dict[str, MinHash] = {}
    for tid, sh in sets.items():
        # Empty code would collide with every other empty item and says nothing about copying.
        if not sh:
            continue
        mh = MinHash(num_perm=num_perm)
        mh.update_batch(sorted(sh))
        sketches[tid] = mh
        lsh.insert(tid, mh)
    position = {tid: i for i, tid in enumerate(sets)}
    found: set[tuple[str, str]] = set()
    for tid, mh in sketches.items():
        for other in lsh.query(mh):
            if other != tid:
                a, b = sorted((tid, other), key=position.__getitem__)
                found.add((a, b))
    return found


def _codebert_scores(
    pairs: list[tuple[str, str]], codes: dict[str, str], model: str
) -> tuple[dict[tuple[str, str], float] | None, str | None]:
    """CodeBERTScore F1 per pair, or (None, reason) when the package or model cannot be used."""
    try:
        import code_bert_score
    except Exception as exc:  # ImportError, or torch failing inside the package's own imports
        return None, f"cannot import code_bert_score ({type(exc).__name__}: {exc})"
    if not pairs:
        return {}, None
    try:
        result = code_bert_score.score(
            cands=[codes[b] for _, b in pairs],
            refs=[codes[a] for a, _ in pairs],
            lang="python",
            model_type=model,
        )
        f1 = [float(x) for x in result[2]]
    except Exception as exc:  # no weights, no network, out of memory: all mean "use tokens"
        return None, f"model {model!r} failed ({type(exc).__name__}: {exc})"
    if len(f1) != len(pairs):
        return None, f"model {model!r} returned {len(f1)} scores for {len(pairs)} pairs"
    return dict(zip(pairs, f1, strict=True)), None


def _clusters(
    ids: list[str], edges: list[tuple[str, str]], order: dict[str, tuple[datetime, str]]
) -> dict[str, str]:
    """Union-find over duplicate edges; each item maps to its cluster's earliest member."""
    parent = {tid: tid for tid in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            # Keep the earliest member as the root, so the root is the cluster id.
            if order[rb] < order[ra]:
                ra, rb = rb, ra
            parent[rb] = ra
    return {tid: find(tid) for tid in ids}


@dataclass(frozen=True)
class TaskKernels:
    """A task as kernel-level dedup sees it: each target kernel's gold source on its own."""

    task_id: str
    date: str
    kernels: tuple[str, ...]


# Kernels shorter than this many lines (one-line helpers, tiny casts) match by accident.
MIN_KERNEL_LINES = 8


def find_task_duplicates(
    tasks: Sequence[TaskKernels],
    *,
    threshold: float = 0.8,
    num_perm: int = 128,
    codebert_model: str | None = None,
) -> DedupReport:
    """Near-duplicate tasks, compared kernel by kernel.

    A PR that copies three kernels from another framework next to nine of its own shares few
    shingles with any single task of that framework when the kernels are concatenated; kernel
    by kernel the copies stand out. Two tasks are duplicates when any of their kernels are; a
    task pair's similarity is that of its most similar kernel pair.
    """
    items = []
    owner: dict[str, str] = {}
    for t in tasks:
        for i, code in enumerate(t.kernels):
            if code.count("\n") + 1 < MIN_KERNEL_LINES:
                continue
            key = f"{t.task_id}\x00{i}"
            owner[key] = t.task_id
            items.append(DedupItem(task_id=key, date=t.date, code=code))
    report = find_duplicates(
        items, threshold=threshold, num_perm=num_perm, codebert_model=codebert_model
    )
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for a, b, score, method in report.pairs:
        ta, tb = owner[a], owner[b]
        if ta == tb:
            continue
        pair = (ta, tb) if ta < tb else (tb, ta)
        if pair not in best or score > best[pair][0]:
            best[pair] = (score, method)
    order = {t.task_id: (_parse_date(DedupItem(t.task_id, t.date, "")), t.task_id) for t in tasks}
    ids = [t.task_id for t in tasks]
    pairs = sorted(
        ((a, b, s, m) for (a, b), (s, m) in best.items()),
        key=lambda p: (-p[2], order[p[0]], order[p[1]]),
    )
    clusters = _clusters(ids, [(a, b) for a, b, s, _ in pairs if s >= threshold], order)
    nearest: dict[str, tuple[str, float, str]] = {}
    for a, b, s, m in pairs:
        nearest.setdefault(a, (b, s, m))
        nearest.setdefault(b, (a, s, m))
    method = METHOD_CODEBERT if pairs and pairs[0][3] == METHOD_CODEBERT else METHOD_MINHASH
    infos = {
        tid: DedupInfo(
            cluster=clusters[tid],
            nearest=nearest[tid][0] if tid in nearest else None,
            similarity=nearest[tid][1] if tid in nearest else 0.0,
            method=nearest[tid][2] if tid in nearest else method,
        )
        for tid in ids
    }
    return DedupReport(infos=infos, pairs=pairs, note=report.note, threshold=threshold)
