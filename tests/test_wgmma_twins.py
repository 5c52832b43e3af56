"""benchmarks/wgmma_twins.py and gap_regimes.py: which point each wgmma point is compared with, the per-pair ratios, and
reading a point back from its name."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import wgmma_twins  # noqa: E402


@pytest.mark.parametrize("method, kind, twins", [
    ("wgmma_f32_kn_64x128x64_s8_r1_k4_co_fx", "fixup", ["wgmma_f32_kn_64x128x64_s8_r1_k4_co"]),
    ("wgmma_f32_kn_64x128x64_s8_r1_k4_co", "fixup", []),
    ("wgmma_f32_kn_64x128x64_s8_r1_k4_co_pdlmain", "mainpdl", ["wgmma_f32_kn_64x128x64_s8_r1_k4_co"]),
    ("wgmma_f32_kn_64x128x64_s8_r1_k8_co_pdl_pdlmain", "mainpdl", ["wgmma_f32_kn_64x128x64_s8_r1_k8_co_pdl"]),
    ("wgmma_f16_kn_64x64x64_s12_r1_k8_co", "f16split", ["wgmma_f16_kn_64x64x64_s12_r1_k1_co"]),
    ("wgmma_f32_kn_64x64x64_s12_r1_k8_co", "f16split", []),  # fp32 accumulators: not this comparison
    ("wgmma_f32_kn_128x176x64_s4_r8_k1_co", "widths",
     ["wgmma_f32_kn_128x128x64_s4_r8_k1_co", "wgmma_f32_kn_128x192x64_s4_r8_k1_co"]),
    ("wgmma_f32_kn_128x240x64_s3_r8_k1_co", "widths",
     ["wgmma_f32_kn_128x192x64_s3_r8_k1_co", "wgmma_f32_kn_128x256x64_s3_r8_k1_co"]),
    ("cublaslt_auto_nn", "widths", []),
])
def test_each_point_is_compared_with_the_same_point_one_knob_away(method, kind, twins):
    assert wgmma_twins.twins_of(method, kind) == twins


def test_a_pair_ratio_is_the_twin_time_over_the_point_time():
    times = {(64, 64, 16384): {"wgmma_f32_kn_64x64x64_s12_r1_k16_co_fx": 12.0,
                               "wgmma_f32_kn_64x64x64_s12_r1_k16_co": 8.0, "cublaslt_auto_nn": 6.0}}
    lines = wgmma_twins.report(times, "fixup")
    assert "| all pairs | | 1 | 0.667 | 0 |" in lines
    assert "| 64x64x16384 | 6.0 | 12.0 | 8.0 | 0.500 |" in lines


def test_gap_regimes_reads_a_wgmma_point_back_from_its_name_and_skips_other_families():
    import gap_regimes
    v = gap_regimes.variant_of("wgmma_f32_kn_64x128x64_s8_r1_k4_co_et")
    assert (v.p["BM"], v.p["BN"], v.p["split_k"], v.p["schedule"], v.p["epilogue"]) == (64, 128, 4, "cooperative", "tma")
    assert v.name == "wgmma_f32_kn_64x128x64_s8_r1_k4_co_et"
    assert gap_regimes.variant_of("cutlass_sm90_f16_128x256x64_c1x1_coop_persistent_ras_m_sw1") is None
