#!/usr/bin/env bash
# 2026-12-03, sixth session, call 19. Call 18 finished 4 of its 23 flash-linear-attention tasks:
# the new_op tasks' selections now take the kda / gated-delta tests nearest their kernels (about
# 95 s each with one config), and their base/gold runs compile as long, so a task takes longer
# than a call, and nine were lost under way. `eval reference` now keeps each task's selection
# and finished runs in reference.partial.json: this call's unfinished tasks come back as
# partials and the next call (next_call20.sh) resumes them.
# 1. flash-linear-attention: the 19 of call 18's list it did not finish, 13 side by side,
#    starting none after 300 s.
# 2. #714 reselected (call 15's selection kept three tests without the PR's
#    test_conv_cache_backward_no_final_state; call 18 reused those node ids): its selection log
#    is packed.
# Carry: .whl .carry/deb .carry/n0 (c19.txt, c19_714.txt)
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0
S=$(date +%s); END=470
F="--tasks $N/tasks --repo-path flash-linear-attention=$N/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 150 --runs 3 --force"
( timeout -k 20 -s INT $END python3 -m eval reference $F --task-file $N/c19.txt --out /tmp/rf --jobs 13 --deadline 300 --scratch /tmp/sf --triton-cache /tmp/tcf > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s" ) &
( timeout -k 20 -s INT $END python3 -m eval reference $F --task-file $N/c19_714.txt --reselect --max-node-ids 4 --out /tmp/r714 --scratch /tmp/s714 --triton-cache /tmp/tc714 > $O/fla714.log 2>&1; echo "714 rc $? after $(( $(date +%s) - S )) s" ) &
wait
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd /tmp && find rf r714 -path '*/select/pytest.log' 2>/dev/null | tar -czf /tmp/pack/select_logs.tgz -T - )
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_n0.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( cd $N/tasks && for f in */reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); s=r.get('selection') or {}; print(sys.argv[1].split('/')[0][:60], 'sel', s.get('wall_s'), s.get('failure'), 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done
  for f in */reference.partial.json; do [ -f $f ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[0][:60], 'partial', len(r['runs']), 'runs', len(r['node_ids']), 'node ids')" "$f"; done ) 2>/dev/null
