"""Render the dataset card (README.md) and its plots from the template and the built splits.

Reads: `dataset_card.md` (the template, shipped with the package), the manifest and the rows.
Writes: `README.md` with YAML `configs:` (one default config with every split, one config per
framework) and `assets/difficulty.png`, `assets/speedup.png`.
"""

from __future__ import annotations

import string
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from benchmark.errors import BenchmarkError
from benchmark.schema import SIDE_TABLES, card_fields, row_status
from core.files import write_atomic
from eval.gate import reason_kind


def _template() -> str:
    """The card template: the checkout's top-level file (the one people edit), else the copy
    the wheel ships inside the package (setup.py puts it there)."""
    local = Path(__file__).resolve().parents[1] / "dataset_card.md"
    if local.exists():
        return local.read_text()
    shipped = resources.files("benchmark").joinpath("dataset_card.md")
    if not shipped.is_file():
        raise BenchmarkError("dataset_card.md is neither in the checkout nor in the package")
    return shipped.read_text()


def latest_defaults(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """split -> the newest default-config file written for it after its release."""
    out: dict[str, dict[str, Any]] = {}
    for rel in manifest["releases"]:
        out.update(rel.get("defaults") or {})
    return out


def latest_side(manifest: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The newest file entry of the side table `name` (`benchmark.schema.SIDE_TABLES`; a
    release writes one only when its rows changed)."""
    found = [r[name] for r in manifest["releases"] if r.get(name)]
    return found[-1] if found else None


def front_matter(manifest: dict[str, Any], splits: dict[str, list[str]]) -> str:
    files: dict[str, dict[str, Any]] = {}
    for rel in manifest["releases"]:
        for name, split in rel["splits"].items():
            files[name] = split["files"]
    lines = [
        "---",
        "pretty_name: triton-pr-bench",
        "license: other",
        "task_categories:",
        "- text-generation",
        "tags:",
        "- code",
        "- triton",
        "- gpu-kernels",
        "configs:",
    ]
    # The default config holds the verified tasks (shards the manifest marks so); `all` holds
    # every task. Before any task is verified there is no default config: `load_dataset` then
    # asks for a config name (`all`) instead of handing out unverified tasks as the benchmark.
    verified = {
        name: sorted(f for f, meta in fs.items() if meta.get("verified"))
        for name, fs in files.items()
    }
    # a frozen split whose verdicts moved after its release shows its newest default file
    for name, d in latest_defaults(manifest).items():
        verified[name] = [d["file"]] if d["tasks"] else []
    if any(verified.values()):
        lines += ["- config_name: default", "  default: true", "  data_files:"]
        for name in sorted(n for n, fs in verified.items() if fs):
            lines.append(f"  - split: {name}")
            lines += ["    path:", *(f"    - data/{f}" for f in verified[name])]
    lines += ["- config_name: all", "  data_files:"]
    for name in sorted(splits):
        lines += [f"  - split: {name}", f"    path: data/{name}-*.parquet"]
    by_fw: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in sorted(files):
        for fname, meta in sorted(files[name].items()):
            by_fw[meta["framework"]].append((name, fname))
    for table in SIDE_TABLES:
        entry = latest_side(manifest, table.name)
        if entry:
            lines += [f"- config_name: {table.name}", "  data_files:", "  - split: train",
                      f"    path: data/{entry['file']}"]  # fmt: skip
    for fw in sorted(by_fw):
        lines += [f"- config_name: {fw}", "  data_files:"]
        per_split: dict[str, list[str]] = defaultdict(list)
        for name, fname in by_fw[fw]:
            per_split[name].append(fname)
        for name, fnames in per_split.items():
            lines += [f"  - split: {name}", "    path:", *(f"    - data/{f}" for f in fnames)]
    lines.append("---")
    return "\n".join(lines)


def _crosstab(title: str, key: str, rows: list[dict[str, Any]]) -> str:
    """Tasks by `key` (a repository with no GitHub name by its framework) and status."""
    cols = ["verified", "unverified", "out_of_scope"]
    by: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by[str(r[key] or r["framework"])][row_status(r)] += 1
    head = f"| {title} | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols)
    body = "\n".join(
        f"| {k} | " + " | ".join(str(c[s]) for s in cols) + " |" for k, c in sorted(by.items())
    )
    return f"{head}\n{body}"


def _reasons(rows: list[dict[str, Any]]) -> str:
    """Why tasks are not verified, grouped by the reason's kind (`eval.gate.reason_kind`), with
    counts."""
    kinds: Counter[str] = Counter()
    for r in rows:
        if row_status(r) == "verified":
            continue
        reason = (r.get("verification") or {}).get("reason") or "no reference run yet"
        kinds[f"{row_status(r)}: {reason_kind(reason)[:80]}"] += 1
    return _table("not verified, by reason", kinds)


def _table(title: str, counts: Counter[str]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(counts.items()))
    return f"| {title} | tasks |\n|---|---|\n{rows}"


def render_card(
    out: Path,
    manifest: dict[str, Any],
    splits: dict[str, list[str]],
    rows: dict[str, dict[str, Any]],
    *,
    reference_note: str = "",
) -> None:
    listed = [rows[t] for ids in splits.values() for t in ids if t in rows]
    ref_rows = [r for r in listed if r["reference"] and r["reference"]["measured"]]
    status = Counter(
        "valid reference" if r["reference"]["valid"] else "reference run, not valid"
        for r in ref_rows
    )
    status["no reference run yet"] = len(listed) - len(ref_rows)
    stats = "\n\n".join(
        [
            _table("framework", Counter(r["framework"] for r in listed)),
            _table("task type", Counter(r["task_type"] for r in listed)),
            _table("difficulty", Counter(str(r["difficulty"]) for r in listed)),
            _crosstab("repository", "repo", listed),
            _crosstab("task type", "task_type", listed),
            _reasons(listed),
        ]
    )
    split_rows = "\n".join(
        f"| {name} | {len(ids)} | {_released_in(manifest, name)} |"
        for name, ids in sorted(splits.items())
    )
    latest = manifest["releases"][-1]
    gpus = sorted({r["reference"]["gpu"] for r in ref_rows})
    versions = sorted(
        {f"torch {r['reference']['torch']}, triton {r['reference']['triton']}" for r in ref_rows}
    )
    reference = (
        f"{len(ref_rows)} of {len(listed)} tasks have a reference run "
        f"({status['valid reference']} valid) on {', '.join(gpus) or 'no GPU yet'}"
        f"{' with ' + '; '.join(versions) if versions else ''}. Each reference runs the task's "
        "tests with the base and with the gold kernel, alternating, 3 times each; a run is "
        "judged by pytest's junit XML and exit code. Kernel time is the summed GPU time of the "
        "task's kernels inside the tests (torch.profiler events matched by kernel name) and an "
        "isolated replay of the largest launch seen (warm-up, median of repetitions, L2 flushed "
        "between repetitions, rotated inputs). The speedup plot shows base / gold isolated time "
        f"per task with both measured. {reference_note}"
    )
    frameworks = Counter(r["repo"] for r in listed)
    source = "\n".join(f"- `{repo}`: {n} tasks" for repo, n in sorted(frameworks.items()))
    changelog = "\n".join(
        f"- **{rel['version']}** ({rel['built_at'][:10]}): added {len(rel['added'])} tasks"
        + (f" in {', '.join(sorted(rel['splits']))}" if rel["splits"] else "")
        + (
            f"; withdrawn (kept in their frozen split): {', '.join(rel['withdrawn'])}"
            if rel["withdrawn"]
            else ""
        )
        + "".join(
            f"; {key.replace('_', ' ')} ({split}'s default config): {', '.join(d[key])}"
            for split, d in sorted((rel.get("defaults") or {}).items())
            for key in ("verified_since", "unverified_since", "revised")
            if d.get(key)
        )
        for rel in reversed(manifest["releases"])
    )
    text = string.Template(_template()).safe_substitute(
        front_matter=front_matter(manifest, splits),
        version=latest["version"],
        built_at=latest["built_at"][:10],
        summary_line=f"{len(listed)} tasks from {len(frameworks)} framework(s).",
        stats_tables=stats,
        fields_table=card_fields(),
        splits_table="| split | tasks | released in |\n|---|---|---|\n" + split_rows,
        source_data=source,
        reference_section=reference,
        changelog=changelog,
    )
    write_atomic(out / "README.md", text)
    _plots(out, listed)


def _released_in(manifest: dict[str, Any], split: str) -> str:
    return next((r["version"] for r in manifest["releases"] if split in r["splits"]), "-")


def _plots(out: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (out / "assets").mkdir(exist_ok=True)
    fws = sorted({r["framework"] for r in rows})
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bottom = [0] * 5
    for fw in fws:
        counts = [
            sum(1 for r in rows if r["framework"] == fw and r["difficulty"] == lv)
            for lv in range(1, 6)
        ]
        ax.bar(range(1, 6), counts, bottom=bottom, label=fw)
        bottom = [a + b for a, b in zip(bottom, counts, strict=True)]
    ax.set_xlabel("difficulty level")
    ax.set_ylabel("tasks")
    ax.set_title("Difficulty distribution")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "assets" / "difficulty.png", dpi=120)
    plt.close(fig)

    pairs = [
        (
            r["task_id"].split("__", 1)[-1],
            r["reference"]["base_isolated_ms"] / r["reference"]["gold_isolated_ms"],
        )
        for r in rows
        if r["reference"]
        and r["reference"]["base_isolated_ms"]
        and r["reference"]["gold_isolated_ms"]
    ]
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.35 * max(len(pairs), 1)))
    if pairs:
        names, ratios = zip(*sorted(pairs, key=lambda p: p[1]), strict=True)
        colors = ["tab:green" if x >= 1 else "tab:red" for x in ratios]
        ax.barh(range(len(ratios)), ratios, color=colors)
        ax.set_yticks(range(len(ratios)), [n[:40] for n in names], fontsize=7)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("base / gold isolated kernel time (>1: the PR made the kernel faster)")
    else:
        ax.text(0.5, 0.5, "no task has both base and gold kernel timings yet", ha="center")
        ax.set_axis_off()
    ax.set_title("Gold vs. base kernel speed per task")
    fig.tight_layout()
    fig.savefig(out / "assets" / "speedup.png", dpi=120)
    plt.close(fig)
