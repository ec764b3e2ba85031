# Sourced first by every command run on a lent GPU machine (docs/runs/*/run.sh): NVLink
# multicast off in every process it starts, the carried wheels (.whl) installed into /tmp/site,
# the carried bubblewrap (.carry/deb) unpacked and on PATH, $O the folder whose files come back.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
dpkg -x .carry/deb/bubblewrap_*.deb /tmp/bw && export PATH=/tmp/bw/usr/bin:$PATH
O=${OUT:-/tmp/out}
mkdir -p "$O"

# The tasks of the references in file $1 that verified, scored with their gold targets as a
# prediction for at most $2 seconds, $3 at once, on the references' Triton cache /tmp/tcr
# (the gold tree's kernels are the same source: not compiled again). Reads the caller's $T
# (tasks), $R (--repo-path options), $C (carry: wh/), $O and $S (start); scores in
# /tmp/sgold_new$4, log $O/score_gold_new$4.log ($4, a tag, lets two streams score side by
# side: call41.sh scores the pinned references' as soon as they end). call39.sh, call41.sh.
new_gold() {
  local tag=${4:-}
  for t in $(cat "$1"); do
    grep -q '"status": "verified"' $T/$t/task.json 2>/dev/null && [ -f $T/$t/reference.json ] && echo $t
  done > /tmp/new_verified$tag.txt
  [ -s /tmp/new_verified$tag.txt ] && [ "$2" -gt 60 ] || return 0
  python3 -m eval oracle --tasks $T --task-file /tmp/new_verified$tag.txt $R --from gold \
    --out /tmp/new_gold$tag.jsonl
  timeout -k 20 -s INT $(( $2 - 20 )) python3 -m eval score /tmp/new_gold$tag.jsonl --tasks $T \
    --task-file /tmp/new_verified$tag.txt $R --wheelhouse $C/wh --out /tmp/sgold_new$tag \
    --jobs $3 --runs ${SCORE_RUNS:-1} --timeout 300 --scratch /tmp/scn$tag --triton-cache /tmp/tcr \
    > $O/score_gold_new$tag.log 2>&1
  echo "new gold rc $? after $(( $(date +%s) - S )) s" >> $O/score_gold_new$tag.log
}
