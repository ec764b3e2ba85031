#!/usr/bin/env bash
# 2026-12-07, seventh session (prepared for the next GPU session): memcheck on real bug fixes.
# First the GPU test of the checked process's environment (a read 16 KiB past a 64-byte tensor:
# clean with PyTorch's caching allocator, an error without), then `scripts/memcheck_probe.py`
# on `.carry/m1`'s four tasks: each one's first MAX_NODE_IDS (5) kept node ids, setup state and gold, under
# compute-sanitizer memcheck. Usage (move release/ and docs/runs aside first):
# [CARRY=.carry/m1] call_m1.sh [END seconds, default 500]
. scripts/device_env.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > $O/machine.txt 2>&1
C=${CARRY:-.carry/m1}; S=$(date +%s); END=${1:-500}
mkdir -p /tmp/m1 && tar -xzf $C/tasks.tgz -C /tmp/m1
timeout -k 10 -s INT 120 python3 -m pytest -q -p no:cacheprovider tests/test_workload.py \
  -k memcheck_sees_a_read > $O/memcheck_test.txt 2>&1
echo "gpu test rc $? after $(( $(date +%s) - S )) s" >> $O/memcheck_test.txt
timeout -k 30 -s INT $(( END - $(date +%s) + S )) python3 scripts/memcheck_probe.py --tasks /tmp/m1/tasks \
  --task-file $C/ids.txt --repo-path flash-linear-attention=$C/fla.git --max-node-ids ${MAX_NODE_IDS:-5} \
  --timeout 240 --scratch /tmp/mps --out $O/probe.jsonl --logs $O/probe_logs > $O/probe.txt 2>&1
echo "probe rc $? after $(( $(date +%s) - S )) s" >> $O/probe.txt
tail -n 30 $O/memcheck_test.txt $O/probe.txt | cut -c1-220
