# Sourced first by every command run on a lent GPU machine (docs/runs/*/run.sh): NVLink
# multicast off in every process it starts, the carried wheels (.whl) installed into /tmp/site,
# the carried bubblewrap (.carry/deb) unpacked and on PATH, $O the folder whose files come back.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
dpkg -x .carry/deb/bubblewrap_*.deb /tmp/bw && export PATH=/tmp/bw/usr/bin:$PATH
O=${OUT:-/tmp/out}
mkdir -p "$O"
