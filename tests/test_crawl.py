"""End-to-end crawl scenarios, each on its own tiny real git repository."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mining.crawl import main
from mining.errors import NoNetworkError
from mining.git import GitRepo
from mining.store import read_candidates
from tests.gitrepo import TinyRepo
from tests.kernels_src import (
    ADD_KERNEL,
    ADD_KERNEL_REFORMATTED,
    ADD_KERNEL_SCALED,
    HELPER_KERNEL,
    PLAIN_MODULE,
    SCALE_KERNEL,
    TEMPLATE_MODULE,
)


def crawl(repo: TinyRepo, out: Path, *extra: str) -> int:
    return main(
        [str(repo.path), "--out", str(out), "--quiet", "--no-github", "--jobs", "1", *extra]
    )


def candidates(out: Path, repo: TinyRepo):
    return read_candidates(out / repo.path.name / "candidates.jsonl")


def changes_of(cand) -> list[tuple[str, str]]:
    return sorted((kc.name, str(kc.change)) for kc in cand.kernel_changes)


@pytest.fixture
def base(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "fw")
    repo.write("pkg/plain.py", PLAIN_MODULE)
    repo.write("README.md", "tiny framework\n")
    repo.commit("Initial commit")
    return repo


def test_kernel_added_is_a_candidate_with_its_pr(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.write("tests/test_add.py", "def test_add():\n    pass\n")
    sha = base.commit("Add a Triton add kernel (#11)")
    assert crawl(base, tmp_path / "out") == 0
    [cand] = candidates(tmp_path / "out", base)
    assert cand.commit == sha and cand.id == "#11" and cand.pr.source == "squash"
    assert changes_of(cand) == [("add_kernel", "added")]
    kc = cand.kernel_changes[0]
    assert kc.before is None and kc.after is not None
    assert kc.after.constexpr_params == ("BLOCK",)
    assert kc.after.wrappers == ("add",)
    files = {f.path: f for f in cand.files}
    assert files["tests/test_add.py"].is_test and not files["pkg/ops/add.py"].is_test
    assert files["pkg/ops/add.py"].additions == ADD_KERNEL.count("\n")


def test_body_change_is_modified_and_keeps_both_sources(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    base.commit("Scale the sum (#2)")
    crawl(base, tmp_path / "out")
    cands = candidates(tmp_path / "out", base)
    assert [c.id for c in cands] == ["#1", "#2"]
    kc = cands[1].kernel_changes[0]
    assert kc.change == "modified"
    assert kc.before and kc.after
    assert "x + y, mask" in kc.before.source and "* 2.0" in kc.after.source


def test_autotune_config_change_is_modified(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/scale.py", SCALE_KERNEL)
    base.commit("Add scale (#1)")
    base.write("pkg/ops/scale.py", SCALE_KERNEL.replace("num_warps=8", "num_warps=16"))
    base.commit("Tune scale (#2)")
    crawl(base, tmp_path / "out")
    cand = candidates(tmp_path / "out", base)[1]
    [kc] = cand.kernel_changes
    assert kc.change == "modified"
    assert kc.before and kc.after
    assert "num_warps=8" in (kc.before.autotune_configs or "")
    assert "num_warps=16" in (kc.after.autotune_configs or "")


def test_formatting_only_change(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.write("pkg/ops/add.py", ADD_KERNEL_REFORMATTED)
    base.commit("Reformat (#2)")
    crawl(base, tmp_path / "out")
    assert changes_of(candidates(tmp_path / "out", base)[1]) == [("add_kernel", "formatting_only")]


def test_renamed_file_keeps_the_kernel(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.mv("pkg/ops/add.py", "pkg/kernels/elementwise_add.py")
    base.commit("Move ops into kernels/ (#2)")
    crawl(base, tmp_path / "out")
    cand = candidates(tmp_path / "out", base)[1]
    [kc] = cand.kernel_changes
    assert (kc.change, kc.file, kc.old_file) == (
        "renamed_file",
        "pkg/kernels/elementwise_add.py",
        "pkg/ops/add.py",
    )
    assert {f.status for f in cand.files} == {"R"}


def test_kernel_moved_to_another_file(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/all.py", ADD_KERNEL + "\n\n" + SCALE_KERNEL.split("\n\n\n", 1)[1])
    base.commit("Two kernels in one file (#1)")
    base.write("pkg/ops/all.py", ADD_KERNEL)
    base.write("pkg/ops/scale.py", SCALE_KERNEL)
    base.commit("Split scale into its own module (#2)")
    crawl(base, tmp_path / "out")
    cand = candidates(tmp_path / "out", base)[1]
    [kc] = cand.kernel_changes
    assert (kc.name, kc.change, kc.old_file, kc.file) == (
        "scale_kernel",
        "moved",
        "pkg/ops/all.py",
        "pkg/ops/scale.py",
    )


def test_deleted_kernel(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.rm("pkg/ops/add.py")
    base.commit("Drop the add kernel (#2)")
    crawl(base, tmp_path / "out")
    [kc] = candidates(tmp_path / "out", base)[1].kernel_changes
    assert (kc.change, kc.after) == ("deleted", None)


def test_helper_and_alias_and_template(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/square.py", HELPER_KERNEL)
    base.write("pkg/inductor/templates.py", TEMPLATE_MODULE)
    base.commit("Square and a template (#3)")
    crawl(base, tmp_path / "out")
    [cand] = candidates(tmp_path / "out", base)
    by_name = {kc.name: kc.kernel for kc in cand.kernel_changes}
    assert set(by_name) == {"_square", "square_kernel", "copy"}
    assert by_name["_square"].role == "helper" and by_name["square_kernel"].role == "kernel"
    assert by_name["copy"].kind == "template"


def test_merge_commit_is_diffed_against_first_parent(base: TinyRepo, tmp_path: Path) -> None:
    base.git("checkout", "-q", "-b", "feature")
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("wip: kernel")
    base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    base.commit("wip: scale")
    base.git("checkout", "-q", "main")
    base.write("docs.md", "docs\n")
    base.commit("Docs on main")
    sha = base.merge("feature", "Merge pull request #42 from someone/feature\n\nAdd kernel")
    crawl(base, tmp_path / "out")
    [cand] = candidates(tmp_path / "out", base)
    assert (cand.commit, cand.id, cand.is_merge, cand.pr.source) == (sha, "#42", True, "merge")
    assert changes_of(cand) == [("add_kernel", "added")]  # the PR's net change, not its wip steps
    assert "* 2.0" in (cand.kernel_changes[0].after.source if cand.kernel_changes[0].after else "")


def test_file_unparsable_in_both_versions_is_skipped_not_reported_deleted(
    base: TinyRepo, tmp_path: Path
) -> None:
    broken = ADD_KERNEL.replace("def add(x, y):", "def add(x, y:")
    base.write("pkg/ops/add.py", broken)
    base.commit("Add a broken file (#1)")
    base.write("pkg/ops/add.py", broken.replace("x + y, mask", "x - y, mask"))
    base.write("pkg/ops/scale.py", SCALE_KERNEL)
    base.commit("Still broken, plus a new kernel (#2)")
    crawl(base, tmp_path / "out")
    cand = candidates(tmp_path / "out", base)[1]
    assert changes_of(cand) == [("scale_kernel", "added")]
    files = {f.path: f for f in cand.files}
    assert files["pkg/ops/add.py"].skipped == "unparsable"
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["skipped_files"] == {"unparsable": 1}


def test_non_utf8_binary_huge_symlink_and_submodule_are_skipped(
    base: TinyRepo, tmp_path: Path
) -> None:
    base.write("pkg/latin1.py", "# caf\xe9 triton\nimport triton\n".encode("latin-1"))
    base.write("pkg/blob.py", b"triton\x00\x01\x02" * 10)
    base.write("pkg/huge.py", ADD_KERNEL + "\n# padding\n" * 400)
    (base.path / "pkg" / "link.py").symlink_to("huge.py")
    sub = TinyRepo(tmp_path / "sub")
    sub.write("k.py", ADD_KERNEL)
    sub.commit("sub")
    base.git(
        "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "vendor/sub.py"
    )
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Many odd files and one kernel (#5)")
    assert crawl(base, tmp_path / "out", "--max-file-bytes", "2000") == 0
    [cand] = candidates(tmp_path / "out", base)
    files = {f.path: f.skipped for f in cand.files}
    assert files["pkg/latin1.py"] == "non_utf8"
    assert files["pkg/blob.py"] == "binary"
    assert files["pkg/huge.py"] == "too_large"
    assert files["pkg/link.py"] == "symlink"
    assert files["vendor/sub.py"] == "submodule"
    assert changes_of(cand) == [("add_kernel", "added")]


def test_plain_python_commits_are_not_candidates(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/plain.py", PLAIN_MODULE + "\n# triton mentioned in a comment\n")
    base.commit("Mention triton (#9)")
    crawl(base, tmp_path / "out")
    assert candidates(tmp_path / "out", base) == []
    summary = json.loads((tmp_path / "out" / "fw" / "summary.json").read_text())
    assert summary["commits_scanned"] == 2 and summary["candidates"] == 0


def test_rerun_scans_only_new_commits(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    out = tmp_path / "out"
    crawl(base, out)
    crawl(base, out)
    summary = json.loads((out / "fw" / "summary.json").read_text())
    assert summary["commits_scanned"] == 0
    base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    base.commit("Scale (#2)")
    crawl(base, out)
    summary = json.loads((out / "fw" / "summary.json").read_text())
    assert summary["commits_scanned"] == 1 and summary["candidates"] == 1
    assert [c.id for c in candidates(out, base)] == ["#1", "#2"]


def test_limit_then_resume_covers_everything_once(base: TinyRepo, tmp_path: Path) -> None:
    for i in range(5):
        base.write(f"pkg/ops/k{i}.py", ADD_KERNEL.replace("add_kernel", f"add{i}_kernel"))
        base.commit(f"Kernel {i} (#{i + 1})")
    out = tmp_path / "out"
    crawl(base, out, "--limit", "2")
    assert len(candidates(out, base)) == 1  # the initial commit and kernel 0
    crawl(base, out, "--limit", "2")
    crawl(base, out)
    assert [c.id for c in candidates(out, base)] == ["#1", "#2", "#3", "#4", "#5"]


def test_interrupted_run_resumes_without_loss_or_duplicates(base: TinyRepo, tmp_path: Path) -> None:
    for i in range(4):
        base.write(f"pkg/ops/k{i}.py", ADD_KERNEL.replace("add_kernel", f"add{i}_kernel"))
        base.commit(f"Kernel {i} (#{i + 1})")
    out = tmp_path / "out"
    crawl(base, out)
    wd = out / "fw"
    full = (wd / "candidates.jsonl").read_bytes()
    lines = full.splitlines(keepends=True)
    # As if killed after appending two records past a checkpoint that covered one record,
    # in the middle of writing the third.
    state = json.loads((wd / "state.json").read_text())
    first = json.loads(lines[0])
    state["candidates_bytes"] = len(lines[0])
    state["last_commit"] = first["commit"]
    state["recorded"] = {first["id"]: first["commit"]}
    (wd / "state.json").write_text(json.dumps(state))
    (wd / "candidates.jsonl").write_bytes(b"".join(lines[:3]) + lines[3][:40])
    crawl(base, out)
    assert (wd / "candidates.jsonl").read_bytes() == full


def test_killed_crawl_process_resumes(base: TinyRepo, tmp_path: Path) -> None:
    n = 150
    for i in range(n):
        base.write(f"pkg/ops/k{i}.py", ADD_KERNEL.replace("add_kernel", f"add{i}_kernel"))
        base.commit(f"Kernel {i} (#{i + 1})")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "mining.crawl",
        str(base.path),
        "--out",
        str(out),
        "--quiet",
        "--no-github",
        "--jobs",
        "1",
        "--checkpoint-every",
        "1",
    ]
    root = Path(__file__).parents[1]
    proc = subprocess.Popen(cmd, cwd=root)
    state = out / "fw" / "state.json"
    deadline = time.monotonic() + 60
    while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.kill()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the crawl finished before it could be killed"
    done = json.loads(state.read_text())["recorded"]
    assert len(done) < n
    assert subprocess.run(cmd, cwd=root).returncode == 0
    ids = [c.id for c in candidates(out, base)]
    assert ids == [f"#{i + 1}" for i in range(n)]


def test_ctrl_c_keeps_what_was_scanned(base: TinyRepo, tmp_path: Path) -> None:
    from core.frameworks import resolve_framework
    from mining.crawler import Crawler, CrawlOptions
    from mining.store import WorkDir

    for i in range(6):
        base.write(f"pkg/ops/k{i}.py", ADD_KERNEL.replace("add_kernel", f"add{i}_kernel"))
        base.commit(f"Kernel {i} (#{i + 1})")
    fw = resolve_framework(str(base.path))
    wd = WorkDir(tmp_path / "out" / "fw", fw.name, fw.repo, "main")
    crawler = Crawler(GitRepo(base.path), fw, wd, "main", CrawlOptions(chunk_commits=3))

    def interrupt(_: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        crawler.run(progress=interrupt)
    wd.close()
    assert wd.state.last_commit is not None
    assert crawl(base, tmp_path / "out") == 0
    assert [c.id for c in candidates(tmp_path / "out", base)] == [f"#{i + 1}" for i in range(6)]


def test_rewritten_history_is_detected_and_rescanned(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    dropped = base.commit("Scale (#2)")
    out = tmp_path / "out"
    crawl(base, out)
    base.git("reset", "-q", "--hard", "HEAD~1")
    base.write("pkg/ops/scale.py", SCALE_KERNEL)
    base.commit("Scale kernel instead (#3)")
    crawl(base, out)
    assert [c.id for c in candidates(out, base)] == ["#1", "#3"]
    orphans = [json.loads(x) for x in (out / "fw" / "orphaned.jsonl").read_text().splitlines()]
    assert [o["commit"] for o in orphans] == [dropped]


def test_corrupt_state_is_an_error_and_left_untouched(
    base: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    crawl(base, out)
    state = out / "fw" / "state.json"
    state.write_text("{not json")
    assert crawl(base, out) == 1
    assert "state file" in capsys.readouterr().err
    assert state.read_text() == "{not json"


def test_since_until_window(base: TinyRepo, tmp_path: Path) -> None:
    for i in range(3):
        base.write(f"pkg/ops/k{i}.py", ADD_KERNEL.replace("add_kernel", f"add{i}_kernel"))
        base.commit(f"Kernel {i} (#{i + 1})")
    # the n-th commit is at BASE_EPOCH + n hours: initial 23:13:20Z, kernel 0 00:13:20Z
    out = tmp_path / "out"
    crawl(base, out, "--until", "2023-11-15T00:30:00+00:00")
    assert [c.id for c in candidates(out, base)] == ["#1"]


def test_blobless_clone_from_a_local_remote(base: TinyRepo, tmp_path: Path) -> None:
    base.write("pkg/ops/add.py", ADD_KERNEL)
    base.commit("Add kernel (#1)")
    base.git("config", "uploadpack.allowFilter", "true")
    base.git("config", "uploadpack.allowAnySHA1InWant", "true")
    dest = tmp_path / "cache" / "fw.git"
    repo = GitRepo.clone_or_fetch(f"file://{base.path}", dest)
    assert repo.is_partial
    assert main([str(dest), "--out", str(tmp_path / "out"), "--quiet", "--no-github"]) == 0
    [cand] = read_candidates(tmp_path / "out" / "fw" / "candidates.jsonl")
    assert changes_of(cand) == [("add_kernel", "added")]
    # a later fetch brings new commits in
    base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    base.commit("Scale (#2)")
    GitRepo.clone_or_fetch(f"file://{base.path}", dest)
    main([str(dest), "--out", str(tmp_path / "out"), "--quiet", "--no-github"])
    assert len(read_candidates(tmp_path / "out" / "fw" / "candidates.jsonl")) == 2


def test_unreachable_remote_names_repo_path(tmp_path: Path) -> None:
    with pytest.raises(NoNetworkError, match="--repo-path"):
        GitRepo.clone_or_fetch("http://127.0.0.1:9/nobody/nothing.git", tmp_path / "x.git")


def test_cli_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--repo-path", "--since", "--until", "--out", "--limit", "--jobs", "--branch"):
        assert opt in text


def test_state_of_another_repository_is_refused(
    base: TinyRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = TinyRepo(tmp_path / "elsewhere" / "fw")
    other.write("x.py", PLAIN_MODULE)
    other.commit("Unrelated root")
    out = tmp_path / "out"
    assert crawl(base, out) == 0
    state_before = (out / "fw" / "state.json").read_text()
    assert crawl(other, out) == 1
    assert "another repository" in capsys.readouterr().err
    assert (out / "fw" / "state.json").read_text() == state_before


def test_github_enrichment_through_the_cli(
    base: TinyRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_github import REPO, TOKEN, FakeGithubApi

    api = FakeGithubApi()
    try:
        api.add_pr(11)
        base.write("pkg/ops/add.py", ADD_KERNEL)
        base.commit("Add a Triton add kernel (#11)")
        base.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
        base.commit("Scale it (#12)")  # the double has no PR 12: a 404, kept without GitHub data
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        out = tmp_path / "out"
        argv = [
            REPO,
            "--repo-path",
            str(base.path),
            "--out",
            str(out),
            "--quiet",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--github-api",
            api.base_url,
        ]
        assert main(argv) == 0
        first, second = read_candidates(out / "vllm" / "candidates.jsonl")
        assert first.pr.url == f"https://github.com/{REPO}/pull/11"
        assert first.github is not None and first.github.labels == ("performance", "ready")
        assert first.github.linked_issues == (1201, 1202, 1203, 1300)
        assert second.github is None
        assert (tmp_path / "cache" / "github").is_dir()
    finally:
        api.close()
