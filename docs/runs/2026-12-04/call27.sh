#!/usr/bin/env bash
# 2026-12-04, call 27: the last 249 s of the session's device time. Issue 10 item 7's first
# measurement on the H200: the anchored harness (`eval workload --predictions P --anchored`)
# on Liger-Kernel #815 and #1187 with the gold as the prediction (call23.sh's first step,
# alone). Logs are written into $O as they go: a call cut at the budget still returns them.
# Carry: .whl .carry/deb .carry/c (make_carry.sh beside this script)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
S=$(date +%s)
timeout -k 10 -s INT ${1:-150} python3 -m eval workload --tasks $T --task-file $C/wl.txt \
  --repo-path liger-kernel=$C/lig.git --rounds 2 --timeout 120 --predictions $C/gold.jsonl \
  --anchored --out /tmp/wgold --scratch /tmp/swgold --triton-cache /tmp/twgold > $O/wl_gold.log 2>&1
echo "anchored gold rc $? after $(( $(date +%s) - S )) s"
( cd /tmp && find wgold -name workload_result.json -print0 | tar --null -cf $O/workloads.tar -T - )
grep -v "━" $O/wl_gold.log | tail -n 12 | cut -c1-240
