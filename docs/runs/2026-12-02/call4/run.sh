#!/usr/bin/env bash
# Call 2 (2026-12-02, session 3): workloads of 11 Liger-Kernel optimization tasks on a quiet
# GPU, base and gold and the gold targets as a prediction, alternating (backward-only timing for
# PRs that change only backward kernels; GPU spin ahead of each repetition).
. scripts/device_env.sh  # the preamble that ran, moved there unchanged
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.device_count())'
  nproc; bwrap --version; } > $O/machine.txt 2>&1
cat $O/machine.txt
DL=${1:-540}
T=.carry/c2/tasks
timeout -k 15 -s INT $DL python3 -m eval workload --tasks $T --task-file .carry/c2/list.txt --repo-path liger-kernel=.carry/bundles/ligwl2.git --predictions .carry/c2/gold.jsonl --out /tmp/w --rounds 2 --timeout 150 --deadline $((DL-120)) --scratch /tmp/sw --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $?"
( cd $T && find . -maxdepth 2 \( -name workload_result.json -o -name task.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp/w && find . -maxdepth 2 -name '*.json' -print0 | tar --null -czf $O/pred.tgz -T - )
grep -v "━" $O/workload.log | tail -n 60
