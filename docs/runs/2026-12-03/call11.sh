#!/usr/bin/env bash
# 2026-12-03, fourth session, call 11: the flash-linear-attention gate (first-config selection
# tuning) on the four of the eleven selection timeouts call 10 did not finish (#489, #486, #472,
# #459; --force) and the queue's next five (#419, #388, #386, #384, #379), 9 side by side;
# beside it, the gold and the setup state scored as predictions on the five verified
# Liger-Kernel tasks that run on the host's transformers (#1179, #1201, #815, #1187, #945) and on
# flash-linear-attention #429, one task at a time.
# Carry: .whl .carry/deb .carry/q .carry/h/run
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
Q=.carry/q; H=.carry/h/run
S=$(date +%s)
SEL="--select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 120 --runs 3"
( timeout -k 20 -s INT 500 python3 -m eval reference --tasks $Q/tasks --task-file $Q/call11.txt --repo-path flash-linear-attention=$Q/fla.git --out /tmp/rf --jobs 9 $SEL --force --deadline 150 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s" ) &
L="--tasks $H/tasks --repo-path liger-kernel=$H/lig.git --timeout 150 --scratch /tmp/sc --task-file $H/host.txt"
F="--tasks $H/tasks --repo-path flash-linear-attention=$H/fla.git --timeout 150 --scratch /tmp/sfs --task-file $H/fla.txt"
( for v in gold setup; do timeout -k 10 -s INT $(( 480 - ($(date +%s) - S) )) python3 -m eval score $H/lig_$v.jsonl $L --out /tmp/l$v --triton-cache /tmp/tl$v > $O/lig_$v.log 2>&1; echo "lig $v rc $? after $(( $(date +%s) - S )) s"; done
  for v in gold setup; do timeout -k 10 -s INT $(( 480 - ($(date +%s) - S) )) python3 -m eval score $H/fla_$v.jsonl $F --out /tmp/f$v --triton-cache /tmp/tf$v > $O/fla_$v.log 2>&1; echo "fla $v rc $? after $(( $(date +%s) - S )) s"; done ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $Q/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
( cd /tmp && find lgold lsetup fgold fsetup -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( cd $Q/tasks && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][24:70], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:60])" "$f"; done ) 2>/dev/null
for f in lig_gold lig_setup fla_gold fla_setup; do echo "== $f"; tar -xOzf $O/results.tgz ./$f.log 2>/dev/null | grep -v "━" | grep -v no_prediction | tail -n 12; done | cut -c1-200
