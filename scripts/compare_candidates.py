"""Compare two crawls' candidates.jsonl: which records and kernel changes differ, and how.

    python scripts/compare_candidates.py OLD/candidates.jsonl NEW/candidates.jsonl [--fields]

Records are matched by commit. For each commit the kernel changes are compared as
(old file, file, name, change) sets; with --fields, the kernels of changes present in both are
also compared field by field (fields one side lacks, such as a field added since, are listed
separately and not counted as differences). Prints a summary and one line per difference;
exits 0 (it reports, it does not judge).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.errors import RecordError
from core.files import read_jsonl


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """commit -> record; a line that is not JSON, or a second record of a commit, is refused."""
    try:
        return {rec["commit"]: rec for _, rec in read_jsonl(path, id_key="commit")}
    except RecordError as exc:
        raise SystemExit(f"error: {exc}") from None


def _changes(rec: dict[str, Any]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    return {
        (kc["old_file"] or "", kc["file"], kc["name"], kc["change"]): kc
        for kc in rec["kernel_changes"]
    }


def _field_diffs(a: dict[str, Any] | None, b: dict[str, Any] | None) -> tuple[set[str], set[str]]:
    """(fields whose values differ, fields only one side has) of two kernels."""
    if a is None or b is None:
        return ({"<side>"} if (a is None) != (b is None) else set()), set()
    differ = {k for k in a.keys() & b.keys() if a[k] != b[k]}
    return differ, set(a.keys() ^ b.keys())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--fields", action="store_true", help="also compare kernels field by field")
    args = p.parse_args(argv)
    old, new = _records(args.old), _records(args.new)
    tally: Counter[str] = Counter()
    lines = []
    for sha in sorted(old.keys() - new.keys(), key=lambda s: old[s]["committed_at"]):
        tally["records only in old"] += 1
        lines.append(f"- {sha[:10]} {old[sha]['id']}: {sorted(_changes(old[sha]))}")
    for sha in sorted(new.keys() - old.keys(), key=lambda s: new[s]["committed_at"]):
        tally["records only in new"] += 1
        lines.append(f"+ {sha[:10]} {new[sha]['id']}: {sorted(_changes(new[sha]))}")
    added_fields: set[str] = set()
    for sha in sorted(old.keys() & new.keys(), key=lambda s: old[s]["committed_at"]):
        a, b = _changes(old[sha]), _changes(new[sha])
        if a.keys() != b.keys():
            tally["records with other kernel changes"] += 1
            gone, came = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
            lines.append(f"~ {sha[:10]} {old[sha]['id']}: -{gone} +{came}")
        if args.fields:
            changed: Counter[str] = Counter()
            for key in a.keys() & b.keys():
                for side in ("before", "after"):
                    differ, extra = _field_diffs(a[key][side], b[key][side])
                    added_fields |= extra
                    changed.update(differ)
            if changed:
                tally["records with other kernel fields"] += 1
                lines.append(f"f {sha[:10]} {old[sha]['id']}: {dict(sorted(changed.items()))}")
        top_extra = set(old[sha].keys() ^ new[sha].keys())
        added_fields |= {f"record.{k}" for k in top_extra}
    print(f"old: {len(old)} records, new: {len(new)} records")
    for key, n in sorted(tally.items()):
        print(f"{key}: {n}")
    if added_fields:
        print(f"fields on one side only (not compared): {sorted(added_fields)}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
