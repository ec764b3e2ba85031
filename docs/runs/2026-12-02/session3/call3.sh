#!/usr/bin/env bash
# Session of 2026-12-02 evening, call 3: seven Liger-Kernel tasks whose setup state changed when
# a call's argument line counts for `caller` targets (#1187's backward; #153, #262, #320, #376,
# #420 verified on the earlier setup state; #1138), gold scored again alone for #198/#239 (run
# out of GPU memory beside eleven others in call 2), then #1187's and #815's workloads (quiet).
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
N=.carry/n3
S=$(date +%s)
R="--repo-path liger-kernel=$N/lig.git --wheelhouse $N/wh"
( timeout -k 15 -s INT 300 python3 -m eval reference --tasks $N/tasks --task-file $N/ref.txt $R --out /tmp/rb --force --reselect --runs 3 --jobs 5 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline 110 --scratch /tmp/sb --triton-cache /tmp/tcb > $O/ref.log 2>&1; echo "ref rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 280 python3 -m eval score $N/gold2.jsonl --tasks $N/tasks --task liger-kernel__198__liger_cross_entropy_kernel --task liger-kernel__239__liger_cross_entropy_kernel $R --out /tmp/sg2 --jobs 1 --timeout 150 --scratch /tmp/sc --triton-cache /tmp/tcc > $O/score_gold2.log 2>&1; echo "score rc $? after $(( $(date +%s) - S )) s" ) &
wait
L=$(( 555 - ($(date +%s) - S) ))
timeout -k 10 -s INT $L python3 -m eval workload --tasks $N/tasks --task liger-kernel__1187___fused_add_rms_norm_backward_kernel --task liger-kernel__815___layer_norm_backward_kernel $R --out /tmp/w3 --force --rounds 2 --timeout 150 --scratch /tmp/sw --triton-cache /tmp/tcw > $O/wl.log 2>&1; echo "wl rc $? after $(( $(date +%s) - S )) s"
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp && find sg2 w3 -maxdepth 2 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in ref score_gold2 wl; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 24; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
