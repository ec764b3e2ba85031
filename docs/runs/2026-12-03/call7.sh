#!/usr/bin/env bash
# Session of 2026-12-03 (third), call 7: the gate on 22 never-run flash-linear-attention tasks
# (bug_fix / feature / new_op with a test the PR changed, newest first; #864 and #833 were
# judged in call 4 but their files did not come back), 14 side by side, the framework's own
# selection cap (4 tests), everything back in one archive.
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
F=.carry/f
S=$(date +%s)
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
timeout -k 20 -s INT 530 python3 -m eval reference --tasks $F/tasks --task-file $F/fla_gate.txt --repo-path flash-linear-attention=$F/fla.git --out /tmp/rf --jobs 14 $SEL --deadline 90 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/fla.log $O/machine.txt /tmp/pack/
( cd $F/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
( cd /tmp && find rf -maxdepth 3 -name '*.json' -size -1M -print0 | tar --null -cf /tmp/pack/rf.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
grep -v "━" $O/fla.log | tail -n 45 | cut -c1-220
