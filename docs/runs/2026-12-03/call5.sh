#!/usr/bin/env bash
# Session of 2026-12-03 (second), call 5: the gate on 22 flash-linear-attention tasks (the six
# call 4 verified, whose reference files did not come back: the call left more than eight files
# under $OUT; then the never-run queue, newest first), beside the gold and the setup state
# scored as predictions on Liger-Kernel #198, #239, #262, #320 on their transformers
# wheelhouses (4.44.2: 33dd94a6d4f0a073, 4.46.2: 4b3867e1e2a9f248). Everything comes back in one
# archive (at most eight files return).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
D=.carry/d
S=$(date +%s)
SEL="--select-per-test 1 --select-max 8 --max-node-ids 3 --select-timeout 200 --timeout 150 --runs 3"
( timeout -k 15 -s INT 540 python3 -m eval reference --tasks $D/tasks --task-file $D/fla_gate.txt --repo-path flash-linear-attention=$D/fla.git --out /tmp/rf --jobs 8 $SEL --deadline 380 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
( L="--tasks $D/tasks --repo-path liger-kernel=$D/lig.git --wheelhouse $D/wh --timeout 150 --scratch /tmp/sc --jobs 1"
  timeout -k 10 -s INT 300 python3 -m eval score $D/lig_gold.jsonl $L --out /tmp/lg --triton-cache /tmp/tsl1 > $O/lig_gold.log 2>&1; echo "lig gold rc $? after $(( $(date +%s) - S )) s"
  timeout -k 10 -s INT $(( 530 - ($(date +%s) - S) )) python3 -m eval score $D/lig_setup.jsonl $L --out /tmp/ls --triton-cache /tmp/tsl2 > $O/lig_setup.log 2>&1; echo "lig setup rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp -r /tmp/lg /tmp/ls /tmp/pack/ 2>/dev/null
( cd $D/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
( cd /tmp && find rf -maxdepth 3 -name '*.json' -size -1M -print0 | tar --null -cf /tmp/pack/rf.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
for f in fla lig_gold lig_setup; do echo "== $f"; grep -v "━" $O/$f.log | grep -v "no_prediction" | tail -n 45; done | cut -c1-220
