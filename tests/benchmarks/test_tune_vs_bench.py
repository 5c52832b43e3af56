"""benchmarks/suites/tune_vs_bench.py: a kernel shape's gain over its fallback at screening, at confirmation and in a
later bench of the library, side by side (shapes that run a fallback are left out)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "suites"))
import tune_vs_bench  # noqa: E402


def test_each_kernel_shape_gets_its_three_gains():
    manifest = {"shapes": {
        "64x64x64:fp32": {"m": 64, "n": 64, "k": 64, "dispatch": "kernel", "kernel": "k", "time_us": 9.0,
                          "yardstick_us": 10.0, "screening": {"time_us": 8.0, "fallback_us": 10.0}},
        "128x64x64:fp32": {"m": 128, "n": 64, "k": 64, "dispatch": "fallback", "kernel": "k"}}}
    bench = [{"m": "64", "n": "64", "k": "64", "method": m, "mode": "device", "verified": "1", "time_us_median": t}
             for m, t in (("kernelrl", "9.5"), ("torch", "10.0"))]
    [row] = tune_vs_bench.rows(manifest, bench, "device")
    assert (row["screening_gain"], row["confirmed_gain"], row["bench_gain"]) == (1.25, 1.1111, 1.0526)
