#!/usr/bin/env bash
# Session of 2026-12-03 (second), call 6 (the budget's last 520 s): the gate on ten more
# never-run flash-linear-attention tasks, all started at once (a task takes 250-300 s: its
# selection run, then three base and three gold runs, one after the other).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
E=.carry/e
S=$(date +%s)
SEL="--select-per-test 1 --select-max 8 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
timeout -k 20 -s INT 370 python3 -m eval reference --tasks $E/tasks --task-file $E/fla_gate.txt --repo-path flash-linear-attention=$E/fla.git --out /tmp/rf --jobs 10 $SEL --deadline 60 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack
( cd $E/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
grep -v "━" $O/fla.log | tail -n 40 | cut -c1-220
