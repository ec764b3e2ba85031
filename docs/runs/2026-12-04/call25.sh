#!/usr/bin/env bash
# Prepared 2026-12-04 for a later GPU call: the tests' references (3 base + 3 gold runs, node
# ids chosen by a gold run with the launch capture) of the ten flash-linear-attention
# optimization tasks of call24.sh; an optimization is verified only with both (its tests pass
# with the gold in every run, and its workload is 1.10x faster). 10 side by side; resumable.
# Carry: .whl .carry/deb .carry/c (made by make_carry.sh beside this script)
# Usage: call25.sh [END seconds, default 480]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
S=$(date +%s); END=${1:-480}
F="--tasks $T --repo-path flash-linear-attention=$C/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 420 --runs 3"
timeout -k 60 -s INT $END python3 -m eval reference $F --task-file $C/fla_opt.txt --out /tmp/rf --jobs 10 --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( for f in $T/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ) 2>/dev/null
