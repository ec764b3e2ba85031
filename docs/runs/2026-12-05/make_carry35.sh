#!/usr/bin/env bash
# Builds `.carry/p`, the carry of call35.sh (2026-12-05, fourth session), from the rebuilt state:
#   ref.txt    the references left unfinished (their partials resume; call 35: #463 and #466,
#              and #d9d936e4af on its transformers 4.47.1 wheelhouse, which call 33 lacked);
#   score.txt  the oracle (issue 9 and 10): verified tasks, not optimizations, with no gold or no
#              setup score yet, that run on the host's packages or on that same wheelhouse;
#   gold.jsonl, setup.jsonl  their targets as the gold tree and the setup state have them;
#   tasks.tgz, fla.git, lig.git, wh/  the task directories, slim bundles, wheelhouses.
# Usage (repository root, venv active): [REF_IDS=FILE] docs/runs/2026-12-05/make_carry35.sh STATE MIRRORS
set -euo pipefail
state=${1:?usage: make_carry35.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry35.sh STATE MIRRORS}
T=$state/tasks; C=.carry/p; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C $work/tasks
# REF_IDS (a file): the references to run; by default the partial ones the state holds (call
# 35 ran #463 and #466 so, and #d9d936e4af, listed then, whose failed run call35.sh reruns
# with --force)
if [ -n "${REF_IDS:-}" ]; then cp "$REF_IDS" $C/ref.txt
else find $T -maxdepth 2 -name reference.partial.json | xargs -r -n1 dirname | xargs -r -n1 basename | sort > $C/ref.txt; fi
{ python scripts/oracle_coverage.py docs/runs --tasks $T --unscored gold
  python scripts/oracle_coverage.py docs/runs --tasks $T --unscored setup; } | sort -u > $work/unscored.txt
python - "$T" $work/unscored.txt envbuild/hosts/h200.txt $work/wh.txt > $C/score.txt <<'PY'
import json, sys
from pathlib import Path
from envbuild.wheelhouse import read_host
tasks, ids, host = Path(sys.argv[1]), Path(sys.argv[2]).read_text().split(), read_host(Path(sys.argv[3]))
wh = open(sys.argv[4], "w")
for t in ids:
    d = tasks / t
    if not (d / "reference.json").exists() or \
            json.loads((d / "task.json").read_text())["task_type"]["type"] == "optimization":
        continue  # an optimization is scored on its workload
    pkgs = dict(p.split("==", 1) for p in json.loads((d / "reference.json").read_text())["environment"]["packages"])
    other = {n: v for n, v in pkgs.items() if n in ("transformers", "omegaconf", "pydantic") and host.get(n) != v}
    # the host's packages, or flash-linear-attention on the one wheelhouse this carry brings
    if not other:
        print(t)
    elif t.startswith("flash-linear-attention__") and other == {"transformers": "4.47.1"}:
        print(t)
        print(t, file=wh)
PY
for t in $(sort -u $C/ref.txt $C/score.txt); do cp -r $T/$t $work/tasks/; done
python -m envbuild --tasks $work/tasks --work $state/work --no-lint > /dev/null
sort -u $C/ref.txt $C/score.txt > $work/all.txt
# the wheelhouse of the tasks that ran on transformers 4.47.1 (one key, 13 MB); the others ran
# on the host's packages and find no wheelhouse of theirs here
{ grep d9d936e4af $C/ref.txt || true; cat $work/wh.txt; } > $work/whl.txt
[ -s $work/whl.txt ] && python -m envbuild.wheelhouse --tasks $work/tasks --task-file $work/whl.txt --out $C/wh \
  --host envbuild/hosts/h200.txt | tail -n 1
for fw in flash-linear-attention:fla-org+flash-linear-attention:fla:"--path fla --path tests" \
          liger-kernel:linkedin+Liger-Kernel:lig:"--path src --path test"; do
  IFS=: read -r name mirror short paths <<< "$fw"
  grep "^${name}__" $work/all.txt > $work/$name.txt || continue
  python -m eval bundle --tasks $work/tasks --task-file $work/$name.txt --repo-path $name=$mirrors/$mirror/repo \
    --out $C/$short.git $paths | tail -n 1
done
R=""; for b in flash-linear-attention:fla liger-kernel:lig; do
  [ -d $C/${b#*:}.git ] && R="$R --repo-path ${b%%:*}=$C/${b#*:}.git"; done
for k in gold setup; do
  python -m eval oracle --tasks $work/tasks --task-file $C/score.txt $R --from $k --out $C/$k.jsonl | tail -n 1
done
tar -C $work -czf $C/tasks.tgz tasks
rm -rf $work
wc -l $C/*.txt; du -sh $C $C/*
