"""The gold oracle on a PR whose target name is defined twice in one file (flash-linear-attention
#810 adds `tanh` under `if FAST:` and under `else:`): each definition comes from its own place,
so the record spliced into the setup state gives back the gold file. Before, both entries held
the first definition and the gold scored as a prediction failed to compile on the H200."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curation.taskdir import task_dirs
from eval.model import Variant
from eval.oracle import oracle_record
from eval.splice import items_from_prediction, splice_prediction
from eval.workspace import SourceStore, prepare
from mining.git import GitRepo
from tests.tinyfw import OPS, mine_ops_fix

HELPERS = """import os

import triton
import triton.language as tl

if os.environ.get("FAST", "0") == "1":
    @triton.jit
    def scale(x):
        return x * 2.0 + 0.0
else:
    @triton.jit
    def scale(x):
        return x + x
"""
GOLD_OPS = OPS.replace("import triton.language as tl\n",
                       "import triton.language as tl\n\nfrom pkg.helpers import scale\n").replace(
    "x + y * 0.0", "scale(x) + y")  # fmt: skip
TEST = """import torch

from pkg.ops import add


def test_scaled():
    x = torch.arange(100, dtype=torch.float32)
    torch.testing.assert_close(add(x, x), 3 * x)
"""


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("oracle")
    files = {"pkg/helpers.py": HELPERS, "tests/test_scaled.py": TEST}
    repo, _work, tasks = mine_ops_fix(root, OPS, GOLD_OPS, "Scale x in add (#7)", files)
    return repo, tasks


def test_each_definition_of_a_repeated_target_name_comes_from_its_own_place(
    task: tuple[Path, Path], tmp_path: Path
) -> None:
    repo_path, tasks = task
    [tdir] = task_dirs(tasks)
    t = tdir.load_task()
    assert [k.name for k in t.kernels if k.file == "pkg/helpers.py"] == ["scale", "scale"]
    store = SourceStore(GitRepo(repo_path))
    record = oracle_record(tdir, store, "gold", tmp_path / "oracle")
    sources = [k["source"] for k in record["kernels"] if k["name"] == "scale"]
    assert len(sources) == 2 and "x * 2.0" in sources[0] and "x + x" in sources[1]
    gold = prepare(t, tdir, store, tmp_path / "gold", Variant.GOLD)
    pred = prepare(t, tdir, store, tmp_path / "pred", Variant.BASE)
    splice_prediction(pred, items_from_prediction(json.loads(json.dumps(record)), t))
    for rel in ("pkg/helpers.py", "pkg/ops.py"):
        assert (pred / rel).read_text() == (gold / rel).read_text(), rel
