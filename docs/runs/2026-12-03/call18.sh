#!/usr/bin/env bash
# Prepared 2026-12-03 (fifth session) for the next one, not run yet; the first call to make.
# 1. flash-linear-attention, 10 side by side, --force, starting none after 300 s: first the six
#    whose PR changes no test and whose selection ran the model tests (collection order) and
#    launched nothing (#789, #720, #688, #689, #664, #653: the selection now takes the tests
#    nearest the target module first), #714 again (its selection log: see the packing below),
#    then the 16 of call 17's list it did not finish (former
#    "selection run failed (timeout)" verdicts; a call finishes about 6-8 with 6-8 side by
#    side; 10 here, since a run is mostly its interpreter importing the framework on one core).
# 2. beside it, Megatron-LM #4566, #4460, #4603 on their rebuilt wheelhouses (call 17 stopped
#    them at 200 s), then the workloads of the optimizations #4460 and #4603 on the same
#    wheelhouses (`eval workload --wheelhouse`).
# Carry: .whl .carry/deb .carry/n0 (c18.txt) .carry/m2 (c18.txt, wh rebuilt without --host).
# Usage: next_call18.sh [FROM]: FROM skips the first FROM-1 of c18.txt (a second call; the
# Megatron-LM part then does not run again).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0; M=.carry/m2
tail -n +"${1:-1}" $N/c18.txt > $N/this.txt
S=$(date +%s); END=500
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $N/tasks --task-file $N/this.txt --repo-path flash-linear-attention=$N/fla.git --out /tmp/rf --jobs 10 --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3 --force --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
if [ "${1:-1}" = 1 ]; then
  R="--tasks $M/tasks --repo-path megatron-lm=$M/mlm.git --wheelhouse $M/wh"
  ( timeout -k 15 -s INT 360 python3 -m eval reference $R --task-file $M/c18.txt --select-per-test 1 --max-node-ids 4 --select-timeout 200 --timeout 200 --runs 3 --scratch /tmp/sm --triton-cache /tmp/tcm --force --out /tmp/rm --jobs 3 > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s"
    timeout -k 15 -s INT $(( END - ($(date +%s) - S) )) python3 -m eval workload $R --task-file $M/opt.txt --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s" ) &
fi
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
# the selection runs' pytest logs (small): call 15's #714 selection ran 3 tests without the
# PR's test_conv_cache_backward_no_final_state, which the same collection on the CPU ranks first
( cd /tmp && find rf rm -path '*/select/pytest.log' 2>/dev/null | tar -czf /tmp/pack/select_logs.tgz -T - )
for d in $N/tasks $M/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for d in $N/tasks $M/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
