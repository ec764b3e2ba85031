#!/usr/bin/env bash
# Prepared 2026-12-04 for a later GPU call, alone (timings): the workloads of ten
# flash-linear-attention optimization tasks planned from its op registry (`fla_opt.txt`: #1000,
# #1109, #1125, #807, #823, #884, #916, #953, #989 and 27c2022aab; ops chunk_gated_delta_rule,
# chunk_kda, chunk_delta_rule, fused_attnres, chunk_gla at the registry's B, T, H, D), never
# timed: base and gold, two rounds, as many as fit (about 90 s a task: some five).
# Carry: .whl .carry/deb .carry/c (made by make_carry.sh beside this script)
# Usage: call24.sh [END seconds, default 540; no task starts after END - 150]
# 2026-12-04 (call 24): with 200 s a process, the first task (chunk_kda at three registry sizes,
# cold cache) measured nothing in 500 s; now 240 s, and a first-round process cut by its limit
# runs once more on what it compiled (each process logs its end: the log says how far it got).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/c; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct && T=/tmp/ct/tasks
S=$(date +%s); END=${1:-540}
timeout -k 30 -s INT $END python3 -m eval workload --tasks $T --task-file $C/fla_opt.txt --repo-path flash-linear-attention=$C/fla.git --rounds 2 --timeout 240 --deadline $(( END - 150 )) --out /tmp/wf --scratch /tmp/swf --triton-cache /tmp/twf > $O/wl_fla.log 2>&1; echo "fla workloads rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
grep -v "━" /tmp/pack/wl_fla.log | tail -n 30 | cut -c1-200
