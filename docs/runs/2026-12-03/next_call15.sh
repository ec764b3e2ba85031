#!/usr/bin/env bash
# Prepared 2026-12-03 (fourth session) for the next one, not run yet; the first call to make.
# 1. the gate on 32 flash-linear-attention tasks, 7 side by side: first six new_op tasks never
#    run whose commits import with the H200's transformers (#789, #720, #688, #689, #664, #653:
#    a stub at the setup state fails any test that launches it), then #714, #717, #795, whose
#    "no fail-to-pass" of 2026-12-03 (second session) came from a selection that had not yet
#    taken the test functions the PR adds first and kept none of them (--reselect), then the 23 released as "the
#    selection run failed (timeout)" before the selection tuned with one config (in call 10 it
#    turned 5 of the 7 such tasks it finished into verified ones; #459, #472, #486, #489 and the
#    Ascend ones left out). --force; a call finishes about 5-7 of them.
# 2. beside it, Liger-Kernel #1329 and #894 again (their PRs add a test function the day-1
#    selection did not keep; "no fail-to-pass" then) and the two tasks for one NVIDIA GPU that
#    never had a reference run (#1104, #731). (The 28 others of next_call14.sh's first list are Ascend
#    kernels, `src/liger_kernel/ops/backends/_ascend/`: `eval rejudge` now marks them
#    out_of_scope from their curation.)
# Carry: .whl .carry/deb .carry/n0 (32 tasks, a 9 MB bundle) .carry/l1 (4 tasks, 2 MB).
# Usage: next_call15.sh [FROM]: FROM skips the first FROM-1 of n0's list (a second call; then
# the Liger-Kernel part does not run again).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0; L=.carry/l1
tail -n +"${1:-1}" $N/all.txt > $N/this.txt
S=$(date +%s); END=500
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $N/tasks --task-file $N/this.txt --repo-path flash-linear-attention=$N/fla.git --out /tmp/rf --jobs 7 --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3 --force --reselect --deadline 60 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
[ "${1:-1}" = 1 ] && ( timeout -k 15 -s INT $END python3 -m eval reference --tasks $L/tasks --task-file $L/all.txt --repo-path liger-kernel=$L/lig.git --out /tmp/rl --runs 3 --jobs 2 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --reselect --deadline 330 --scratch /tmp/sl --triton-cache /tmp/tcl > $O/liger.log 2>&1; echo "liger rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
for d in $N/tasks $L/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for d in $N/tasks $L/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
