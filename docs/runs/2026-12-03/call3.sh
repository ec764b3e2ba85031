#!/usr/bin/env bash
# Session of 2026-12-03, call 3: the second-day workloads of #945 and #1112 (quiet GPU, base
# against gold), then the gold targets and the setup state (do-nothing) scored as predictions on
# the six tasks verified in call 2 (flash-linear-attention #535, #574, #642, #693; Liger-Kernel
# #198, #239 on their transformers wheelhouses).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $O/machine.txt 2>&1
A=.carry/a; B=.carry/b
S=$(date +%s)
timeout -k 10 -s INT 200 python3 -m eval workload --tasks $A/tasks --task-file $A/list2.txt --repo-path liger-kernel=$A/lig.git --out /tmp/w --rounds 2 --timeout 150 --scratch /tmp/sw --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s"
( cd $A/tasks && find . -maxdepth 2 \( -name workload_result.json -o -name task.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
L=$(( 265 - ($(date +%s) - S) ))
SC="--timeout 150 --scratch /tmp/sc"
F="--tasks $B/tasks --repo-path flash-linear-attention=$B/fla.git --triton-cache /tmp/tcf"
( timeout -k 10 -s INT $L python3 -m eval score $B/fla_gold.jsonl $F --out /tmp/fg --jobs 4 $SC > $O/fla_gold.log 2>&1; echo "fla gold rc $?" ) &
( timeout -k 10 -s INT $L python3 -m eval score $B/fla_setup.jsonl $F --out /tmp/fs --jobs 4 $SC > $O/fla_setup.log 2>&1; echo "fla setup rc $?" ) &
( G="--tasks $B/tasks --repo-path liger-kernel=$B/lig.git --wheelhouse $B/wh --triton-cache /tmp/tcl"
  timeout -k 10 -s INT $L python3 -m eval score $B/lig_gold.jsonl $G --out /tmp/lg --jobs 1 $SC > $O/lig_gold.log 2>&1; echo "lig gold rc $?"
  ) &
( G="--tasks $B/tasks --repo-path liger-kernel=$B/lig.git --wheelhouse $B/wh --triton-cache /tmp/tcl2"; timeout -k 10 -s INT $L python3 -m eval score $B/lig_setup.jsonl $G --out /tmp/ls --jobs 1 $SC > $O/lig_setup.log 2>&1; echo "lig setup rc $?" ) &
wait
( cd /tmp && find fg fs lg ls -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in workload fla_gold fla_setup lig_gold lig_setup; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 14; done
