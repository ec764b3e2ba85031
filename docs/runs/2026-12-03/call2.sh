#!/usr/bin/env bash
# Session of 2026-12-03, call 2: the gate on 12 never-run flash-linear-attention tasks
# (bug_fix / feature / new_op with a test the PR changed) and #574 (its setup state changed
# since it was verified), beside Liger-Kernel #198 and #239 again on their transformers
# wheelhouses (their setup state had failed only by running out of GPU memory beside others).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
B=.carry/b
S=$(date +%s)
SEL="--select-per-test 1 --select-max 8 --max-node-ids 3 --select-timeout 200 --timeout 150 --runs 3"
( timeout -k 15 -s INT 540 python3 -m eval reference --tasks $B/tasks --task-file $B/fla.txt --repo-path flash-linear-attention=$B/fla.git --out /tmp/rf --jobs 5 $SEL --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 15 -s INT 540 python3 -m eval reference --tasks $B/tasks --task-file $B/lig.txt --repo-path liger-kernel=$B/lig.git --wheelhouse $B/wh --out /tmp/rl --jobs 1 $SEL --deadline 300 --scratch /tmp/sl --triton-cache /tmp/tcl > $O/lig.log 2>&1; echo "lig rc $? after $(( $(date +%s) - S )) s" ) &
wait
( cd $B/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp && find rf rl -maxdepth 3 \( -name '*.json' -o -name '*.md' -o -name '*.log' \) -size -1M -print0 | tar --null -czf $O/logs.tgz -T - )
for f in fla lig; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 30; done
