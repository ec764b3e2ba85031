#!/usr/bin/env bash
# 2026-12-03, sixth session, call 20 (the session's last: 521 s of device budget left).
# Resumes call 19's twelve flash-linear-attention partial references (their selections and
# finished runs came back in reference.partial.json and are merged into .carry/n0/tasks), the
# cheapest first (#701 needs two runs more), 15 side by side, then #662, #660, #577 (not
# started in call 19), starting none after 200 s; unfinished tasks come back as partials.
# Carry: .whl .carry/deb .carry/n0 (c20.txt)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0
S=$(date +%s); END=${1:-330}
F="--tasks $N/tasks --repo-path flash-linear-attention=$N/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 150 --runs 3 --force"
timeout -k 20 -s INT $END python3 -m eval reference $F --task-file $N/c20.txt --out /tmp/rf --jobs 15 --deadline 200 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_n0.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( cd $N/tasks && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[0][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done
  for f in */reference.partial.json; do [ $f -nt $O/machine.txt ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[0][:60], 'partial', len(r['runs']), 'runs')" "$f"; done ) 2>/dev/null
