"""Crawl regressions of issue 12 (reliability), each on its own tiny real git repository."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.records import from_json, to_json
from tests.gitrepo import TinyRepo
from tests.kernels_src import ADD_KERNEL, PLAIN_MODULE, SCALE_KERNEL
from tests.test_crawl import candidates, changes_of, crawl


@pytest.fixture
def base(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/plain.py", PLAIN_MODULE)
    repo.commit("Initial commit")
    return repo


def test_rename_py_to_non_analysed_path_does_not_crash(base: TinyRepo, tmp_path: Path) -> None:
    base.write("tools/extract_ops.py", ADD_KERNEL)
    base.commit("Add a script with a kernel (#1)")
    base.mv("tools/extract_ops.py", "tools/extract_ops")
    base.commit("Drop the .py suffix of the script (#2)")
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("A kernel after the rename (#3)")
    assert crawl(base, tmp_path / "out") == 0
    first, second, third = candidates(tmp_path / "out", base)
    assert changes_of(first) == [("add_kernel", "added")]
    # The path without .py is not analysed: its kernels left the analysed files.
    assert changes_of(second) == [("add_kernel", "deleted")]
    assert {(f.path, f.old_path, f.status) for f in second.files} == {
        ("tools/extract_ops", "tools/extract_ops.py", "R")
    }
    assert changes_of(third) == [("add_kernel", "added")]


def test_rename_from_uppercase_py_suffix_does_not_crash(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/__init__.PY", ADD_KERNEL)
    base.commit("A package init with a wrong suffix (#1)")
    base.mv("pkg/ops/__init__.PY", "pkg/ops/__init__.py")
    base.commit("Fix the suffix (#2)")
    assert crawl(base, tmp_path / "out") == 0
    [cand] = candidates(tmp_path / "out", base)
    assert cand.id == "#2"
    assert changes_of(cand) == [("add_kernel", "added")]
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["commits_scanned"] == 3


# A kernel fix committed with a syntax typo in the kernel (as flash-linear-attention e361dd3a).
TYPO = ADD_KERNEL.replace(
    "    mask = offs < n\n", "    if n > 0::\n        n = n - 1\n    mask = offs < n\n"
)


def test_syntax_error_in_one_version_is_analysed_and_marked_uncertain(
    base: TinyRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mining")
    other = SCALE_KERNEL.split("\n\n\n", 1)[1]
    base.write("pkg/ops/add.py", ADD_KERNEL + "\n\n" + other)
    base.commit("Two kernels (#1)")
    base.write("pkg/ops/add.py", TYPO + "\n\n" + other)
    base.commit("Fix the last block, with a typo (#2)")
    base.write("pkg/ops/add.py", TYPO.replace("0::", "0:") + "\n\n" + other)
    base.commit("Fix the typo (#3)")
    assert crawl(base, tmp_path / "out") == 0
    first, typo, fixed = candidates(tmp_path / "out", base)
    assert [kc.uncertain for kc in first.kernel_changes] == [False, False]
    [kc] = typo.kernel_changes  # scale_kernel, untouched, is no change
    assert (kc.name, kc.change, kc.uncertain) == ("add_kernel", "modified", True)
    assert kc.before is not None and kc.after is not None
    assert "if n > 0::" in kc.after.source and "if n > 0" not in kc.before.source
    assert [f.skipped for f in typo.files] == [None]
    [kc] = fixed.kernel_changes
    assert (kc.name, kc.change, kc.uncertain) == ("add_kernel", "modified", True)
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["uncertain_changes"] == 2
    assert summary["partly_parsed_files"] == 2
    assert summary["skipped_files"] == {}
    assert "pkg/ops/add.py does not parse in one version (line 10)" in caplog.text


def test_uncertain_flag_reads_back_and_defaults_to_false() -> None:
    from mining.model import KernelChange

    record = {
        "name": "k",
        "change": "deleted",
        "file": "a.py",
        "old_file": "a.py",
        "before": None,
        "after": None,
    }
    assert from_json(KernelChange, record).uncertain is False  # a record written before the flag
    flagged = from_json(KernelChange, {**record, "uncertain": True})
    assert flagged.uncertain is True
    assert from_json(KernelChange, to_json(flagged)) == flagged


def test_kernel_moved_within_its_file_is_moved(base: TinyRepo, tmp_path: Path) -> None:
    other = SCALE_KERNEL.split("\n\n\n", 1)[1]
    head, rest = ADD_KERNEL.split("\n\n\n", 1)
    base.write("pkg/ops/add.py", f"{head}\n\n\n{rest}\n\n{other}")
    base.commit("Two kernels (#1)")
    base.write("pkg/ops/add.py", f"{head}\n\n\n{other}\n\n{rest}")
    base.commit("Put the scale kernel first (#2)")
    base.write("pkg/ops/add.py", f"{head}\n\n\ndef noop():\n    pass\n\n\n{other}\n\n{rest}")
    base.commit("A function above both: they shift, nothing moves (#3)")
    crawl(base, tmp_path / "out")
    assert [c.id for c in candidates(tmp_path / "out", base)] == ["#1", "#2"]
    [kc] = candidates(tmp_path / "out", base)[1].kernel_changes
    assert (kc.name, kc.change, kc.file, kc.old_file) == (
        "scale_kernel",
        "moved",
        "pkg/ops/add.py",
        "pkg/ops/add.py",
    )
    assert kc.before is not None and kc.after is not None
    assert kc.before.source == kc.after.source
    assert kc.after.span.start_line < kc.before.span.start_line


LAUNCH = "    add_kernel[grid](x, y, out, n, BLOCK=256)\n"


@pytest.mark.parametrize(
    ("edit", "launch_changed"),
    [
        # Liger-Kernel 42de5a2d: only the enclosing function was renamed
        (lambda src: src.replace("def add(x, y):", "def add_tensors(x, y):"), False),
        # FlagGems fc32e199: the call re-wrapped across lines, with a comment and a trailing comma
        (
            lambda src: src.replace(
                LAUNCH,
                "    add_kernel[\n        grid\n    ](\n        x, y,  # inputs\n        out,\n"
                "        n, BLOCK=256,\n    )\n",
            ),
            False,
        ),
        # the same value passed by keyword instead of by position, keywords reordered
        (
            lambda src: src.replace(
                LAUNCH, "    add_kernel[grid](BLOCK=256, x_ptr=x, y_ptr=y, out_ptr=out, n=n)\n"
            ),
            False,
        ),
        (lambda src: src.replace("BLOCK=256", "BLOCK=512"), True),
        (lambda src: src.replace("add_kernel[grid](x, y", "add_kernel[grid](y, x"), True),
        (lambda src: src.replace("add_kernel[grid]", "add_kernel[(n // 256,)]"), True),
    ],
    ids=["wrapper-renamed", "rewrapped", "positional-to-keyword", "block", "swapped", "grid"],
)
def test_launch_changed_compares_grid_and_argument_tokens(
    base: TinyRepo, tmp_path: Path, edit, launch_changed: bool
) -> None:
    assert LAUNCH in ADD_KERNEL
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.write("pkg/ops/add.py", edit(ADD_KERNEL))
    base.commit("Edit the launch (#2)")
    crawl(base, tmp_path / "out")
    cands = candidates(tmp_path / "out", base)
    if launch_changed:
        assert changes_of(cands[1]) == [("add_kernel", "launch_changed")]
    else:
        assert [c.id for c in cands] == ["#1"]


def test_root_commit_is_diffed_against_the_empty_tree_and_flagged(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "fw")
    # With this setting a plain `git log --raw` shows the root commit without any change.
    repo.git("config", "log.showRoot", "false")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    root = repo.commit("Initial import with a kernel")
    repo.write("pkg/ops/add.py", ADD_KERNEL.replace("x + y, mask", "x - y, mask"))
    repo.commit("Subtract (#2)")
    crawl(repo, tmp_path / "out")
    first, second = candidates(tmp_path / "out", repo)
    assert (first.commit, first.parent, first.root) == (root, None, True)
    assert changes_of(first) == [("add_kernel", "added")]
    assert [(f.path, f.status, f.additions) for f in first.files] == [
        ("pkg/ops/add.py", "A", ADD_KERNEL.count("\n"))
    ]
    assert (second.parent, second.root) == (root, False)
    record = json.loads((tmp_path / "out" / "fw" / "candidates.jsonl").read_text().splitlines()[0])
    assert record["root"] is True and record["parent"] is None


def test_crawl_summary_counts_kernel_changes_by_kernel_kind(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.write(
        "pkg/ops/attn_gluon.py",
        "from triton.experimental import gluon\n\n\n@gluon.jit\ndef attn(q):\n    pass\n\n\n"
        "@gluon.jit\ndef attn_bwd(q):\n    pass\n",
    )
    base.write(
        "pkg/codegen.py",
        'import triton\n\n\ndef gen(code, name):\n    code.writeline("@triton.jit")\n'
        '    code.writeline(f"def {name}(x):")\n',
    )
    base.write(
        "pkg/tuned.py",
        "import triton\n\n\n@triton.jit\ndef _k(x):\n    pass\n\n\n"
        "k = triton.autotune(configs=[], key=[])(_k)\n",
    )
    base.commit("Kernels of every kind (#1)")
    assert crawl(base, tmp_path / "out") == 0
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["kernel_kinds"] == {"jit": 1, "gluon": 2, "generated": 1, "assigned": 1}
    assert summary["kernel_changes"] == {"added": 5}
    assert summary["uncertain_changes"] == 0


def _children() -> dict[int, int]:
    """pid -> parent pid of every process this machine shows in /proc."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def _descendants(pid: int) -> set[int]:
    parents = _children()
    found = {pid}
    grew = True
    while grew:
        more = {p for p, pp in parents.items() if pp in found} - found
        found |= more
        grew = bool(more)
    return found - {pid}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_sigkill_of_the_crawl_leaves_no_worker_process(base: TinyRepo, tmp_path: Path) -> None:
    many = "\n\n".join(
        ADD_KERNEL.split("\n\n\n", 1)[1].split("\n\n\n")[0].replace("add_kernel", f"k{i}")
        for i in range(30)
    )
    for c in range(60):
        for f in range(10):
            base.write(
                f"pkg/ops/c{c}_{f}.py", f"import triton\nimport triton.language as tl\n\n{many}"
            )
        base.commit(f"Kernels {c} (#{c + 1})")
    cmd = [sys.executable, "-m", "mining.crawl", str(base.path), "--out", str(tmp_path / "out"),
           "--quiet", "--no-github", "--jobs", "2", "--checkpoint-every", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=Path(__file__).parents[1])
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while len(workers) < 2 and proc.poll() is None and time.monotonic() < deadline:
        workers = _descendants(proc.pid)
        time.sleep(0.01)
    time.sleep(0.2)
    workers = _descendants(proc.pid)
    proc.kill()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the crawl finished before it could be killed"
    assert len(workers) >= 2
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in workers if _alive(p)] == []


def test_state_writes_use_unique_temporary_files(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from mining.store import CrawlState

    path = tmp_path / "state.json"
    states = [CrawlState(framework=f"fw{i}", repo="o/r", branch="main") for i in range(4)]

    def save_often(state: CrawlState) -> None:
        for n in range(150):
            state.last_commit = f"{n:040x}"
            state.save(path)

    # Two crawls writing into one --out once shared `state.json.tmp` and crashed on it.
    with ThreadPoolExecutor(len(states)) as pool:
        for future in [pool.submit(save_often, s) for s in states]:
            future.result()
    assert CrawlState.load(path).last_commit == f"{149:040x}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600


def test_missing_blob_needed_for_rename_detection_does_not_stop_the_crawl(
    base: TinyRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base.write("data/table.txt", "".join(f"{i}\n" for i in range(200)))
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Data and a kernel (#1)")
    lost = base.git("rev-parse", "HEAD:data/table.txt")
    base.mv("data/table.txt", "data/table2.txt")
    base.write("data/table2.txt", "".join(f"{i}\n" for i in range(201)))
    base.mv("pkg/ops/add.py", "pkg/kernels/add.py")
    base.commit("Move things (#2)")
    # A mirror without one of its blobs (a snapshot that left out its largest files).
    (base.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    assert crawl(base, tmp_path / "out") == 0
    assert "renames not detected, a blob is missing" in caplog.text
    first, second = candidates(tmp_path / "out", base)
    # without rename detection the renamed kernel file is a deletion and an addition
    assert changes_of(second) == [("add_kernel", "moved")]
    [kc] = second.kernel_changes
    assert (kc.old_file, kc.file) == ("pkg/ops/add.py", "pkg/kernels/add.py")
    # line counts need the missing blob: none for either commit, as for a binary file
    assert [f.additions for f in first.files + second.files] == [None] * 6


def test_a_checkout_leaves_out_the_files_whose_blobs_the_mirror_lacks(
    base: TinyRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: the Liger-Kernel mirror of 2026-12-06 lacks the blob of a test resource
    (an arrow file), and every tree of a task (`eval workload --count-flops`, `eval run` on the
    mirror) failed in `git archive`; the tree is made without that file, which is named."""
    from eval.workspace import SourceStore
    from mining.git import GitRepo

    base.write("test/resources/big.arrow", "x" * 5000)
    base.write("pkg/ops/add.py", ADD_KERNEL)
    sha = base.commit("Data and a kernel (#1)")
    lost = base.git("rev-parse", "HEAD:test/resources/big.arrow")
    (base.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    store = SourceStore(GitRepo(base.path))
    dest = tmp_path / "tree"
    store.checkout(sha, dest)
    assert (dest / "pkg/ops/add.py").read_text() == ADD_KERNEL
    assert not (dest / "test/resources/big.arrow").exists()
    assert store.absent == {sha: ["test/resources/big.arrow"]}
    assert "1 files whose blobs the clone lacks left out: test/resources/big.arrow" in caplog.text
    # the next tree of that commit (a task's base, gold, prediction) leaves them out at once
    store.checkout(sha, tmp_path / "again")
    assert (tmp_path / "again/pkg/ops/add.py").read_text() == ADD_KERNEL
    assert not (tmp_path / "again/test/resources/big.arrow").exists()


def test_a_bare_repository_at_a_relative_path_is_made_there(tmp_path, monkeypatch) -> None:
    """Regression: `eval bundle --out .carry/bundles/x.git` (a relative path) made the bare
    repository one level too deep (`x.git/.carry/bundles/x.git`) and then refused its own
    output as not a git repository."""
    from mining.git import init_bare

    monkeypatch.chdir(tmp_path)
    repo = init_bare(Path("bundles/x.git"))
    assert (tmp_path / "bundles/x.git/HEAD").is_file()
    assert not (tmp_path / "bundles/x.git/bundles").exists()
    assert repo.path.resolve() == (tmp_path / "bundles/x.git").resolve()
