#!/usr/bin/env bash
# 2026-12-05, fourth session, call 35 (carry .whl .carry/deb .carry/p; build: make_carry35.sh).
# Side by side, none of it timed against a quiet GPU's numbers:
#   - the references of flash-linear-attention #463 and #466 (their partials resume) and of
#     #d9d936e4af on its transformers 4.47.1 wheelhouse (--force: call 33's run failed `import
#     fla` without it), 3 runs each;
#   - the oracle: the gold targets and the setup state scored as predictions on score.txt
#     (verified tasks without those scores), JOBS tasks side by side in each stream.
# Resumable: a cut reference keeps reference.partial.json, a cut score its results.jsonl lines.
# Call 37 (the same carry, ref.txt emptied, score_gold.txt / score_setup.txt: the tasks call 35
# left unscored, Liger-Kernel first): only the oracle.
# Usage: [JOBS=6] call35.sh [END seconds, default 520]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=.carry/p; mkdir -p /tmp/cp && tar -xzf $C/tasks.tgz -C /tmp/cp && T=/tmp/cp/tasks
touch -d '1 minute ago' $O/machine.txt
S=$(date +%s); END=${1:-520}; J=${JOBS:-6}
R=""; for b in flash-linear-attention:fla liger-kernel:lig; do
  [ -d $C/${b#*:}.git ] && R="$R --repo-path ${b%%:*}=$C/${b#*:}.git"; done
F="--tasks $T $R --wheelhouse $C/wh --timeout 420 --runs 3 --deadline 60 --scratch /tmp/sr --triton-cache /tmp/tcr"
grep -v d9d936e4af $C/ref.txt > /tmp/ref_resume.txt; grep d9d936e4af $C/ref.txt > /tmp/ref_force.txt
[ -s /tmp/ref_resume.txt ] && ( timeout -k 30 -s INT $END python3 -m eval reference $F --task-file /tmp/ref_resume.txt --jobs 2 --out /tmp/rr > $O/ref.log 2>&1
  echo "references rc $? after $(( $(date +%s) - S )) s" >> $O/ref.log ) &
[ -s /tmp/ref_force.txt ] && ( timeout -k 30 -s INT $END python3 -m eval reference $F --force --task-file /tmp/ref_force.txt --jobs 1 --out /tmp/rf > $O/ref_wh.log 2>&1
  echo "reference rc $? after $(( $(date +%s) - S )) s" >> $O/ref_wh.log ) &
for v in gold setup; do
  L=$C/score.txt; [ -s $C/score_$v.txt ] && L=$C/score_$v.txt  # call 37: what call 35 left
  ( timeout -k 30 -s INT $END python3 -m eval score $C/$v.jsonl --tasks $T --task-file $L $R \
      --wheelhouse $C/wh --out /tmp/s$v --jobs $J --timeout 300 --scratch /tmp/sc$v --triton-cache /tmp/t$v > $O/score_$v.log 2>&1
    echo "$v rc $? after $(( $(date +%s) - S )) s" >> $O/score_$v.log ) &
done
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name '*.autotune.json' -o -name env.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
( cd /tmp && find sgold ssetup -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | grep -v no_prediction | tail -n 14 | cut -c1-200; done
