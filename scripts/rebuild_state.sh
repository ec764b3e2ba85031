#!/usr/bin/env bash
# The working state of the GPU sessions (task directories with every verdict, reference run,
# workload and partial reference measured so far), rebuilt on a new machine from what the
# repository holds: mine and curate the three repositories again, put the released verdicts and
# workloads back (scripts/restore_verdicts.py), merge every committed GPU call under docs/runs in
# order (scripts/merge_device_results.py: never over a newer verdict; the partials of the last
# call that left them; the env.json of tasks a call ran on their wheelhouse), and rejudge.
# Measured 2026-12-04 on the 2-core CPU machine: 6 min 55 s; 827 tasks, 91 verified, 14 partial
# references; after that day's third session: 7 min 56 s, 127 verified, 2 partial, all 827
# verdicts identical to the working state's; 2026-12-06, after call 52 and with the copy rule
# (curation/build.py `TaskBuilder.copies`): 12 min 18 s (the test suite ran beside it), 159
# verified, 14 partial; 2026-12-06, fourth session, after call 56: 10 min 5 s, 169 verified, 12
# partial, all 827 verdicts and the partials identical to the working state's. Writes
# OUT/merge.log, OUT/verification_report.md.
# Usage: scripts/rebuild_state.sh MIRRORS OUT
#   MIRRORS: a folder holding the `fetch` tool's bare repositories
#   (linkedin+Liger-Kernel/repo, fla-org+flash-linear-attention/repo, NVIDIA+Megatron-LM/repo)
#   OUT: where work/ (the crawl) and tasks/ are written (a tasks/ already there is refused)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mirrors=${1:?usage: rebuild_state.sh MIRRORS OUT}
out=${2:?usage: rebuild_state.sh MIRRORS OUT}
[ -e "$out/tasks" ] && { echo "error: $out/tasks exists: move it away first" >&2; exit 1; }
mkdir -p "$out" && cd "$out"
export PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}
for spec in linkedin/Liger-Kernel:liger-kernel fla-org/flash-linear-attention:flash-linear-attention \
            NVIDIA/Megatron-LM:megatron-lm; do
  slug=${spec%%:*}
  python -m mining.crawl "$slug" --repo-path "$mirrors/${slug/\//+}/repo" --name "${spec##*:}" \
    --out work --no-github -q
done
python -m curation.curate --work work --out tasks -q
python "$here/scripts/restore_verdicts.py" "$here/release/triton-pr-bench" --tasks tasks
# every call folder and archive, oldest first (the unsandboxed half of the sandbox comparison
# is left out: the sandboxed half holds the same tasks' verdicts)
mapfile -t calls < <(cd "$here" && find docs/runs -mindepth 1 -maxdepth 3 \
  \( -name 'call*' -o -name 'session*' -o -name 'rerun_call*.tgz' -o -name 'cmp_sb.tgz' \) \
  \( -type d -o -name '*.tgz' \) ! -path '*/session*/*' | sort -V)
python "$here/scripts/merge_device_results.py" "${calls[@]/#/$here/}" --tasks tasks > merge.log || true
tail -n 1 merge.log
python -m eval rejudge --tasks tasks | tail -n 1
# the requirements again, now that rejudge gave each reference's gold launches to task.json
python -m curation.curate --out tasks --requirements-only | tail -n 1
python "$here/scripts/verification_report.py" tasks > verification_report.md
sed -n 1,6p verification_report.md
echo "partial references: $(find tasks -name reference.partial.json | wc -l)"
