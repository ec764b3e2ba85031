#!/usr/bin/env bash
# 2026-12-05, fifth session, calls 39-40 (carry .whl .carry/deb .carry/p; build:
# `REF_IDS=FILE make_carry35.sh STATE MIRRORS`). Side by side, on a busy GPU (nothing timed):
#   - the references of ref.txt, never run before: selection run (1 parametrization a test
#     function, 3 node ids kept, 180 s) then 3 base and 3 gold runs each, REF_JOBS at once;
#   - the oracle: the gold targets scored as predictions on score.txt (verified tasks without a
#     gold score), GOLD_JOBS at once, and the setup state with SETUP_JOBS (0: not scored).
#   - then (NEW_GOLD=1, the default since call 39 ran), when the references end before END, the
#     tasks they verified scored with their gold targets on the references' own Triton cache
#     (the gold tree's kernels are the same source, so they are not compiled again): the oracle
#     keeps up with the verified count instead of trailing it (call 39: 3 verified, 4 scored).
# Resumable: a cut reference keeps reference.partial.json, a cut score its results.jsonl lines,
# so call 40 runs the same script on the carry with what call 39 brought back merged.
# Usage: [REF_JOBS=12] [GOLD_JOBS=4] [SETUP_JOBS=0] [NEW_GOLD=1] call39.sh [END seconds, default 560]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/p; mkdir -p /tmp/cp && tar -xzf $C/tasks.tgz -C /tmp/cp && T=/tmp/cp/tasks
touch -d '1 minute ago' $O/machine.txt
S=$(date +%s); END=${1:-560}
R=""; for b in flash-linear-attention:fla liger-kernel:lig; do
  [ -d $C/${b#*:}.git ] && R="$R --repo-path ${b%%:*}=$C/${b#*:}.git"; done
F="--tasks $T $R --wheelhouse $C/wh --timeout 420 --runs 3 --deadline 300 --scratch /tmp/sr --triton-cache /tmp/tcr"
[ -s $C/ref.txt ] && [ ${REF_JOBS:-12} -gt 0 ] && ( timeout -k 30 -s INT $END python3 -m eval reference $F \
    --select-per-test 1 --max-node-ids 3 --select-timeout 180 --task-file $C/ref.txt --jobs ${REF_JOBS:-12} \
    --out /tmp/rr > $O/ref.log 2>&1
  echo "references rc $? after $(( $(date +%s) - S )) s" >> $O/ref.log ) &
for v in gold:${GOLD_JOBS:-4} setup:${SETUP_JOBS:-0}; do
  J=${v#*:}; v=${v%%:*}; [ $J -gt 0 ] || continue
  ( timeout -k 30 -s INT $END python3 -m eval score $C/$v.jsonl --tasks $T --task-file $C/score.txt $R \
      --wheelhouse $C/wh --out /tmp/s$v --jobs $J --timeout 300 --scratch /tmp/sc$v --triton-cache /tmp/t$v > $O/score_$v.log 2>&1
    echo "$v rc $? after $(( $(date +%s) - S )) s" >> $O/score_$v.log ) &
done
wait
L=$(( END - ($(date +%s) - S) ))
[ "${NEW_GOLD:-1}" = 1 ] && [ $L -gt 120 ] && new_gold $C/ref.txt $L 6  # the references' newly verified tasks
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name '*.autotune.json' -o -name env.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
( cd /tmp && find sgold ssetup sgold_new -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | grep -v no_prediction | tail -n 16 | cut -c1-200; done
