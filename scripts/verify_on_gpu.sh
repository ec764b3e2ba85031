#!/usr/bin/env bash
# Reference runs (the verification gate) on a lent GPU machine, inside one call of at most
# ~10 minutes: installs the carried wheels, runs `python -m eval reference` on the carried task
# directories and framework bundles until the deadline, and packs what the runs wrote (each
# task's task.json verdict and reference.json) into $OUT for the project to keep.
#
# Usage (from the repository root on the GPU machine):
#   scripts/verify_on_gpu.sh DEADLINE_S TASKS_DIR NAME=BUNDLE... -- [eval reference options]
# The carried folders: .whl (wheels of the project's own needs), .carry/tasks, .carry/bundles.
set -uo pipefail
deadline=$1; tasks=$2; shift 2
repos=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do repos+=(--repo-path "$1"); shift; done
[ "${1:-}" = "--" ] && shift
# NVLink multicast stays off in every process this starts (tests inherit it; the harness also
# forces it in each test run).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache
out=${OUT:-/tmp/out}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.device_count())'
  nproc; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
timeout -k 20 --signal=INT "$deadline" python3 -m eval reference --tasks "$tasks" "${repos[@]}" \
  --out /tmp/runs "$@" 2>&1 | tee "$out/reference.log" | grep -v "━" | tail -n 60
# What the gate wrote, for the repository: verdicts (task.json) and runs (reference.json).
( cd "$tasks" && find . -maxdepth 2 \( -name task.json -o -name reference.json \) -newer \
    "$out/machine.txt" -print0 | tar --null -czf "$out/verdicts.tgz" -T - )
ls -la "$out"
