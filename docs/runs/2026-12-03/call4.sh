#!/usr/bin/env bash
# Session of 2026-12-03 (second), call 4: the gate on 45 never-run flash-linear-attention tasks
# (bug_fix / feature / new_op with a test the PR changed, newest first, context-parallel ones
# last) and four never-run Liger-Kernel tasks, beside the gold and the setup state scored as
# predictions on flash-linear-attention #535, #574, #642, #693 and Liger-Kernel #262, #320.
# Test runs now keep Triton's autotuning results in their cache (TRITON_CACHE_AUTOTUNING).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c
S=$(date +%s)
SEL="--select-per-test 1 --select-max 8 --max-node-ids 3 --select-timeout 200 --timeout 150 --runs 3"
F="--tasks $C/tasks --repo-path flash-linear-attention=$C/fla.git"
L="--tasks $C/tasks --repo-path liger-kernel=$C/lig.git"
( timeout -k 15 -s INT 545 python3 -m eval reference $F --task-file $C/fla_gate.txt --out /tmp/rf --jobs 6 $SEL --deadline 340 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 15 -s INT 545 python3 -m eval reference $L --task-file $C/lig_gate.txt --out /tmp/rl --jobs 1 $SEL --deadline 340 --scratch /tmp/sl --triton-cache /tmp/tcl > $O/lig.log 2>&1; echo "lig rc $? after $(( $(date +%s) - S )) s" ) &
SC="--timeout 150 --scratch /tmp/sc"
( timeout -k 10 -s INT 500 python3 -m eval score $C/fla_gold.jsonl $F --out /tmp/fg --jobs 2 $SC --triton-cache /tmp/tsf1 > $O/fla_gold.log 2>&1; echo "fla gold rc $?" ) &
( timeout -k 10 -s INT 500 python3 -m eval score $C/fla_setup.jsonl $F --out /tmp/fs --jobs 2 $SC --triton-cache /tmp/tsf2 > $O/fla_setup.log 2>&1; echo "fla setup rc $?" ) &
( timeout -k 10 -s INT 500 python3 -m eval score $C/lig_gold.jsonl $L --out /tmp/lg --jobs 1 $SC --triton-cache /tmp/tsl1 > $O/lig_gold.log 2>&1; echo "lig gold rc $?"
  timeout -k 10 -s INT $(( 510 - ($(date +%s) - S) )) python3 -m eval score $C/lig_setup.jsonl $L --out /tmp/ls --jobs 1 $SC --triton-cache /tmp/tsl2 > $O/lig_setup.log 2>&1; echo "lig setup rc $?" ) &
wait
( cd $C/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/tasks.tgz -T - )
( cd /tmp && find rf rl -maxdepth 3 \( -name '*.json' -o -name '*.md' \) -size -1M -print0 | tar --null -czf $O/logs.tgz -T - )
( cd /tmp && find fg fs lg ls -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' -o -name '*.json' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in fla lig fla_gold fla_setup lig_gold lig_setup; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 40; done | cut -c1-200
