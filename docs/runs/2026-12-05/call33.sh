#!/usr/bin/env bash
# 2026-12-05, third session, calls 33 and 34 (carry .whl .carry/deb and CARRY, default .carry/s;
# build: make_carry33.sh):
#   1. the references of ref.txt side by side (--force: the stored node ids are kept; a first
#      flash-linear-attention run compiles cold, up to 300 s), at most REF seconds;
#   2. then, on a quiet GPU, the workloads of wl.txt in order until END; resumable, a cut one
#      is timed again by the next call.
# RESELECT=1 (2026-12-07, eighth session): the references choose their node ids again
# (`--reselect`); --force alone reruns a judged task on the node ids it has (call 87)
# Usage: [CARRY=.carry/t] [RESELECT=1] [COUNT=SECONDS] [WL_TIMEOUT=SECONDS] call33.sh [END seconds, default 520] [REF seconds, default 270]
# (WL_TIMEOUT, 2026-12-07: a workload process's limit, default 150 s; flash-linear-attention
# #733's cold `chunk_gla` forward and backward at three sizes took longer, calls 71)
# (a carry with control.txt times those tasks' setup state beside base and gold first)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
S=$(date +%s); END=${1:-520}; REF=${2:-270}; left() { echo $(( END - ($(date +%s) - S) )); }
# --keep-newer-files (2026-12-06, sixth session): on a warm machine the previous call's
# partial references and workload results are newer than the carry's copies and are kept
# (calls 61, 63 and 64 restarted the partials' runs each time: 3 calls, 0-1 runs kept each)
C=${CARRY:-.carry/s}; mkdir -p /tmp/cs && tar -xzf $C/tasks.tgz -C /tmp/cs --keep-newer-files 2>/tmp/cs.kept; T=/tmp/cs/tasks
touch -d '1 minute ago' $O/machine.txt
R=""; for b in flash-linear-attention:fla liger-kernel:lig megatron-lm:mlm; do
  [ -d $C/${b#*:}.git ] && R="$R --repo-path ${b%%:*}=$C/${b#*:}.git"; done
[ -s $C/ref.txt ] && [ $REF -gt 0 ] && { timeout -k 30 -s INT $REF python3 -m eval reference --tasks $T \
  --task-file $C/ref.txt $R --force ${RESELECT:+--reselect }--wheelhouse $C/wh --timeout 420 --runs 3 --deadline 30 \
  --jobs $(wc -l < $C/ref.txt) --out /tmp/rs --scratch /tmp/ss --triton-cache /tmp/tcs > $O/ref.log 2>&1
  echo "references rc $? after $(( $(date +%s) - S )) s" >> $O/ref.log; }
# control.txt (2026-12-06, fifth session; make_carry33.sh CONTROL=FILE): an A/A check before
# the workloads: the setup state (`eval oracle --from setup`, the base's code) timed as a
# prediction beside base and gold, all alternated; it must tie the base, or the method is
# biased (#1033's 1.21x cold wall time rests on a guarded store). Its results: /tmp/wctl.
if [ -s $C/control.txt ]; then
  python3 -m eval oracle --tasks $T --task-file $C/control.txt $R --from setup --out /tmp/ctl.jsonl > $O/ctl.log 2>&1
  L=$(left); timeout -k 30 -s INT $(( L - 15 )) python3 -m eval workload --tasks $T --task-file $C/control.txt \
    $R --wheelhouse $C/wh --predictions /tmp/ctl.jsonl --rounds 2 --timeout 150 --deadline $(( L - 120 )) \
    --scratch /tmp/swc --triton-cache /tmp/twc --out /tmp/wctl >> $O/ctl.log 2>&1
  echo "control rc $? after $(( $(date +%s) - S )) s" >> $O/ctl.log
fi
# COUNT=SECONDS (2026-12-06, eighth session): first count the matrix-product FLOPs of the
# workloads' gold calls (`eval workload --count-flops`, Triton's interpreter on CUDA tensors:
# CPU-bound, nothing timed beside it; flash-linear-attention's device context fails on a
# CPU-only torch, so its counts are made here), at most COUNT seconds; the counted workload.json
# comes back with the timed result
if [ -n "${COUNT:-}" ] && [ -s $C/wl.txt ]; then
  timeout -k 10 -s INT $COUNT python3 -m eval workload --count-flops --tasks $T \
    --task-file $C/wl.txt $R --wheelhouse $C/wh --timeout 150 --scratch /tmp/swf --out /tmp/wsf > $O/flops.log 2>&1
  echo "flops rc $? after $(( $(date +%s) - S )) s" >> $O/flops.log
fi
L=$(left); [ -s $C/wl.txt ] && [ $L -gt 100 ] && timeout -k 30 -s INT $(( L - 15 )) python3 -m eval workload --tasks $T \
  --task-file $C/wl.txt $R --wheelhouse $C/wh --rounds 2 --memcheck --timeout ${WL_TIMEOUT:-150} --deadline $(( L - 120 )) \
  --scratch /tmp/sw --triton-cache /tmp/tw --out /tmp/ws > $O/wl.log 2>&1
echo "workloads rc $? after $(( $(date +%s) - S )) s" >> $O/wl.log
# a fresh pack: a warm machine keeps /tmp, and call 58 returned call 57's logs and scores again
rm -rf /tmp/pack && mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
[ -d /tmp/wctl ] && tar -C /tmp -cf /tmp/pack/control.tar wctl
( cd $T && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' -o -name 'workload*.json' -o -name '*.autotune.json' -o -name env.json \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_c.tar -T - )
# the plan a result was measured on, even when the carry brought it (older than machine.txt)
( cd $T && for r in */workload_result.json; do [ $r -nt $O/machine.txt ] && [ -f ${r%_result.json}.json ] && echo ./${r%_result.json}.json; done | tar -rf /tmp/pack/tasks_c.tar -T - 2>/dev/null )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
for f in /tmp/pack/*.log; do echo "== $f"; grep -v "━" $f | tail -n 24 | cut -c1-220; done
