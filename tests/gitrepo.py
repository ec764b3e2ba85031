"""Tiny real git repositories for tests, with fixed author and committer dates."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

BASE_EPOCH = 1_700_000_000  # 2023-11-14, every commit one hour after the previous one


class TinyRepo:
    def __init__(self, path: Path, branch: str = "main"):
        self.path = path
        self.n = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)
        self.git("config", "user.name", "Test Author")
        self.git("config", "user.email", "author@example.com")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str, input: bytes | None = None) -> str:
        env = dict(os.environ)
        stamp = f"{BASE_EPOCH + 3600 * self.n} +0000"
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        out = subprocess.run(
            ["git", *args], cwd=self.path, env=env, input=input, capture_output=True, check=True
        )
        return out.stdout.decode().strip()

    def write(self, rel: str, text: str | bytes) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)

    def commit(self, message: str, *files: str) -> str:
        self.git("add", "-A", *files)
        self.n += 1
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def mv(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", src, dst)

    def rm(self, rel: str) -> None:
        self.git("rm", "-q", rel)

    def merge(self, branch: str, message: str) -> str:
        self.n += 1
        self.git("merge", "-q", "--no-ff", "-m", message, branch)
        return self.head()


def add_kernel_history(path: Path) -> TinyRepo:
    """A tiny framework whose history adds an add kernel (#1), then scales it (#2)."""
    from tests.kernels_src import ADD_KERNEL, ADD_KERNEL_SCALED

    repo = TinyRepo(path)
    repo.write("pkg/__init__.py", "")
    repo.commit("Initial commit")
    repo.write("pkg/ops/add.py", ADD_KERNEL)
    repo.commit("Add an add kernel (#1)")
    repo.write("pkg/ops/add.py", ADD_KERNEL_SCALED)
    repo.commit("Scale the add kernel (#2)")
    return repo
