#!/usr/bin/env bash
# Session of 2026-12-03, call 1: the second-day workloads of eight Liger-Kernel optimization
# tasks (issue 10: two runs on different days agree within 3%), quiet GPU, base and gold
# alternating; #815 and #1187 also time their gold targets as predictions (PMR, fast_gold).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.device_count())'
  nproc; bwrap --version; } > $O/machine.txt 2>&1
cat $O/machine.txt
A=.carry/a
DL=${1:-530}
timeout -k 15 -s INT $DL python3 -m eval workload --tasks $A/tasks --task-file $A/list.txt --repo-path liger-kernel=$A/lig.git --predictions $A/gold.jsonl --out /tmp/w --rounds 2 --timeout 150 --deadline $((DL-90)) --scratch /tmp/sw --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $?"
( cd $A/tasks && find . -maxdepth 2 \( -name workload_result.json -o -name task.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp/w && find . -maxdepth 2 -name '*.json' -print0 | tar --null -czf $O/pred.tgz -T - )
grep -v "━" $O/workload.log | tail -n 60
