#!/usr/bin/env bash
# 2026-12-05, sixth session, calls 41-42 (carry .whl .carry/deb .carry/f; build:
# `KEYS=<key> docs/runs/2026-12-04/make_carry29.sh STATE MIRRORS WHEELHOUSES`): flash-linear-
# attention tasks of before mid-2025 whose PR changed a test, never run, on their date-pinned
# transformers (one wheelhouse key a call: call 41 4.46.3, 16 tasks; call 42 4.44.0, 10 tasks),
# beside the partial references the state holds (n0.txt, on the host's packages, N0_JOBS at once).
# Then, as call39.sh, the tasks the references verified are scored with their gold targets on
# the references' own Triton cache (the oracle keeps up with the verified count).
# Differences from call29.sh: the pinned tasks run without --force (none ran before), the
# partials run N0_JOBS at once instead of one, the references stop at REF_END so that the gold
# of what they verified is scored before END.
# Since the sixth session the carry may hold score.txt and gold.jsonl: the gold oracle on the
# verified tasks of its keys, GOLD_JOBS streams beside the references (wh.txt may be empty).
# SCORE_RUNS (2026-12-06, second session): runs per gold score, alternating (the PMR's median; docs/verification.md)
# Usage (move release/ aside first, docs/runs/2026-12-06/next_calls.md): [CARRY=.carry/f] [FORCE=1] [SELECT_PER_TEST=1] [MAX_NODE_IDS=3] [SELECT_TIMEOUT=180] [JOBS=14] [N0_JOBS=2] [GOLD_JOBS=4] [SCORE_RUNS=1] call41.sh [END seconds, default 540] [REF_END, default END-100]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
# --keep-newer-files (2026-12-06, sixth session): on a warm machine the previous call's
# partial references and workload results are newer than the carry's copies and are kept
# (calls 61, 63 and 64 restarted the partials' runs each time: 3 calls, 0-1 runs kept each)
C=${CARRY:-.carry/f}; mkdir -p /tmp/ct && tar -xzf $C/tasks.tgz -C /tmp/ct --keep-newer-files 2>/tmp/ct.kept; T=/tmp/ct/tasks  # tar exits 2 when it kept a newer file (call 66)
touch -d '1 minute ago' $O/machine.txt
S=$(date +%s); END=${1:-540}; REF_END=${2:-$(( END - 100 ))}
R="--repo-path flash-linear-attention=$C/fla.git"
# FORCE=1 (2026-12-06): run again the references of tasks judged before (the selection retry)
# SELECT_TIMEOUT (2026-12-06, sixth session): the selection run's limit, 180 s by default; four
# flash-linear-attention selections (#459, #472, #602, #660) and Liger-Kernel #1248 were killed
# at 180 s compiling from a cold cache beside 10-14 streams
# RESELECT=1 (2026-12-07, eighth session): choose the node ids again (`--reselect`); FORCE
# alone reruns a judged task on the node ids it has (call 87 ran .carry/fX's 19 tasks so)
# SELECT_PER_TEST, MAX_NODE_IDS (2026-12-06, third session): the selection's caps, for the "no
# fail-to-pass" experiment (next_calls.md: FORCE=1 SELECT_PER_TEST=3 MAX_NODE_IDS=5)
F="${FORCE:+--force }${RESELECT:+--reselect }--tasks $T $R --select-per-test ${SELECT_PER_TEST:-1} --max-node-ids ${MAX_NODE_IDS:-3} --select-timeout ${SELECT_TIMEOUT:-180} --timeout 420 --runs 3 --deadline 300 --triton-cache /tmp/tcr"
if [ -s $C/n0.txt ] && [ ${N0_JOBS:-2} -gt 0 ]; then
  ( timeout -k 30 -s INT $REF_END python3 -m eval reference $F --task-file $C/n0.txt --out /tmp/r0 \
      --jobs ${N0_JOBS:-2} --scratch /tmp/s0 > $O/n0.log 2>&1
    echo "n0 rc $? after $(( $(date +%s) - S )) s" >> $O/n0.log ) &
fi
# since 2026-12-06 the pinned references' gold is scored as soon as they end (call 44: the
# partials' stream held it back until REF_END, and 9 of 13 were scored in the 80 s left)
[ -s $C/wh.txt ] && ( timeout -k 30 -s INT $REF_END python3 -m eval reference $F --wheelhouse $C/wh \
    --task-file $C/wh.txt --out /tmp/rf --jobs ${JOBS:-14} --scratch /tmp/sf > $O/fla.log 2>&1
  echo "fla rc $? after $(( $(date +%s) - S )) s" >> $O/fla.log
  new_gold $C/wh.txt $(( END - ($(date +%s) - S) )) 8 _fla ) &
# the gold oracle on the verified tasks of the carried keys that it has not scored (score.txt,
# make_carry29.sh since the sixth session), GOLD_JOBS at once, until REF_END
if [ -s $C/score.txt ] && [ ${GOLD_JOBS:-4} -gt 0 ]; then
  ( timeout -k 30 -s INT $REF_END python3 -m eval score $C/gold.jsonl --tasks $T --task-file $C/score.txt \
      $R --wheelhouse $C/wh --out /tmp/sgold --jobs ${GOLD_JOBS:-4} --runs ${SCORE_RUNS:-1} --timeout 300 --scratch /tmp/scg \
      --triton-cache /tmp/tcg > $O/score_gold.log 2>&1
    echo "gold rc $? after $(( $(date +%s) - S )) s" >> $O/score_gold.log ) &
fi
wait
new_gold $C/n0.txt $(( END - ($(date +%s) - S) )) 8
# a fresh pack: a warm machine keeps /tmp, and call 58 returned call 57's logs and scores again
rm -rf /tmp/pack && mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name '*.autotune.json' -o -name env.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
( cd /tmp && find sgold sgold_new* -maxdepth 2 \( -name 'report.*' -o -name '*.jsonl' \) -size -2M -print0 2>/dev/null | tar --null -cf /tmp/pack/scores.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | grep -v no_prediction | tail -n 14 | cut -c1-200; done
( for f in $T/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:90])" "$f"; done ) 2>/dev/null
