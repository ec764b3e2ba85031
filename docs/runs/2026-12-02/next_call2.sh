#!/usr/bin/env bash
# Next session's call 2 (prepared 2026-12-02, docs/runs/2026-12-02/next_calls.md): the gold
# targets and the setup state (do-nothing) scored as predictions, sandboxed, on 15 Liger-Kernel
# tasks verified on 2026-12-02 (issue 9: gold 100%, do-nothing 0%); then, on a quiet GPU,
# #1112's workload with each of them as the prediction and its scoring (issue 10: PMR, fast_gold,
# do-nothing completes no optimization).
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
N=.carry/n2
S=$(date +%s)
R="--repo-path liger-kernel=$N/lig.git --wheelhouse $N/wh"
( timeout -k 10 -s INT 260 python3 -m eval score $N/gold15.jsonl --tasks $N/tasks $R --out /tmp/sg --jobs 4 --timeout 150 --scratch /tmp/s4 --triton-cache /tmp/tc4 > $O/score_gold.log 2>&1; echo "gold rc $?" ) &
( timeout -k 10 -s INT 260 python3 -m eval score $N/setup15.jsonl --tasks $N/tasks $R --out /tmp/ss --jobs 4 --timeout 150 --scratch /tmp/s5 --triton-cache /tmp/tc5 > $O/score_setup.log 2>&1; echo "setup rc $?" ) &
wait
for v in gold setup; do
  timeout -k 10 -s INT 130 python3 -m eval workload --tasks $N/tasks --task liger-kernel__1112___group_norm_forward_kernel --repo-path liger-kernel=$N/lig.git --predictions $N/${v}1112.jsonl --out /tmp/w_$v --rounds 2 --timeout 120 --scratch /tmp/s6 --triton-cache /tmp/tc6 > $O/wl_$v.log 2>&1; echo "wl $v rc $? after $(( $(date +%s) - S )) s"
  timeout -k 10 -s INT 60 python3 -m eval score $N/${v}1112.jsonl --tasks $N/tasks $R --out /tmp/w_$v --timeout 50 --scratch /tmp/s7 --triton-cache /tmp/tc6 > $O/score1112_$v.log 2>&1; echo "score 1112 $v rc $?"
done
( cd /tmp && find sg ss w_gold w_setup -maxdepth 2 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in score_gold score_setup wl_gold score1112_gold wl_setup score1112_setup; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 22; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
