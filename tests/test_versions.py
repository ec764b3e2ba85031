"""Version resolution on tiny real repositories, one per kind of pin files: an NGC-based repo
(Megatron-like), a requirements-pinned one (vLLM-like), PyTorch itself, and one that pins nothing.

The release table is built here from real PyPI facts, so the assertions do not move when
`envbuild/releases.json` is regenerated; one test checks the shipped snapshot separately.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from datetime import UTC, date, datetime
from pathlib import Path
from types import ModuleType

import pytest

from core.records import from_json, to_json
from envbuild.model import PinSource
from envbuild.releases import NGC_PYTORCH, ReleaseTable
from envbuild.versions import ResolvedVersions, resolve_versions
from mining.git import GitRepo
from tests.gitrepo import TinyRepo

PY_39_313 = ["3.9", "3.10", "3.11", "3.12", "3.13"]
TABLE = from_json(
    ReleaseTable,
    {
        "torch": [
            {"version": "2.6.0", "date": "2025-01-29", "triton_spec": "==3.2.0",
             "cuda": "12.4", "python": PY_39_313},
            {"version": "2.7.0", "date": "2025-04-23", "triton_spec": "==3.3.0",
             "cuda": "12.6", "python": PY_39_313},
            {"version": "2.7.1", "date": "2025-06-04", "triton_spec": "==3.3.1",
             "cuda": "12.6", "python": PY_39_313},
            {"version": "2.8.0", "date": "2025-08-06", "triton_spec": "==3.4.0",
             "cuda": "12.8", "python": PY_39_313},
            {"version": "2.14.0", "date": "2026-09-02", "triton_spec": "~=3.8.0",
             "cuda": "13.0", "python": ["3.10", "3.11", "3.12", "3.13", "3.14"]},
        ],
        "triton": [
            {"version": "3.2.0", "date": "2025-01-22"},
            {"version": "3.3.0", "date": "2025-04-09"},
            {"version": "3.3.1", "date": "2025-05-29"},
            {"version": "3.4.0", "date": "2025-07-30"},
            {"version": "3.7.1", "date": "2026-06-17"},
            {"version": "3.8.0", "date": "2026-08-28"},
        ],
    }
)  # fmt: skip
MAY_2 = datetime(2025, 5, 2, 12, 0, tzinfo=UTC)  # between torch 2.7.0 and 2.7.1


def _resolve(repo: TinyRepo, sha: str, when: datetime = MAY_2) -> ResolvedVersions:
    return resolve_versions(GitRepo(repo.path), sha, when, releases=TABLE)


# -- (1) an NGC container decides -------------------------------------------------------------

DOCKERFILE_CI_DEV = """# syntax=docker/dockerfile:1.3-labs

ARG FROM_IMAGE_NAME
ARG FROM_IMAGE_NAME={image}
FROM ${{FROM_IMAGE_NAME}} AS main
RUN pip install -e .
"""
MEGATRON_PYPROJECT = """[build-system]
requires = ["setuptools"]

[project]
name = "megatron-core"
requires-python = ">=3.10"
dependencies = [
    "torch>=2.6.0",
    "numpy==1.26.4",
    "packaging>=24.2",
]
"""


@pytest.fixture
def megatron(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "megatron")
    repo.write(
        "docker/Dockerfile.ci.dev",
        DOCKERFILE_CI_DEV.format(image="nvcr.io/nvidia/pytorch:25.04-py3"),
    )
    repo.write("examples/multimodal/Dockerfile", "FROM nvcr.io/nvidia/pytorch:24.02-py3\n")
    repo.write(
        ".gitlab/stages/01.build.yml",
        "matrix:\n  - BASE_IMAGE: nvcr.io/nvidia/pytorch:24.01-py3\n"
        "  - BASE_IMAGE: nvcr.io/nvidia/pytorch:25.03-py3\n",
    )
    repo.write("pyproject.toml", MEGATRON_PYPROJECT)
    repo.write(".python-version", "3.12")
    repo.write("megatron/core/__init__.py", "")
    repo.commit("megatron-like repository")
    return repo


def test_ngc_image_of_the_ci_dockerfile_decides(megatron: TinyRepo) -> None:
    r = _resolve(megatron, megatron.head())
    image = "nvcr.io/nvidia/pytorch:25.04-py3"
    ships = f"docker/Dockerfile.ci.dev:4 ({image} ships"
    assert r.base_image is not None
    assert (r.base_image.value, r.base_image.where) == (image, "docker/Dockerfile.ci.dev:4")
    assert r.base_image.spec == f"ARG FROM_IMAGE_NAME={image}"
    assert r.torch.value == "2.7.0a0+79aa17489c"
    assert r.torch.where == f"{ships} torch 2.7.0a0+79aa17489c, CUDA 12.9)"
    assert (r.cuda.value, r.cuda.where) == ("12.9", f"{ships} CUDA 12.9)")
    assert (r.python.value, r.python.where) == ("3.12", f"{ships} Python 3.12)")
    assert (r.triton.value, r.triton.where) == ("3.2.0", f"{ships} triton 3.2.0)")
    assert {r.torch.source, r.triton.source, r.cuda.source, r.python.source} == {PinSource.FILE}
    assert [(p.name, p.value, p.where) for p in r.extra] == [
        ("numpy", "1.26.4", "pyproject.toml:9")
    ]


def test_the_second_commit_changes_the_image_and_the_resolution_follows(megatron: TinyRepo) -> None:
    first = megatron.head()
    megatron.write(
        "docker/Dockerfile.ci.dev",
        DOCKERFILE_CI_DEV.format(image="nvcr.io/nvidia/pytorch:25.09-py3"),
    )
    second = megatron.commit("bump the CI image")
    later = datetime(2025, 10, 1, tzinfo=UTC)
    r2 = _resolve(megatron, second, later)
    assert (r2.torch.value, r2.triton.value, r2.cuda.value) == (
        "2.9.0a0+50eac811a6",
        "3.4.0",
        "13.0",
    )
    assert r2.base_image is not None and r2.base_image.value.endswith("25.09-py3")
    r1 = _resolve(megatron, first, later)  # the first commit still reads its own files
    assert (r1.torch.value, r1.cuda.value) == ("2.7.0a0+79aa17489c", "12.9")


def test_without_an_argument_default_the_ci_config_names_the_image(megatron: TinyRepo) -> None:
    megatron.write("docker/Dockerfile.ci.dev", "ARG FROM_IMAGE_NAME\nFROM ${FROM_IMAGE_NAME}\n")
    sha = megatron.commit("image from CI only")
    r = _resolve(megatron, sha)
    # dev (25.03) over lts (24.01); the examples' 24.02 never decides
    assert r.base_image is not None
    assert r.base_image.where == ".gitlab/stages/01.build.yml:3"
    assert r.torch.value == "2.7.0a0+7c8ec84dab"
    # the table has no triton for 25.03: the date rule at the container's month decides
    assert r.triton.source == PinSource.DATE
    assert r.triton.where == (
        ".gitlab/stages/01.build.yml:3 (nvcr.io/nvidia/pytorch:25.03-py3: its triton is not in "
        "the NGC table) newest triton release before 2025-03-01: 3.2.0 (2025-01-22)"
    )


def test_an_image_missing_from_the_table_falls_back_to_the_date_rule(megatron: TinyRepo) -> None:
    assert "27.01" not in NGC_PYTORCH
    megatron.write(
        "docker/Dockerfile.ci.dev",
        DOCKERFILE_CI_DEV.format(image="nvcr.io/nvidia/pytorch:27.01-py3"),
    )
    sha = megatron.commit("an image newer than the table")
    r = _resolve(megatron, sha)
    note = "nvcr.io/nvidia/pytorch:27.01-py3 (docker/Dockerfile.ci.dev:4) is not in the NGC table; "
    assert (r.torch.value, r.torch.source) == ("2.7.0", PinSource.DATE)
    assert r.torch.where == note + "newest torch release before 2025-05-02: 2.7.0 (2025-04-23)"
    assert r.triton.where == note + "newest triton release before 2025-05-02: 3.3.0 (2025-04-09)"
    assert (r.python.value, r.python.where) == ("3.12", ".python-version:1")


# -- (2) requirements and Dockerfile ARGs decide ------------------------------------------------

CUDA_TXT = """# Common dependencies
-r common.txt

torch==2.7.0
torchaudio==2.7.0
xformers==0.0.30; platform_system == 'Linux' and platform_machine == 'x86_64'
"""
COMMON_TXT = """numpy==1.26.4
regex # no pin
transformers >= 4.51.1
this is not a requirement!!
pywin32==306; sys_platform == 'win32'
nvidia-ml-py==12.560.30
"""
VLLM_DOCKERFILE = """ARG CUDA_VERSION=12.8.1
ARG PYTHON_VERSION=3.12
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base
ARG CUDA_VERSION=12.8.1
"""


@pytest.fixture
def vllm(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "vllm")
    repo.write("requirements/cuda.txt", CUDA_TXT)
    repo.write("requirements/common.txt", COMMON_TXT)
    repo.write("requirements/rocm.txt", "torch==2.6.0+rocm6.2\n")
    repo.write("docker/Dockerfile", VLLM_DOCKERFILE)
    repo.write("docker/Dockerfile.cpu", "ARG PYTHON_VERSION=3.10\n")
    repo.write("pyproject.toml", '[build-system]\nrequires = ["torch == 2.7.0"]\n')
    repo.commit("vllm-like repository")
    return repo


def test_requirements_and_dockerfile_args_decide(
    vllm: TinyRepo, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="envbuild.versions"):
        r = _resolve(vllm, vllm.head())
    assert (r.torch.value, r.torch.source, r.torch.where) == (
        "2.7.0",
        PinSource.FILE,
        "requirements/cuda.txt:4",
    )
    assert r.torch.spec == "torch==2.7.0"
    assert (r.triton.value, r.triton.source) == ("3.3.0", PinSource.FILE)
    assert r.triton.where == "triton==3.3.0 required by torch 2.7.0 (releases.json)"
    assert (r.cuda.value, r.cuda.where, r.cuda.spec) == (
        "12.8",
        "docker/Dockerfile:1",
        "ARG CUDA_VERSION=12.8.1",
    )
    assert (r.python.value, r.python.where) == ("3.12", "docker/Dockerfile:2")
    assert r.base_image is None
    assert [(p.name, p.value, p.where) for p in r.extra] == [
        ("numpy", "1.26.4", "requirements/common.txt:1"),
        ("torchaudio", "2.7.0", "requirements/cuda.txt:5"),
        ("xformers", "0.0.30", "requirements/cuda.txt:6"),
    ]
    # the malformed line is skipped with a log, not a crash
    assert any("requirements/common.txt:4" in m and "unparsable" in m for m in caplog.messages)


def test_the_second_commit_changes_the_torch_pin(vllm: TinyRepo) -> None:
    vllm.write("requirements/cuda.txt", CUDA_TXT.replace("torch==2.7.0", "torch==2.7.1"))
    sha = vllm.commit("bump torch")
    r = _resolve(vllm, sha, datetime(2025, 6, 10, tzinfo=UTC))
    assert (r.torch.value, r.triton.value) == ("2.7.1", "3.3.1")


RANGES = """[project]
name = "x"
requires-python = ">=3.10,<3.13"
dependencies = [
  "torch>=2.6.0,<2.7",
  "triton>=3.2",
]
"""


def test_a_range_takes_the_newest_matching_release_before_the_commit(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "range")
    repo.write("pyproject.toml", RANGES)
    sha = repo.commit("ranges")
    r = _resolve(repo, sha)
    assert (r.torch.value, r.torch.source) == ("2.6.0", PinSource.FILE)
    assert r.torch.where == (
        "pyproject.toml:5 (torch>=2.6.0,<2.7 -> newest matching release before 2025-05-02: "
        "2.6.0 (2025-01-29))"
    )
    assert r.triton.where == (
        "pyproject.toml:6 (triton>=3.2 -> newest matching release before 2025-05-02: 3.3.0 "
        "(2025-04-09))"
    )
    assert (r.python.value, r.python.source) == ("3.12", PinSource.FILE)
    assert r.python.where == (
        "pyproject.toml:3 (requires-python >=3.10,<3.13; newest Python torch 2.6.0 supports: 3.12)"
    )
    assert (r.cuda.value, r.cuda.where) == (
        "12.4",
        "default CUDA of the torch 2.6.0 wheels on PyPI (releases.json)",
    )


SETUP_PY = """import sys
sys.exit(1)
setup(
    python_requires='>=3.9',
    install_requires=[
        'torch==2.6.0',
        'einops==0.8.1',
    ],
)
"""


def test_setup_py_is_read_without_running_it(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "setup")
    repo.write("setup.py", SETUP_PY)
    sha = repo.commit("setup.py")
    r = _resolve(repo, sha)
    assert (r.torch.value, r.torch.where) == ("2.6.0", "setup.py:6")
    assert [(p.name, p.where) for p in r.extra] == [("einops", "setup.py:7")]
    assert (
        r.python.where
        == "setup.py:4 (requires-python >=3.9; newest Python torch 2.6.0 supports: 3.13)"
    )


# -- (3) PyTorch's own pins --------------------------------------------------------------------

MATRIX = """import os

CUDA_ARCHES = ["12.6", "12.8", "12.9"]

ROCM_ARCHES = ["6.3", "6.4"]
"""
TRITON_COMMIT = "ae848267bebc65c6181e8cc5e64a6357d2679260"


@pytest.fixture
def pytorch(tmp_path: Path) -> TinyRepo:
    repo = TinyRepo(tmp_path / "pytorch")
    repo.write("version.txt", "2.8.0a0\n")
    repo.write("torch/__init__.py", "")
    repo.write(".ci/docker/triton_version.txt", "3.4.0\n")
    repo.write(".ci/docker/ci_commit_pins/triton.txt", TRITON_COMMIT + "\n")
    repo.write(".github/scripts/generate_binary_build_matrix.py", MATRIX)
    repo.write("pyproject.toml", '[project]\nname = "torch"\nrequires-python = ">=3.9"\n')
    # its release-image Dockerfile pins neither the CI's CUDA nor the supported Pythons
    repo.write("Dockerfile", "ARG PYTHON_VERSION=3.11\nARG CUDA_VERSION=12.4\nFROM ubuntu:22.04\n")
    repo.commit("pytorch-like repository")
    return repo


def test_pytorch_source_pins(pytorch: TinyRepo) -> None:
    r = _resolve(pytorch, pytorch.head())
    assert (r.torch.value, r.torch.where, r.torch.source) == (
        "2.8.0a0",
        "version.txt:1",
        PinSource.FILE,
    )
    assert (r.triton.value, r.triton.where) == ("3.4.0", ".ci/docker/triton_version.txt:1")
    assert r.triton.spec == TRITON_COMMIT
    matrix = ".github/scripts/generate_binary_build_matrix.py:3"
    assert (r.cuda.value, r.cuda.where) == ("12.9", matrix)
    # Python from the release the source version leads to (2.8.0) within requires-python
    assert r.python.value == "3.13"
    assert (
        r.python.where
        == "pyproject.toml:3 (requires-python >=3.9; newest Python torch 2.8.0 supports: 3.13)"
    )


def test_pytorch_cuda_stable_wins_over_the_newest_arch(pytorch: TinyRepo) -> None:
    pytorch.write(
        ".github/scripts/generate_binary_build_matrix.py", MATRIX + 'CUDA_STABLE = "12.8"\n'
    )
    sha = pytorch.commit("a stable CUDA")
    r = _resolve(pytorch, sha)
    assert (r.cuda.value, r.cuda.where) == (
        "12.8",
        ".github/scripts/generate_binary_build_matrix.py:6",
    )


# -- (4) nothing pinned: the date rule --------------------------------------------------------


def test_a_repository_that_pins_nothing_gets_the_date_rule(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "bare")
    repo.write("README.md", "kernels\n")
    repo.write("requirements.txt", "einops\ntorch\n")
    sha = repo.commit("nothing pinned")
    r = _resolve(repo, sha)
    assert {p.source for p in (r.python, r.torch, r.triton, r.cuda)} == {PinSource.DATE}
    assert (r.torch.value, r.torch.where) == (
        "2.7.0",
        "newest torch release before 2025-05-02: 2.7.0 (2025-04-23)",
    )
    assert (r.triton.value, r.triton.where) == (
        "3.3.0",
        "triton==3.3.0 required by torch 2.7.0 (releases.json)",
    )
    assert r.cuda.value == "12.6"
    assert (r.python.value, r.python.where) == (
        "3.13",
        "newest Python torch 2.7.0 supports (releases.json): 3.13",
    )
    assert r.base_image is None and r.extra == ()


def test_resolved_versions_round_trip(vllm: TinyRepo) -> None:
    r = _resolve(vllm, vllm.head())
    assert from_json(ResolvedVersions, json.loads(json.dumps(to_json(r)))) == r


# -- the release table --------------------------------------------------------------------------


def test_release_table_queries() -> None:
    rel = TABLE.newest_torch_before(date(2025, 6, 4))  # a release on the day itself is not before
    assert rel is not None and rel.version == "2.7.0"
    assert TABLE.torch_release("2.8.0a0") == TABLE.torch_release("2.8.0")
    assert TABLE.triton_for_torch("2.7.1") == "3.3.1"
    assert TABLE.triton_for_torch("2.14.0", before=date(2026, 9, 10)) == "3.8.0"
    assert TABLE.triton_for_torch("1.13.1") is None


def test_the_shipped_snapshot_loads() -> None:
    table = ReleaseTable.load()
    rel = table.torch_release("2.7.0")
    assert rel is not None
    assert (rel.date, rel.triton_spec, rel.cuda) == (date(2025, 4, 23), "==3.3.0", "12.6")
    assert "3.13" in rel.python
    assert all(t.version != "2.0.0rc1" for t in table.torch)


# -- scripts/update_releases.py ---------------------------------------------------------------


def _update_script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "update_releases.py"
    spec = importlib.util.spec_from_file_location("update_releases", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_update_script_reads_requirements_from_metadata() -> None:
    mod = _update_script()
    reqs = mod._parse_requirements(
        [
            'nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Linux"',
            'triton==3.3.0; platform_system == "Linux"',
        ]
    )
    assert (mod._cuda(reqs), mod._triton_spec(reqs)) == ("12.6", "==3.3.0")
    newer = mod._parse_requirements(
        ["cuda-toolkit[cudart]==13.2.2", "pytorch-triton==3.4.0+gitc817b9b6"]
    )
    assert (mod._cuda(newer), mod._triton_spec(newer)) == ("13.2", "==3.4.0")
    files = [{"python_version": "cp313"}, {"python_version": "cp313t"}, {"python_version": "cp39"}]
    assert mod._pythons(["Programming Language :: Python :: 3.10"], files) == [
        "3.9",
        "3.10",
        "3.13",
    ]


def test_update_script_keeps_the_old_snapshot_without_network(tmp_path: Path) -> None:
    mod = _update_script()
    out = tmp_path / "releases.json"
    out.write_text("old\n")
    mod.PYPI = "http://127.0.0.1:9/pypi"  # nothing listens on the discard port
    assert mod.main(["--out", str(out)]) == 1
    assert out.read_text() == "old\n"


def test_torch_in_a_cuda_extra_counts(tmp_path: Path) -> None:
    repo = TinyRepo(tmp_path / "extra")
    repo.write(
        "pyproject.toml",
        '[project]\nname = "x"\ndependencies = ["einops"]\n\n[project.optional-dependencies]\n'
        'cuda = ["torch>=2.6.0,<2.7", "triton>=3.2"]\nrocm = ["torch>=2.7.0"]\n',
    )
    sha = repo.commit("torch only in the cuda extra")
    r = _resolve(repo, sha)
    assert (r.torch.value, r.torch.source) == ("2.6.0", PinSource.FILE)
    assert r.torch.where.startswith("pyproject.toml:6 (torch>=2.6.0,<2.7 -> ")
