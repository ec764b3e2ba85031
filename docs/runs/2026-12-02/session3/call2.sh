#!/usr/bin/env bash
# Next session's call 2 (prepared 2026-12-02, docs/runs/2026-12-02/next_calls.md): the gold
# targets and the setup state (do-nothing) scored as predictions, sandboxed, on 15 Liger-Kernel
# tasks verified on 2026-12-02 (issue 9: gold 100%, do-nothing 0%); then, on a quiet GPU,
# #1112's workload with each of them as the prediction and its scoring (issue 10: PMR, fast_gold,
# do-nothing completes no optimization). Beside the scoring: #198, #239, #262 verified again
# under their new setup states (their autograd Functions are `caller` targets now).
. scripts/device_env.sh
date -u > $O/machine.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $O/machine.txt
N=.carry/n2
S=$(date +%s)
R="--repo-path liger-kernel=$N/lig.git --wheelhouse $N/wh"
( timeout -k 10 -s INT 260 python3 -m eval score $N/gold15.jsonl --tasks $N/tasks $R --out /tmp/sg --jobs 4 --timeout 150 --scratch /tmp/s4 --triton-cache /tmp/tc4 > $O/score_gold.log 2>&1; echo "gold rc $?" ) &
( timeout -k 10 -s INT 260 python3 -m eval score $N/setup15.jsonl --tasks $N/tasks $R --out /tmp/ss --jobs 4 --timeout 150 --scratch /tmp/s5 --triton-cache /tmp/tc5 > $O/score_setup.log 2>&1; echo "setup rc $?" ) &
( timeout -k 10 -s INT 260 python3 -m eval reference --tasks $N/tasks --task liger-kernel__198__liger_cross_entropy_kernel --task liger-kernel__239__liger_cross_entropy_kernel --task liger-kernel__262___kldiv_kernel_backward $R --out /tmp/rr --force --reselect --runs 3 --jobs 3 --timeout 150 --select-timeout 150 --select-per-test 1 --select-max 8 --max-node-ids 4 --scratch /tmp/s8 --triton-cache /tmp/tc8 > $O/ref3.log 2>&1; echo "ref rc $?" ) &
wait
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/ref3.tgz -T - )
for v in gold setup; do
  timeout -k 10 -s INT 130 python3 -m eval workload --tasks $N/tasks --task liger-kernel__1112___group_norm_forward_kernel --repo-path liger-kernel=$N/lig.git --predictions $N/${v}1112.jsonl --out /tmp/w_$v --rounds 2 --timeout 120 --scratch /tmp/s6 --triton-cache /tmp/tc6 > $O/wl_$v.log 2>&1; echo "wl $v rc $? after $(( $(date +%s) - S )) s"
  timeout -k 10 -s INT 60 python3 -m eval score $N/${v}1112.jsonl --tasks $N/tasks $R --out /tmp/w_$v --timeout 50 --scratch /tmp/s7 --triton-cache /tmp/tc6 > $O/score1112_$v.log 2>&1; echo "score 1112 $v rc $?"
done
( cd /tmp && find sg ss w_gold w_setup -maxdepth 2 \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' \) -size -2M -print0 | tar --null -czf $O/scores.tgz -T - )
for f in score_gold score_setup ref3 wl_gold score1112_gold wl_setup score1112_setup; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 22; done
( cd $O && tar -czf results.tgz machine.txt *.log *.tgz && ls | grep -v '^results.tgz$' | xargs rm -f )
