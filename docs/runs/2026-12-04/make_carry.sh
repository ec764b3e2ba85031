#!/usr/bin/env bash
# Builds `.carry/c`, the carry of call21.sh-call25.sh, from the rebuilt working state
# (scripts/rebuild_state.sh MIRRORS STATE): the task lists, the task directories (as tasks.tgz),
# the three source bundles, the gold and setup oracle predictions and #4460's wheelhouse.
# Usage (repository root, venv active): docs/runs/2026-12-04/make_carry.sh STATE MIRRORS
# Measured 2026-12-04: 21 MB, under a minute plus the wheelhouse download.
set -euo pipefail
state=${1:?usage: make_carry.sh STATE MIRRORS}; mirrors=${2:?usage: make_carry.sh STATE MIRRORS}
T=$state/tasks; C=.carry/c; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C
# call 21: the partial references, then two never-run tasks
{ find $T -name reference.partial.json | xargs -r -n1 dirname | xargs -r -n1 basename
  for d in $T/flash-linear-attention__660__* $T/flash-linear-attention__577__*; do
    [ -e $d/reference.json ] || basename $d; done; } | sort -u > $C/n0.txt
# call21.sh n1: the next 14 flash-linear-attention tasks never run, non-optimizations whose PR
# changed a test (of those run by 2026-12-04, 56% verified, against 40% of those without),
# newest first (PRs and direct commits)
python - "$T" > $C/n1.txt <<'PY'
import json, sys
from pathlib import Path
rows = []
for d in Path(sys.argv[1]).glob("flash-linear-attention__*"):
    t = json.loads((d / "task.json").read_text())
    if (d / "reference.json").exists() or (d / "reference.partial.json").exists():
        continue
    if t["task_type"]["type"] == "optimization" or t["verification"]["status"] != "unverified":
        continue
    patch = d / "test.patch"
    if patch.exists() and patch.stat().st_size:
        rows.append((t["merged_at"] or "", d.name))
print("\n".join(name for _, name in sorted(rows, reverse=True)[:14]))
PY
# call 23: the optimizations verified on a workload whose gold has no completed score row
printf 'liger-kernel__815___layer_norm_backward_kernel\nliger-kernel__1187___fused_add_rms_norm_backward_kernel\n' > $C/wl.txt
# call 22: verified tasks without a gold or a setup score, whose reference ran on the host's
# packages (each of the task's pinned packages at the host's version: no wheelhouse needed)
{ python scripts/oracle_coverage.py docs/runs --tasks $T --unscored gold
  python scripts/oracle_coverage.py docs/runs --tasks $T --unscored setup; } | sort -u | grep -v -x -F -f $C/wl.txt > $work/unscored.txt
python - "$T" $work/unscored.txt envbuild/hosts/h200.txt > $C/score.txt <<'PY'
import json, sys
from pathlib import Path
from envbuild.wheelhouse import read_host
tasks, ids, host = Path(sys.argv[1]), Path(sys.argv[2]).read_text().split(), read_host(Path(sys.argv[3]))
for t in ids:
    ref = json.loads((tasks / t / "reference.json").read_text())
    if json.loads((tasks / t / "task.json").read_text())["task_type"]["type"] == "optimization":
        continue  # judged on its workload (call23.sh)
    pkgs = dict(p.split("==", 1) for p in ref["environment"]["packages"])
    if all(host.get(n) == v for n, v in pkgs.items() if n in ("transformers", "omegaconf", "pydantic")):
        print(t)
PY
# calls 24-25: flash-linear-attention optimization tasks planned from its op registry (2026-12-04),
# never timed nor run: their workloads (quiet), then their tests' references
for n in 1000 1109 1125 807 823 884 916 953 989 27c2022aab; do ls $T | grep "^flash-linear-attention__${n}__"; done > $C/fla_opt.txt
# call21.sh's Megatron-LM stream: its tasks that never ran a reference and need nothing this
# machine lacks (one GPU, no multicast, no package the wheelhouses cannot bring: wandb, TE)
python - "$T" > $C/mlm.txt <<'PY'
import json, sys
from pathlib import Path
for d in sorted(Path(sys.argv[1]).glob("megatron-lm__*")):
    v = json.loads((d / "task.json").read_text())["verification"]
    if v["status"] == "unverified" and v["reason"].startswith("no reference run yet"):
        print(d.name)
PY
# call21.sh sel: flash-linear-attention tasks whose selection run was cut before any test
# ended (a selection cut that way now runs once more); --force reruns their references
python - "$T" > $C/sel.txt <<'PY'
import json, sys
from pathlib import Path
for d in sorted(Path(sys.argv[1]).glob("flash-linear-attention__*")):
    if "the selection run failed (timeout)" in json.loads((d / "task.json").read_text())["verification"]["reason"]:
        print(d.name)
PY
# call21.sh rp: flash-linear-attention tasks judged "no fail-to-pass" whose PR changed a test's
# parametrize decorator: the selection now takes the parametrizations with the PR's new values
# first (Liger-Kernel #986's bfloat16 case); --force --reselect reruns them. (Liger-Kernel's
# two, #477 and #986, need 28 MB of transformers wheelhouses: a call of their own.)
python - "$T" > $C/rp.txt <<'PY'
import json, re, sys
from pathlib import Path
NO = "no test fails at the setup state and passes with the gold"
def in_decorator(patch):  # an added line followed, past decorator lines only, by the `def` of
    # a test the PR kept (a new test's cases are all new: the order among them does not change)
    for hunk in re.split(r"^@@.*$", patch, flags=re.M)[1:]:
        lines = [line for line in hunk.splitlines() if line[:1] in (" ", "+")]
        for i, line in enumerate(lines):
            if not line.startswith("+") or not line[1:].strip():
                continue
            for n in lines[i + 1:]:
                nxt = n[1:]
                if re.match(r"(async )?def test", nxt):
                    if n.startswith(" "):
                        return True
                    break
                if nxt and not nxt[0].isspace() and not nxt.startswith(("@", ")", "]")):
                    break
    return False
for d in sorted(Path(sys.argv[1]).glob("flash-linear-attention__*")):
    patch = d / "test.patch"
    if NO in json.loads((d / "task.json").read_text())["verification"]["reason"] and \
            patch.exists() and in_decorator(patch.read_text(errors="replace")):
        print(d.name)
PY
cat $C/n0.txt $C/n1.txt $C/sel.txt $C/rp.txt $C/mlm.txt $C/score.txt $C/wl.txt $C/fla_opt.txt > $work/ids.txt; echo megatron-lm__4460__causal_conv1d_update_kernel >> $work/ids.txt
mkdir $work/tasks && for t in $(cat $work/ids.txt); do cp -r $T/$t $work/tasks/; done
python -m envbuild --tasks $work/tasks --work $state/work --no-lint > /dev/null
for fw in flash-linear-attention:fla-org+flash-linear-attention:"--path fla --path tests --path benchmarks" \
          liger-kernel:linkedin+Liger-Kernel:"--path src --path test --path benchmark" \
          megatron-lm:NVIDIA+Megatron-LM:"--path megatron --path tests"; do
  IFS=: read -r name mirror paths <<< "$fw"
  grep "^${name}__" $work/ids.txt > $work/$name.txt || continue
  python -m eval bundle --tasks $work/tasks --task-file $work/$name.txt --repo-path $name=$mirrors/$mirror/repo \
    --out $C/$([ $name = flash-linear-attention ] && echo fla || { [ $name = liger-kernel ] && echo lig || echo mlm; }).git $paths | tail -n 1
done
cat $C/score.txt $C/wl.txt > $work/pred.txt
for k in gold setup; do
  python -m eval oracle --tasks $work/tasks --task-file $work/pred.txt --repo-path flash-linear-attention=$C/fla.git \
    --repo-path liger-kernel=$C/lig.git --repo-path megatron-lm=$C/mlm.git --from $k --out $C/$k.jsonl | tail -n 1
done
python -m eval workload --plan-only --force --tasks $work/tasks --task-file $C/fla_opt.txt \
  --repo-path flash-linear-attention=$C/fla.git --out $work/plan > /dev/null
python -m envbuild.wheelhouse --tasks $work/tasks --task megatron-lm__4460__causal_conv1d_update_kernel $(sed 's/^/--task /' $C/mlm.txt) \
  --host envbuild/hosts/h200.txt --out $C/wh | tail -n 1
tar -C $work -czf $C/tasks.tgz tasks
rm -rf $work
wc -l $C/*.txt; du -sh $C
