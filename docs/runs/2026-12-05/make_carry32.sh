#!/usr/bin/env bash
# Builds `.carry/m`, call32.sh's Megatron-LM half (2026-12-05, second session): the two
# Megatron-LM optimization tasks whose tests passed on the H200 and which need only their
# workload, #5608 (cold wall time, from its test's fixture), #4460 (kernel time) and #6521
# (fused MoE, from its test's call since the second session of 2026-12-05), with
# their environments' wheelhouses (omegaconf, pydantic: 2.7 MB each) and a slim bundle of
# `megatron/` and `tests/` at their commits. 15 MB in all.
# Usage (repository root, venv active): make_carry32.sh STATE MIRRORS
set -euo pipefail
state=${1:?usage: make_carry32.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry32.sh STATE MIRRORS}
C=.carry/m; work=$(mktemp -d); R=megatron-lm=$mirrors/NVIDIA+Megatron-LM/repo
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C/wh $work/tasks
printf '%s\n' megatron-lm__5608___tensor_get_slice_after_kernel \
  megatron-lm__4460__causal_conv1d_update_kernel \
  megatron-lm__6521___weighted_silu_mul_bounded_kernel > $C/opt.txt
for t in $(cat $C/opt.txt); do cp -r $state/tasks/$t $work/tasks/; done
python -m envbuild --tasks $work/tasks --no-lint --repo-path $R > $work/envb.log
python -m envbuild.wheelhouse --tasks $work/tasks --task-file $C/opt.txt --out $work/wh \
  --host envbuild/hosts/h200.txt | tail -n 1
cp -r $work/wh/* $C/wh/
python -m eval workload --plan-only --force --tasks $work/tasks --repo-path $R --out $work/plan | tail -n 3
python -m eval bundle --tasks $work/tasks --task-file $C/opt.txt --repo-path $R --out $C/mlm.git \
  --path megatron --path tests | tail -n 1
tar -C $work -czf $C/tasks.tgz tasks
du -sh $C
