#!/usr/bin/env bash
# Fifth session of 2026-12-03, call 16 (the second of the session): call 15 started no task
# after its first 60 s (`--deadline 60`, too early: its first thirteen tasks ended in 25-50 s),
# so the 19 flash-linear-attention tasks it never started and #1143 (stopped at the call's end)
# run again, 6 side by side, starting none after 260 s; beside them Megatron-LM's gate on
# #4566, #3594, !3220, !3912 on their pydantic/omegaconf wheelhouses (call 13a's Megatron part),
# then the first reference runs and workloads of the optimizations #4460 and #4603.
# Carry: .whl .carry/deb .carry/n0 (c16.txt: the 20 tasks) .carry/m2.
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0; M=.carry/m2
S=$(date +%s); END=490
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $N/tasks --task-file $N/c16.txt --repo-path flash-linear-attention=$N/fla.git --out /tmp/rf --jobs 6 --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3 --force --deadline 260 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
R="--tasks $M/tasks --repo-path megatron-lm=$M/mlm.git --wheelhouse $M/wh --select-per-test 1 --max-node-ids 4 --select-timeout 240 --timeout 300 --runs 3 --scratch /tmp/sm --triton-cache /tmp/tcm"
( timeout -k 15 -s INT 330 python3 -m eval reference $R --task-file $M/all.txt --force --out /tmp/rm --jobs 3 --deadline 60 > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s"
  timeout -k 15 -s INT $(( END - ($(date +%s) - S) )) python3 -m eval workload --tasks $M/tasks --task-file $M/opt.txt --repo-path megatron-lm=$M/mlm.git --wheelhouse $M/wh --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
for d in $N/tasks $M/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for d in $N/tasks $M/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
