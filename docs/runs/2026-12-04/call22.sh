#!/usr/bin/env bash
# Prepared 2026-12-04 (no device time was left that day), for the next GPU session: the gold
# targets and the setup state (the do-nothing answer) scored as predictions on the 21 verified
# tasks not yet scored whose reference ran on the host's packages (`score.txt`: 19
# flash-linear-attention, Liger-Kernel #1329 and #894; #429's gold was scored, its setup not);
# issue 9 asks for 100% and 0%. The gold and setup streams run side by side, 4 tasks each.
# Carry: .whl .carry/deb .carry/c (tasks.tgz, fla.git, lig.git, mlm.git, gold.jsonl,
# setup.jsonl, score.txt; made by make_carry.sh beside this script)
# Usage: call22.sh [END seconds, default 470]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
S=$(date +%s); END=${1:-470}
R="--repo-path flash-linear-attention=$C/fla.git --repo-path liger-kernel=$C/lig.git --repo-path megatron-lm=$C/mlm.git"
for v in gold setup; do
  ( timeout -k 30 -s INT $END python3 -m eval score $C/$v.jsonl --tasks $T --task-file $C/score.txt $R --out /tmp/s$v --jobs 4 --timeout 300 --scratch /tmp/sc$v --triton-cache /tmp/t$v > $O/score_$v.log 2>&1; echo "$v rc $? after $(( $(date +%s) - S )) s" ) &
done
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find sgold ssetup -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for v in gold setup; do echo "== $v"; grep -v "━" /tmp/pack/score_$v.log | grep -v no_prediction | tail -n 8; done | cut -c1-200
