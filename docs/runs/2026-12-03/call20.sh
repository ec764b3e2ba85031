#!/usr/bin/env bash
# 2026-12-03, sixth session, call 20 (the session's last: 521 s of device budget left).
# Resumes call 19's twelve flash-linear-attention partial references (their selections and
# finished runs came back in reference.partial.json and are merged into .carry/n0/tasks), the
# cheapest first (#701 needs two runs more), 15 side by side, then #662, #660, #577 (not
# started in call 19), starting none after 200 s; unfinished tasks come back as partials.
# Beside them the five tasks whose `--reselect` (calls 15, 19) ran only their old node ids
# (fixed since): flash-linear-attention #714, #717, #795 and Liger-Kernel #1329, #894.
# Carry: .whl .carry/deb .carry/n0 (c20.txt, c20_resel.txt) .carry/l1 (c20.txt)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0
S=$(date +%s); END=${1:-330}
F="--tasks $N/tasks --repo-path flash-linear-attention=$N/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 150 --runs 3 --force"
L=.carry/l1
( timeout -k 20 -s INT $END python3 -m eval reference $F --task-file $N/c20.txt --out /tmp/rf --jobs 12 --deadline 200 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 20 -s INT $END python3 -m eval reference $F --task-file $N/c20_resel.txt --reselect --max-node-ids 4 --jobs 3 --out /tmp/rr --scratch /tmp/sr --triton-cache /tmp/tcr > $O/resel.log 2>&1; echo "resel rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $L/tasks --task-file $L/c20.txt --repo-path liger-kernel=$L/lig.git --out /tmp/rl --runs 3 --jobs 2 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --reselect --force --scratch /tmp/sl --triton-cache /tmp/tcl > $O/liger.log 2>&1; echo "liger rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
for d in $N/tasks $L/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
( cd /tmp && find rr rl -path '*/select/pytest.log' 2>/dev/null | tar -czf /tmp/pack/select_logs.tgz -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( for f in $N/tasks/*/reference.json $L/tasks/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done
  for f in $N/tasks/*/reference.partial.json; do [ $f -nt $O/machine.txt ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'partial', len(r['runs']), 'runs')" "$f"; done ) 2>/dev/null
