#!/usr/bin/env bash
# Prepared 2026-12-04 for the next GPU session, to run alone (timings): (1) issue 10 item 7, the
# anchored harness (`eval workload --predictions P --anchored`: the gold timed once beside the
# prediction, the base's times from the task's gate measurement) on Liger-Kernel #815 and #1187,
# with the gold (PMR 1.0, fast_gold expected) and then the setup state (must not complete) as
# predictions: its `seconds` give the GPU time per task (projected 52-53 s); (2) Megatron-LM
# #4460's workload on its pinned wheelhouse (call 18's measurement failed before the sandbox
# mounted the wheelhouse's venv).
# Carry: .whl .carry/deb .carry/c (made by make_carry.sh beside this script)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
S=$(date +%s)
W="--tasks $T --task-file $C/wl.txt --repo-path liger-kernel=$C/lig.git --rounds 2 --timeout 150"
for v in gold setup; do
  timeout -k 20 -s INT 170 python3 -m eval workload $W --predictions $C/$v.jsonl --anchored --out /tmp/w$v --scratch /tmp/sw$v --triton-cache /tmp/tw$v > $O/wl_$v.log 2>&1; echo "anchored $v rc $? after $(( $(date +%s) - S )) s"
done
# then scored on those workload times (the same --out): call 12 of 2026-12-03 timed the gold as
# a prediction on these two workloads but its score step was cut before it wrote a row
for v in gold setup; do
  timeout -k 20 -s INT 150 python3 -m eval score $C/$v.jsonl --tasks $T --task-file $C/wl.txt --repo-path liger-kernel=$C/lig.git --out /tmp/w$v --timeout 150 --scratch /tmp/ss$v --triton-cache /tmp/tw$v > $O/score_$v.log 2>&1; echo "score $v rc $? after $(( $(date +%s) - S )) s"
done
L=$(( 560 - ($(date +%s) - S) ))  # what is left of the call for #4460 (it needs ~150 s)
[ $L -lt 150 ] && echo "4460 not started: $L s left" || timeout -k 20 -s INT $L python3 -m eval workload --tasks $T --repo-path megatron-lm=$C/mlm.git --wheelhouse $C/wh --task megatron-lm__4460__causal_conv1d_update_kernel --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm > $O/wl_4460.log 2>&1; echo "4460 rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find wgold wsetup wm -maxdepth 3 \( -name 'report.*' -o -name '*.jsonl' -o -name 'workload_result.json' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/workloads.tar -T - )
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in wl_gold wl_setup score_gold score_setup wl_4460; do echo "== $f"; grep -v "━" /tmp/pack/$f.log | tail -n 8; done | cut -c1-200
