#!/usr/bin/env bash
# Session of 2026-12-03 (third), call 9 (the budget's last ~560 s): the gate again on the 21
# flash-linear-attention tasks of call 7, now with the selection run taking the test functions
# the PR added or changed first (call 7: five features read "no fail-to-pass" because the cap
# of 4 took the existing tests; eight selection runs timed out with 14 tasks side by side, so 9
# here), newest-first after the five; beside it the gold scored as a prediction on #810 (its
# oracle record fixed: `tanh` is defined twice), #863, #871, #883, #574 and the setup state on
# #574 (the four and #574 were cut by call 8's end). One archive comes back.
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
F=.carry/f
S=$(date +%s)
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
( timeout -k 15 -s INT 460 python3 -m eval reference --tasks $F/tasks --task-file $F/gate9.txt --repo-path flash-linear-attention=$F/fla.git --out /tmp/rf --jobs 9 $SEL --deadline 100 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s" ) &
SC="--timeout 150 --scratch /tmp/sc --tasks $F/tasks --repo-path flash-linear-attention=$F/fla.git"
( timeout -k 10 -s INT 460 python3 -m eval score $F/gold9.jsonl $SC --task-file $F/gold9.txt --out /tmp/fg --jobs 2 --triton-cache /tmp/tcg > $O/gold.log 2>&1; echo "gold rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 10 -s INT 460 python3 -m eval score $F/setup9.jsonl $SC --task-file $F/setup9.txt --out /tmp/fs --jobs 1 --triton-cache /tmp/tcs > $O/setup.log 2>&1; echo "setup rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $F/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
( cd /tmp && find fg fs -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
for f in fla gold setup; do echo "== $f"; grep -v "━" $O/$f.log | grep -v no_prediction | tail -n 32; done | cut -c1-200
