#!/usr/bin/env bash
# 2026-12-03, fourth session, call 12 (the session's last): three things side by side.
# 1. flash-linear-attention #459 with the selection's full tuning (`--select-autotune all`,
#    300 s): call 11's first-config selection saw its gold fail two simple_gla tests (dg);
#    does the policy cause that, or does the gold fail on Triton 3.6 either way?
# 2. the gate on ten never-run flash-linear-attention tasks whose commit imports with the
#    H200's transformers (fla/models/bitnet registers with exist_ok; call 11 lost #379, #384,
#    #386 to "'bitnet' is already used by a Transformers config"), 7 side by side.
# 3. Megatron-LM's gate on #4566, #3594, !3220, !3912 (they failed on 2026-12-01 for packages).
# 4. Liger-Kernel #815 and #1187 (optimizations verified on their workloads): the gold and the
#    setup state as predictions on the workload, then scored on its times.
# Carry: .whl .carry/deb .carry/r .carry/m .carry/h/run
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
R=.carry/r; M=.carry/m; H=.carry/h/run
S=$(date +%s); END=440
SEL="--select-per-test 1 --max-node-ids 3 --timeout 120 --runs 3"
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $R/tasks --task-file $R/sel_all.txt --repo-path flash-linear-attention=$R/fla.git --out /tmp/ra $SEL --select-timeout 300 --select-autotune all --scratch /tmp/sa --triton-cache /tmp/tca > $O/fla_all.log 2>&1; echo "459 rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $R/tasks --task-file $R/gate.txt --repo-path flash-linear-attention=$R/fla.git --out /tmp/rf --jobs 7 $SEL --select-timeout 180 --deadline 60 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $M/tasks --task-file $M/gate.txt --repo-path megatron-lm=$M/mlm.git --select-per-test 1 --max-node-ids 4 --select-timeout 240 --timeout 300 --runs 3 --out /tmp/rm --jobs 4 --deadline 30 --scratch /tmp/sm --triton-cache /tmp/tcm > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s" ) &
W="--tasks $H/tasks --task-file $H/wl.txt --repo-path liger-kernel=$H/lig.git"
( for v in gold setup; do
    timeout -k 10 -s INT $(( END - 40 - ($(date +%s) - S) )) python3 -m eval workload $W --predictions $H/lig_$v.jsonl --out /tmp/w$v --rounds 2 --timeout 150 --scratch /tmp/sw$v --triton-cache /tmp/tw$v > $O/wl_$v.log 2>&1; echo "workload $v rc $? after $(( $(date +%s) - S )) s"
  done
  for v in gold setup; do
    timeout -k 10 -s INT $(( END - ($(date +%s) - S) )) python3 -m eval score $H/lig_$v.jsonl $W --out /tmp/w$v --timeout 150 --scratch /tmp/ss$v --triton-cache /tmp/tw$v > $O/score_$v.log 2>&1; echo "score $v rc $? after $(( $(date +%s) - S )) s"
  done ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( for d in $R/tasks $M/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done )
( cd /tmp && find wgold wsetup -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' -o -name 'workload_result.json' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for d in $R/tasks $M/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
for f in score_gold score_setup; do echo "== $f"; tar -xOzf $O/results.tgz ./$f.log 2>/dev/null | grep -v "━" | grep "^|" | tail -n 4; done | cut -c1-220
