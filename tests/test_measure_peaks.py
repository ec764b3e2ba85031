"""scripts/measure_peaks.py: the lent GPU's copy bandwidth and bf16 matrix throughput, the peaks
a workload's efficiency is a fraction of (`PEAKS` in eval/perf_scores.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from eval.perf_scores import peaks_key
from eval.timing import cuda_available

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from measure_peaks import main as measure_peaks


def test_help(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        measure_peaks(["--help"])
    assert e.value.code == 0 and "--seconds" in capsys.readouterr().out


@pytest.mark.skipif(cuda_available(), reason="the refusal is for a machine without CUDA")
def test_without_cuda_it_says_so() -> None:
    with pytest.raises(SystemExit, match="no CUDA device"):
        measure_peaks(["--seconds", "0.01"])


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
def test_the_peaks_of_this_gpu(tmp_path: Path) -> None:
    out = tmp_path / "peaks.json"
    assert measure_peaks(["--seconds", "0.2", "--out", str(out)]) == 0
    row = json.loads(out.read_text())
    # any data-centre GPU copies faster than 0.3 TB/s and multiplies faster than 30 TFLOP/s
    assert row["copy_bytes_per_s"] > 3e11 and row["bf16_flops"] > 3e13
    # a GPU with a PEAKS row is within a factor two of it (a busy neighbour lowers a window)
    if key := peaks_key(row["gpu"]):
        from eval.perf_scores import PEAKS

        assert 0.5 < row["copy_bytes_per_s"] / PEAKS[key].bytes_per_s < 1.5
