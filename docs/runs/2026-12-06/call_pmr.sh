#!/usr/bin/env bash
# 2026-12-06, sixth session (prepared for the next GPU session): the gold oracle alone on the GPU
# on the verified tasks whose gold PMR fell outside 1 +- 0.03 beside references (carry
# `.carry/p`, make_carry_pmr.sh beside this script): one task at a time, SCORE_RUNS alternated
# runs each (the PMR's median), nothing else on the GPU, so the rows' `gpu_company` should read 0.
# SCORE_JOBS=N (2026-12-08): N tasks scored side by side, for completion (their PMRs are not
# quiet-GPU numbers then)
# Usage (move release/ aside first): [CARRY=.carry/p] [SCORE_JOBS=1] [NO_WL=1] [SETUP_S=0] [SCORE_RUNS=3] [REQUIRE_GPU=H200] call_pmr.sh [END seconds, default 540]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
# REQUIRE_GPU (2026-12-06, seventh session): the references of `.carry/p` ran on an H200, and a
# score restores their autotuning only on the machine kind that chose it; on an H100 (call 67)
# every run tuned from a cold cache and the first task's three alternated gold runs did not end
# in 420 s. The call stops at once on another GPU (REQUIRE_GPU= to run anyway).
if [ -n "${REQUIRE_GPU-H200}" ] && ! grep -q "${REQUIRE_GPU-H200}" $O/machine.txt; then
  echo "not a ${REQUIRE_GPU-H200}: $(sed -n 2p $O/machine.txt)"; exit 3; fi
C=${CARRY:-.carry/p}; mkdir -p /tmp/cp && tar -xzf $C/tasks.tgz -C /tmp/cp --keep-newer-files 2>/tmp/cp.kept; T=/tmp/cp/tasks
S=$(date +%s); END=${1:-540}
R=""; for b in fla:flash-linear-attention lig:liger-kernel mlm:megatron-lm; do
  [ -e $C/${b%%:*}.git ] && R="$R --repo-path ${b#*:}=$C/${b%%:*}.git"; done
# the score's own out folder on a warm machine keeps what a first call finished: not rerun
# a carry made with KEYED=1 holds the wheelhouses of the tasks' pins (2026-12-07)
W=""; [ -d $C/wh ] && W="--wheelhouse $C/wh"
# the optimizations the workload verified (wl_oracle.txt, make_carry_pmr.sh since 2026-12-07's
# eighth session): the gold timed as a prediction on the workload first, into the score's out
# folder, where `eval score` reads it (base, gold, prediction alternated, two rounds)
# NO_WL=1 (2026-12-08): the scores alone (the workload oracle wants a quiet GPU, another call)
if [ -z "${NO_WL:-}" ] && [ -s $C/wl_oracle.txt ]; then
  timeout -k 30 -s INT $(( END / 2 )) python3 -m eval workload --tasks $T --task-file $C/wl_oracle.txt $R $W \
    --predictions $C/gold.jsonl --rounds 2 --timeout 150 --out /tmp/spmr_gold --scratch /tmp/swp \
    --triton-cache /tmp/tcp > $O/wl_oracle.log 2>&1
  echo "workload oracle rc $? after $(( $(date +%s) - S )) s" >> $O/wl_oracle.log
fi
# SETUP_S=SECONDS (2026-12-08): the do-nothing answer (`setup.jsonl`, `eval oracle --from
# setup`) scored too, in the last SETUP_S seconds or whatever the gold's scores leave
SET=${SETUP_S:-0}; [ -s $C/setup.jsonl ] || SET=0
timeout -k 30 -s INT $(( END - SET - $(date +%s) + S )) python3 -m eval score $C/gold.jsonl --tasks $T --task-file $C/score.txt $R $W \
  --out /tmp/spmr_gold --jobs ${SCORE_JOBS:-1} --runs ${SCORE_RUNS:-3} --timeout 300 --scratch /tmp/scp \
  --triton-cache /tmp/tcp > $O/score_pmr.log 2>&1
echo "pmr rc $? after $(( $(date +%s) - S )) s" >> $O/score_pmr.log
if [ $SET -gt 0 ]; then
  timeout -k 30 -s INT $(( END - 40 - $(date +%s) + S )) python3 -m eval score $C/setup.jsonl --tasks $T --task-file $C/score.txt $R $W \
    --out /tmp/spmr_setup --jobs ${SCORE_JOBS:-1} --runs 1 --timeout 300 --scratch /tmp/scs \
    --triton-cache /tmp/tcp > $O/score_setup.log 2>&1
  echo "setup rc $? after $(( $(date +%s) - S )) s" >> $O/score_setup.log
fi
rm -rf /tmp/pack && mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find spmr_gold spmr_setup -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' -o -name workload_result.json \) -size -2M -print0 | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
grep -hv "━" /tmp/pack/wl_oracle.log /tmp/pack/score_pmr.log /tmp/pack/score_setup.log 2>/dev/null | grep -v no_prediction | tail -n 45 | cut -c1-220
