"""The eval stage on a tiny framework repo with a real Triton kernel, run on the CPU
(TRITON_INTERPRET=1): splice each variant, grade per test, classify crashing, hanging and
wrong-output kernels, and score a predictions file."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from core.files import write_record
from core.records import from_json

pytest.importorskip("torch")
pytest.importorskip("triton")

from curation.taskdir import TaskDir, TaskFile, task_dirs
from eval.__main__ import main as eval_main
from eval.backends import LocalBackend, RunSettings
from eval.model import FailureClass, Reference, Variant
from eval.workspace import SourceStore
from mining.git import GitRepo
from tests.test_builder import unavailable
from tests.tinyfw import make_task_env

KERNEL_HEAD = (
    "@triton.jit\ndef add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    y = tl.load(y_ptr + offs, mask=mask)\n"
)


def kernel(body: str) -> str:
    return KERNEL_HEAD + body


GOOD = kernel("    tl.store(out_ptr + offs, x + y, mask=mask)\n")
WRONG = kernel("    tl.store(out_ptr + offs, x - y, mask=mask)\n")
# Writes into its input y as well as its output.
CLOBBER = kernel(
    "    tl.store(out_ptr + offs, x + y, mask=mask)\n"
    "    tl.store(y_ptr + offs, y * 0.0, mask=mask)\n"
)
# Under the interpreter the kernel body is Python: these stand in for a kernel that takes the
# process down and one that never returns.
CRASH = kernel("    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n")
HANG = kernel("    while True:\n        pass\n")


@pytest.fixture(scope="module")
def task_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return sandboxed_env(tmp_path_factory.mktemp("eval"))


def sandboxed_env(root: Path, extra: dict[str, str] | None = None) -> tuple[Path, Path, Path]:
    """A tiny framework's task (`make_task_env`) for `eval reference` and `eval score`, which
    sandbox their runs: without bubblewrap they stop with a one-line error, and the tests would
    fail for a missing package, not for the code (a fresh machine, 2026-12-07: 23 failures
    until `apt-get install bubblewrap`); skipped locally, failed under CI."""
    if shutil.which("bwrap") is None:
        unavailable("the eval tests sandbox their runs: apt-get install bubblewrap")
    return make_task_env(root, extra=extra)


def backend(repo: Path, tmp_path: Path, timeout: float = 120.0) -> LocalBackend:
    settings = RunSettings(timeout_s=timeout, max_test_files=4, isolated_timing=False,
                           cache_root=tmp_path / "cache")  # fmt: skip
    return LocalBackend({"fw": SourceStore(GitRepo(repo))}, tmp_path / "scratch", settings)


def only_task(tasks: Path) -> TaskDir:
    [tdir] = task_dirs(tasks)
    return tdir


def test_reference_run_finds_fail_to_pass(task_env, tmp_path: Path) -> None:
    _repo, work, tasks = task_env
    tdir = only_task(tasks)
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "2",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing",
            "--timeout", "120", "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    ref = from_json(Reference, json.loads((tdir.root / "reference.json").read_text()))
    assert ref.valid, ref.validity_note
    assert ref.fail_to_pass == ("tests/test_values.py::test_values",)
    assert ref.pass_to_pass == ("tests/test_shape.py::test_shape",)
    assert (ref.base.passed_runs, ref.gold.passed_runs) == (0, 2)
    assert ref.base.failures == {"test_failure": 2}
    order = [(r.run, r.variant) for r in ref.runs]
    assert order == [(0, "base"), (0, "gold"), (1, "gold"), (1, "base")]  # alternating
    gold_run = next(r for r in ref.runs if r.variant is Variant.GOLD)
    [timing] = gold_run.kernels
    assert timing.kernel == "add_kernel" and timing.calls >= 2
    assert ref.environment.torch != "unavailable"
    # the selection run chose the node ids that launch the target; the PR's own test first
    assert ref.node_ids == ("tests/test_values.py::test_values", "tests/test_shape.py::test_shape")
    assert ref.selection is not None and set(ref.selection.kernels[0].nodes) >= set(ref.node_ids)
    assert any(p.startswith("torch==") for p in ref.environment.packages)
    assert len(ref.environment.packages_sha) == 64
    task = tdir.load_task()
    assert task.verification.status == "verified", task.verification.reason
    assert task.verification.environment and ref.environment.packages_sha[:12] in (
        task.verification.environment
    )
    assert task.tests.node_ids == ref.node_ids
    # the gold's launch of the target in the kept tests, for the requirement (issue 9 item 5):
    # dtypes and shapes, constexprs by value, no grid
    [line] = task.tests.launches
    assert line.startswith("add_kernel(") and "float32[" in line and "grid=" not in line, line
    from curation.requirement import draft_requirement

    assert f"The tests launch it (the gold, on the GPU) with: `{line}`" in draft_requirement(task)
    # a curation run again keeps them, as it keeps the node ids; `eval rejudge` gives them back
    # from the stored runs (references run before they were recorded)
    bare = replace(task, tests=replace(task.tests, launches=(), node_ids=()))
    tdir.write_task(bare)
    assert tdir.load_task().tests.launches == (line,)
    write_record(tdir.path(TaskFile.TASK), bare)
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0
    assert tdir.load_task().tests.launches == (line,)
    # had curation typed it an optimization, the fail-to-pass test the GPU saw says the change
    # is one of behaviour: judged by its tests, its type a bug fix (the title says "Fix"),
    # curation's evidence kept (Megatron-LM #6521 on the H200, 2026-12-06)
    from curation.classify import BEHAVIOUR_CHANGED
    from curation.model import TaskType, TypeDecision

    typed = TypeDecision(TaskType.OPTIMIZATION, ("launch/autotune parameters changed: add_kernel",))
    write_record(tdir.path(TaskFile.TASK), replace(tdir.load_task(), task_type=typed))
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0
    task = tdir.load_task()
    assert task.task_type.type is TaskType.BUG_FIX, task.task_type
    assert task.task_type.evidence[0] == BEHAVIOUR_CHANGED
    assert "curation said optimization: launch/autotune" in task.task_type.evidence[-1]
    assert task.verification.status == "verified"
    assert task.verification.reason.endswith("; judged as a bug_fix, not an optimization")
    before = (tdir.root / "reference.json").read_text()
    assert eval_main(["rejudge", "--tasks", str(tasks)]) == 0  # the same verdict again
    assert (tdir.root / "reference.json").read_text() == before
    assert tdir.load_task().verification.reason == task.verification.reason


def _copy_tasks(tasks: Path, dest: Path) -> TaskDir:
    import shutil

    shutil.copytree(tasks, dest)
    tdir = only_task(dest)
    for name in ("reference.json",):
        (tdir.root / name).unlink(missing_ok=True)
    return tdir


def test_task_needing_multicast_is_out_of_scope_and_never_runs(task_env, tmp_path: Path) -> None:
    from dataclasses import replace

    from core.files import write_record
    from curation.model import Hardware

    _repo, work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    task = tdir.load_task()
    write_record(tdir.root / "task.json",
                 replace(task, requires=Hardware(gpus=2, nvlink_multicast=True)))  # fmt: skip
    argv = ["reference", "--tasks", str(tmp_path / "tasks"), "--work", str(work),
            "--out", str(tmp_path / "runs"), "--no-isolated-timing"]  # fmt: skip
    assert eval_main(argv) == 1  # nothing ran
    verdict = tdir.load_task().verification
    assert verdict.status == "out_of_scope" and "multicast" in verdict.reason
    assert (
        not (tmp_path / "runs" / tdir.id).exists() and not (tdir.root / "reference.json").exists()
    )


def test_no_test_launching_a_target_leaves_the_task_unverified(task_env, tmp_path: Path) -> None:
    from dataclasses import replace

    from core.files import write_record

    _repo, work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    task = tdir.load_task()
    targets = tuple(replace(t, name="other_kernel") if t.role == "kernel" else t
                    for t in task.targets)  # fmt: skip
    # (a fresh task: the node ids an earlier run chose are dropped)
    fresh = replace(task, targets=targets, tests=replace(task.tests, node_ids=()))
    write_record(tdir.root / "task.json", fresh)
    argv = ["reference", "--tasks", str(tmp_path / "tasks"), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing"]  # fmt: skip
    assert eval_main(argv) == 0
    verdict = tdir.load_task().verification
    assert verdict.status == "unverified" and verdict.reason == "no test launches a target kernel"
    ref = from_json(Reference, json.loads((tdir.root / "reference.json").read_text()))
    assert ref.node_ids == () and ref.runs == ()


def test_reselect_collects_the_test_files_not_the_old_node_ids(task_env, tmp_path: Path) -> None:
    """flash-linear-attention #714 (H200, calls 15 and 19): `--reselect` ran the selection on
    the task's old node ids, three tests that pass at the setup state, and never on the test
    its PR adds. The selection now collects the task's test files whatever node ids it had."""
    from core.files import write_record

    _repo, work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    old = tdir.load_task()
    stale = replace(old, tests=replace(old.tests, node_ids=("tests/test_shape.py::test_shape",)))
    write_record(tdir.root / "task.json", stale)
    argv = ["reference", "--tasks", str(tmp_path / "tasks"), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--reselect",
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    ref = from_json(Reference, json.loads((tdir.root / "reference.json").read_text()))
    assert ref.selection is not None
    ran = {t.nodeid for t in ref.selection.tests}
    assert "tests/test_values.py::test_values" in ran, ran
    assert ref.fail_to_pass == ("tests/test_values.py::test_values",) and ref.valid


def test_force_without_reselect_says_which_tasks_keep_their_node_ids(
    task_env, tmp_path: Path, monkeypatch, capsys
) -> None:
    """Call 87 (2026-12-07): `--force` with new selection caps reran 19 judged tasks on the node
    ids chosen before, and no line said so. A forced run now names them first; with
    `--reselect`, or for a task without node ids, there is nothing to say."""
    from core.files import write_record
    from eval import session

    _repo, work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    old = tdir.load_task()
    judged = replace(old, tests=replace(old.tests, node_ids=("tests/test_shape.py::test_shape",)))
    write_record(tdir.root / "task.json", judged)
    (tdir.root / "reference.json").write_text("{}")  # judged before: its reference exists
    monkeypatch.setattr(session, "run_references", lambda settings, done: ([], {}))
    argv = ["reference", "--tasks", str(tmp_path / "tasks"), "--work", str(work),
            "--out", str(tmp_path / "runs"), "--select-per-test", "3"]  # fmt: skip
    assert eval_main([*argv, "--force"]) == 0
    err = capsys.readouterr().err
    assert f"note: 1 task(s) run again on the node ids chosen before (first: {tdir.id})" in err
    assert eval_main([*argv, "--force", "--reselect"]) == 0
    assert "note:" not in capsys.readouterr().err
    assert eval_main(argv) == 0  # not forced: a judged task does not run at all
    assert "note:" not in capsys.readouterr().err
    write_record(tdir.root / "task.json", replace(judged, tests=replace(judged.tests, node_ids=())))
    assert eval_main([*argv, "--force"]) == 0  # no node ids: the selection runs anyway
    assert "note:" not in capsys.readouterr().err


def test_an_interrupted_reference_resumes_from_its_finished_runs(
    task_env, tmp_path: Path, monkeypatch
) -> None:
    """Call 18 on the H200: nine flash-linear-attention tasks (a selection of about 95 s, runs
    of 60-90 s each) were under way when the call's time ran out, and everything they had run
    was lost with the machine. The selection and each finished run are now kept in
    reference.partial.json; the next command on the same environment and patches runs only
    what is missing, and a partial of another environment starts over."""
    import shutil

    from core.files import write_record
    from eval.model import PartialReference
    from eval.reference import run_reference
    from eval.sandbox import Interrupted

    repo, _work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    fresh = tdir.load_task()
    fresh = replace(fresh, tests=replace(fresh.tests, node_ids=()))
    write_record(tdir.root / "task.json", fresh)
    real = backend(repo, tmp_path)
    made: list[tuple[str, str, int]] = []
    seen: list[bool] = []  # whether the tuning result was in the cache as each run started
    tuned = real.tuning_cache(fresh) / "0123abcd" / "add_kernel.autotune.json"
    midway = real.tuning_cache(fresh) / "4567ef01" / "add_kernel.autotune.json"

    class Recording:
        """The real backend, stopping (as an interrupt would) at run number `stop`."""

        def __init__(self, stop: int | None = None):
            self.stop = stop

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def run(self, task, tdir, variant, run_dir, i, *args, **kwargs):
            if self.stop is not None and len(made) == self.stop:
                # a run cut short: Triton had kept one kernel's tuning before the interrupt
                midway.parent.mkdir(parents=True, exist_ok=True)
                midway.write_text('{"key": [128]}')
                raise Interrupted("interrupted: the run was stopped")
            made.append((run_dir.name, str(variant), i))
            seen.append(tuned.exists())
            result = real.run(task, tdir, variant, run_dir, i, *args, **kwargs)
            if run_dir.name == "gold-0":  # as Triton keeps a tuning result in the task's cache
                tuned.parent.mkdir(parents=True, exist_ok=True)
                tuned.write_text('{"key": [64], "configs_timings": [[{"BLOCK": 64}, 1.0]]}')
            return result

    with pytest.raises(Interrupted):  # selection, base-0, gold-0, then the interrupt
        run_reference(tdir.load_task(), tdir, Recording(stop=3), tmp_path / "runs", runs=2)  # type: ignore[arg-type]
    assert not tdir.has(TaskFile.REFERENCE)
    partial = tdir.load(TaskFile.REFERENCE_PARTIAL, PartialReference)
    assert partial is not None and partial.selection is not None and partial.node_ids
    assert [(r.variant, r.run) for r in partial.runs] == [("base", 0), ("gold", 0)]
    assert partial.autotune == {"0123abcd/add_kernel.autotune.json": tuned.read_text(),
                                "4567ef01/add_kernel.autotune.json": '{"key": [128]}'}  # fmt: skip

    # resumed on a fresh machine (the cache is gone): the tuning result comes back first; under
    # `--reselect` too, since the partial's node ids were chosen by the run it resumes (the
    # ninth session of 2026-12-07 carries partials and tasks to choose anew in one call)
    shutil.rmtree(real.tuning_cache(fresh))
    made.clear()
    seen.clear()
    ref = run_reference(tdir.load_task(), tdir, Recording(), tmp_path / "runs", runs=2,  # type: ignore[arg-type]
                        reselect=True)  # fmt: skip
    assert made == [("gold-1", "gold", 1), ("base-1", "base", 1)]  # no selection, no run twice
    assert seen == [True, True]
    assert ref is not None and ref.valid, ref and ref.validity_note
    assert [(r.variant, r.run) for r in ref.runs] == [("base", 0), ("gold", 0), ("gold", 1),
                                                      ("base", 1)]  # fmt: skip
    assert ref.selection == partial.selection and ref.node_ids == partial.node_ids
    assert not tdir.has(TaskFile.REFERENCE_PARTIAL)  # done: nothing left to resume
    # the finished reference keeps the tuning, and a score on the same GPU and Triton puts it
    # back before its first run (the gold oracle scored 3 of 13 cold golds in 175 s, call 49)
    assert ref.autotune == partial.autotune
    from eval import score

    pred = {"task_id": fresh.task_id, "from": "gold"}
    for same, restored in ((False, False), (True, True)):
        shutil.rmtree(real.tuning_cache(fresh))
        seen.clear()
        monkeypatch.setattr(score, "same_machine", lambda env, same=same: same)
        score.score_task(tdir.load_task(), tdir, pred, Recording(), tmp_path / f"score{same}")  # type: ignore[arg-type]
        assert seen[0] is restored

    # a partial made on another environment (or patches) is not resumed
    other = replace(partial, key="NVIDIA H100; torch 2.4; triton 3.0; packages x")
    write_record(tdir.path(TaskFile.REFERENCE_PARTIAL), other)
    made.clear()
    assert run_reference(tdir.load_task(), tdir, Recording(), tmp_path / "runs2", runs=1)  # type: ignore[arg-type]
    assert [m[0] for m in made] == ["base-0", "gold-0"]  # node ids kept in task.json: no selection
    # nor one that cannot be read: the reference starts over and says so
    tdir.path(TaskFile.REFERENCE_PARTIAL).write_text("{ not json")
    made.clear()
    assert run_reference(tdir.load_task(), tdir, Recording(), tmp_path / "runs3", runs=1)  # type: ignore[arg-type]
    assert [m[0] for m in made] == ["base-0", "gold-0"]


def test_a_prediction_gets_the_bases_tuning_and_never_the_golds(
    task_env, tmp_path: Path, monkeypatch
) -> None:
    """A model's prediction tuned every kernel from a cold cache, the ones it left as they were
    too (a flash-linear-attention kernel's first tuning: up to 400 s on the H200). The reference
    now keeps what the first base run tuned, before any gold run, apart (`autotune_base`), and
    `eval score` puts that, and only that, into the prediction's own cache, over what an
    earlier prediction left there; the gold's tuning (for a PR that retunes, the solution)
    stays in the trusted cache."""
    from dataclasses import replace

    from core.files import write_record
    from eval import score
    from eval.reference import run_reference

    repo, _work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    real = backend(repo, tmp_path)
    fresh = tdir.load_task()
    trusted, own = real.tuning_cache(fresh), real.tuning_cache(fresh, Variant.PREDICTION)
    assert trusted != own
    base_key, gold_key = "0123abcd/add_kernel.autotune.json", "4567ef01/add_kernel.autotune.json"
    base_text, gold_text = '{"key": [64], "base": 1}', '{"key": [64], "gold": 1}'
    seen: dict[str, set[str]] = {}  # the tuning results in the run's cache as it started

    class Tuning:
        """The real backend; each run leaves its variant's tuning in the trusted cache, as
        Triton does where autotuning results are cached (not in the selection's runs)."""

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def run(self, task, tdir, variant, run_dir, i, *args, **kwargs):
            cache = real.tuning_cache(task, variant)
            seen[run_dir.name] = {str(p.relative_to(cache)) for p in cache.rglob("*.autotune.json")}
            result = real.run(task, tdir, variant, run_dir, i, *args, **kwargs)
            caching = (kwargs.get("extra_env") or {}).get("TRITON_CACHE_AUTOTUNING") != "0"
            if variant is not Variant.PREDICTION and caching:
                base = variant is Variant.BASE
                key, text = (base_key, base_text) if base else (gold_key, gold_text)
                (trusted / key).parent.mkdir(parents=True, exist_ok=True)
                (trusted / key).write_text(text)
            return result

    ref = run_reference(fresh, tdir, Tuning(), tmp_path / "runs", runs=2)  # type: ignore[arg-type]
    assert ref is not None and ref.valid, ref and ref.validity_note
    assert ref.autotune == {base_key: base_text, gold_key: gold_text}
    assert ref.autotune_base == {base_key: base_text}
    # an earlier prediction left its own result for the kernel the base tuned
    (own / base_key).parent.mkdir(parents=True, exist_ok=True)
    (own / base_key).write_text('{"key": [64], "forged": 1}')
    monkeypatch.setattr(score, "same_machine", lambda env: True)
    pred = {"task_id": fresh.task_id, "kernels": {"add_kernel": GOOD}}
    row = score.score_task(tdir.load_task(), tdir, pred, Tuning(), tmp_path / "score")  # type: ignore[arg-type]
    assert row.passed
    assert seen["pred-0"] == {base_key} and (own / base_key).read_text() == base_text
    assert gold_key not in {str(p.relative_to(own)) for p in own.rglob("*.autotune.json")}
    assert seen["gold-0"] >= {base_key, gold_key}  # the trusted runs get all of it
    # a reference made before (no `autotune_base`) gives a prediction nothing
    write_record(tdir.path(TaskFile.REFERENCE), replace(ref, autotune_base={}))
    import shutil

    shutil.rmtree(own)
    score.score_task(tdir.load_task(), tdir, pred, Tuning(), tmp_path / "score2")  # type: ignore[arg-type]
    assert seen["pred-0"] == set()
    # a selection that tunes every config (`SelectionCaps(autotune="all")`) leaves the gold's
    # tuning in the cache before the first base run: it is not the base's
    from eval.reference import SelectionCaps

    shutil.rmtree(trusted)
    ref = run_reference(
        fresh,
        tdir,
        Tuning(),
        tmp_path / "runs-all",
        runs=1,
        reselect=True,
        caps=SelectionCaps(autotune="all"),
        resume=False,
    )  # type: ignore[arg-type]
    assert ref is not None and seen["base-0"] == {gold_key}  # the selection's, already there
    assert ref.autotune_base == {base_key: base_text}
    assert ref.autotune == {base_key: base_text, gold_key: gold_text}


def test_a_first_run_cut_by_its_time_limit_runs_once_more(task_env, tmp_path) -> None:
    """A variant's first run compiles from a cold cache and may outlast its limit on a busy
    machine: it runs once more, and the second attempt is the run kept; a later run's
    timeout is an outcome. A selection run cut before any test ended runs once more too."""
    from core.files import write_record
    from eval.reference import run_reference

    repo, _work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    fresh = tdir.load_task()  # no node ids yet: the selection runs (and is cut once too)
    write_record(tdir.root / "task.json", replace(fresh, tests=replace(fresh.tests, node_ids=())))
    real = backend(repo, tmp_path)
    made: list[str] = []

    class SlowFirstGold:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def run(self, task, tdir, variant, run_dir, i, *args, **kwargs):
            made.append(run_dir.name)
            result = real.run(task, tdir, variant, run_dir, i, *args, **kwargs)
            if run_dir.name in ("select", "gold-0", "base-1"):  # killed at the limit
                kept = result.tests if run_dir.name == "base-1" else ()
                return replace(result, failure=FailureClass.TIMEOUT, passed=False,
                               exit_code=None, tests=kept)  # fmt: skip
            return result

    ref = run_reference(tdir.load_task(), tdir, SlowFirstGold(), tmp_path / "runs", runs=2)  # type: ignore[arg-type]
    assert made == ["select", "select-again", "base-0", "gold-0", "gold-0-again", "gold-1",
                    "base-1"]  # fmt: skip
    assert ref is not None and ref.valid, ref and ref.validity_note
    kept = {(str(r.variant), r.run): r.failure for r in ref.runs}
    assert kept[("gold", 0)] is FailureClass.NONE
    assert kept[("base", 1)] is FailureClass.TIMEOUT  # not the first run: kept as it ended


@pytest.mark.parametrize(
    ("source", "failure"),
    [
        (GOOD, FailureClass.NONE),
        (WRONG, FailureClass.TEST_FAILURE),
        (CRASH, FailureClass.CRASH),
        ("def add_kernel(:\n", FailureClass.SPLICE_ERROR),
    ],
)
def test_prediction_variants_are_classified(task_env, tmp_path: Path, source, failure) -> None:
    repo, _, tasks = task_env
    tdir = only_task(tasks)
    pred = {"task_id": tdir.id, "kernels": {"add_kernel": source}}
    r = backend(repo, tmp_path).run(
        tdir.load_task(), tdir, Variant.PREDICTION, tmp_path / "run", 0, pred
    )
    assert r.failure is failure, r.detail
    assert r.passed is (failure is FailureClass.NONE)
    if failure is FailureClass.TEST_FAILURE:
        outcomes = {t.nodeid: t.outcome for t in r.tests}
        assert outcomes == {
            "tests/test_shape.py::test_shape": "passed",
            "tests/test_values.py::test_values": "failed",
        }


def test_hanging_kernel_times_out_and_is_killed(task_env, tmp_path: Path) -> None:
    repo, _, tasks = task_env
    tdir = only_task(tasks)
    pred = {"task_id": tdir.id, "kernels": {"add_kernel": HANG}}
    r = backend(repo, tmp_path, timeout=15).run(
        tdir.load_task(), tdir, Variant.PREDICTION, tmp_path / "run", 0, pred
    )
    assert r.failure is FailureClass.TIMEOUT and r.exit_code is None
    assert 15 <= r.wall_s < 60


def test_score_predictions_end_to_end(task_env, tmp_path: Path) -> None:
    _repo, work, tasks = task_env
    tdir = only_task(tasks)
    preds = tmp_path / "predictions.jsonl"

    def score(out: Path, *records: dict) -> dict:
        preds.write_text("".join(json.dumps(x) + "\n" for x in records))
        argv = ["score", str(preds), "--tasks", str(tasks), "--work", str(work),
                "--out", str(out), "--no-isolated-timing", "--timeout", "120",
                "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
        assert eval_main(argv) == 0
        return json.loads((out / "report.json").read_text())

    report = score(tmp_path / "good", {"task_id": tdir.id, "kernels": {"add_kernel": GOOD}})
    assert report["report"]["tcr"] == 1.0 and report["report"]["completed"] == 1
    [row] = report["tasks"]
    assert row["passed"] and row["flags"] == []
    # a torch-only "kernel" passes the tests but is flagged, not credited
    cheat = {"task_id": tdir.id, "kernels": {"add": "def add(x, y):\n    return x + y\n"}}
    row = score(tmp_path / "cheat", cheat)["tasks"][0]
    assert row["exec_ok"] and not row["passed"]
    assert "no_triton_kernel" in row["flags"] and "kernel_not_launched" in row["flags"]
    # a kernel that writes into an input the gold kernel only reads is flagged
    row = score(tmp_path / "clobber", {"task_id": tdir.id, "kernels": {"add_kernel": CLOBBER}})
    assert "modifies_inputs" in row["tasks"][0]["flags"] and not row["tasks"][0]["passed"]
    # resumable: a rerun does not run the finished task again
    before = (tmp_path / "cheat" / "results.jsonl").read_text()
    score(tmp_path / "cheat", cheat)
    assert (tmp_path / "cheat" / "results.jsonl").read_text() == before


def test_missing_prediction_counts_in_the_denominator(task_env, tmp_path: Path) -> None:
    _, work, tasks = task_env
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task_id": "some-other-task", "kernels": {}}) + "\n")
    out = tmp_path / "score"
    argv = ["score", str(preds), "--tasks", str(tasks), "--work", str(work), "--out", str(out),
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 1  # nothing ran: the report is written, and the exit code says so
    report = json.loads((out / "report.json").read_text())["report"]
    assert (report["tasks"], report["completed"], report["tcr"]) == (1, 0, 0.0)


def test_tasks_side_by_side_never_share_a_triton_cache(task_env, tmp_path: Path) -> None:
    """Five tasks compiling into one shared trusted cache lost a run on the H200
    (`FileNotFoundError` on Triton's tmp.pid_* directory): each task has its own cache, and a
    prediction's never is a trusted run's."""
    from dataclasses import replace

    from eval.backends import _cache

    _repo, _work, tasks = task_env
    task = only_task(tasks).load_task()
    other = replace(task, task_id=task.task_id + "_other")
    settings = RunSettings(cache_root=tmp_path / "tc")
    gold, base = _cache(settings, task, Variant.GOLD), _cache(settings, task, Variant.BASE)
    assert gold == base  # one task's runs are sequential: they share their compiled kernels
    assert _cache(settings, other, Variant.GOLD) != gold
    assert _cache(settings, task, Variant.PREDICTION) not in (gold, gold.parent)
    assert not gold.is_relative_to(_cache(settings, task, Variant.PREDICTION))


SLOW_TEST = """import time

import torch

from pkg.ops import add


def test_slow():
    add(torch.ones(4), torch.ones(4))
    time.sleep(600)
"""


def test_a_selection_run_killed_at_its_limit_keeps_the_tests_that_finished(
    tmp_path: Path,
) -> None:
    # flash-linear-attention's selection runs compile for minutes: one killed at its time limit
    # still says which tests passed and launched a target before (their teardown reports do)
    _repo, work, tasks = sandboxed_env(tmp_path / "env", extra={"tests/test_zz.py": SLOW_TEST})
    tdir = only_task(tasks)
    assert "tests/test_zz.py" in tdir.load_task().tests.command
    argv = ["reference", "--tasks", str(tasks), "--work", str(work), "--runs", "1",
            "--out", str(tmp_path / "runs"), "--no-isolated-timing", "--timeout", "120",
            "--select-timeout", "25", "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    assert eval_main(argv) == 0
    ref = from_json(Reference, json.loads((tdir.root / "reference.json").read_text()))
    assert ref.selection is not None and ref.selection.failure is FailureClass.TIMEOUT
    assert 25 <= ref.selection.wall_s < 60  # --select-timeout, not --timeout
    assert ref.selection.kernels == ()  # the session's report never came
    assert ref.node_ids == ("tests/test_values.py::test_values", "tests/test_shape.py::test_shape")
    assert ref.valid, ref.validity_note


def test_a_slim_bundle_holds_the_test_files_the_task_runs(tmp_path: Path) -> None:
    # flash-linear-attention #1135 runs a test file under benchmarks/: a bundle of --path fla
    # --path tests left it out, and the selection run found nothing to collect
    from mining.git import GitRepo as Repo

    extra = {
        "checks/test_more.py": "from pkg.ops import add\n\n\ndef test_more():\n    assert add\n"
    }
    repo, _work, tasks = sandboxed_env(tmp_path / "env", extra=extra)
    task = only_task(tasks).load_task()
    assert "checks/test_more.py" in task.tests.selected_existing, task.tests
    out = tmp_path / "bundle.git"
    argv = ["bundle", "--tasks", str(tasks), "--repo-path", str(repo), "--out", str(out),
            "--path", "pkg"]  # fmt: skip
    assert eval_main(argv) == 0
    files = Repo(out).list_tree(f"refs/bases/{task.base_commit}")
    assert "checks/test_more.py" in files and "pkg/ops.py" in files
    # the NAME=PATH form the other commands take, and a task list (2026-12-03: a bundle for the
    # next GPU session stopped on "not a git repository: .../liger-kernel=/work/.mirror/...")
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{task.task_id}\n")
    again = tmp_path / "again.git"
    argv = ["bundle", "--tasks", str(tasks), "--repo-path", f"{task.framework}={repo}",
            "--task-file", str(ids), "--out", str(again), "--path", "pkg"]  # fmt: skip
    assert eval_main(argv) == 0
    assert Repo(again).list_tree(f"refs/bases/{task.base_commit}") == files


def test_a_run_keeps_autotuning_results_in_its_own_triton_cache(task_env, tmp_path: Path) -> None:
    """Runs of one task share compiled kernels and autotuning results (Triton keys both by the
    kernel's source); the sandbox lets the switch through; the caller's values come last."""
    from eval.backends import _cache, run_env
    from eval.sandbox import run_environment

    _repo, _work, tasks = task_env
    tdir = only_task(tasks)
    task = tdir.load_task()
    settings = RunSettings(cache_root=tmp_path / "tc", extra_env={"TRITON_INTERPRET": "1"})
    cache = _cache(settings, task, Variant.PREDICTION)
    env = run_env(task, tdir, settings, cache, {"TRITON_CACHE_AUTOTUNING": "0"})
    assert env["TRITON_CACHE_DIR"] == str(cache) and env["TRITON_INTERPRET"] == "1"
    assert env["TRITON_CACHE_AUTOTUNING"] == "0"
    env = run_env(task, tdir, settings, cache)
    assert env["TRITON_CACHE_AUTOTUNING"] == "1"
    assert run_environment(env)["TRITON_CACHE_AUTOTUNING"] == "1"


def _processes_naming(text: str, but: int) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == but:
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and "pytest" in cmdline:
            pids.append(int(proc.name))
    return pids


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_an_interrupted_reference_run_stops_its_tests_and_records_no_verdict(
    tmp_path: Path, sig: str
) -> None:
    """A time limit's INT (or `timeout`'s default TERM) reached the command on the H200 while
    six tasks' pytest processes ran in their own sessions: the command waited for them until it
    was killed, and they ran on. Now the runs are killed at once, the interrupted task gets no
    reference (its killed runs are no verdict), and the command says how to resume."""
    import os
    import signal
    import subprocess
    import sys
    import time

    _repo, work, tasks = sandboxed_env(tmp_path / "env", extra={"tests/test_zz.py": SLOW_TEST})
    tdir = only_task(tasks)
    argv = [sys.executable, "-m", "eval", "reference", "--tasks", str(tasks), "--work", str(work),
            "--runs", "1", "--out", str(tmp_path / "runs"), "--no-isolated-timing",
            "--timeout", "300", "--select-timeout", "300", "--jobs", "2",
            "--triton-cache", str(tmp_path / "cache")]  # fmt: skip
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    try:
        end = time.monotonic() + 120
        while not _processes_naming(str(tmp_path), proc.pid):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < end, "no test run started"
            time.sleep(0.2)
        time.sleep(1.0)
        t0 = time.monotonic()
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 30
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted: reference stopped" in err and "Traceback" not in err, err
    assert not (tdir.root / "reference.json").exists()
    assert tdir.load_task().verification.checked_at is None
    time.sleep(0.5)
    assert _processes_naming(str(tmp_path), proc.pid) == []


def test_a_command_after_an_interrupted_one_runs_again(task_env, tmp_path: Path) -> None:
    """eval's commands called in-process (as here): an interrupt refuses new runs only until
    the next command starts, and a command leaves the caller's TERM handler as it found it."""
    import signal

    from eval.sandbox import Interrupted, interrupt_runs, run_script

    _repo, _work, tasks = task_env
    script = tmp_path / "job.py"
    script.write_text("open('out.txt', 'w').write('ok')\n")
    work = tmp_path / "w"
    work.mkdir()

    def run() -> bytes | None:
        return run_script(script, work, "out.txt", timeout_s=60, sandboxed=False).output

    interrupt_runs()
    with pytest.raises(Interrupted):
        run()
    handler = signal.getsignal(signal.SIGTERM)
    assert eval_main(["rejudge", "--tasks", str(tasks)]) in (0, 1)
    assert signal.getsignal(signal.SIGTERM) is handler
    assert run() == b"ok"


def test_a_bundle_of_a_base_before_the_package_holds_that_base(tmp_path: Path) -> None:
    # flash-linear-attention #1c5de1e816 (2026-12-06): the PR adds all of `fla` to a tree that
    # holds a README; `bundle --path fla --path tests` stopped on "none of ... exists"
    from mining.git import GitRepo as Repo
    from tests.gitrepo import TinyRepo
    from tests.tinyfw import CONFTEST, OPS, TEST_VALUES, mine

    repo = TinyRepo(tmp_path / "fw")
    repo.write("README.md", "# fw\n")
    repo.commit("Initial commit")
    repo.write("conftest.py", CONFTEST)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/ops.py", OPS.replace("x + y * 0.0", "x + y"))
    repo.write("tests/test_values.py", TEST_VALUES)
    repo.commit("Add the add kernel (#3)")
    _work, tasks = mine(repo.path, tmp_path)
    task = only_task(tasks).load_task()
    out = tmp_path / "bundle.git"
    argv = ["bundle", "--tasks", str(tasks), "--repo-path", str(repo.path), "--out", str(out),
            "--path", "pkg", "--path", "tests"]  # fmt: skip
    assert eval_main(argv) == 0
    assert set(Repo(out).list_tree(f"refs/bases/{task.base_commit}")) == {"README.md"}


def test_a_score_says_when_its_timings_had_company_on_the_gpu(task_env, tmp_path: Path) -> None:
    # on the H200 (2026-12-06, call 51) two gold runs of one task, timed while ten references
    # ran beside them, differed 1.74x: a score names the most other processes NVML saw around
    # its timings (the CPU has no NVML: the real runs' kernels get the counts a GPU would give)
    from eval import score
    from eval.model import KernelTiming

    repo, _work, tasks = task_env
    tdir = _copy_tasks(tasks, tmp_path / "tasks")
    real = backend(repo, tmp_path)

    class Crowded:
        def __init__(self, counts: dict[str, int | None]):
            self.counts = counts

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def run(self, task, tdir, variant, run_dir, i, *args, **kwargs):
            r = real.run(task, tdir, variant, run_dir, i, *args, **kwargs)
            timing = KernelTiming("add_kernel", 1, 0.01, isolated_ms=0.01,
                                  isolated_company=self.counts[run_dir.name])  # fmt: skip
            return replace(r, kernels=(timing,))

    pred = {"task_id": tdir.id, "from": "gold"}
    scores = []
    for name, counts in (("alone", {"pred-0": 0, "gold-0": 0}),
                         ("beside", {"pred-0": 0, "gold-0": 3}),
                         ("unknown", {"pred-0": None, "gold-0": None})):  # fmt: skip
        s = score.score_task(tdir.load_task(), tdir, pred, Crowded(counts), tmp_path / name)  # type: ignore[arg-type]
        assert s.passed, s.detail
        scores.append(s)
    assert [s.gpu_company for s in scores] == [0, 3, None]
    report = score.aggregate(scores)
    assert report.timed_beside == 1
    assert "- timed beside other processes on the GPU (their PMR measures that load too): 1" in (
        score.render_markdown(scores, report)
    )
