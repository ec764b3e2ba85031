#!/usr/bin/env bash
# 2026-12-05, third session, call 34 (carry .whl .carry/deb .carry/g .carry/m, built by
# make_carry31.sh / make_carry32.sh): workloads only, on a quiet GPU: Megatron-LM #4460 replanned
# on the device (--force: the planner of this commit, batch not cache), then the Liger-Kernel
# optimization tasks whose references call 32 ran (#1208, #1268, #1362), then #6521.
# Usage: call34.sh [END seconds, default 480]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
S=$(date +%s); END=${1:-480}; left() { echo $(( END - ($(date +%s) - S) )); }
C=.carry/g; M=.carry/m; mkdir -p /tmp/cg && tar -xzf $C/tasks.tgz -C /tmp/cg && tar -xzf $M/tasks.tgz -C /tmp/cg
T=/tmp/cg/tasks; touch -d '1 minute ago' $O/machine.txt
R="--repo-path liger-kernel=$C/lig.git --repo-path megatron-lm=$M/mlm.git"
W="--rounds 2 --memcheck --scratch /tmp/swg --triton-cache /tmp/twg --wheelhouse $M/wh --timeout 150"
timeout -k 20 -s INT 170 python3 -m eval workload --tasks $T --task megatron-lm__4460__causal_conv1d_update_kernel \
  $R $W --force --out /tmp/w1 > $O/meg4460.log 2>&1; echo "4460 rc $? after $(( $(date +%s) - S )) s" >> $O/meg4460.log
printf '%s\n' liger-kernel__1208___dyt_bwd_kernel liger-kernel__1268__liger_cross_entropy_kernel \
  liger-kernel__1362__liger_cross_entropy_kernel megatron-lm__6521___weighted_silu_mul_bounded_kernel > /tmp/l.txt
L=$(left); timeout -k 20 -s INT $(( L - 15 )) python3 -m eval workload --tasks $T --task-file /tmp/l.txt $R $W \
  --deadline $(( L - 130 )) --out /tmp/w2 > $O/lig.log 2>&1; echo "rc $? after $(( $(date +%s) - S )) s" >> $O/lig.log
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name 'workload*.json' -o -name task.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
# the plan a result was measured on, even when the carry brought it (older than machine.txt)
( cd $T && for r in */workload_result.json; do [ $r -nt $O/machine.txt ] && [ -f ${r%_result.json}.json ] && echo ./${r%_result.json}.json; done | tar -rf /tmp/pack/tasks_c.tar -T - 2>/dev/null )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | tail -n 16 | cut -c1-220; done
