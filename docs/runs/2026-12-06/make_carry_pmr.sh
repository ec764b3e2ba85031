#!/usr/bin/env bash
# Builds `.carry/p` (2026-12-06, sixth session), the carry of call_pmr.sh: the gold oracle
# alone on the GPU, for issue 10's PMR band (the gold targets as a prediction must time within
# 1 +- 0.03 of the reference's gold). After calls 44-64, 27 verified tasks had a gold PMR
# outside it (`scripts/oracle_coverage.py`), nearly all scored beside references
# (`gpu_company` >= 1), and one task had ever been scored with the GPU to itself. The carry
# holds those whose reference ran on the host's packages (no wheelhouse to bring), their gold
# predictions (`eval oracle --from gold`) and their frameworks' source bundles.
# Usage (repository root, venv active): [CARRY=DIR] [IDS=FILE] [KEYED=1 [WHF=DIR]] make_carry_pmr.sh STATE MIRRORS
set -euo pipefail
state=${1:?usage: make_carry_pmr.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry_pmr.sh STATE MIRRORS}
T=$state/tasks; C=${CARRY:-.carry/p}; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C $work/tasks
python scripts/oracle_coverage.py docs/runs --tasks $T | sed -n 's/^gold PMR outside: \([^ ]*\) .*/\1/p' > $work/outside.txt
# IDS (a file, 2026-12-07, seventh session): these tasks instead, e.g. the verified tasks whose
# gold was scored and never completed, or never scored (`oracle_coverage.py --unscored gold`);
# those not on the host's packages are left out as before
if [ -n "${IDS:-}" ]; then cp "$IDS" $work/outside.txt; fi
# on the host's packages: each package a reference recorded that the pins may move at the
# host's version (as docs/runs/2026-12-04/make_carry.sh chose call 22's tasks)
# KEYED=1 (2026-12-07, seventh session): every listed task with a reference, those with pins
# beyond the host's scored on their wheelhouses (downloaded into WHF, default /tmp/whf, when
# missing; the carry's wh/, pooled; call_pmr.sh passes it): the verified Liger-Kernel and
# Megatron-LM tasks the oracle has not scored ran on date-pinned transformers or omegaconf
python - "$T" $work/outside.txt envbuild/hosts/h200.txt > $C/score.txt <<'PY'
import json, os, sys
from pathlib import Path
from envbuild.wheelhouse import read_host
tasks, ids, host = Path(sys.argv[1]), Path(sys.argv[2]).read_text().split(), read_host(Path(sys.argv[3]))
for t in ids:
    if not (tasks / t / "reference.json").exists():  # verified in a release before the state
        print(f"skipped {t}: no reference.json in the state", file=sys.stderr)
        continue
    ref = json.loads((tasks / t / "reference.json").read_text())
    pkgs = dict(p.split("==", 1) for p in ref["environment"]["packages"])
    # omegaconf and pydantic only for Megatron-LM, which imports them (Liger-Kernel #1187 and
    # #815 recorded the day-2 host's omegaconf, which nothing of theirs imports)
    names = ("transformers", "omegaconf", "pydantic") if t.startswith("megatron-lm__") else ("transformers",)
    if os.environ.get("KEYED") == "1" or all(host.get(n) == v for n, v in pkgs.items() if n in names):
        print(t)
PY
for t in $(cat $C/score.txt); do cp -r $T/$t $work/tasks/; done
python -m envbuild --tasks $work/tasks --work $state/work --no-lint > /dev/null
if [ "${KEYED:-}" = 1 ]; then
  whf=${WHF:-/tmp/whf}; mkdir -p $C/wh
  python -m envbuild.wheelhouse --tasks $work/tasks --task-file $C/score.txt --out $whf \
    --host envbuild/hosts/h200.txt | tail -n 1
  python - $work/tasks $C/score.txt > $work/keys.txt <<'PY'
import sys
from pathlib import Path
from curation.taskdir import TaskFile, task_dirs
from envbuild.model import EnvSpec
from envbuild.wheelhouse import env_key, package_pins
wanted = set(Path(sys.argv[2]).read_text().split())
for td in task_dirs(Path(sys.argv[1])):
    pins = package_pins(td.load(TaskFile.ENV, EnvSpec)) if td.id in wanted else ()
    if pins:
        print(env_key(pins))
PY
  for k in $(sort -u $work/keys.txt); do cp -r $whf/$k $C/wh/; done
  python -m envbuild.wheelhouse --out $C/wh --pool
fi
for fw in flash-linear-attention:fla-org+flash-linear-attention:fla:"--path fla --path tests --path benchmarks" \
          liger-kernel:linkedin+Liger-Kernel:lig:"--path src --path test --path benchmark" \
          megatron-lm:NVIDIA+Megatron-LM:mlm:"--path megatron --path tests"; do
  IFS=: read -r name mirror short paths <<< "$fw"
  grep "^${name}__" $C/score.txt > $work/$name.txt || continue
  python -m eval bundle --tasks $work/tasks --task-file $work/$name.txt \
    --repo-path $name=$mirrors/$mirror/repo --out $C/$short.git $paths | tail -n 1
done
R=""; for b in fla:flash-linear-attention lig:liger-kernel mlm:megatron-lm; do
  [ -e $C/${b%%:*}.git ] && R="$R --repo-path ${b#*:}=$C/${b%%:*}.git"; done
python -m eval oracle --tasks $work/tasks --task-file $C/score.txt $R --from gold --out $C/gold.jsonl | tail -n 1
# setup.jsonl (2026-12-08): the do-nothing answer of the same tasks, for call_pmr.sh's SETUP_S
python -m eval oracle --tasks $work/tasks --task-file $C/score.txt $R --from setup --out $C/setup.jsonl | tail -n 1
# wl_oracle.txt (2026-12-07, eighth session): the optimizations among them that their workload
# verified; `eval score` completes such a task only on the prediction's workload times in its
# out folder (`eval.score.workload_times`), so call_pmr.sh times the gold on the workload first
# (without it Liger-Kernel #1187 and #815 read "workload_not_run" and never completed)
for t in $(cat $C/score.txt); do
  [ -f $work/tasks/$t/workload_result.json ] && grep -q '"type": "optimization"' $work/tasks/$t/task.json && echo $t
done > $C/wl_oracle.txt || true
tar -C $work -czf $C/tasks.tgz tasks
wc -l $C/score.txt $work/outside.txt; du -sh $C
