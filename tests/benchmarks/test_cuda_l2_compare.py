"""benchmarks/suites/cuda_l2_compare.py: per mode and shape, the CUDA-L2 file of the shape beside the library and the
baselines of the same run, its verdict where it did not verify, and per-class geomeans."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "suites"))
import cuda_l2_compare  # noqa: E402


def row(mode, shape, method, us=None, verdict=""):
    m, n, k = shape
    return {"mode": mode, "m": m, "n": n, "k": k, "acc": "fp32", "method": method, "time_us_median": us,
            "verified": us is not None, "verdict": verdict, "reason": verdict}


def measurements():
    small, medium = (128, 128, 64), (1024, 1024, 1024)
    out = []
    for mode in ("offline", "device"):
        for shape, base in ((small, 2.0), (medium, 6.0)):
            out += [row(mode, shape, "torch", base), row(mode, shape, "cublas_nn", base),
                    row(mode, shape, "cublas_tn", base * 1.1), row(mode, shape, "kernelrl", base / 1.25)]
        out.append(row(mode, small, "128_128_64", 2.5))
        out.append(row(mode, medium, "1024_1024_1024", 4.0) if mode == "offline" else
                   row(mode, medium, "1024_1024_1024", None, "synchronizes the device inside the call: use offline"))
    return out


def test_each_shape_gets_its_own_file_s_time_or_verdict():
    table = {(r["mode"], r["m"]): r for r in cuda_l2_compare.rows(measurements())}
    assert table[("offline", 1024)]["cuda_l2_vs_cublas_best"] == 1.5  # 6 / 4: faster than cuBLAS there
    assert table[("device", 1024)]["cuda_l2_us"] == "" and \
        table[("device", 1024)]["cuda_l2_verdict"].startswith("synchronizes the device")
    assert table[("device", 128)]["kernelrl_vs_cuda_l2"] == round(2.5 / 1.6, 4)
    assert table[("device", 128)]["cublas_best_us"] == 2.0  # the faster layout


def test_the_summary_counts_verdicts_and_averages_only_where_both_verified():
    text = "\n".join(cuda_l2_compare.summary(cuda_l2_compare.rows(measurements())))
    assert "## device mode: 2 shapes, 1 CUDA-L2 files verified" in text
    assert "- synchronizes the device inside the call: 1" in text
    device_all = next(line for line in text.split("## offline")[0].splitlines() if line.startswith("| all"))
    assert "| 0.800 (1) |" in device_all and "| 1.250 (2) |" in device_all


def test_the_file_is_compared_with_each_of_the_paper_s_baselines_at_its_faster_layout():
    data = measurements() + [row("offline", (1024, 1024, 1024), m, us) for m, us in
                             (("cublaslt_heur_nn", 5.0), ("cublaslt_heur_tn", 8.0))]
    table = {(r["mode"], r["m"]): r for r in cuda_l2_compare.rows(data)}
    assert table[("offline", 1024)]["cuda_l2_vs_cublaslt_heur_best"] == 1.25  # 5 (NN, the faster) / 4
    assert table[("offline", 1024)]["cuda_l2_vs_torch"] == 1.5
    text = "\n".join(cuda_l2_compare.summary(cuda_l2_compare.rows(data)))
    offline_all = [line for line in text.split("## offline")[1].splitlines() if line.startswith("| all")][1]
    assert offline_all.startswith("| all | 2 |") and "1.250 (1)" in offline_all
