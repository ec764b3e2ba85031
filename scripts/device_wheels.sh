#!/usr/bin/env bash
# The wheels a lent GPU machine (no network; Python 3.12, its image's packages listed in the
# device library's KINDS.md) needs to run this project's eval commands, downloaded into .whl/
# (ignored; carried with `run`, installed by scripts/device_env.sh). The image has torch,
# triton, pandas, pyarrow, rich, requests, packaging; it lacks these. cffi and pycparser:
# PyNaCl (PyGithub's) needs them, and a test suite that imports `github` (Megatron-LM !3220,
# !3912) failed on the H200 on 2026-12-03 with "No module named '_cffi_backend'" without them.
# Usage: scripts/device_wheels.sh [DEST]   (about 5 MB)
set -euo pipefail
dest=${1:-.whl}
mkdir -p "$dest"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$dest" --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 \
  GitPython==3.2.1 gitdb==4.0.12 smmap==5.0.3 tree-sitter==0.26.1 tree-sitter-python==0.25.0 \
  datasketch==2.0.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 docker==7.2.0 \
  PyGithub==2.10.0 PyJWT==2.15.1 PyNaCl==1.6.2 cffi==2.0.0 pycparser==2.23
ls "$dest" | wc -l
du -sh "$dest"
