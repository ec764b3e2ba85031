#!/usr/bin/env bash
# 2026-12-03, fourth session, call 10: the flash-linear-attention gate with the selection run's
# first-config autotuning (`--select-autotune first`, its first run on the H200): the 11 tasks
# whose selection runs hit 180 s in calls 7 and 9 (--force), then the queue's first 30
# (queue_fla.txt), 9 side by side; no task starts after 150 s.
# Carry: .whl .carry/deb .carry/q (41 tasks, an 11 MB bundle of fla/, tests/, benchmarks/).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
Q=.carry/q
S=$(date +%s)
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
timeout -k 20 -s INT 500 python3 -m eval reference --tasks $Q/tasks --task-file $Q/call10.txt --repo-path flash-linear-attention=$Q/fla.git --out /tmp/rf --jobs 9 $SEL --force --deadline 150 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/fla.log $O/machine.txt /tmp/pack/
( cd $Q/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
( cd $Q/tasks && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][24:70], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:60])" "$f"; done ) 2>/dev/null | tail -n 45
grep -v "━" $O/fla.log | tail -n 20 | cut -c1-200
