#!/usr/bin/env bash
# Prepared 2026-12-03 (fourth session) for the next one, not run yet. Usage: next_call13.sh a|b
# [nomlm]. Fifth session: the flash-linear-attention part starts tasks until 300 s (it had
# `--deadline 60`, which cost call 15 19 of its 32 tasks), 10 side by side; `nomlm` leaves the
# Megatron-LM part out (next_call18.sh runs it, on the wheelhouses rebuilt without --host).
#   a: the flash-linear-attention gate on the 16 queue tasks whose commits date-pin transformers
#      4.46.3 (wheelhouse 23f7377a03bc2ce2), 8 side by side, and beside it Megatron-LM's gate on
#      #4566, #3594, !3220, !3912 on their pydantic/omegaconf wheelhouses (--force: they read
#      "missing package" on 2026-12-03), then the first reference runs of the optimizations
#      #4460 and #4603 and their workloads;
#   b: the gate on the 10 that pin transformers 4.44.0 (wheelhouse 7fb5664f493887ee).
# Call 11 lost #379, #384, #386 to "'bitnet' is already used by a Transformers config": commits
# before mid-2025 need the transformers of their day (core/frameworks.toml date_pinned).
# Carry: .whl (scripts/device_wheels.sh: with cffi) .carry/deb .carry/n1a (or n1b for b) and, for
# a, .carry/m2: 61 MiB with the tracked tree (17 MB) for a, within the 64 MiB a call carries.
# Remake on a fresh machine: docs/runs/2026-12-03/next_calls.md, "Carry folders".
. scripts/device_env.sh
L=${1:-a}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n1$L; M=.carry/m2
S=$(date +%s); END=500
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $N/tasks --task-file $N/list.txt --repo-path flash-linear-attention=$N/fla.git --wheelhouse $N/wh --out /tmp/rf --jobs 10 $SEL --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
if [ "$L" = a ] && [ "${2:-}" != nomlm ]; then
  R="--tasks $M/tasks --repo-path megatron-lm=$M/mlm.git --wheelhouse $M/wh --select-per-test 1 --max-node-ids 4 --select-timeout 240 --timeout 300 --runs 3 --scratch /tmp/sm --triton-cache /tmp/tcm"
  ( timeout -k 15 -s INT 330 python3 -m eval reference $R --task-file $M/all.txt --force --out /tmp/rm --jobs 3 --deadline 30 > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s"
    timeout -k 15 -s INT $(( END - ($(date +%s) - S) )) python3 -m eval workload --tasks $M/tasks --task-file $M/opt.txt --repo-path megatron-lm=$M/mlm.git --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s" ) &
fi
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
for d in $N/tasks $M/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for d in $N/tasks $M/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
