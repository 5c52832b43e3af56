"""benchmarks/experiments/wgmma_twins.py and gap_regimes.py: which point each wgmma point is compared with, the per-pair
ratios, and which confirmed kernels the gap tables count."""

import sys
from pathlib import Path

import pytest

from kernelrl.space import Variant

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "experiments"))
import gap_regimes  # noqa: E402
import wgmma_twins  # noqa: E402


def W(acc="fp32", BM=64, BN=128, stages=8, raster=1, **knobs):
    return Variant.of("wgmma", acc, BM=BM, BN=BN, stages=stages, raster=raster, b_layout="kn", **knobs)


def names(*points):
    return {v.name: v for v in points}


@pytest.mark.parametrize("point, kind, twins", [
    (W(split_k=4, split_reduce="fixup"), "fixup", ["wgmma_f32_kn_64x128x64_s8_r1_k4_co"]),
    (W(split_k=4), "fixup", []),
    (W(split_k=4, main_pdl=True), "mainpdl", ["wgmma_f32_kn_64x128x64_s8_r1_k4_co"]),
    (W(split_k=8, pdl=True, main_pdl=True), "mainpdl", ["wgmma_f32_kn_64x128x64_s8_r1_k8_co_pdl"]),
    (W("fp16", BN=64, stages=12, split_k=8), "f16split", ["wgmma_f16_kn_64x64x64_s12_r1_k1_co"]),
    (W(BN=64, stages=12, split_k=8), "f16split", []),  # fp32 accumulators: not this comparison
    (W(BM=128, BN=176, stages=4, raster=8), "widths",
     ["wgmma_f32_kn_128x128x64_s4_r8_k1_co", "wgmma_f32_kn_128x192x64_s4_r8_k1_co"]),
    (W(BM=128, BN=240, stages=3, raster=8), "widths",
     ["wgmma_f32_kn_128x192x64_s3_r8_k1_co", "wgmma_f32_kn_128x256x64_s3_r8_k1_co"]),
    (None, "widths", []),  # a baseline: no point of the family
])
def test_each_point_is_compared_with_the_same_point_one_knob_away(point, kind, twins):
    assert [t.name for t in wgmma_twins.twins_of(point, kind)] == twins


def test_a_pair_ratio_is_the_twin_time_over_the_point_time():
    fixup, plain = W(BN=64, stages=12, split_k=16, split_reduce="fixup"), W(BN=64, stages=12, split_k=16)
    times = {(64, 64, 16384): {fixup.name: 12.0, plain.name: 8.0, "cublaslt_auto_nn": 6.0}}
    lines = wgmma_twins.report(times, "fixup", names(fixup, plain))
    assert "| all pairs | | 1 | 0.667 | 0 |" in lines
    assert "| 64x64x16384 | 6.0 | 12.0 | 8.0 | 0.500 |" in lines


def test_the_gap_tables_count_confirmed_wgmma_kernels_only():
    point = W(BM=128, BN=128, stages=6, raster=8)
    rows = [{"shape": "1024x1024x1024:fp32", "class": "medium", "kernel": point.name, "kernel_us": "6.0",
             "fallback_us": "5.0"},
            {"shape": "2048x2048x2048:fp32", "class": "medium", "kernel": "cutlass_sm90_f32_128x256x64_c1x1_coop",
             "kernel_us": "30.0", "fallback_us": "25.0"}]
    lines = gap_regimes.tables(rows, names(point))
    assert "| <10 | 1 | 1.00 | 1.00 | 1.00 | 1.200 |" in lines
    assert not any(line.startswith("| 10-30 |") for line in lines)
