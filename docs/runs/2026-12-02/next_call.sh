#!/usr/bin/env bash
# Call 3 (2026-12-02, session 3): reference runs (tests) of the three Liger-Kernel optimization
# tasks whose workloads were measured; the gold and setup states scored as predictions on the
# six tasks verified in call 1; the do-nothing prediction timed on #945's workload.
. scripts/device_env.sh
date -u > $O/machine.txt
DL=${1:-265}
C=.carry/c3
C=.carry/c3
R="--repo-path liger-kernel=.carry/bundles/lig1.git --repo-path flash-linear-attention=.carry/bundles/fla1.git"
( timeout -k 10 -s INT $DL python3 -m eval reference --tasks $C/tasks --task-file $C/opt.txt --repo-path liger-kernel=.carry/bundles/lig3.git --out /tmp/r3 --runs 3 --jobs 3 --timeout 150 --select-timeout 110 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline 30 --scratch /tmp/s3 --triton-cache /tmp/tc3 > $O/ref.log 2>&1; echo "ref rc $?" ) &
( timeout -k 10 -s INT $DL python3 -m eval score $C/gold.jsonl --tasks $C/tasks $R --out /tmp/sg --jobs 3 --timeout 200 --no-isolated-timing --scratch /tmp/s4 --triton-cache /tmp/tc4 > $O/score_gold.log 2>&1; echo "gold rc $?" ) &
( timeout -k 10 -s INT $DL python3 -m eval score $C/setup.jsonl --tasks $C/tasks $R --out /tmp/ss --jobs 3 --timeout 200 --no-isolated-timing --scratch /tmp/s5 --triton-cache /tmp/tc5 > $O/score_setup.log 2>&1; echo "setup rc $?" ) &
( timeout -k 10 -s INT $DL python3 -m eval workload --tasks $C/wl --repo-path liger-kernel=.carry/bundles/ligwl2.git --predictions $C/wl_setup.jsonl --out /tmp/w3 --rounds 2 --timeout 120 --scratch /tmp/s6 --triton-cache /tmp/tc6 > $O/wl_setup.log 2>&1; echo "wl rc $?" ) &
# issue 11: the five tasks of the sandbox comparison again, sandboxed and not, side by side,
# with the GPU spin now ahead of each isolated replay
cp -r .carry/tasks /tmp/tasks_sb; cp -r .carry/tasks /tmp/tasks_nosb
RL="--repo-path liger-kernel=.carry/bundles/liger.git"
( timeout -k 10 -s INT $DL python3 -m eval reference --tasks /tmp/tasks_sb --task-file $C/cmp5.txt $RL --out /tmp/rsb --force --runs 3 --jobs 5 --timeout 150 --scratch /tmp/s7 --triton-cache /tmp/tc7 > $O/cmp_sb.log 2>&1; echo "sb rc $?" ) &
( timeout -k 10 -s INT $DL python3 -m eval reference --tasks /tmp/tasks_nosb --task-file $C/cmp5.txt $RL --out /tmp/rnosb --force --runs 3 --jobs 5 --timeout 150 --no-sandbox --scratch /tmp/s8 --triton-cache /tmp/tc8 > $O/cmp_nosb.log 2>&1; echo "nosb rc $?" ) &
wait
( cd /tmp/tasks_sb && find . -maxdepth 2 -name reference.json -newer $O/machine.txt -print0 | tar --null -czf $O/cmp_sb.tgz -T - )
( cd /tmp/tasks_nosb && find . -maxdepth 2 -name reference.json -newer $O/machine.txt -print0 | tar --null -czf $O/cmp_nosb.tgz -T - )
( cd $C/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/ref.tgz -T - )
( cd /tmp && find sg ss w3 -maxdepth 2 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -print0 | tar --null -czf $O/scores.tgz -T - )
for f in ref score_gold score_setup wl_setup cmp_sb cmp_nosb; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 9; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
