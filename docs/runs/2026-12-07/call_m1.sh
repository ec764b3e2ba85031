#!/usr/bin/env bash
# 2026-12-07, seventh session (prepared for the next GPU session): memcheck on real bug fixes.
# Since the eighth session (call 88: the GPU test of the caching allocator's effect failed,
# memcheck saw no read 16 KiB past a 64-byte tensor either way) first `scripts/memcheck_bounds.py`
# (offsets x allocator x --padding, a process each; since the ninth session, whose call 89 found
# allocator off + --padding 4096 sees every unmasked read, the masked load against the unmasked
# one at padding 4096), then `scripts/memcheck_probe.py` on `.carry/m1`'s tasks with PADDING
# bytes of compute-sanitizer guard (default eval.memcheck.PADDING, 4096; 0: none): each one's first
# MAX_NODE_IDS (5) kept node ids, setup state and gold, under memcheck. Usage (move release/
# and docs/runs aside first): [CARRY=.carry/m1] [PADDING=4096] call_m1.sh [END seconds, default 500]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=${CARRY:-.carry/m1}; S=$(date +%s); END=${1:-500}
mkdir -p /tmp/m1 && tar -xzf $C/tasks.tgz -C /tmp/m1
timeout -k 10 -s INT 300 python3 scripts/memcheck_bounds.py --offsets 16,128,4096,262144 --padding 4096 --masked 0,1 --out $O/bounds.jsonl > $O/bounds.txt 2>&1
echo "bounds rc $? after $(( $(date +%s) - S )) s" >> $O/bounds.txt
timeout -k 30 -s INT $(( END - $(date +%s) + S )) python3 scripts/memcheck_probe.py --tasks /tmp/m1/tasks \
  --task-file $C/ids.txt --repo-path flash-linear-attention=$C/fla.git --max-node-ids ${MAX_NODE_IDS:-5} \
  --timeout 240 --padding ${PADDING:-4096} --scratch /tmp/mps --out $O/probe.jsonl --logs $O/probe_logs > $O/probe.txt 2>&1
echo "probe rc $? after $(( $(date +%s) - S )) s" >> $O/probe.txt
tail -n 30 $O/bounds.txt $O/probe.txt | cut -c1-220
