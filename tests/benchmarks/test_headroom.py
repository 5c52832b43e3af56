"""benchmarks/experiments/headroom.py on a hand-made bench CSV: each shape's floor from the card's peak, bandwidth
and step, the GFLOP bands, the best of cuBLAS's two layouts, own kernels counted by dispatch, and unverified rows left
out."""

import csv
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "experiments"))
import headroom  # noqa: E402

FIELDS = ["m", "n", "k", "method", "time_us_median", "verified", "dispatch"]


def bench_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        for m, n, k, method, t, verified, dispatch in rows:
            writer.writerow(dict(zip(FIELDS, (m, n, k, method, t, verified, dispatch))))
    return path


def shape(m, n, k, lib, nn, tn, auto, dispatch, lib_verified=1):
    return [(m, n, k, "kernelrl", lib, lib_verified, dispatch), (m, n, k, "cublas_nn", nn, 1, ""),
            (m, n, k, "cublas_tn", tn, 1, ""), (m, n, k, "cublaslt_auto_nn", auto, 1, "")]


def test_the_floor_is_the_step_plus_the_slower_of_compute_and_memory():
    assert headroom.floor_us(4096, 4096, 4096, 1e15, 1e12, 1.0) == 1.0 + 1e6 * 2 * 4096 ** 3 / 1e15
    assert headroom.floor_us(64, 64, 16384, 1e15, 1e12, 1.0) == 1.0 + 1e6 * 2 * (64 * 16384 * 2 + 64 * 64) / 1e12


def test_bands_ratios_and_own_kernels(tmp_path):
    path = bench_csv(tmp_path / "b.csv", shape(64, 64, 64, 2.0, 4.0, 3.0, 2.5, "wgmma_f32_x") +  # 0.0005 GFLOP
                     shape(4096, 4096, 4096, 100.0, 110.0, 120.0, 100.0, "cuBLASLt (stored algorithm)"))  # 137 GFLOP
    rows = {r["band"]: r for r in headroom.table(headroom.read(path), 1e15, 1e12, 1.0)}
    assert list(rows) == ["< 0.01", ">= 100", "all"]
    assert rows["< 0.01"]["library vs cublas"] == 1.5 and rows["< 0.01"]["own kernel"] == 1  # best of NN/TN: 3.0
    assert rows[">= 100"]["own kernel"] == 0 and rows[">= 100"]["library vs cublaslt-auto"] == 1.0
    assert math.isclose(rows["all"]["library vs cublas"], math.sqrt(1.5 * 1.1))


def test_a_shape_whose_library_row_failed_verification_is_left_out(tmp_path, capsys):
    path = bench_csv(tmp_path / "b.csv", shape(64, 64, 64, 2.0, 4.0, 3.0, 2.5, "wgmma", lib_verified=0))
    assert headroom.main([str(path), "--card", "h100"]) == 2
    assert "no shape with kernelrl, cuBLAS and cuBLASLt autotuning rows all verified" in capsys.readouterr().err
