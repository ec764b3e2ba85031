#!/usr/bin/env bash
# Builds the next version of release/triton-pr-bench from the working state that
# `scripts/rebuild_state.sh` makes and the GPU calls' merges keep up to date: the tasks the
# release already holds (its `all` config) and every state task with a reference, copied (the
# state is never written), their environments pinned (`python -m envbuild`: the dataset's
# `env` column and the `environments` config; until 2026-12-06 the releases were built without
# it and 356 of their 383 rows have none), judged again with those pins (`eval rejudge`),
# checked (`python -m curation.check`: a task with an error is held back and named), then
# `python -m benchmark build`. Prints the folder it built from and writes its
# verification tables beside it (`verification_report.md`, for docs/verification.md).
# Usage (repository root, venv active): release_from_state.sh STATE MIRRORS VERSION [--dry-run]
set -euo pipefail
state=${1:?usage: release_from_state.sh STATE MIRRORS VERSION [--dry-run]}
mirrors=${2:?usage: release_from_state.sh STATE MIRRORS VERSION [--dry-run]}
version=${3:?usage: release_from_state.sh STATE MIRRORS VERSION [--dry-run]}
release=release/triton-pr-bench
[ -d "$state/tasks" ] || { echo "error: $state/tasks does not exist (STATE)" >&2; exit 1; }
out=$(mktemp -d); rel=$out/tasks
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python - "$state/tasks" "$rel" "$release" <<'PY'
import shutil
import sys
from pathlib import Path

import datasets

state, rel, release = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
ids = {p.parent.name for p in state.glob("*/reference.json")}
if Path(release, "manifest.json").exists():
    for split in datasets.load_dataset(release, "all").values():
        ids |= set(split["task_id"])
missing = sorted(i for i in ids if not (state / i / "task.json").exists())
if missing:
    sys.exit(f"error: {len(missing)} released task(s) not in {state}: {', '.join(missing[:5])}")
rel.mkdir(parents=True)
for i in sorted(ids):
    shutil.copytree(state / i, rel / i)
print(f"{len(ids)} tasks copied to {rel}")
PY
python -m envbuild --tasks "$rel" --no-lint \
  --repo-path flash-linear-attention="$mirrors/fla-org+flash-linear-attention/repo" \
  --repo-path liger-kernel="$mirrors/linkedin+Liger-Kernel/repo" \
  --repo-path megatron-lm="$mirrors/NVIDIA+Megatron-LM/repo" > "$out/envbuild.log" 2>&1
tail -n 3 "$out/envbuild.log"
rm -f "$rel/env_summary.json"
# judged again with the pins at hand (a compile failure on another Triton than the pinned one
# says so: eval.gate.TRITON_DRIFT); the runs are the state's, only the reasons can change
python -m eval rejudge --tasks "$rel" | tail -n 1
# a task curation.check rejects is held back, by name (the check is per task: what is left
# passed it; one run, 79 s for 391 tasks on 2 cores)
python -m curation.check --tasks "$rel" > "$out/check.log" || true
tail -n 1 "$out/check.log"
# (`|| true`: grep finds no ERROR line when every task passes, and pipefail would stop here)
{ grep '^ERROR' "$out/check.log" || true; } | while read -r _ id rest; do
  id=${id%:}; echo "held back: $id: ${rest:0:160}"; rm -rf "${rel:?}/$id"; done
python -m benchmark build --tasks "$rel" --out "$release" --version "$version" ${4:-} | tail -n 25
python "$(dirname "$0")/verification_report.py" "$rel" > "$out/verification_report.md"
echo "built from $rel; tables in $out/verification_report.md"
