"""The `small` family (latency-first mma.sync tiles with cluster split-K over DSMEM): its grid, constraints, the
cost model's view of an on-chip reduction, and one real sm_90a compile."""

import pytest

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain
from kernelrl.space import SPACES, Variant
from kernelrl.space.model import predict_us
from kernelrl.workloads.hgemm import GemmProblem

SPACE = SPACES["small"]


def point(acc="fp32", BM=32, BN=64, BK=64, WM=16, WN=32, stages=2, db=0, ck=4, epilogue="direct"):
    return Variant.of("small", acc, BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, stages=stages, frag_double_buffer=db,
                      swizzle=1, split_k=1, cluster_k=ck, epilogue=epilogue)


def test_every_point_runs_four_warps():
    points = list(SPACE.points("fp32"))
    assert points and all(SPACE.warps(v) == 4 for v in points)


def test_cluster_split_needs_fp32_partials():
    assert "fp32" in SPACE.check(point(acc="fp16", ck=2))
    assert SPACE.check(point(acc="fp16", ck=1)) is None


def test_cluster_split_stores_c_itself():
    assert "direct" in SPACE.check(point(epilogue="smem"))


def test_a_cluster_of_16_is_a_valid_point_with_the_non_portable_attribute():
    # 32 rows over 16 blocks: 2 rows x 16 quads each, fewer than the block's 128 threads (the rest idle).
    v = point(BM=32, BN=64, ck=16)
    assert SPACE.check(v) is None
    assert "CLUSTER_K = 16" in v.source() and "cudaFuncAttributeNonPortableClusterSizeAllowed" in v.source()


def test_a_cluster_slice_may_not_be_empty():
    v = point(ck=4)
    assert "k-tiles" in SPACE.supports(v, GemmProblem(64, 64, 128))
    assert SPACE.supports(v, GemmProblem(64, 64, 256)) is None


def test_names_say_the_cluster_split():
    assert point().name == "small_f32_32x64x64_w16x32_s2_db0_ck4_edirect"


def test_model_charges_no_second_pass_for_an_on_chip_reduction(monkeypatch):
    from kernelrl.space import model
    monkeypatch.setattr(model, "CLUSTER_SPLIT_EFFICIENCY", 1.0)  # the reduction alone, not the measured slowdown
    problem = GemmProblem(128, 128, 8192)
    on_chip = predict_us(point(BM=64, BN=64, WM=32, WN=32, ck=4), problem)
    workspace = predict_us(Variant.of("mma_sync", "fp32", BM=64, BN=64, BK=64, WM=32, WN=32, stages=2,
                                      frag_double_buffer=0, swizzle=1, split_k=4, epilogue="direct"), problem)
    assert on_chip < workspace


def test_model_slows_clusters_of_four_or_more_by_their_measured_efficiency(monkeypatch):
    from kernelrl.space import model
    problem = GemmProblem(128, 128, 8192)
    measured = predict_us(point(BM=64, BN=64, WM=32, WN=32, ck=4), problem)
    monkeypatch.setattr(model, "CLUSTER_SPLIT_EFFICIENCY", 1.0)
    assert measured > predict_us(point(BM=64, BN=64, WM=32, WN=32, ck=4), problem)


def test_source_launches_a_cluster_along_k():
    src = point().source()
    assert "CLUSTER_K = 4" in src and "cudaLaunchAttributeClusterDimension" in src and "map_shared_rank" in src


@pytest.mark.nvcc
def test_a_cluster_of_16_compiles_for_sm90a(tmp_path):
    built = LocalBuilder(Toolchain.discover(arch="sm_90a", with_cutlass=False), cache_dir=tmp_path).build(
        BuildRequest(point(ck=16).source(), name="small"))  # the largest cluster: a partial reduction share
    assert built.ok, built.log[-2000:]
    assert built.resources["spill_bytes"] == 0


def test_large_outputs_belong_to_the_throughput_families():
    assert "throughput" in SPACE.supports(point(), GemmProblem(2048, 1024, 256))
    assert SPACE.supports(point(), GemmProblem(1024, 1024, 256)) is None
