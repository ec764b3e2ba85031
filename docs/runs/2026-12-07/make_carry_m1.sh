#!/usr/bin/env bash
# Builds `.carry/m1` (2026-12-07, seventh session): the memcheck probe's first GPU run
# (`scripts/memcheck_probe.py`): four flash-linear-attention bug fixes of out-of-bounds accesses
# whose tests pass at the setup state and with the gold (#1135, #795, #794, #907; on the host's
# packages, as their references ran), their task directories with env.json (tasks.tgz), a slim
# bundle of their trees (fla.git), the id list and the call script (call_m1.sh, copied beside).
# Usage (repository root, venv active): make_carry_m1.sh STATE MIRRORS
set -euo pipefail
state=${1:?usage: make_carry_m1.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry_m1.sh STATE MIRRORS}
T=$state/tasks; C=.carry/m1; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C $work/tasks
for n in 1135 795 794 907; do ls -d $T/flash-linear-attention__${n}__*; done | xargs -n1 basename > $C/ids.txt
for t in $(cat $C/ids.txt); do cp -r $T/$t $work/tasks/; done
python -m envbuild --tasks $work/tasks --work $state/work --no-lint > /dev/null
python -m eval bundle --tasks $work/tasks --task-file $C/ids.txt \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo \
  --out $C/fla.git --path fla --path tests --path benchmarks | tail -n 1
tar -C $work -czf $C/tasks.tgz tasks
cp "$(dirname "$0")/call_m1.sh" $C/
wc -l $C/ids.txt; du -sh $C
