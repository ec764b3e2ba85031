#!/usr/bin/env bash
# 2026-12-05, second session (a device came rarely: one call may be all): the optimization
# tasks that need only a workload, or both halves, in one call.
#   1. the five Liger-Kernel references of call31.sh (lig_opt.txt) side by side, at most 280 s,
#      beside Megatron-LM #5608's workload (cold wall time: compiling dominates; its tests
#      were run on 2026-12-04, the workload came from its test's fixture that day);
#   2. Megatron-LM #4460's and #6521's workloads (kernel time; #4460's tests ran 2026-12-03, its first workload
#      run failed to start its wheelhouse venv in the sandbox, fixed since) on a quiet GPU;
#   3. the Liger-Kernel workloads (call31.sh wl) for the rest of the call.
# Both Megatron-LM tasks run on their wheelhouses (omegaconf, pydantic: .carry/m/wh).
# Build .carry/m: docs/runs/2026-12-05/make_carry32.sh STATE MIRRORS. Carry: .whl .carry/deb .carry/g .carry/m
# Usage: call32.sh [END seconds, default 560] [meg: the two Megatron-LM workloads alone, one
# after the other, for a call shorter than 400 s]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
S=$(date +%s); END=${1:-560}; ONLY=${2:-}; left() { echo $(( END - ($(date +%s) - S) )); }
C=.carry/g; M=.carry/m; mkdir -p /tmp/cg && tar -xzf $C/tasks.tgz -C /tmp/cg && tar -xzf $M/tasks.tgz -C /tmp/cg
T=/tmp/cg/tasks; touch -d '1 minute ago' $O/machine.txt
R="--repo-path liger-kernel=$C/lig.git --repo-path megatron-lm=$M/mlm.git"
W="--rounds 2 --memcheck --scratch /tmp/swg --triton-cache /tmp/twg --wheelhouse $M/wh"
[ "$ONLY" = meg ] || ( timeout -k 30 -s INT 280 python3 -m eval reference --tasks $T --task-file $C/lig_opt.txt $R \
    --select-per-test 1 --max-node-ids 3 --select-timeout 120 --timeout 200 --runs 3 \
    --deadline 30 --jobs 5 --out /tmp/rg --scratch /tmp/sg --triton-cache /tmp/tcg > $O/ligref.log 2>&1
  echo "references rc $? after $(( $(date +%s) - S )) s" >> $O/ligref.log ) &
timeout -k 30 -s INT $([ "$ONLY" = meg ] && echo 200 || echo 270) python3 -m eval workload --tasks $T --task megatron-lm__5608___tensor_get_slice_after_kernel \
  $R $W --force --timeout 200 --out /tmp/wm1 > $O/meg5608.log 2>&1
echo "5608 rc $? after $(( $(date +%s) - S )) s" >> $O/meg5608.log
wait
timeout -k 30 -s INT $(( $(left) - 20 )) python3 -m eval workload --tasks $T --task megatron-lm__4460__causal_conv1d_update_kernel \
  --task megatron-lm__6521___weighted_silu_mul_bounded_kernel \
  $R $W --force --timeout 150 --out /tmp/wm2 > $O/meg4460.log 2>&1
echo "4460 rc $? after $(( $(date +%s) - S )) s" >> $O/meg4460.log
L=$(left); [ "$ONLY" != meg ] && [ $L -gt 120 ] && timeout -k 30 -s INT $(( L - 20 )) python3 -m eval workload --tasks $T \
  --task-file $C/lig_opt.txt $R $W --timeout 150 --deadline $(( L - 170 )) --out /tmp/wg > $O/ligwl.log 2>&1
echo "done after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name 'workload*.json' -o -name '*.autotune.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | tail -n 14 | cut -c1-200; done
