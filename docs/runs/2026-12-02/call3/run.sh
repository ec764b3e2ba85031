#!/usr/bin/env bash
# Call 1 (2026-12-02, session 3): first reference runs of never-run verified-candidates
# (flash-linear-attention newest by type + the 17 whose selection timed out on day 1;
# Liger-Kernel and Megatron-LM never-run ones; Liger #884/#609/#812 whose selection the channel
# refused; liger #195 and megatron #5944 again for the second-day agreement).
. scripts/device_env.sh  # the preamble that ran, moved there unchanged
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.device_count())'
  nproc; bwrap --version; python3 -m pip show pytest pytest-xdist transformers 2>/dev/null | grep -E "^(Name|Version)"; } > $O/machine.txt 2>&1
cat $O/machine.txt
T=.carry/c1/tasks
DL=${1:-540}
R="--repo-path liger-kernel=.carry/bundles/lig1.git --repo-path flash-linear-attention=.carry/bundles/fla1.git --repo-path megatron-lm=.carry/bundles/meg1.git"
( timeout -k 15 -s INT $DL python3 -m eval reference --tasks $T --task-file .carry/c1/fla_list.txt $R --out /tmp/r1 --runs 3 --jobs 11 --timeout 200 --select-timeout 200 --select-per-test 1 --select-max 4 --max-node-ids 3 --deadline $((DL-330)) --scratch /tmp/s1 --triton-cache /tmp/tc1 > $O/fla.log 2>&1; echo "fla rc $?" ) &
( timeout -k 15 -s INT $DL python3 -m eval reference --tasks $T --task-file .carry/c1/lm_list.txt $R --out /tmp/r2 --force --runs 3 --jobs 4 --timeout 200 --select-timeout 200 --select-per-test 1 --select-max 8 --max-node-ids 4 --deadline $((DL-260)) --scratch /tmp/s2 --triton-cache /tmp/tc2 > $O/lm.log 2>&1; echo "lm rc $?" ) &
wait
( cd $T && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer $O/machine.txt -print0 | tar --null -czf $O/verdicts.tgz -T - )
( cd /tmp && find r1 r2 -path '*select*' -name pytest.log -print0 | xargs -0 -I{} sh -c 'tail -c 6000 {} > {}.tail' ; find r1 r2 -name '*.tail' -print0 | tar --null -czf $O/select_logs.tgz -T - )
for f in fla lm; do echo "== $f"; grep -v "━" $O/$f.log | tail -n 45; done
