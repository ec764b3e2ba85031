#!/usr/bin/env bash
# 2026-12-04, call 21 (docs/runs/2026-12-03/next_call21.sh on this session's carry): resumes the
# 14 flash-linear-attention references that calls 19-20 left unfinished (their
# reference.partial.json: the selection and the finished runs) and starts #660 and #577; 14 side
# by side, nothing beside them.
# Carry: .whl .carry/deb .carry/c (made by make_carry.sh beside this script: tasks.tgz, the
# task directories as scripts/rebuild_state.sh rebuilt them; fla.git; n0.txt)
# Later calls: call21.sh END n1 runs the next batch (make_carry.sh's n1.txt, never run).
# With a non-empty mlm.txt (Megatron-LM tasks never run, their wheelhouses in wh/) those run
# beside, 3 at a time, and the FLA list gets 11 slots.
# Usage: call21.sh [END seconds, default 480] [LIST: n0 (default), n1, sel or rp]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
touch -d '1 minute ago' $O/machine.txt
S=$(date +%s); END=${1:-480}
F="--tasks $T --repo-path flash-linear-attention=$C/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 420 --runs 3"
case "${2:-n0}" in  # sel: failed references rerun; rp: rerun on a new selection
  sel) F="$F --force" ;;
  rp) F="$F --force --reselect" ;;
esac
J=14; M=$C/mlm.txt
if [ -s $M ]; then  # Megatron-LM's never-run tasks (make_carry.sh): 3 beside 11 FLA ones
  J=11; ( timeout -k 60 -s INT $END python3 -m eval reference --tasks $T --task-file $M --repo-path megatron-lm=$C/mlm.git --wheelhouse $C/wh --select-per-test 1 --max-node-ids 4 --select-timeout 240 --timeout 300 --runs 3 --out /tmp/rm --jobs 3 --deadline 300 --scratch /tmp/sm --triton-cache /tmp/tcm > $O/mlm.log 2>&1; echo "mlm rc $? after $(( $(date +%s) - S )) s" ) &
fi
timeout -k 60 -s INT $END python3 -m eval reference $F --task-file $C/${2:-n0}.txt --out /tmp/rf --jobs $J --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name '*.autotune.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( for f in $T/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done
  for f in $T/*/reference.partial.json; do [ $f -nt $O/machine.txt ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'partial', len(r['runs']), 'runs')" "$f"; done ) 2>/dev/null
