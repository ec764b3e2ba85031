#!/usr/bin/env bash
# Call B (2026-12-02, session 4), a quiet GPU: Liger-Kernel #945's workload timed again with the
# do-nothing prediction (setup state) beside base and gold; then eight Liger-Kernel optimization
# tasks' workloads (base vs gold, the gate), one task at a time.
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
B=.carry/b
S=$(date +%s)
timeout -k 10 -s INT 200 python3 -m eval workload --tasks $B/tasks --task liger-kernel__945___layer_norm_backward_kernel --repo-path liger-kernel=$B/lig.git --predictions $B/wl_setup.jsonl --out /tmp/w1 --rounds 2 --timeout 150 --scratch /tmp/s1 --triton-cache /tmp/tc1 > $O/wl945.log 2>&1; echo "945 rc $? after $(( $(date +%s) - S )) s"
L=$(( 540 - ($(date +%s) - S) ))
timeout -k 10 -s INT $L python3 -m eval workload --tasks $B/tasks --task-file $B/rest.txt --repo-path liger-kernel=$B/lig.git --out /tmp/w2 --rounds 2 --timeout 150 --deadline $(( L - 110 )) --scratch /tmp/s2 --triton-cache /tmp/tc2 > $O/wl_rest.log 2>&1; echo "rest rc $? after $(( $(date +%s) - S )) s"
( cd $B/tasks && find . -maxdepth 2 \( -name task.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp && find w1 -maxdepth 3 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/w1.tgz -T - )
for f in wl945 wl_rest; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 14; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
