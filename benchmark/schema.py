"""The dataset's declared features and how one task directory becomes one row.

Reads: a task directory (task.json, gold.patch, test.patch, env.json and reference.json when
present). Writes nothing. Nested data are lists and structs, not JSON strings; a map keyed by
file (the context) becomes a list of structs with a `file` field, since Arrow has no
free-form struct keys.
"""

from __future__ import annotations

import json
from typing import Any

from curation.taskdir import TaskDir

SCHEMA_VERSION = 1


def features() -> Any:
    """The `datasets.Features` of a row (imported lazily: `datasets` is heavy)."""
    from datasets import Features, List, Value

    s, i, f, b = Value("string"), Value("int32"), Value("float64"), Value("bool")
    strings = List(s)
    return Features(
        {
            "task_id": s,
            "framework": s,
            "repo": s,
            "pr_id": s,
            "pr_number": i,
            "pr_url": s,
            "title": s,
            "body": s,
            "merged_at": s,
            "base_commit": s,
            "merge_commit": s,
            "base_tag": s,
            "task_type": s,
            "type_evidence": strings,
            "difficulty": i,
            "difficulty_score": f,
            "labels": strings,
            "requirement": s,
            "requirement_origin": s,
            "curation_status": s,
            "kernels": List(
                {
                    "file": s,
                    "name": s,
                    "change": s,
                    "kind": s,
                    "role": s,
                    "old_file": s,
                    "before_src": s,
                    "after_src": s,
                    "signature_before": s,
                    "signature_after": s,
                    "constexpr_params": strings,
                    "wrappers": strings,
                }
            ),
            "files_changed": List(
                {"path": s, "status": s, "additions": i, "deletions": i, "is_test": b}
            ),
            "context": List(
                {
                    "file": s,
                    "imports": strings,
                    "items": List({"name": s, "kind": s, "signature": s, "source": s, "why": s}),
                }
            ),
            "gold_patch": s,
            "test_patch": s,
            "tests": {
                "command": s,
                "changed_in_pr": strings,
                "selected_existing": strings,
                "fail_to_pass": strings,
                "pass_to_pass": strings,
            },
            "env": {
                "python": s,
                "torch": s,
                "triton": s,
                "cuda": s,
                "base_image": s,
                "recipe": s,
                "image_tag": s,
                "pin_sources": s,
            },
            "reference": {
                "measured": b,
                "valid": b,
                "note": s,
                "gpu": s,
                "torch": s,
                "triton": s,
                "base_passed_runs": i,
                "gold_passed_runs": i,
                "runs": i,
                "base_e2e_s": f,
                "gold_e2e_s": f,
                "base_kernel_ms": f,
                "gold_kernel_ms": f,
                "base_isolated_ms": f,
                "gold_isolated_ms": f,
            },
            "dedup": {"cluster": s, "nearest": s, "similarity": f},
            "schema_version": i,
        }
    )


def row(tdir: TaskDir) -> dict[str, Any]:
    """One dataset row from a task directory."""
    task = tdir.load_task()
    env = _json(tdir.root / "env.json")
    ref = _json(tdir.root / "reference.json")
    tests = task.tests
    f2p, p2p = tests.fail_to_pass, tests.pass_to_pass
    if ref:
        f2p, p2p = tuple(ref["fail_to_pass"]), tuple(ref["pass_to_pass"])
    return {
        "task_id": task.task_id,
        "framework": task.framework,
        "repo": task.repo,
        "pr_id": task.pr_id,
        "pr_number": task.pr_number,
        "pr_url": task.pr_url,
        "title": task.title,
        "body": task.body,
        "merged_at": task.merged_at,
        "base_commit": task.base_commit,
        "merge_commit": task.merge_commit,
        "base_tag": task.base_tag,
        "task_type": str(task.task_type.type),
        "type_evidence": list(task.task_type.evidence),
        "difficulty": task.difficulty.level,
        "difficulty_score": task.difficulty.score,
        "labels": list(task.labels),
        "requirement": tdir.read_requirement() or task.requirement,
        "requirement_origin": task.requirement_origin,
        "curation_status": str(task.curation_status),
        "kernels": [
            {
                "file": k.file,
                "name": k.name,
                "change": k.change,
                "kind": k.kind,
                "role": k.role,
                "old_file": k.old_file,
                "before_src": k.before_src,
                "after_src": k.after_src,
                "signature_before": k.signature_before,
                "signature_after": k.signature_after,
                "constexpr_params": list(k.constexpr_params),
                "wrappers": list(k.wrappers),
            }
            for k in task.kernels
        ],
        "files_changed": [
            {
                "path": f.path,
                "status": f.status,
                "additions": f.additions,
                "deletions": f.deletions,
                "is_test": f.is_test,
            }
            for f in task.files_changed
        ],
        "context": [
            {
                "file": path,
                "imports": list(ctx.imports),
                "items": [
                    {
                        "name": i.name,
                        "kind": i.kind,
                        "signature": i.signature,
                        "source": i.source,
                        "why": i.why,
                    }
                    for i in (*ctx.classes, *ctx.functions)
                ],
            }
            for path, ctx in sorted(task.context.items())
        ],
        "gold_patch": tdir.gold_patch_path.read_text(errors="replace"),
        "test_patch": tdir.test_patch_path.read_text(errors="replace"),
        "tests": {
            "command": tests.command,
            "changed_in_pr": list(tests.changed_in_pr),
            "selected_existing": list(tests.selected_existing),
            "fail_to_pass": list(f2p),
            "pass_to_pass": list(p2p),
        },
        "env": _env(env),
        "reference": _reference(ref),
        "dedup": (
            {
                "cluster": task.dedup.cluster,
                "nearest": task.dedup.nearest,
                "similarity": task.dedup.similarity,
            }
            if task.dedup
            else None
        ),
        "schema_version": SCHEMA_VERSION,
    }


def _json(path: Any) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def _env(env: dict[str, Any] | None) -> dict[str, Any] | None:
    if not env:
        return None
    pins = {p: env[p] for p in ("python", "torch", "triton", "cuda")}
    base_image = next(
        (p["value"] for p in env.get("extra_pins", []) if p["name"] == "base_image"), None
    )
    return {
        **{name: pin["value"] for name, pin in pins.items()},
        "base_image": base_image,
        "recipe": env.get("recipe"),
        "image_tag": env.get("image_tag"),
        "pin_sources": ", ".join(f"{n}: {p['source']} ({p['where']})" for n, p in pins.items()),
    }


def _reference(ref: dict[str, Any] | None) -> dict[str, Any]:
    if not ref:
        empty: dict[str, Any] = dict.fromkeys(features()["reference"].keys())
        return {**empty, "measured": False, "valid": False, "note": "no reference run yet"}
    base, gold, env = ref["base"], ref["gold"], ref["environment"]
    return {
        "measured": True,
        "valid": ref["valid"],
        "note": ref["validity_note"],
        "gpu": env["gpu"],
        "torch": env["torch"],
        "triton": env["triton"],
        "base_passed_runs": base["passed_runs"],
        "gold_passed_runs": gold["passed_runs"],
        "runs": gold["runs"],
        "base_e2e_s": base["e2e_s"],
        "gold_e2e_s": gold["e2e_s"],
        "base_kernel_ms": base["kernel_ms"],
        "gold_kernel_ms": gold["kernel_ms"],
        "base_isolated_ms": base["isolated_ms"],
        "gold_isolated_ms": gold["isolated_ms"],
    }
