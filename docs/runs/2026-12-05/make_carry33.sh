#!/usr/bin/env bash
# Builds a carry for call33.sh (2026-12-05, third session) from the rebuilt state: the task
# directories of two lists (references to run, workloads to time) as tasks.tgz with fresh plans,
# slim bundles of the frameworks they need, and the wheelhouses of the pinned packages the device
# lacks (envbuild/hosts/h200.txt). Without lists: `.carry/s`, the references of the six tasks
# verified in release 1.11.0 whose setup state changed with keep_base_globals (their base had
# failed with a name the PR deleted) and of Megatron-LM #4603 (its reference ran on such a
# base), then the workloads of Megatron-LM #4460 (replanned: the batch, not the state cache,
# grows), #6521 (its call-32 timing was cut) and #4603.
# Usage (repository root, venv active): [NODE_IDS_FROM=OLD_STATE] [REMEASURE=1] [FLA_WH=FILE] [CONTROL=FILE] make_carry33.sh STATE MIRRORS [CARRY REF_IDS WL_IDS]
set -euo pipefail
state=${1:?usage: make_carry33.sh STATE MIRRORS [CARRY REF_IDS WL_IDS]}; mirrors=${2:?usage: make_carry33.sh STATE MIRRORS}
C=${3:-.carry/s}; work=$(mktemp -d); T=$state/tasks
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C $work/tasks
if [ -n "${4:-}" ]; then cp "$4" $work/ref.txt; cp "${5:?WL_IDS}" $work/wl.txt; mv $work/ref.txt $work/wl.txt $C/
else
  for p in flash-linear-attention__174-4b7e440_ flash-linear-attention__463_ flash-linear-attention__466_ \
           flash-linear-attention__490_ flash-linear-attention__662_ liger-kernel__511_ megatron-lm__4603_; do
    ls $T | grep "^$p"; done > $C/ref.txt
  printf '%s\n' megatron-lm__4460__causal_conv1d_update_kernel megatron-lm__6521___weighted_silu_mul_bounded_kernel \
    megatron-lm__4603___fused_moe_kernel > $C/wl.txt
fi
# CONTROL (a file, 2026-12-06 fifth session): tasks whose setup state call33.sh also times as a
# prediction beside base and gold (control.txt; an A/A check of a measured gain)
if [ -n "${CONTROL:-}" ]; then cp "$CONTROL" $C/control.txt; fi
# (control.txt is optional: `sort` of a missing file prints nothing, and the carry had no task)
for t in $( { cat $C/ref.txt $C/wl.txt; cat $C/control.txt 2>/dev/null || true; } | sort -u ); do
  cp -r $T/$t $work/tasks/; done
# REMEASURE=1: the workloads of wl.txt are timed again (a second day's run) even where the state
# holds a result (`eval workload` skips a task whose result exists; the merge keeps both archives)
[ -n "${REMEASURE:-}" ] && for t in $(cat $C/wl.txt); do rm -f $work/tasks/$t/workload_result.json; done
python -m envbuild --tasks $work/tasks --work $state/work --no-lint > /dev/null
# NODE_IDS_FROM=OLD_STATE: a task whose verdict lapsed with its setup digest lost its node ids
# too; the gold chose them (the gold variant is the setup state plus the gold targets, and
# keep_base_globals only adds the base's module names beside them), so they are taken back from
# the state before the rebuild instead of a cold selection run (up to 300 s a task)
if [ -n "${NODE_IDS_FROM:-}" ]; then python - $work/tasks "$NODE_IDS_FROM/tasks" $C/ref.txt <<'PY'
import json, sys
from pathlib import Path
new, old = Path(sys.argv[1]), Path(sys.argv[2])
for tid in Path(sys.argv[3]).read_text().split():
    f, g = new / tid / "task.json", old / tid / "task.json"
    t = json.loads(f.read_text())
    if not t["tests"]["node_ids"] and g.exists():
        t["tests"]["node_ids"] = json.loads(g.read_text())["tests"]["node_ids"]
        f.write_text(json.dumps(t, indent=1) + "\n")
        print(f"{tid}: {len(t['tests']['node_ids'])} node ids from {g}")
PY
fi
# (no workload to plan: references alone, e.g. Liger-Kernel #778 and #843 on their pins)
{ cat $C/wl.txt; cat $C/control.txt 2>/dev/null || true; } | sort -u > $work/plan_ids.txt
[ -s $work/plan_ids.txt ] && python -m eval workload --plan-only --force --tasks $work/tasks --task-file $work/plan_ids.txt \
  --repo-path megatron-lm=$mirrors/NVIDIA+Megatron-LM/repo --repo-path liger-kernel=$mirrors/linkedin+Liger-Kernel/repo \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo --out $work/plan | tail -n 1
# wheelhouses for the Megatron-LM and Liger-Kernel tasks only: the flash-linear-attention ones
# were verified on the device's own transformers 5 (their date pins, 4.5x, are 14 MB each)
# FLA_WH (a file, 2026-12-06 fourth session): flash-linear-attention tasks of before mid-2025
# whose wheelhouse comes too (their `import fla` needs transformers 4.x: #368, #bcc63a4627)
{ ls $work/tasks | grep -v "^flash-linear-attention__" || true
  if [ -n "${FLA_WH:-}" ]; then cat "$FLA_WH"; fi; } > $work/wh_ids.txt
[ -s $work/wh_ids.txt ] && python -m envbuild.wheelhouse --tasks $work/tasks --task-file $work/wh_ids.txt \
  --out $C/wh --host envbuild/hosts/h200.txt | tail -n 1
# the wheels several keys share, kept once (2026-12-07, sixth session; envbuild.wheelhouse --pool)
[ -d $C/wh ] && python -m envbuild.wheelhouse --out $C/wh --pool
for fw in flash-linear-attention:fla-org+flash-linear-attention:fla:"--path fla --path tests" \
          liger-kernel:linkedin+Liger-Kernel:lig:"--path src --path test" \
          megatron-lm:NVIDIA+Megatron-LM:mlm:"--path megatron --path tests"; do
  IFS=: read -r name mirror short paths <<< "$fw"
  ls $work/tasks | grep "^${name}__" > $work/$name.txt || continue
  python -m eval bundle --tasks $work/tasks --task-file $work/$name.txt --repo-path $name=$mirrors/$mirror/repo \
    --out $C/$short.git $paths | tail -n 1
done
tar -C $work -czf $C/tasks.tgz tasks
rm -rf $work
# the call's script travels in the carry (2026-12-07, sixth session): docs/runs can stay behind
cp docs/runs/2026-12-05/call33.sh $C/
wc -l $C/*.txt; du -sh $C $C/*
