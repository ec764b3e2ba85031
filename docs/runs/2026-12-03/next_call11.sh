#!/usr/bin/env bash
# Prepared 2026-12-03 for the next session (not run yet): Megatron-LM, one verified task of 35.
# The gate on #4566 (omegaconf) and #3594 (pydantic), which failed on 2026-12-01 for packages
# the H200 image has since, and on !3220 / !3912 (`github`: PyGithub is among the carried .whl,
# which the sandbox shows the tests); then the first reference runs of the optimizations #4460
# and #4603 (their launches captured), and their workloads planned from those captures and
# timed. Carry: .whl .carry/deb .carry/m (6 tasks, a 14 MB bundle of megatron/ and tests/).
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
M=.carry/m
S=$(date +%s)
R="--tasks $M/tasks --repo-path megatron-lm=$M/mlm.git --select-per-test 1 --max-node-ids 4 --select-timeout 240 --timeout 300 --runs 3 --scratch /tmp/sm --triton-cache /tmp/tcm"
timeout -k 15 -s INT 330 python3 -m eval reference $R --task-file $M/all.txt --out /tmp/rm --jobs 6 --deadline 60 > $O/gate.log 2>&1; echo "gate rc $? after $(( $(date +%s) - S )) s"
timeout -k 15 -s INT $(( 520 - ($(date +%s) - S) )) python3 -m eval workload --tasks $M/tasks --task-file $M/opt.txt --repo-path megatron-lm=$M/mlm.git --force --memcheck --rounds 2 --timeout 150 --out /tmp/wm --scratch /tmp/swm --triton-cache /tmp/tcw > $O/workload.log 2>&1; echo "workload rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $M/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json -o -name 'workload*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && ls -la $O
for f in gate workload; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 30; done | cut -c1-200
