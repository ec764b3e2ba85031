#!/usr/bin/env bash
# Fifth session of 2026-12-03, call 17 (the last of the session's 30 minutes; its first try was lost when the machine was taken back, so 330 s): the 17
# flash-linear-attention tasks of call 16's list it did not finish (4 stopped at its end, 13 not
# started), 6 side by side, starting none after 120 s; beside them Megatron-LM #4566, #3594,
# #4460, #4603 on wheelhouses that now hold every dependency (call 16: "missing package(s)
# antlr4 / typing_inspection": the wheelhouses had been trimmed against a host list that names
# both, yet the H200 imports neither; machine.txt records which it imports), then the
# workloads of #4460 and #4603 on the same wheelhouses (`eval workload --wheelhouse`, new).
# Carry: .whl .carry/deb .carry/n0 (c17.txt) .carry/m2 (c17.txt, wh rebuilt without --host).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  python3 -c 'import importlib.util as u; print({m: u.find_spec(m) is not None for m in ["antlr4", "typing_inspection", "omegaconf", "pydantic", "annotated_types", "yaml"]})'; } > $O/machine.txt 2>&1
N=.carry/n0; M=.carry/m2
S=$(date +%s); END=330
( timeout -k 20 -s INT $END python3 -m eval reference --tasks $N/tasks --task-file $N/c17.txt --repo-path flash-linear-attention=$N/fla.git --out /tmp/rf --jobs 6 --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3 --force --deadline 120 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
R="--tasks $M/tasks --repo-path megatron-lm=$M/mlm.git --wheelhouse $M/wh"
( timeout -k 15 -s INT 200 python3 -m eval reference $R --task-file $M/c17.txt --select-per-test 1 --max-node-ids 4 --select-timeout 150 --timeout 150 --runs 3 --scratch /tmp/sm --triton-cache /tmp/tcm --force --out /tmp/rm --jobs 4 --deadline 60 > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s"
  timeout -k 15 -s INT $(( END - ($(date +%s) - S) )) python3 -m eval workload $R --task-file $M/opt.txt --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
for d in $N/tasks $M/tasks; do ( cd $d && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -rf /tmp/pack/tasks_$(basename $(dirname $d)).tar -T - ); done
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O && cat $O/machine.txt
for d in $N/tasks $M/tasks; do ( cd $d && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done ); done 2>/dev/null
