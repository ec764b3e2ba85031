#!/usr/bin/env bash
# Session of 2026-12-03 (third), call 8: the gold targets and the setup state (do-nothing)
# scored as predictions on the 14 flash-linear-attention tasks verified since 2026-12-02 that
# were never scored (two commands side by side, four tasks each); beside them the four verified
# Liger-Kernel optimization workloads again with compute-sanitizer memcheck on the gold's
# smallest call (their timings share the GPU with the scoring, so only the memcheck verdicts
# and the harness's seconds per process are read from this run). One archive comes back.
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer; } > $O/machine.txt 2>&1
F=.carry/f; G=.carry/g
S=$(date +%s)
SC="--timeout 150 --scratch /tmp/sc --task-file $F/fla_score.txt --tasks $F/tasks --repo-path flash-linear-attention=$F/fla.git"
( timeout -k 10 -s INT 520 python3 -m eval score $F/fla_gold.jsonl $SC --out /tmp/fg --jobs 4 --triton-cache /tmp/tcg > $O/fla_gold.log 2>&1; echo "fla gold rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 520 python3 -m eval score $F/fla_setup.jsonl $SC --out /tmp/fs --jobs 4 --triton-cache /tmp/tcs > $O/fla_setup.log 2>&1; echo "fla setup rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 500 python3 -m eval workload --tasks $G/tasks --task-file $G/list.txt --repo-path liger-kernel=$G/lig.git --force --memcheck --rounds 1 --timeout 150 --deadline 380 --out /tmp/w --scratch /tmp/sw --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find fg fs -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' -o -name '*.json' \) -size -2M -print0 | tar --null -cf /tmp/pack/scores.tar -T - )
( cd $G/tasks && find . -maxdepth 2 -name 'workload_result.json' -print0 | tar --null -cf /tmp/pack/workload.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
for f in fla_gold fla_setup workload; do echo "== $f"; grep -v "━" $O/$f.log | grep -v no_prediction | tail -n 30; done | cut -c1-200
