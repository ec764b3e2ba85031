#!/usr/bin/env bash
# 2026-12-04, third session, call 29: flash-linear-attention tasks of before mid-2025 on their
# date-pinned transformers (make_carry29.sh: `wh.txt`, 11 tasks, two wheelhouses; the 5 that
# ended "does not import with the installed transformers" rerun with --force), and beside them
# the partial reference call 28 left (#905, resumed on the host's packages).
# Carry: .whl .carry/deb .carry/f
# Usage: [JOBS=12] call29.sh [END seconds, default 540]  (call 30: JOBS=13 call29.sh 525, on
# make_carry29.sh with KEYS="942d7c4948b7b647 95495c1ab585ec04")
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/f; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
touch -d '1 minute ago' $O/machine.txt
S=$(date +%s); END=${1:-540}
F="--tasks $T --repo-path flash-linear-attention=$C/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 420 --runs 3 --deadline 300"
if [ -s $C/n0.txt ]; then
  ( timeout -k 60 -s INT $END python3 -m eval reference $F --task-file $C/n0.txt --out /tmp/r0 --jobs 1 --scratch /tmp/s0 --triton-cache /tmp/tc0 > $O/n0.log 2>&1; echo "n0 rc $? after $(( $(date +%s) - S )) s" ) &
fi
timeout -k 60 -s INT $END python3 -m eval reference $F --force --wheelhouse $C/wh --task-file $C/wh.txt --out /tmp/rf --jobs ${JOBS:-12} --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name '*.autotune.json' -o -name env.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
( cd $T && find . -maxdepth 2 -name env.json -print0 | tar --null -cf /tmp/pack/env.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( for f in $T/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:90])" "$f"; done
  for f in $T/*/reference.partial.json; do [ $f -nt $O/machine.txt ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'partial', len(r['runs']), 'runs')" "$f"; done ) 2>/dev/null
