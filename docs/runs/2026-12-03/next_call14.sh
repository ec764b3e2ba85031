#!/usr/bin/env bash
# Prepared 2026-12-03 (fourth session) for the next one, not run yet: the gate on the two
# Liger-Kernel tasks for one NVIDIA GPU that never had a reference run (#1104, #731; the list
# first held 30, of which 28 are Ascend kernels under `src/liger_kernel/ops/backends/_ascend/`,
# out of scope: found before any device time went to them). next_call15.sh runs them too.
# Carry: .whl .carry/deb .carry/l1 (2 tasks with env.json, a 1.3 MB bundle of src/ and test/).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
L=.carry/l1
S=$(date +%s)
timeout -k 15 -s INT 500 python3 -m eval reference --tasks $L/tasks --task-file $L/all.txt --repo-path liger-kernel=$L/lig.git --out /tmp/rl --runs 3 --jobs 10 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline 330 --scratch /tmp/sl --triton-cache /tmp/tcl > $O/liger.log 2>&1; echo "liger rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $L/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( cd $L/tasks && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ) 2>/dev/null
