#!/usr/bin/env bash
# Prepared 2026-12-03 for the next session (not run yet): the flash-linear-attention gate with
# the selection run's first-config autotuning (`--select-autotune first`, the default since the
# end of that session, never run on the H200). Usage: next_call12.sh timeouts|queue.
#   timeouts: the 11 tasks whose selection runs hit 180 s in calls 7 and 9, again (--force):
#             compare each selection run's wall_s (reference.json: selection.wall_s) with 180 s;
#   queue:    the first 30 of docs/runs/2026-12-03/queue_fla.txt, 9 side by side.
# Carry: .whl .carry/deb .carry/q (41 tasks, an 11 MB bundle of fla/, tests/, benchmarks/).
. scripts/device_env.sh
L=${1:-timeouts}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
Q=.carry/q
S=$(date +%s)
EXTRA=""; [ "$L" = timeouts ] && EXTRA="--force"
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
timeout -k 20 -s INT 520 python3 -m eval reference --tasks $Q/tasks --task-file $Q/$L.txt --repo-path flash-linear-attention=$Q/fla.git --out /tmp/rf --jobs 9 $SEL $EXTRA --deadline 120 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/fla.log $O/machine.txt /tmp/pack/
( cd $Q/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
( cd $Q/tasks && for f in */reference.json; do python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'selection', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'))" "$f"; done ) 2>/dev/null | tail -n 45
grep -v "━" $O/fla.log | tail -n 30 | cut -c1-200
