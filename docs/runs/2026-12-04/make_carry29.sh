#!/usr/bin/env bash
# Builds `.carry/f`, the carry of call29.sh (2026-12-04, third session): flash-linear-attention
# tasks of before mid-2025 import `fla`, whose models register `bitnet` with transformers'
# Auto classes, and transformers 5 (the H200's) has its own `bitnet`: every such task ends "the
# framework does not import with the installed transformers" on the host's packages (call 28:
# #349, #9eac8cce39, #bd32e7b54b). They run on their date-pinned transformers (envbuild's
# env.json, `envbuild.wheelhouse`): the 5 that failed so (transformers 4.51.3) rerun with
# --force, and the 6 never-run tasks pinned to 4.49.0 whose PR changed a test; two wheelhouses
# (28 MB) fit beside the tracked tree, so two keys a call (call 29: 4.51.3 and 4.49.0, 7 of 11
# verified; call 30: 4.47.1 and 4.50.3, 9 of 13). `plan.txt` ranks every key by the tasks it
# would let run; the call takes the first two (or KEYS="k1 k2").
# score.txt (since 2026-12-05, sixth session): the verified tasks on the carried keys the gold
# oracle has not scored, and gold.jsonl, their gold targets (call41.sh scores them beside).
# Usage (repository root, venv active): [KEYS=... | NKEYS=2] [NO_TEST=1] [OPT=1] [TRITON2=1] [WH_IDS=FILE] [WH_ADD=FILE] [EXTRA=FILE] [SCORE_EXTRA=FILE] make_carry29.sh STATE MIRRORS WHEELHOUSES
set -euo pipefail
state=${1:?usage: make_carry29.sh STATE MIRRORS WHEELHOUSES}; mirrors=${2:?}; wh=${3:?}
T=$state/tasks; C=.carry/f; work=$(mktemp -d)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
rm -rf $C && mkdir -p $C/wh $work/tasks
# env.json of every flash-linear-attention task (envbuild writes into the directories: a copy)
cp -r $T/flash-linear-attention__* $work/tasks/
python -m envbuild --tasks $work/tasks --no-lint \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo > $work/envb.log
# the tasks a wheelhouse would let run, by key: never run (or failed for want of their pins),
# not optimizations (judged on a workload), and whose PR changed a test; plan.txt lists every
# key, most tasks first; KEYS (default: the first two) picks the call's two
python - $work/tasks > $work/eligible.txt <<'PY'
import json, os, sys
from pathlib import Path
from envbuild.model import EnvSpec
from envbuild.wheelhouse import env_key, package_pins
from curation.taskdir import TaskFile, task_dirs
root = Path(sys.argv[1])
for td in task_dirs(root):
    d = root / td.id
    spec = td.load(TaskFile.ENV, EnvSpec)
    pins = package_pins(spec)
    # pinned to Triton 2 (flash-linear-attention before March 2024): on the device's Triton
    # 3.6, 23 of the 35 such references run so far failed to compile and 5 verified (Triton 3
    # pins: 117 of 226; 2026-12-06, docs/verification.md); TRITON2=1 admits them anyway
    if spec is not None and spec.triton.value.startswith("2.") and os.environ.get("TRITON2") != "1":
        continue
    t = json.loads((d / "task.json").read_text())
    ref = (d / "reference.json").exists() or (d / "reference.partial.json").exists()
    if not pins or (ref and "not import with the installed" not in t["verification"]["reason"]):
        continue  # on the host's packages, or ran and not for want of its pins
    patch = d / "test.patch"
    kind = t["task_type"]["type"]
    # NO_TEST=1 (2026-12-06, second session): features and new ops whose PR changed no test
    # too (the setup state's stub or base target fails the existing tests that reach it: 6 of
    # the 12 such tasks run so far verified; 153 never run)
    no_test = os.environ.get("NO_TEST") == "1" and kind in ("feature", "new_op")
    # OPT=1 (2026-12-06, third session): optimizations whose PR changed a test too (a test
    # that fails at the setup state makes the gate judge one by its tests, as a feature or bug
    # fix: eval.gate.retype; Megatron-LM #6521)
    opt = os.environ.get("OPT") == "1" and kind == "optimization"
    if (kind == "optimization" and not opt) or t["verification"]["status"] == "out_of_scope" \
            or not (patch.exists() and patch.stat().st_size or no_test):
        continue
    print(env_key(pins), td.id)
PY
cut -d' ' -f2 $work/eligible.txt > $work/eligible_ids.txt
python -m envbuild.wheelhouse --tasks $work/tasks --task-file $work/eligible_ids.txt --out $wh --plan > $C/plan.txt
keys=${KEYS:-$(head -n ${NKEYS:-2} $C/plan.txt | cut -d' ' -f1)}
for k in $keys; do grep "^$k " $work/eligible.txt | cut -d' ' -f2 || true; done > $C/wh.txt
# WH_IDS (a file, 2026-12-06): the references to run on the carried keys instead, e.g. tasks
# judged before that call41.sh runs again with FORCE=1 (the selection retry)
if [ -n "${WH_IDS:-}" ]; then cp "$WH_IDS" $C/wh.txt; fi
# WH_ADD (a file, 2026-12-06 second session): references to run on the carried keys besides
# the never-run ones (call 47: the widened selection retry beside key 4.46.2's four)
if [ -n "${WH_ADD:-}" ]; then cat "$WH_ADD" >> $C/wh.txt; fi
{ find $T -name reference.partial.json | xargs -r -n1 dirname | xargs -r -n1 basename
  # EXTRA (a file, 2026-12-05 sixth session): more tasks to run on the host's packages beside
  # the partials, e.g. a never-run task whose setup state was repaired
  if [ -n "${EXTRA:-}" ]; then cat "$EXTRA"; fi; } | sort -u > $C/n0.txt
for k in $keys; do  # a wheelhouse not downloaded yet: from one of its tasks' pins
  [ -d $wh/$k ] || python -m envbuild.wheelhouse --tasks $work/tasks --task-file $C/wh.txt --out $wh \
    --host envbuild/hosts/h200.txt | tail -n 1
  cp -r $wh/$k $C/wh/
done
# the wheels several carried keys share, kept once (2026-12-07, sixth session: tokenizers and
# huggingface-hub, 3.7 MB a key; envbuild.wheelhouse --pool): three or four keys a carry
python -m envbuild.wheelhouse --out $C/wh --pool
# score.txt (2026-12-05, sixth session): the verified tasks on the carried keys whose gold the
# oracle has not scored yet (their wheelhouse comes anyway), for call41.sh's gold streams
python scripts/oracle_coverage.py docs/runs --tasks $T --unscored gold > $work/unscored.txt
python - $work/tasks $work/unscored.txt "$keys" > $C/score.txt <<'PY'
import json
import sys
from pathlib import Path
from envbuild.model import EnvSpec
from envbuild.wheelhouse import env_key, package_pins
from curation.taskdir import TaskFile, task_dirs
root, keys = Path(sys.argv[1]), set(sys.argv[3].split())
wanted = set(Path(sys.argv[2]).read_text().split())
for td in task_dirs(root):
    if td.id in wanted and (pins := package_pins(td.load(TaskFile.ENV, EnvSpec))) \
            and env_key(pins) in keys:
        # the oracle runs on the reference's package set or not at all: a task verified on
        # the host's packages (transformers 5) is refused on its key's (H100 call 82,
        # 2026-12-07: three of t2's four); those go through SCORE_EXTRA on the host
        ran = json.loads(td.path(TaskFile.REFERENCE).read_text())["environment"]["packages"]
        if set(pins) <= set(ran):
            print(td.id)
        else:
            print(f"left out of score.txt: {td.id}: its reference ran on other packages",
                  file=sys.stderr)
PY
# SCORE_EXTRA (a file, 2026-12-06): more verified tasks for the gold oracle, e.g. those whose
# references ran on the host's packages (transformers 5: no key of theirs is carried, so they
# run on the host's Python, as their references did)
if [ -n "${SCORE_EXTRA:-}" ]; then cat "$SCORE_EXTRA" >> $C/score.txt; fi
mkdir -p $work/pack/tasks
for t in $(cat $C/wh.txt $C/n0.txt $C/score.txt | sort -u); do
  cp -r $T/$t $work/pack/tasks/
  # every packed task's env.json (since 2026-12-07, sixth session; before, only the
  # wheelhouse and score tasks'): its pinned Triton decides eval.compat's switches on the host's
  # packages too (#503's constexpr/do_not_specialize switch), and the n0 stream passes no
  # --wheelhouse, so the pins choose no environment there
  if [ -e $work/tasks/$t/env.json ]; then cp $work/tasks/$t/env.json $work/pack/tasks/$t/; fi
done
tar -C $work/pack -czf $C/tasks.tgz tasks
cat $C/wh.txt $C/n0.txt $C/score.txt | sort -u > $work/ids.txt
python -m eval bundle --tasks $work/pack/tasks --task-file $work/ids.txt \
  --repo-path flash-linear-attention=$mirrors/fla-org+flash-linear-attention/repo --out $C/fla.git \
  --path fla --path tests --path benchmarks | tail -n 1
if [ -s $C/score.txt ]; then
  python -m eval oracle --tasks $work/pack/tasks --task-file $C/score.txt \
    --repo-path flash-linear-attention=$C/fla.git --from gold --out $C/gold.jsonl | tail -n 1
fi
# the call's script travels in the carry (2026-12-07, sixth session): docs/runs (11 MB of
# tracked results) can then stay behind with release/, which leaves room for more keys
cp docs/runs/2026-12-05/call41.sh $C/
wc -l $C/wh.txt $C/n0.txt $C/score.txt; du -sh $C
