#!/usr/bin/env bash
# Builds `.carry/f`, the carry of call29.sh (2026-12-04, third session): flash-linear-attention
# tasks of before mid-2025 import `fla`, whose models register `bitnet` with transformers'
# Auto classes, and transformers 5 (the H200's) has its own `bitnet`: every such task ends "the
# framework does not import with the installed transformers" on the host's packages (call 28:
# #349, #9eac8cce39, #bd32e7b54b). They run on their date-pinned transformers (envbuild's
# env.json, `envbuild.wheelhouse`): the 5 that failed so (transformers 4.51.3) rerun with
# --force, and the 6 never-run tasks pinned to 4.49.0 whose PR changed a test; two wheelhouses
# (28 MB) fit beside the tracked tree, so two keys a call.
# Usage (repository root, venv active): make_carry29.sh STATE MIRRORS WHEELHOUSES
set -euo pipefail
state=${1:?usage: make_carry29.sh STATE MIRRORS WHEELHOUSES}; mirrors=${2:?}; wh=${3:?}
T=$state/tasks; C=.carry/f; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C/wh $work/tasks
keys=${KEYS:-"a11aa8ad965a9bf0 4fcf8120242f007c"}  # call 30: KEYS="942d7c4948b7b647 95495c1ab585ec04"
# env.json of every flash-linear-attention task (envbuild writes into the directories: a copy)
cp -r $T/flash-linear-attention__* $work/tasks/
python -m envbuild --tasks $work/tasks --no-lint \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo > $work/envb.log
python - $work/tasks $keys > $C/wh.txt <<'PY'
import json, sys
from pathlib import Path
from envbuild.model import EnvSpec
from envbuild.wheelhouse import env_key, package_pins
from curation.taskdir import TaskFile, task_dirs
keys = sys.argv[2:]
for td in task_dirs(Path(sys.argv[1])):
    d = Path(sys.argv[1], td.id)
    pins = package_pins(td.load(TaskFile.ENV, EnvSpec))
    if not pins or env_key(pins) not in keys:
        continue
    t = json.loads((d / "task.json").read_text())
    ref = (d / "reference.json").exists()
    if ref and "does not import with the installed transformers" not in t["verification"]["reason"]:
        continue  # ran, and not for want of its pins
    patch = d / "test.patch"
    if t["task_type"]["type"] == "optimization" or not (patch.exists() and patch.stat().st_size):
        continue
    print(td.id)
PY
find $T -name reference.partial.json | xargs -r -n1 dirname | xargs -r -n1 basename > $C/n0.txt
for k in $keys; do cp -r $wh/$k $C/wh/; done
mkdir -p $work/pack/tasks
for t in $(cat $C/wh.txt $C/n0.txt); do
  cp -r $T/$t $work/pack/tasks/
  [ -e $work/tasks/$t/env.json ] && grep -qx $t $C/wh.txt && cp $work/tasks/$t/env.json $work/pack/tasks/$t/
done
tar -C $work/pack -czf $C/tasks.tgz tasks
cat $C/wh.txt $C/n0.txt > $work/ids.txt
python -m eval bundle --tasks $work/pack/tasks --task-file $work/ids.txt \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo --out $C/fla.git \
  --path fla --path tests --path benchmarks | tail -n 1
wc -l $C/wh.txt $C/n0.txt; du -sh $C
