"""Compile checked task directories into a HuggingFace dataset folder, split by date, with
released splits frozen.

Reads: `tasks/<id>/` (only those `curation.check` passes), the folder's previous
`manifest.json`. Writes: `data/{split}-{i:05d}-of-{n:05d}.parquet` (one shard per framework
within a split), `manifest.json`, `README.md` (the card) and `assets/*.png`.
Refuses (`BenchmarkError`, one line, nothing written): a tasks folder that is missing or holds
no task directory, a manifest.json that does not read as a manifest, a version released before,
a changed frozen file, a task directory whose row cannot be built, and a version that would add
no task (unless `allow_empty`: a version number is released once, so an empty one is final).

Rules: the first release puts tasks merged before `--cutoff` in `dev` and the rest in `test`.
Every released split is frozen: a rebuild never rewrites or drops its rows (its files are
checked against the manifest's hashes and left as they are); tasks that are in no released
split go to a new split named after the new version. A task withdrawn later (its directory
gone, or rejected by a curator) stays in its frozen split and is listed in the changelog.
Verdicts move on after a release (a later GPU run verifies a task, or finds it flaky, or
verifies it again after curation revised it). When a frozen split's verified tasks are no
longer those its default config shows, or one of them was verified again as a revised task
(setup patch, targets or requirement changed), the new version writes that split a new
default-config file, `data/default/{split}-v{version}.parquet`. It holds the split's verified
tasks: a task with a new verdict as its directory has it now (the verdict was measured on that
setup patch, those targets and those node ids, so they travel together), the others as shown
before. A released task that was not verified and is not now, with a new verdict (another
reason), is listed with it in the manifest (`verdicts`): the card counts it, no config file
holds it. A task directory without any verdict (curated again on a machine that has not run
it) is no news and keeps the shown one. The `all` config keeps the rows as released, and the
manifest lists which tasks moved or were revised.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmark.errors import BenchmarkError
from benchmark.schema import SIDE_TABLES, SideTable, row_status, split_setup
from core.errors import CoreError, RecordError
from core.files import output_lock, read_json, write_json
from core.records import from_json
from curation.check import check_task
from curation.model import CurationStatus
from curation.taskdir import TaskDir, patch_digest, task_dirs

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"


@dataclass
class BuildResult:
    version: str
    splits: dict[str, list[str]]  # split -> task ids, every split of the folder
    new_splits: list[str]
    added: list[str]
    withdrawn: list[str]
    skipped: dict[str, str] = field(default_factory=dict)  # task id -> why not included
    dry_run: bool = False
    # released task id -> its status now, where it moved in or out of the verified set or was
    # verified again on a revised task
    rejudged: dict[str, str] = field(default_factory=dict)
    # released tasks, unverified before and now, whose verdict (reason) changed
    noted: list[str] = field(default_factory=list)


def split_name(version: str) -> str:
    """`1.1.0` -> `test_v1_1_0` (split names are word characters)."""
    return "test_v" + "".join(c if c.isalnum() else "_" for c in version)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class _Shard:
    sha256: str
    framework: str
    rows: int
    verified: bool = False  # its tasks passed the GPU gate (the default config's shards)


@dataclass(frozen=True)
class _Split:
    tasks: tuple[str, ...]
    files: dict[str, _Shard]


@dataclass(frozen=True)
class _Default:
    """A frozen split's default-config file after verdicts moved (see the module docstring)."""

    file: str
    sha256: str
    tasks: tuple[str, ...]
    verified_since: tuple[str, ...] = ()
    unverified_since: tuple[str, ...] = ()
    # task id -> the verification that took it out (its row is in no default file)
    left_with: dict[str, Any] = field(default_factory=dict)
    revised: tuple[str, ...] = ()


@dataclass(frozen=True)
class _SideFile:
    """A release's file of a side table (`benchmark.schema.SIDE_TABLES`: the workload or the
    environment of every task of the folder that has one, as its directory held it at the
    build; the config shows the newest file)."""

    file: str
    sha256: str
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class _Release:
    version: str
    built_at: str
    cutoff: str
    splits: dict[str, _Split]
    added: tuple[str, ...] = ()
    withdrawn: tuple[str, ...] = ()
    defaults: dict[str, _Default] = field(default_factory=dict)
    workloads: _SideFile | None = None
    environments: _SideFile | None = None
    # task id -> a new verdict of a released task that was not verified and is not now (its
    # reason changed): the card counts it, no config file holds it
    verdicts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Manifest:
    """The layout manifest.json must have (checked on reading; the build keeps the data)."""

    releases: tuple[_Release, ...] = ()
    version: str | None = None


def load_manifest(out: Path) -> dict[str, Any]:
    """The folder's manifest ({"releases": []} when there is none); one that cannot be read or
    does not have the manifest's layout is a one-line `RecordError` naming the file."""
    path = out / MANIFEST
    if not path.exists():
        return {"releases": []}
    data = read_json(path)
    from_json(_Manifest, data, where=str(path))
    if not isinstance(data, dict) or "releases" not in data:
        raise RecordError(f"{path}: releases: missing")
    return data


def frozen_splits(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """split -> its release entry ({tasks, files}), over every earlier release."""
    out: dict[str, dict[str, Any]] = {}
    for rel in manifest["releases"]:
        for name, split in rel["splits"].items():
            out[name] = split
    return out


def verify_frozen(out: Path, frozen: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
    files = [(name, fname, meta["sha256"]) for name, split in frozen.items()
             for fname, meta in split["files"].items()]  # fmt: skip
    files += [(name, d["file"], d["sha256"]) for rel in manifest["releases"]
              for name, d in (rel.get("defaults") or {}).items()]  # fmt: skip
    for name, fname, sha in files:
        path = out / "data" / fname
        if not path.exists() or _sha256(path) != sha:
            raise BenchmarkError(
                f"frozen split {name!r}: {path} is missing or changed since its release; "
                "restore it (released rows are never rewritten)"
            )


def _task_dirs(tasks_root: Path) -> list[TaskDir]:
    if not tasks_root.is_dir():
        raise BenchmarkError(f"tasks folder {tasks_root} does not exist (--tasks)")
    tdirs = task_dirs(tasks_root)
    if not tdirs:
        raise BenchmarkError(f"no task directories under {tasks_root} (--tasks)")
    return tdirs


def collect(
    tasks_root: Path, only_approved: bool
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """task id -> row for every usable task; and task id -> why the others were left out."""
    from benchmark.schema import row

    rows: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for tdir in _task_dirs(tasks_root):
        res = check_task(tdir)
        if res.errors:
            skipped[tdir.id] = "check: " + "; ".join(res.errors)
            continue
        status = tdir.load_curation().status
        if status is CurationStatus.REJECTED:
            skipped[tdir.id] = "rejected by a curator"
            continue
        if only_approved and status is not CurationStatus.APPROVED:
            skipped[tdir.id] = "not approved yet"
            continue
        try:
            rows[tdir.id] = row(tdir)
        except (CoreError, OSError, ValueError) as exc:
            # curation.check passed it, so this is a file the check does not read
            raise BenchmarkError(f"task {tdir.id}: its row cannot be built: {exc}") from None
    return rows, skipped


def build(
    tasks_root: Path,
    out: Path,
    version: str,
    cutoff: datetime,
    *,
    only_approved: bool = False,
    dry_run: bool = False,
    reference_note: str = "",
    allow_empty: bool = False,
) -> BuildResult:
    """Build version `version` of the dataset folder `out` from the task directories (the
    library entry of the dataset stage); a dry run computes the result and writes nothing.
    A version that adds no task is refused unless `allow_empty`."""
    _task_dirs(tasks_root)  # refused before the dataset folder is touched
    opts = (only_approved, dry_run, reference_note, allow_empty)
    if dry_run:
        return _build(tasks_root, out, version, cutoff, *opts)
    with output_lock(out):
        return _build(tasks_root, out, version, cutoff, *opts)


def _build(
    tasks_root: Path,
    out: Path,
    version: str,
    cutoff: datetime,
    only_approved: bool,
    dry_run: bool,
    reference_note: str,
    allow_empty: bool,
) -> BuildResult:
    manifest = load_manifest(out)
    if any(r["version"] == version for r in manifest["releases"]):
        raise BenchmarkError(f"version {version} was already released in {out}; pick a new one")
    frozen = frozen_splits(manifest)
    verify_frozen(out, frozen, manifest)
    rows, skipped = collect(tasks_root, only_approved)
    released = {tid for split in frozen.values() for tid in split["tasks"]}
    fresh = sorted(tid for tid in rows if tid not in released)
    released_rows = _frozen_rows(out, frozen)
    shown = _shown_rows(out, manifest, released_rows)
    _lapsed_rows(shown, rows)
    moved = _rejudged(frozen, shown, rows)
    noted = {t: rows[t]["verification"] for t in sorted(released)
             if t in rows and t in shown and _new_verdict(shown[t], rows[t])
             and not verified(rows[t]) and not verified(shown[t])}  # fmt: skip
    if not fresh and not moved and not noted and not allow_empty:
        raise BenchmarkError(_nothing_new(version, tasks_root, rows, skipped))
    new_splits: dict[str, list[str]] = defaultdict(list)
    if not manifest["releases"]:
        for tid in fresh:
            when = datetime.fromisoformat(rows[tid]["merged_at"])
            when = when if when.tzinfo else when.replace(tzinfo=UTC)
            new_splits["test" if when >= cutoff else "dev"].append(tid)
    elif fresh:
        new_splits[split_name(version)] = fresh
    withdrawn = sorted(released - set(rows))
    all_splits = {name: list(s["tasks"]) for name, s in frozen.items()}
    all_splits.update({k: sorted(v) for k, v in new_splits.items() if v})
    rejudged = {
        tid: "verified again on its revised task"
        if _revised(shown[tid], rows[tid])
        else row_status(rows[tid])
        for split in moved.values()
        for tid in split
    }
    result = BuildResult(version, all_splits, sorted(k for k, v in new_splits.items() if v),
                         fresh, withdrawn, skipped, dry_run, rejudged, sorted(noted))  # fmt: skip
    if dry_run:
        return result
    (out / "data").mkdir(parents=True, exist_ok=True)
    release_splits: dict[str, Any] = {}
    for name in result.new_splits:
        files = _write_split(out, name, [rows[t] for t in all_splits[name]])
        release_splits[name] = {"tasks": all_splits[name], "files": files}
    defaults = {
        name: _write_default(out, name, version, frozen[name]["tasks"], shown, rows, changed)
        for name, changed in moved.items()
    }
    in_splits = sorted(set(rows) & _all_ids(all_splits))
    sides = {t.name: _write_side(out, version, tasks_root, in_splits, manifest, t)
             for t in SIDE_TABLES}  # fmt: skip
    manifest["releases"].append(
        {
            "version": version,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "cutoff": cutoff.isoformat(),
            "splits": release_splits,
            "added": fresh,
            "withdrawn": withdrawn,
            **({"defaults": defaults} if defaults else {}),
            **{name: entry for name, entry in sides.items() if entry},
            **({"verdicts": noted} if noted else {}),
        }
    )
    manifest["version"] = version
    from benchmark.card import render_card

    # the card counts each released task with the verdict its default config now shows
    shown_now = _shown_rows(out, manifest, released_rows) if defaults or noted else shown
    all_rows = shown_now | {t: rows[t] for t in fresh}
    render_card(out, manifest, all_splits, all_rows, reference_note=reference_note)
    # The manifest last: until it names the version, a failed build can simply be rerun.
    write_json(out / MANIFEST, manifest)
    return result


def current_rows(out: Path) -> dict[str, dict[str, Any]]:
    """Every released task's row as the folder shows it now: as released, with the verdicts of
    the default-config files written since (what `scripts/restore_verdicts.py` carries back)."""
    manifest = load_manifest(out)
    return _shown_rows(out, manifest, _frozen_rows(out, frozen_splits(manifest)))


def verified(row: dict[str, Any]) -> bool:
    return row_status(row) == "verified"


# What a verdict is about beside the task: a row that differs from the shown one only in
# these was judged again, not revised.
VERDICT_FIELDS = ("verification", "reference", "tests")


def _new_verdict(shown: dict[str, Any], row: dict[str, Any]) -> bool:
    """The task directory holds a verdict the folder does not show: another verdict, or the
    same one reached on another setup patch than the shown row's (release 1.3.0 showed some
    verdicts beside the setup patch of an earlier release). A directory that was never judged
    (curated again on a machine that has not run it: unverified, never checked) is no news: it
    keeps the shown one."""
    v = row["verification"]
    if _unjudged(v):
        return _lapsed(shown, row)
    verdict, setup = _split_setup(v)
    if verdict != _split_setup(shown["verification"] or {})[0]:
        return True
    return setup is not None and setup != patch_digest((shown.get("setup_patch") or "").encode())


LAPSED = (
    "its setup state changed since its verdict (a curation fix: the setup patch differs "
    "from the released row's), and it has not run on the new one yet"
)


def _lapsed(shown: dict[str, Any], row: dict[str, Any]) -> bool:
    """A verified row whose task directory has no verdict on a setup patch other than the
    row's: the verdict was the old setup state's (2026-12-05: base targets that lost the module
    names the PR deleted failed for that alone), so it no longer stands."""
    return verified(shown) and (row.get("setup_patch") or "") != (shown.get("setup_patch") or "")


def _lapsed_rows(shown: dict[str, dict[str, Any]], rows: dict[str, dict[str, Any]]) -> None:
    """Gives each lapsed row (`_lapsed`, no verdict in its directory) the reason it is
    unverified now, in place."""
    for tid, r in rows.items():
        v = r["verification"] or {}
        if tid in shown and _unjudged(v) and _lapsed(shown[tid], r):
            r["verification"] = {"checked_at": None, "environment": None, **v,
                                 "status": "unverified", "reason": LAPSED}  # fmt: skip


def _unjudged(v: dict[str, Any] | None) -> bool:
    """A task directory never judged (no verdict, or unverified and never checked)."""
    return not v or (v.get("status") == "unverified" and v.get("checked_at") is None)


def _split_setup(v: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A row's verification without the setup patch's hash, and that hash."""
    env, setup = split_setup(v.get("environment"))
    return {**v, "environment": env}, setup


def _moved(shown: dict[str, Any], row: dict[str, Any]) -> bool:
    """A new verdict moved the task into or out of the verified set, or verified it revised."""
    if not _new_verdict(shown, row):
        return False
    return verified(row) != verified(shown) or _revised(shown, row)


def _revised(shown: dict[str, Any], row: dict[str, Any]) -> bool:
    """Of a task with a new verdict (`_moved`'s tasks): verified before and now, judged again
    on a task curation changed since."""
    task = [k for k in row if k not in VERDICT_FIELDS]
    return verified(shown) and verified(row) and any(row[k] != shown.get(k) for k in task)


def _shown_rows(
    out: Path, manifest: dict[str, Any], released: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each released task's row as the folder shows it now: as `released`, then, release by
    release, the verdicts of the default-config files written after it (a task that left the
    verified set is not in its split's file: the manifest names it, with the verification that
    took it out since 1.4.0) and the new verdicts of tasks that stayed unverified (the
    manifest's `verdicts`, since 1.4.1)."""
    import pyarrow.parquet as pq

    rows = dict(released)
    for rel in manifest["releases"]:
        for d in (rel.get("defaults") or {}).values():
            for r in pq.read_table(out / "data" / d["file"]).to_pylist():
                rows[r["task_id"]] = r
            left_with = d.get("left_with") or {}
            for tid in d.get("unverified_since") or ():
                if tid in rows and verified(rows[tid]):
                    gone = left_with.get(tid) or {
                        **rows[tid]["verification"],
                        "status": "unverified",
                    }
                    rows[tid] = {**rows[tid], "verification": gone}
        for tid, v in (rel.get("verdicts") or {}).items():
            if tid in rows:
                rows[tid] = {**rows[tid], "verification": v}
    return rows


def _rejudged(
    frozen: dict[str, dict[str, Any]],
    shown: dict[str, dict[str, Any]],
    rows: dict[str, dict[str, Any]],
) -> dict[str, list[str]]:
    """split -> its released tasks whose current verdict moved them into or out of the
    verified set the folder shows, or verified a revised task (tasks without a directory now
    keep what it shows)."""
    moved: dict[str, list[str]] = {}
    for name, split in frozen.items():
        ids = [t for t in split["tasks"] if t in rows and t in shown and _moved(shown[t], rows[t])]
        if ids:
            moved[name] = sorted(ids)
    return moved


def _write_default(
    out: Path,
    name: str,
    version: str,
    tasks: Sequence[str],
    shown: dict[str, dict[str, Any]],
    rows: dict[str, dict[str, Any]],
    changed: Sequence[str],
) -> dict[str, Any]:
    """The split's new default-config file: its verified tasks, a task with a new verdict as
    its directory has it now (the verdict belongs to that setup patch, those targets and node
    ids), the others as shown before."""
    from datasets import Dataset

    from benchmark.schema import features

    now = {t: rows[t] if t in rows and _new_verdict(shown[t], rows[t]) else shown[t]
           for t in tasks if t in shown}  # fmt: skip
    revised = [t for t in changed if t in rows and _revised(shown[t], rows[t])]
    keep = sorted((r for r in now.values() if verified(r)),
                  key=lambda r: (r["framework"], r["merged_at"], r["task_id"]))  # fmt: skip
    # a folder of its own: the `all` config's `data/{split}-*.parquet` must not match it
    fname = f"default/{name}-v{version.replace('.', '_')}.parquet"
    path = out / "data" / fname
    path.parent.mkdir(parents=True, exist_ok=True)
    feats = features()
    # from_list cannot type an empty list: a split whose verified tasks all left gets an empty
    # file with the row layout
    table = Dataset.from_list(keep, features=feats) if keep else Dataset.from_dict(
        {k: [] for k in feats}, features=feats)  # fmt: skip
    table.to_parquet(str(path))
    return {
        "file": fname,
        "sha256": _sha256(path),
        "tasks": [r["task_id"] for r in keep],
        "verified_since": [t for t in changed if verified(now[t]) and t not in revised],
        "unverified_since": [t for t in changed if not verified(now[t])],
        "left_with": {t: now[t]["verification"] for t in changed if not verified(now[t])},
        "revised": revised,
    }


def _all_ids(splits: dict[str, list[str]]) -> set[str]:
    return {t for ids in splits.values() for t in ids}


def _write_side(
    out: Path,
    version: str,
    tasks_root: Path,
    ids: Sequence[str],
    manifest: dict[str, Any],
    table: SideTable,
) -> dict[str, Any] | None:
    """The side table's file of this version; None when no task has a row, or when the rows
    are those of the newest file already there (the config keeps showing it)."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    found = [w for w in (table.row(TaskDir(tasks_root / t)) for t in ids) if w is not None]
    if not found:
        return None
    from benchmark.card import latest_side

    before = latest_side(manifest, table.name)
    if before and pq.read_table(out / "data" / before["file"]).to_pylist() == found:
        return None
    fname = f"{table.name}/{table.name}-v{version.replace('.', '_')}.parquet"
    path = out / "data" / fname
    path.parent.mkdir(parents=True, exist_ok=True)
    Dataset.from_list(found, features=table.features()).to_parquet(str(path))
    return {"file": fname, "sha256": _sha256(path), "tasks": [w["task_id"] for w in found]}


def _nothing_new(
    version: str, tasks_root: Path, rows: dict[str, Any], skipped: dict[str, str]
) -> str:
    why = f"version {version} would add no task"
    if skipped:
        tid, reason = sorted(skipped.items())[0]
        why += (
            f": {len(skipped)} of the task directories under {tasks_root} are left out "
            f"(first {tid}: {reason[:200]})"
        )
    elif rows:
        why += f": the {len(rows)} usable tasks under {tasks_root} are all released already"
    return why + "; nothing was written (--allow-empty records it anyway)"


def _write_split(out: Path, name: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One parquet shard per framework and verification status, `{split}-{i:05d}-of-{n:05d}
    .parquet`; the manifest says which shards hold verified tasks (the default config)."""
    from datasets import Dataset

    from benchmark.schema import features

    groups: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["framework"], r["merged_at"], r["task_id"])):
        groups[(r["framework"], verified(r))].append(r)
    files: dict[str, Any] = {}
    n = len(groups)
    for i, key in enumerate(sorted(groups, key=lambda k: (k[0], not k[1]))):
        fname = f"{name}-{i:05d}-of-{n:05d}.parquet"
        path = out / "data" / fname
        Dataset.from_list(groups[key], features=features()).to_parquet(str(path))
        files[fname] = {
            "sha256": _sha256(path),
            "framework": key[0],
            "verified": key[1],
            "rows": len(groups[key]),
        }
    return files


def _frozen_rows(out: Path, frozen: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows of the released splits, read back from their own files (for the card's tables)."""
    import pyarrow.parquet as pq

    rows: dict[str, dict[str, Any]] = {}
    for split in frozen.values():
        for fname in split["files"]:
            for r in pq.read_table(out / "data" / fname).to_pylist():
                rows[r["task_id"]] = r
    return rows
