"""Importing the packages and their command modules stays light: no torch, triton, docker,
datasets or tree-sitter until a command needs them (`--help` must be instant)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "triton", "docker", "datasets", "tree_sitter", "matplotlib", "huggingface_hub")
MODULES = (
    "core", "core.records", "core.files", "core.frameworks", "mining", "mining.crawl",
    "curation", "curation.curate", "curation.check", "envbuild",
    "envbuild.__main__", "eval", "eval.__main__", "eval.session", "eval.pytest_plugin", "benchmark",
    "benchmark.__main__", "benchmark.schema", "eval.workload_cli", "eval.workload_plan",
    "eval.workload_run", "eval.gate",
)  # fmt: skip


def test_imports_load_no_heavy_dependency() -> None:
    code = (
        "import importlib, sys\n"
        f"for m in {MODULES!r}: importlib.import_module(m)\n"
        f"print(','.join(h for h in {HEAVY!r} if h in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == ""


def test_every_command_explains_itself() -> None:
    commands = [
        ["mining.crawl"], ["curation.curate"], ["curation.check"], ["curation.review"],
        ["envbuild"], ["eval"], ["eval", "reference"], ["eval", "score"], ["eval", "bundle"],
        ["eval", "rejudge"], ["eval", "oracle"], ["eval", "workload"], ["envbuild.wheelhouse"],
        ["benchmark"],
        ["benchmark", "build"], ["benchmark", "push"], ["benchmark", "regenerate"],
    ]  # fmt: skip
    for cmd in commands:
        out = subprocess.run([sys.executable, "-m", *cmd, "--help"], cwd=Path(__file__).parents[1],
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert out.returncode == 0, (cmd, out.stderr)
        assert "usage: python -m" in out.stdout, cmd


def test_every_script_explains_itself() -> None:
    root = Path(__file__).parents[1]
    for script in sorted((root / "scripts").glob("*.py")):
        if '__name__ == "__main__"' not in script.read_text():
            continue  # a module the scripts share (fault_lab.py), no command
        out = subprocess.run([sys.executable, str(script), "--help"], cwd=root,
                             capture_output=True, text=True, check=False)  # fmt: skip
        assert out.returncode == 0, (script.name, out.stderr[-400:])
        assert "usage:" in out.stdout, script.name
