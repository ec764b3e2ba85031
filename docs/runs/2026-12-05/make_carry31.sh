#!/usr/bin/env bash
# Builds `.carry/g`, the carry of call31.sh (prepared 2026-12-05, a session with no device):
# the NVIDIA Liger-Kernel optimization tasks that never ran on the H200 (no reference, no
# workload result) and run on the host's packages (envbuild/hosts/h200.txt: transformers
# pinned at the host's major version, 5; other pins equal): DyT #1208 and the cross-entropy
# tasks of 2026 (#1266, #1267, #1268, #1362), whose workloads come from their tests' own calls
# since that day (`test_call`), and #1006 (a benchmark script). Older ones (#673 DyT on
# transformers 4.51.3, #653, #831, #219-#406) need their wheelhouses. Also `fla_opt.txt`:
# the flash-linear-attention optimization tasks never run, merged from mid-2025 on, whose
# workload is a test call (#581, #769, #961, #1105 and two direct commits). Writes the two
# lists, tasks.tgz (their directories with env.json and a fresh workload.json), lig.git and
# fla.git (the slim bundles of their trees).
# Usage (repository root, venv active): docs/runs/2026-12-05/make_carry31.sh STATE MIRRORS
set -euo pipefail
state=${1:?usage: make_carry31.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry31.sh STATE MIRRORS}
T=$state/tasks; C=.carry/g; work=$(mktemp -d); R=$mirrors/linkedin+Liger-Kernel/repo
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C $work/tasks
cp -r $T/liger-kernel__* $work/tasks/
python -m envbuild --tasks $work/tasks --no-lint --repo-path liger-kernel=$R > $work/envb.log
python - $work/tasks envbuild/hosts/h200.txt > $C/lig_opt.txt <<'PY'
import json, sys
from pathlib import Path
from curation.taskdir import TaskFile, task_dirs
from envbuild.model import EnvSpec
from envbuild.wheelhouse import package_pins, read_host
root, host = Path(sys.argv[1]), read_host(Path(sys.argv[2]))
for td in task_dirs(root):
    d = root / td.id
    t = json.loads((d / "task.json").read_text())
    if t["task_type"]["type"] != "optimization" or t["verification"]["status"] == "out_of_scope":
        continue
    if any((d / f).exists() for f in ("reference.json", "reference.partial.json", "workload_result.json")):
        continue
    pins = dict(p.split("==", 1) for p in package_pins(td.load(TaskFile.ENV, EnvSpec)))
    # transformers pinned by date: a pin of the host's major version runs on the host's (5.x
    # APIs; the run records the package set it saw), an older one needs its wheelhouse
    same = [host.get(n.lower(), "").split(".")[0] == v.split(".")[0] if n == "transformers"
            else host.get(n.lower()) == v for n, v in pins.items()]
    if all(same):
        print(td.id)
PY
[ -s $C/lig_opt.txt ] || { echo "error: no Liger-Kernel optimization task left to run" >&2; exit 1; }
# flash-linear-attention: its optimization tasks never run whose workload comes from a test
# call, merged from mid-2025 on (older ones fail `import fla` on transformers 5: `bitnet`)
F=$mirrors/fla-org+flash-linear-attention/repo
python - $T > $C/fla_opt.txt <<'PY'
import json, sys
from pathlib import Path
for d in sorted(Path(sys.argv[1]).glob("flash-linear-attention__*")):
    t = json.loads((d / "task.json").read_text())
    if t["task_type"]["type"] != "optimization" or t["verification"]["status"] == "out_of_scope":
        continue
    if (t["merged_at"] or "") < "2025-07" or any((d / f).exists() for f in (
            "reference.json", "reference.partial.json", "workload_result.json")):
        continue
    print(d.name)
PY
mkdir -p $work/fla && for t in $(cat $C/fla_opt.txt); do cp -r $T/$t $work/fla/; done
python -m envbuild --tasks $work/fla --no-lint --repo-path flash-linear-attention=$F > $work/envf.log
python -m eval workload --plan-only --force --tasks $work/fla --repo-path flash-linear-attention=$F \
  --out $work/planf | tail -n 3
python - $work/fla > $work/fla_tc.txt <<'PY'
import json, sys
from pathlib import Path
for d in sorted(Path(sys.argv[1]).iterdir()):
    w = d / "workload.json"
    if w.exists() and any(c["source"] == "test_call" for c in json.loads(w.read_text())["calls"]):
        print(d.name)
PY
mv $work/fla_tc.txt $C/fla_opt.txt
python -m eval bundle --tasks $work/fla --task-file $C/fla_opt.txt --repo-path flash-linear-attention=$F \
  --out $C/fla.git --path fla --path tests --path benchmarks | tail -n 1
python -m eval workload --plan-only --force --tasks $work/tasks --task-file $C/lig_opt.txt \
  --repo-path liger-kernel=$R --out $work/plan | tail -n 3
python -m eval bundle --tasks $work/tasks --task-file $C/lig_opt.txt --repo-path liger-kernel=$R \
  --out $C/lig.git --path src --path test --path benchmark | tail -n 1
mkdir -p $work/sel/tasks && for t in $(cat $C/lig_opt.txt); do cp -r $work/tasks/$t $work/sel/tasks/; done
for t in $(cat $C/fla_opt.txt); do cp -r $work/fla/$t $work/sel/tasks/; done
tar -C $work/sel -czf $C/tasks.tgz tasks
echo "$(wc -l < $C/lig_opt.txt) + $(wc -l < $C/fla_opt.txt) tasks; $(du -sh $C | cut -f1) in $C"
