#!/usr/bin/env bash
# Prepared 2026-12-03 for the next session (not run yet): the gold targets and the setup state
# scored as predictions on the verified tasks never scored. Carry: .whl .carry/deb .carry/h/run
# (tasks, bundles, oracle records, lists) and, per
# batch, the transformers wheelhouses its old Liger-Kernel tasks ran on (13 MB each; at most
# three in one call): batch a (a.txt: #24 4.44.0 7fb5664f493887ee, #264/#290 4.45.1
# 5267ac4f03f3554a, #300 4.45.2 3bfaf388274f58de; #1179, #1201, #815, #1187, #945 on the host's
# transformers like their references) plus flash-linear-attention #429; batch b (b.txt: #420,
# #511 4.47.1 942d7c4948b7b647, #324, #618 4.49.0 4fcf8120242f007c). Usage: next_call10.sh a|b
. scripts/device_env.sh
B=${1:-a}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
H=.carry/h/run
S=$(date +%s)
L="--tasks $H/tasks --repo-path liger-kernel=$H/lig.git --wheelhouse .carry/h/wh --timeout 150 --scratch /tmp/sc --task-file $H/$B.txt"
( timeout -k 10 -s INT 480 python3 -m eval score $H/lig_gold.jsonl $L --out /tmp/lg --jobs 2 --triton-cache /tmp/tlg > $O/lig_gold.log 2>&1; echo "lig gold rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 480 python3 -m eval score $H/lig_setup.jsonl $L --out /tmp/ls --jobs 2 --triton-cache /tmp/tls > $O/lig_setup.log 2>&1; echo "lig setup rc $? after $(( $(date +%s) - S )) s" ) &
if [ "$B" = a ]; then
  F="--tasks $H/tasks --repo-path flash-linear-attention=$H/fla.git --timeout 150 --scratch /tmp/sf --task-file $H/fla.txt"
  ( timeout -k 10 -s INT 480 python3 -m eval score $H/fla_gold.jsonl $F --out /tmp/fg --triton-cache /tmp/tfg > $O/fla_gold.log 2>&1
    timeout -k 10 -s INT $(( 480 - ($(date +%s) - S) )) python3 -m eval score $H/fla_setup.jsonl $F --out /tmp/fs --triton-cache /tmp/tfs > $O/fla_setup.log 2>&1; echo "fla rc $?" ) &
fi
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find lg ls fg fs -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
for f in lig_gold lig_setup fla_gold fla_setup; do [ -f $O/$f.log ] && { echo "== $f"; grep -v "━" $O/$f.log | grep -v no_prediction | tail -n 24; }; done | cut -c1-200
