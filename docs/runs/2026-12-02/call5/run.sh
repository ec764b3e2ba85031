#!/usr/bin/env bash
# Call A (2026-12-02, session 4): 32 Liger-Kernel tasks that had no verdict from the GPU for
# want of their packages (22 on their pinned transformers wheelhouses, 3 for datasets) or of a
# selection (3 timeouts, 4 with no target launch before the module ranking); beside them the
# reference runs of #945's tests and the gold / setup states scored on the 6 tasks verified in
# call 3.
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
C=.carry/c3
R="--repo-path liger-kernel=.carry/bundles/lig1.git --repo-path flash-linear-attention=.carry/bundles/fla1.git"
( timeout -k 15 -s INT 510 python3 -m eval reference --tasks .carry/a/tasks --task-file .carry/a/list.txt --repo-path liger-kernel=.carry/a/lig.git --wheelhouse .carry/a/wh --out /tmp/ra --force --runs 3 --jobs 6 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline 320 --scratch /tmp/sa --triton-cache /tmp/tca > $O/liger.log 2>&1; echo "liger rc $?" ) &
( timeout -k 10 -s INT 300 python3 -m eval reference --tasks $C/tasks --task liger-kernel__945___layer_norm_backward_kernel --repo-path liger-kernel=.carry/bundles/lig3.git --out /tmp/r3 --runs 3 --jobs 1 --timeout 150 --select-timeout 110 --select-per-test 1 --select-max 8 --max-node-ids 4 --scratch /tmp/s3 --triton-cache /tmp/tc3 > $O/ref945.log 2>&1; echo "ref rc $?" ) &
( timeout -k 10 -s INT 420 python3 -m eval score $C/gold.jsonl --tasks $C/tasks $R --out /tmp/sg --jobs 3 --timeout 200 --no-isolated-timing --scratch /tmp/s4 --triton-cache /tmp/tc4 > $O/score_gold.log 2>&1; echo "gold rc $?" ) &
( timeout -k 10 -s INT 420 python3 -m eval score $C/setup.jsonl --tasks $C/tasks $R --out /tmp/ss --jobs 3 --timeout 200 --no-isolated-timing --scratch /tmp/s5 --triton-cache /tmp/tc5 > $O/score_setup.log 2>&1; echo "setup rc $?" ) &
wait
( cd .carry/a/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/liger.tgz -T - )
( cd $C/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/ref945.tgz -T - )
( cd /tmp && find sg ss ra -maxdepth 2 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in liger ref945 score_gold score_setup; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 12; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
