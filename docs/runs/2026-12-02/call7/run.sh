#!/usr/bin/env bash
# Call C (2026-12-02, session 4). Phase 1: issue 11's comparison, five verified Liger-Kernel
# tasks with the largest gold kernels (0.18-0.49 ms) run sandboxed and unsandboxed side by side
# (3+3 runs each, isolated replays with the GPU spin). Phase 2: the tests' reference runs of
# #1112 (its workload passed the gate in call B) and 18 Liger-Kernel tasks without a verdict
# (8 on their pinned transformers wheelhouses, 3 for datasets, 3 selection timeouts and 4 with
# no target launch before the module ranking).
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
C=.carry/c
S=$(date +%s)
cp -r $C/cmp /tmp/tasks_sb; cp -r $C/cmp /tmp/tasks_nosb
RL="--repo-path liger-kernel=$C/lig.git --wheelhouse $C/wh"
( timeout -k 10 -s INT 200 python3 -m eval reference --tasks /tmp/tasks_sb --task-file $C/cmp5.txt $RL --out /tmp/rsb --force --runs 3 --jobs 5 --timeout 150 --scratch /tmp/s7 --triton-cache /tmp/tc7 > $O/cmp_sb.log 2>&1; echo "sb rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 200 python3 -m eval reference --tasks /tmp/tasks_nosb --task-file $C/cmp5.txt $RL --out /tmp/rnosb --force --runs 3 --jobs 5 --timeout 150 --no-sandbox --scratch /tmp/s8 --triton-cache /tmp/tc8 > $O/cmp_nosb.log 2>&1; echo "nosb rc $? after $(( $(date +%s) - S )) s" ) &
wait
L=$(( 545 - ($(date +%s) - S) ))
timeout -k 15 -s INT $L python3 -m eval reference --tasks $C/tasks --task-file $C/list.txt $RL --out /tmp/ra --force --runs 3 --jobs 7 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline $(( L - 170 )) --scratch /tmp/sa --triton-cache /tmp/tca > $O/liger.log 2>&1; echo "liger rc $? after $(( $(date +%s) - S )) s"
( cd /tmp/tasks_sb && find . -maxdepth 2 -name reference.json -newer $O/machine.txt -print0 | tar --null -czf $O/cmp_sb.tgz -T - )
( cd /tmp/tasks_nosb && find . -maxdepth 2 -name reference.json -newer $O/machine.txt -print0 | tar --null -czf $O/cmp_nosb.tgz -T - )
( cd $C/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/liger.tgz -T - )
for f in cmp_sb cmp_nosb liger; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 12; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
