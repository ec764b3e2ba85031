#!/usr/bin/env bash
# Prepared 2026-12-03 (sixth session) for the next one, not run yet; the first call to make.
# Resumes the 14 flash-linear-attention references that calls 19-20 left unfinished (their
# selections and finished runs are in .carry/n0/tasks/*/reference.partial.json: mostly base-0
# done, the first gold run, which tunes every config of a kda / gated-delta / wall-attention
# kernel, to go), then #660 and #577 (never started); 14 side by side, nothing beside them
# (call 20 ran 17 processes on 16 cores and finished no further run of these in 260 s).
# The partials made from now on also hold the autotuning results Triton kept in each task's
# cache (`*.autotune.json`, saved as each run ends and at the interrupt): a resumed base or
# gold run compiles its chosen configs instead of tuning them all again (the device's disk is
# new each call). The 14 partials of calls 19-20 predate that and hold none.
# Carry: .whl .carry/deb .carry/n0 (c21.txt)
# Usage: next_call21.sh [END seconds, default 480]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
N=.carry/n0; TC=/tmp/tcf
S=$(date +%s); END=${1:-480}
F="--tasks $N/tasks --repo-path flash-linear-attention=$N/fla.git --select-per-test 1 --max-node-ids 3 --select-timeout 180 --timeout 420 --runs 3 --force"
timeout -k 60 -s INT $END python3 -m eval reference $F --task-file $N/c21.txt --out /tmp/rf --jobs 14 --deadline 300 --scratch /tmp/sf --triton-cache $TC > $O/fla.log 2>&1; echo "fla rc $? after $(( $(date +%s) - S )) s"
mkdir -p /tmp/pack && cp $O/*.log $O/machine.txt /tmp/pack/
( cd $N/tasks && find . -maxdepth 2 \( -name task.json -o -name 'reference*.json' \) -newer $O/machine.txt -print0 | tar --null -cf /tmp/pack/tasks_n0.tar -T - )
tar -C /tmp/pack -czf $O/results.tgz . && rm -f $O/*.log && ls -la $O
( for f in $N/tasks/*/reference.json; do [ $f -nt $O/machine.txt ] || continue; python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'valid', r.get('valid'), (r.get('validity_note') or '')[:70])" "$f"; done
  for f in $N/tasks/*/reference.partial.json; do [ $f -nt $O/machine.txt ] && python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[1].split('/')[-2][:60], 'partial', len(r['runs']), 'runs')" "$f"; done ) 2>/dev/null
