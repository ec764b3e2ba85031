#!/usr/bin/env bash
# Next session's call 1 (prepared 2026-12-02, docs/runs/2026-12-02/next_calls.md): 15
# Liger-Kernel tasks: seven old ones on their transformers wheelhouses (4.45.1, 4.44.0, 4.45.2),
# the five call 7 did not finish, #778/#843 (datasets visible in the sandbox now), and #815
# and #1187 re-curated (#815's base keeps `import math`, #1187's autograd Function is a target
# now), #1091 and #910 under their new setup states: tests, then #815's and #1187's workloads.
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
N=.carry/n1
S=$(date +%s)
timeout -k 15 -s INT 420 python3 -m eval reference --tasks $N/tasks --task-file $N/list.txt --repo-path liger-kernel=$N/lig.git --wheelhouse $N/wh --out /tmp/ra --force --runs 3 --jobs 7 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline 240 --scratch /tmp/sa --triton-cache /tmp/tca > $O/liger.log 2>&1; echo "liger rc $? after $(( $(date +%s) - S )) s"
L=$(( 545 - ($(date +%s) - S) ))
timeout -k 10 -s INT $L python3 -m eval workload --tasks $N/tasks --task liger-kernel__815___layer_norm_backward_kernel --task liger-kernel__1187___fused_add_rms_norm_backward_kernel --repo-path liger-kernel=$N/lig.git --out /tmp/w1 --rounds 2 --timeout 150 --scratch /tmp/s1 --triton-cache /tmp/tc1 > $O/wl815.log 2>&1; echo "815+1187 rc $? after $(( $(date +%s) - S )) s"
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
for f in liger wl815; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 20; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
