"""The wgmma (TMA + warpgroup MMA) family: its grid, constraints and names (no GPU, no nvcc), and real sm_90a compiles
of two points (nvcc only: no spills, the exports, and a C++ kernelrl_hgemm_supports that agrees with Python)."""

import ctypes
import json
import re

import pytest

from kernelrl.space import SPACES, Variant
from kernelrl.space.base import HOPPER
from kernelrl.workloads.hgemm import GemmProblem

SPACE = SPACES["wgmma"]
EXPORTS = ("kernelrl_hgemm", "kernelrl_hgemm_workspace", "kernelrl_hgemm_supports", "kernelrl_hgemm_info",
           "kernelrl_hgemm_b_layout", "kernelrl_hgemm_ex", "kernelrl_hgemm_epilogue_supports")


def V(acc="fp32", BM=128, BN=128, stages=4, raster=8, b_layout="kn", split_k=1, schedule="cooperative",
      dtype="fp16", epilogue="direct", pdl=False, cluster="1x1", split_reduce="workspace", main_pdl=False):
    return Variant.of("wgmma", acc, BM=BM, BN=BN, stages=stages, raster=raster, b_layout=b_layout, split_k=split_k,
                      schedule=schedule, dtype=dtype, epilogue=epilogue, pdl=pdl, cluster=cluster,
                      split_reduce=split_reduce, main_pdl=main_pdl)


# The points the nvcc tests build: the largest fp32 tile (two consumers, 128 accumulators a thread) on the paper's
# layout, an fp16-accumulator nn.Linear-layout point with a tile width that is not a multiple of 64, and a
# ping-pong split-K point.
F32_WIDE_KN = V("fp32", 128, 256, 4, 8, "kn")
F16_NARROW_NK = V("fp16", 64, 96, 8, 1, "nk")
F32_PINGPONG_SPLIT = V("fp32", 128, 128, 6, 8, "kn", split_k=4, schedule="pingpong", pdl=True)
BF16_NK = V("fp32", 128, 128, 6, 8, "nk", schedule="pingpong", dtype="bf16")
F16_PINGPONG_TMA_STORE = V("fp16", 128, 128, 4, 8, "kn", schedule="pingpong", epilogue="tma")
# 2-CTA clusters: B tiles multicast on the paper's layout (N-major boxes split by k rows), A tiles on nn.Linear's
F32_CLUSTER_B = V("fp32", 128, 256, 3, 8, "kn", epilogue="tma", cluster="2x1")
F16_CLUSTER_A = V("fp16", 128, 128, 5, 8, "nk", schedule="pingpong", cluster="1x2")
# Split-K summed in distributed shared memory: a cluster of 4 CTAs per tile, one K slice each
F32_DSMEM_SPLIT = V("fp32", 64, 128, 8, 1, "kn", split_k=4, split_reduce="dsmem")
# Paper-layout widths off the 64-column box: B in 32-column boxes (64-byte swizzle) and in 16-column boxes (32-byte)
F32_KN_96 = V("fp32", 64, 96, 8, 1, "kn")
F16_KN_80 = V("fp16", 128, 80, 6, 8, "kn", schedule="pingpong")
# Split-K with fp16 accumulators (each slice's fp16 sums widened into the fp32 partials)
F16_SPLIT = V("fp16", 64, 64, 12, 1, "kn", split_k=4, schedule="pingpong")
# Split-K summed in-kernel by each tile's last slice to arrive (arrival counters in the library's own memory)
F32_FIXUP = V("fp32", 64, 128, 8, 1, "kn", split_k=4, split_reduce="fixup")
# The main kernel launched programmatically (PDL), with split-K and its reduce kernel after it
F32_MAIN_PDL = V("fp32", 64, 128, 8, 1, "kn", split_k=4, main_pdl=True)
# 256-row tiles: two cooperative consumers of 128 rows each (two m64 blocks a k-step), 128 accumulators a thread
F32_COOP_256 = V("fp32", 256, 128, 4, 8, "kn")
BF16_COOP_256_NK = V("fp32", 256, 128, 4, 8, "nk", dtype="bf16")
F16_COOP_256_TMA = V("fp16", 256, 128, 3, 8, "nk", epilogue="tma")
F32_COOP_256_CLUSTER = V("fp32", 256, 128, 3, 8, "kn", epilogue="tma", cluster="2x1")  # CTA pairs sharing B
# 192-row tiles: three cooperative consumers of 64 rows (a 512-thread CTA compiled within 128 registers a thread)
F32_COOP_192_NK = V("fp32", 192, 128, 4, 8, "nk", dtype="bf16")
F16_COOP_192_TMA = V("fp16", 192, 128, 4, 8, "kn", epilogue="tma")
# The subtiled TMA-store epilogue: two staging boxes a consumer, so a 256x128 tile keeps a fourth stage; on
# nn.Linear's layout in bf16, and with ping-pong consumers of fp16 accumulators
F32_COOP_256_SUB = V("fp32", 256, 128, 4, 8, "kn", epilogue="tma_sub")
BF16_COOP_256_SUB_NK = V("fp32", 256, 128, 4, 8, "nk", dtype="bf16", epilogue="tma_sub")
F16_PINGPONG_SUB = V("fp16", 128, 128, 5, 8, "kn", schedule="pingpong", epilogue="tma_sub")
BUILT = [F32_COOP_256_SUB, BF16_COOP_256_SUB_NK, F16_PINGPONG_SUB, F32_COOP_192_NK, F16_COOP_192_TMA,
         F32_COOP_256, BF16_COOP_256_NK, F16_COOP_256_TMA, F32_COOP_256_CLUSTER, F32_WIDE_KN, F16_NARROW_NK,
         F32_PINGPONG_SPLIT, BF16_NK,
         F16_PINGPONG_TMA_STORE, F32_CLUSTER_B, F16_CLUSTER_A, F32_DSMEM_SPLIT, F32_KN_96, F16_KN_80, F16_SPLIT,
         F32_FIXUP, F32_MAIN_PDL]


@pytest.fixture(scope="module")
def points():
    return {acc: list(SPACE.points(acc)) for acc in ("fp32", "fp16")}


# -- the grid ------------------------------------------------------------------------------------------------

def test_family_is_registered_by_importing_the_package():
    assert SPACES["wgmma"] is SPACE


def test_both_layouts_and_both_accumulators_have_points(points):
    for acc in ("fp32", "fp16"):
        layouts = {v.p["b_layout"] for v in points[acc]}
        assert layouts == {"kn", "nk"}, (acc, layouts)


def test_every_valid_point_fits_the_hardware(points):
    for _acc, vs in points.items():
        for v in vs:
            assert SPACE.smem_bytes(v) <= HOPPER["smem_per_block"], v.name
            assert SPACE.threads(v) in (256, 384), v.name
            assert v.p["b_layout"] == "nk" or v.p["BN"] % 64 == 0, v.name


def test_names_are_unique_and_procedural(points):
    names = [v.name for vs in points.values() for v in vs]
    assert len(names) == len(set(names))
    assert F32_WIDE_KN.name == "wgmma_f32_kn_128x256x64_s4_r8_k1_co"
    assert F16_NARROW_NK.name == "wgmma_f16_nk_64x96x64_s8_r1_k1_co"
    assert F32_PINGPONG_SPLIT.name == "wgmma_f32_kn_128x128x64_s6_r8_k4_pp_pdl"
    assert V(split_k=4).name == "wgmma_f32_kn_128x128x64_s4_r8_k4_co"  # points without PDL keep their names
    assert BF16_NK.name == "wgmma_bf16f32_nk_128x128x64_s6_r8_k1_pp"
    assert F16_PINGPONG_TMA_STORE.name == "wgmma_f16_kn_128x128x64_s4_r8_k1_pp_et"
    assert F32_FIXUP.name == "wgmma_f32_kn_64x128x64_s8_r1_k4_co_fx"
    pattern = (r"wgmma_(f32|f16|bf16f32)_(kn|nk)_\d+x\d+x64_s\d+_r\d+_k\d+_(co|pp)(_e[ts])?(_pdl)?(_c2x1|_c1x2)?"
               r"(_dsm|_fx)?")
    assert all(re.fullmatch(pattern, n) for n in names)


def test_resources():
    r = SPACE.resources(F32_WIDE_KN)
    assert r == {"threads": 384, "smem_bytes": 4 * ((128 + 256) * 64 * 2 + 16) + 16 + 1024, "tile": (128, 256, 64),
                 "split_k": 1, "stages": 4, "raster": 8, "schedule": "cooperative", "epilogue": "direct",
                 "split_reduce": None, "cluster": (1, 1), "unit_overhead": "cooperative", "persistent": True}
    assert SPACE.resources(F32_CLUSTER_B)["cluster"] == (2, 1) and SPACE.resources(F16_CLUSTER_A)["cluster"] == (1, 2)
    assert SPACE.resources(F32_PINGPONG_SPLIT)["split_k"] == 4
    assert SPACE.resources(F32_PINGPONG_SPLIT)["split_reduce"] == "pdl"
    assert SPACE.threads(V(BM=64, schedule="pingpong")) == 384  # ping-pong always has two consumers


@pytest.mark.parametrize("variant, reason", [
    (V(BM=128, BN=256, stages=5), "exceeds"),
    (V(acc="bf16"), "use fp32 or fp16"),
    (Variant.of("wgmma", "fp32", BM=128, BN=128, stages=4, raster=8, split_k=1, schedule="cooperative",
                dtype="fp16", epilogue="direct"), "missing ['b_layout']"),
    (V(BN=100, b_layout="nk"), "BN=100 is not one of"),
    (V(acc="fp16", split_k=2, split_reduce="dsmem"), "fp32 accumulator only"),
    (V(acc="fp16", dtype="bf16"), "bf16 wgmma accumulates in fp32 only"),
    (V(split_k=2, epilogue="tma"), "TMA-store epilogue"),
    (V(BN=96, b_layout="nk", epilogue="tma"), "BN % 64 == 0"),
    (V(BM=128, BN=256, stages=4, epilogue="tma"), "exceeds"),  # the 64 KB of C staging leaves room for 3 stages
    (V(BM=128, BN=256, schedule="pingpong"), "exceeds the 168 a 384-thread kernel"),  # 2 x 128 accumulators
    (V(pdl=True), "split_k > 1 only"),
    (V(split_k=2, cluster="2x1"), "clusters with split_k 1 only"),
    (V(split_k=16, split_reduce="dsmem"), "2, 4 or 8 CTAs"),
    (V(split_reduce="dsmem"), "2, 4 or 8 CTAs"),
    (V(split_k=2, schedule="pingpong", split_reduce="dsmem"), "cooperative consumers"),
    (V(split_k=2, epilogue="tma", split_reduce="dsmem"), "TMA-store epilogue"),
    (V(BM=64, BN=96, b_layout="nk", split_k=8, split_reduce="dsmem"), "BN / 8 must divide by split_k"),
    (V(cluster="2x2"), "cluster='2x2' is not one of"),
    (V(split_reduce="fixup"), "split_reduce=fixup sums a tile's K slices: split_k > 1"),
    (V(split_k=4, pdl=True, split_reduce="fixup"), "no reduce kernel for pdl"),
    (V(split_k=4, epilogue="tma", split_reduce="fixup"), "TMA-store epilogue"),
    (V(split_k=2, cluster="2x1", split_reduce="fixup"), "clusters with split_k 1 only"),
])
def test_check_rejects_with_a_reason(variant, reason):
    why = SPACE.check(variant)
    assert why is not None and reason in why, why


def test_deepest_pipeline_that_fits_is_valid():
    assert SPACE.check(V(BM=128, BN=128, stages=7)) is None  # 7 x 32 KB + barriers + alignment slack < 227 KB
    assert SPACE.check(V(BM=128, BN=128, stages=8)) is not None


@pytest.mark.parametrize("m, n, k, ok", [(64, 64, 64, True), (1, 8, 8, True), (333, 200, 72, True),
                                         (64, 60, 64, False), (64, 64, 60, False)])
def test_supports_follows_the_rule(m, n, k, ok):
    assert (SPACE.supports(F32_WIDE_KN, GemmProblem(m, n, k)) is None) == ok  # a kn point, nn problems


def test_a_point_runs_only_problems_whose_caller_holds_its_b_layout():
    """The tuner measures what a library can call: an nk kernel handed the paper's K x N B would be wrong."""
    nn_problem, nt_problem = GemmProblem(256, 256, 256), GemmProblem(256, 256, 256, layout="nt")
    assert SPACE.runs(V(b_layout="kn"), nn_problem) is None and SPACE.runs(V(b_layout="nk"), nt_problem) is None
    assert "takes B as NK" in SPACE.runs(V(b_layout="nk"), nn_problem)
    assert "takes B as KN" in SPACE.runs(V(b_layout="kn"), nt_problem)


def test_a_point_runs_only_problems_of_its_dtype():
    bf16 = GemmProblem(256, 256, 256, dtype="bf16")
    assert SPACE.runs(V(dtype="bf16"), bf16) is None
    assert "computes fp16" in SPACE.runs(V(), bf16) and "computes bf16" in SPACE.runs(V(dtype="bf16"),
                                                                                       GemmProblem(256, 256, 256))


def test_a_stored_point_round_trips():
    assert Variant.from_dict(F16_NARROW_NK.to_dict()) == F16_NARROW_NK


def test_points_stored_before_split_k_and_schedules_read_back_as_what_ran():
    old = {"family": "wgmma", "acc": "fp32", "params": {"BM": 128, "BN": 256, "stages": 4, "raster": 8,
                                                         "b_layout": "kn"}}
    assert Variant.from_dict(old) == F32_WIDE_KN


@pytest.mark.parametrize("k, ok", [(256, True), (192, False)])
def test_split_k_needs_a_k_step_per_slice(k, ok):
    why = SPACE.supports(F32_PINGPONG_SPLIT, GemmProblem(256, 256, k))
    assert (why is None) == ok, why


def test_split_k_workspace_is_the_fp32_partials():
    assert SPACE.workspace_bytes(F32_PINGPONG_SPLIT, GemmProblem(256, 512, 4096)) == 4 * 256 * 512 * 4
    assert SPACE.workspace_bytes(F32_WIDE_KN, GemmProblem(256, 512, 4096)) == 0
    assert "exceed" in SPACE.supports(F32_PINGPONG_SPLIT, GemmProblem(16384, 16384, 4096))


# -- the rendered source -------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant, instruction, trans_b", [
    (F32_WIDE_KN, "m64n256k16.f32.f16.f16", 1), (F16_NARROW_NK, "m64n96k16.f16.f16.f16", 0),
    (BF16_NK, "m64n128k16.f32.bf16.bf16", 0)])
def test_source_issues_the_wgmma_of_its_tile_and_layout(variant, instruction, trans_b):
    src = variant.source()
    assert f"wgmma.mma_async.sync.aligned.{instruction}" in src
    regs = variant.p["BN"] // 2 if variant.acc == "fp32" else variant.p["BN"] // 4
    assert f"%{regs}, %{regs + 1}, 1, 1, 1, 0, {trans_b};" in src  # A K-major; B N-major only in kn
    assert f"static constexpr bool B_KMAJOR = {'true' if variant.p['b_layout'] == 'nk' else 'false'};" in src
    assert "cp.async.bulk.tensor.2d" in src and "mbarrier.try_wait.parity" in src
    bf16 = variant.p["dtype"] == "bf16"
    assert ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16" in src) == bf16 and ("using Elem = __nv_bfloat16;" in src) == bf16


def test_the_tma_store_epilogue_stages_each_consumer_s_rows():
    v = F16_PINGPONG_TMA_STORE
    assert SPACE.staging_bytes(v) == 2 * 2 * 64 * 128 * 2  # two consumers, two m64 blocks each, 16-bit C
    assert SPACE.smem_bytes(v) == 4 * ((128 + 128) * 64 * 2 + 16) + SPACE.staging_bytes(v) + 16 + 1024
    src = v.source()
    assert "static constexpr bool TMA_STORE = true;" in src and "cp.async.bulk.tensor.2d.global.shared::cta" in src
    assert "static constexpr bool TMA_STORE = false;" in F32_WIDE_KN.source()


def test_ping_pong_consumers_take_turns_on_the_ring():
    src = F32_PINGPONG_SPLIT.source()
    assert "static constexpr bool PINGPONG = true;" in src and "static constexpr int SPLIT_K = 4;" in src
    assert "mbar_wait(&turn[1 - c]" in src and "splitk_reduce_kernel<<<" in src


def test_points_of_several_consumers_trade_registers_within_the_sm_s_64k():
    assert "static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;" in F32_WIDE_KN.source()
    src = F32_COOP_192_NK.source()  # 128 * (40 + 3 * 152) <= 65536
    assert "static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 152;" in src
    assert "if constexpr (CONSUMERS >= 2) regs_down<PRODUCER_REGS>();" in src


def test_a_192_row_tile_has_three_consumers_and_a_register_bound_width():
    space = SPACE
    assert space.consumers(F32_COOP_192_NK) == 3 and space.threads(F32_COOP_192_NK) == 512
    assert space.m_blocks(F32_COOP_192_NK) == 1
    assert space.check(V("fp32", 192, 176, 4, 8, "nk")) is None  # 88 accumulators + overhead = 128
    assert "exceeds the 128 a 512-thread kernel" in space.check(V("fp32", 192, 192, 4, 8, "nk"))
    assert space.check(V("fp16", 192, 256, 3, 8, "nk")) is None  # fp16 accumulators: 64 a thread
    assert "off the default grid" in space.pruned(F32_COOP_192_NK)


def test_a_cluster_point_names_its_cluster_and_older_points_keep_their_names():
    assert F32_CLUSTER_B.name == "wgmma_f32_kn_128x256x64_s3_r8_k1_co_et_c2x1"
    assert F16_CLUSTER_A.name.endswith("_pp_c1x2")
    assert V().name == "wgmma_f32_kn_128x128x64_s4_r8_k1_co"
    stored = {k: v for k, v in V().p.items() if k != "cluster"}  # a point stored before clusters existed
    assert Variant.of("wgmma", "fp32", **stored) == V()


@pytest.mark.parametrize("variant, multicast, box", [
    (F32_CLUSTER_B, "tma_load_multicast(box + rank * B_BOX_ROWS * B_ROW_BYTES", "B_BOX_ROWS = B_KMAJOR"),
    (F16_CLUSTER_A, "tma_load_multicast(a + rank * A_BOX_ROWS * 128", "A_BOX_ROWS = BM / CLUSTER_N")])
def test_a_cluster_pair_multicasts_the_operand_it_shares(variant, multicast, box):
    src = variant.source()
    cm, cn = SPACE.cluster(variant)
    assert "__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__" in src
    assert f"static constexpr int CLUSTER_M = {cm}, CLUSTER_N = {cn};" in src
    assert multicast in src and box in src
    assert "mapa.shared::cluster.u32" in src and "cudaOccupancyMaxActiveClusters" in src
    assert "__cluster_dims__" not in V().source()  # a point without a cluster launches as before


def test_a_dsmem_split_k_point_is_one_kernel_of_split_k_cta_clusters_and_needs_no_workspace():
    v = F32_DSMEM_SPLIT
    assert v.name == "wgmma_f32_kn_64x128x64_s8_r1_k4_co_dsm"
    assert V(split_k=4).name == "wgmma_f32_kn_128x128x64_s4_r8_k4_co"  # workspace points keep their names
    r = SPACE.resources(v)
    assert (r["split_k"], r["split_reduce"]) == (4, "cluster")
    assert SPACE.smem_bytes(v) == 8 * ((64 + 128) * 64 * 2 + 16) + 64 * 128 * 4 + 16 + 16 + 1024
    assert SPACE.workspace_bytes(v, GemmProblem(256, 512, 16384)) == 0
    assert SPACE.supports(v, GemmProblem(16384, 16384, 4096)) is None  # no 2 GiB of partials to bound it
    src = v.source()
    assert "__global__ void __cluster_dims__(4, 1, 1) __launch_bounds__" in src
    assert "static constexpr bool DSMEM = true;" in src and "ld.shared::cluster.v4.f32" in src
    assert "mbarrier.try_wait.parity.acquire.cluster" in src
    assert "static constexpr bool DSMEM = false;" in V(split_k=4).source()


def test_tile_widths_are_any_multiple_of_16_on_both_layouts():
    widths = set(SPACE.knobs["BN"])
    assert widths == set(range(64, 257, 16))
    for layout in ("kn", "nk"):
        for bn in (80, 96, 112, 240):
            assert SPACE.check(V(BM=64, BN=bn, stages=4, b_layout=layout)) is None, (layout, bn)


def test_widths_off_the_box_stay_off_the_default_grid_as_measured():
    assert "slower than the multiples of 64" in SPACE.pruned(F32_KN_96)  # kn: not a multiple of 64
    assert "until benched" in SPACE.pruned(V(BN=80, b_layout="nk"))  # nk: not a multiple of 32
    assert SPACE.pruned(V(BN=96, b_layout="nk")) is None and SPACE.pruned(V(BN=192)) is None  # measured before
    assert F32_KN_96 in set(SPACE.points("fp32", full=True)) and F32_KN_96 not in set(SPACE.points("fp32"))


def test_an_n_major_b_box_is_as_wide_as_its_swizzle():
    src = F32_KN_96.source()
    assert "B_BOX_COLS = B_KMAJOR || BN % 64 == 0 ? 64 : BN % 32 == 0 ? 32 : 16" in src
    assert "CU_TENSOR_MAP_SWIZZLE_64B" in src and "CU_TENSOR_MAP_SWIZZLE_32B" in src
    assert "MapKey{B, K, N, B_BOX_ROWS, B_BOX_COLS}" in src


def test_a_subtiled_epilogue_stages_two_boxes_a_consumer_and_leaves_room_for_a_fourth_stage():
    whole, sub = V(BM=256, BN=128, stages=4, epilogue="tma"), F32_COOP_256_SUB
    assert SPACE.staging_bytes(sub) == 2 * 2 * 64 * 64 * 2 and SPACE.staging_bytes(whole) == 256 * 128 * 2
    assert "shared memory" in SPACE.check(whole) and SPACE.check(sub) is None
    assert sub.name.endswith("_co_es") and "static constexpr bool SUBTILE = true;" in sub.source()
    assert SPACE.pruned(sub) is None and sub in set(SPACE.points("fp32"))  # on the grid since the H100 measured it


def test_render_refuses_an_invalid_point():
    with pytest.raises(ValueError, match="not a valid point"):
        V(BM=128, BN=256, stages=5).source()


# -- real compiles (sm_90a, no GPU needed) -------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    toolchain = Toolchain.discover(arch="sm_90a", with_cutlass=False)
    builder = LocalBuilder(toolchain, cache_dir=tmp_path_factory.mktemp("wgmma-build"))
    variants = BUILT
    results = builder.build_many([BuildRequest(v.source(), name=v.name) for v in variants], workers=2)
    return dict(zip([v.name for v in variants], zip(variants, results)))


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", BUILT, ids=lambda v: v.name)
def test_compiles_for_sm90a_without_spills(built, variant):
    _, result = built[variant.name]
    assert result.ok, result.error or result.log[-3000:]
    kernels = {name: info for name, info in result.ptxas.items() if info.get("arch", "sm_90a") == "sm_90a"}
    assert [name for name in kernels if "hgemm_wgmma_kernel" in name]
    for name, info in kernels.items():
        assert info["spill_stores"] == 0 and info["spill_loads"] == 0 and info["stack_bytes"] == 0, (name, info)
    assert "C7508" not in result.log  # setmaxnreg was not ignored


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", BUILT, ids=lambda v: v.name)
def test_library_exports_agree_with_python(built, variant):
    _, result = built[variant.name]
    assert result.ok
    lib = ctypes.CDLL(result.lib_path)
    for name in EXPORTS:
        assert hasattr(lib, name), name
    lib.kernelrl_hgemm_info.restype = lib.kernelrl_hgemm_b_layout.restype = ctypes.c_char_p
    info = json.loads(lib.kernelrl_hgemm_info().decode())
    assert info == {"acc": variant.acc, "family": "wgmma", "params": variant.p, "name": variant.name}
    assert lib.kernelrl_hgemm_b_layout().decode() == variant.p["b_layout"]
    supports, workspace = lib.kernelrl_hgemm_supports, lib.kernelrl_hgemm_workspace
    supports.argtypes = workspace.argtypes = [ctypes.c_int] * 3
    supports.restype, workspace.restype = ctypes.c_int, ctypes.c_size_t
    for m, n, k in [(64, 64, 64), (1, 8, 8), (333, 200, 72), (64, 60, 64), (64, 64, 60), (0, 8, 8), (8, 8, 0),
                    (256, 512, 4096), (8192, 4096, 1024)]:
        problem = GemmProblem(max(m, 1), max(n, 1), max(k, 1))
        expected = SPACE.supports(variant, problem) is None and min(m, n, k) >= 1  # the shape, as C++ checks
        assert bool(supports(m, n, k)) == expected, (m, n, k)
        assert workspace(m, n, k) == (SPACE.workspace_bytes(variant, problem) if expected else 0), (m, n, k)


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", BUILT, ids=lambda v: v.name)
def test_every_point_adds_a_bias_and_swiglu_where_its_c_stores_allow(built, variant):
    _, result = built[variant.name]
    fuses = ctypes.CDLL(result.lib_path).kernelrl_hgemm_epilogue_supports
    fuses.argtypes, fuses.restype = [ctypes.c_int] * 4, ctypes.c_int
    # TMA stores of SwiGLU's half-width tile: whole 64-column boxes (BN % 128 == 0), 16-byte rows of C (N % 16 == 0)
    tma_store = variant.p["epilogue"] != "direct"  # whole or subtiled
    tma_box_misfit = tma_store and variant.p["BN"] % 128 != 0
    assert fuses(256, 512, 4096, 1) == 1 and fuses(256, 512, 4096, 0) == 1
    assert fuses(256, 512, 4096, 2) == fuses(256, 512, 4096, 3) == (0 if tma_box_misfit else 1)
    assert fuses(256, 520, 4096, 2) == (0 if tma_store else 1)  # N/2 = 260: 520-byte rows
    assert fuses(256, 512, 4096, 4) == 0 and fuses(256, 60, 4096, 1) == 0  # an unknown flag; a shape it declines


@pytest.mark.nvcc
def test_the_evaluator_hands_an_nk_point_b_transposed(built):
    from kernelrl.run.methods import Candidate
    _, result = built[F16_NARROW_NK.name]
    nk = Candidate("nk", result.lib_path)
    assert nk.b_layout == "nk" and nk.needs_bt
    _, result = built[F32_WIDE_KN.name]
    assert not Candidate("kn", result.lib_path).needs_bt


# -- the cost model's view of a point's tile order ---------------------------------------------------------------

def _nk_bf16(raster, stages=3):
    return Variant.of("wgmma", "fp32", BM=128, BN=224, stages=stages, raster=raster, b_layout="nk", dtype="bf16")


def test_row_major_tiles_read_a_b_larger_than_l2_again_for_each_row_of_tiles():
    from kernelrl.space.model import operand_hbm_bytes
    wide = GemmProblem(8192, 14336, 4096, "fp32", "nt", "bf16")  # B is 117 MB
    a, b = 2 * 8192 * 4096, 2 * 4096 * 14336
    row_major, grouped = operand_hbm_bytes(_nk_bf16(1), wide), operand_hbm_bytes(_nk_bf16(8), wide)
    assert row_major > a + 30 * b and a + b < grouped < a + 8 * b < row_major


def test_a_b_that_fits_in_l2_is_read_once_whatever_the_order():
    from kernelrl.space.model import operand_hbm_bytes
    small = GemmProblem(8192, 1024, 4096, "fp32", "nt", "bf16")  # B is 8 MB
    assert operand_hbm_bytes(_nk_bf16(1), small) == operand_hbm_bytes(_nk_bf16(8), small) == 2 * 4096 * (8192 + 1024)


def test_among_points_the_model_cannot_tell_apart_the_grouped_order_and_the_deeper_pipeline_rank_first():
    from kernelrl.space.model import predict_us, rank
    wide = GemmProblem(8192, 4096, 4096, "fp32", "nt", "bf16")
    points = [_nk_bf16(raster, stages) for raster in (1, 8) for stages in (2, 3, 4)]
    assert len({predict_us(v, wide) for v in points}) == 1  # compute-bound: one predicted time
    assert [v.name for _, v in rank(points, wide)][:2] == [_nk_bf16(8, 4).name, _nk_bf16(8, 3).name]


def test_a_cluster_point_ties_with_its_single_cta_twin_and_ranks_after_it():
    """Pairs measured no faster than their twins on the H200: the model gives them the same time, the name breaks
    the tie, so a short list takes the single-CTA point first."""
    from kernelrl.space.model import predict_us, rank
    alone, paired = V(BM=64, BN=128, stages=6), V(BM=64, BN=128, stages=6, cluster="2x1")
    deep = GemmProblem(1024, 1024, 8192)
    assert predict_us(paired, deep) == predict_us(alone, deep)
    assert [v for _, v in rank([paired, alone], deep)] == [alone, paired]


def test_among_tied_points_a_tma_store_epilogue_ranks_ahead_of_direct_stores():
    from kernelrl.space.model import rank
    wide = GemmProblem(8192, 4096, 4096, "fp32", "nt", "bf16")
    twins = [Variant.of("wgmma", "fp32", BM=128, BN=256, stages=4, raster=8, b_layout="nk", dtype="bf16",
                        epilogue=e) for e in ("direct", "tma")]
    assert [v.p["epilogue"] for _, v in rank(twins, wide)] == ["tma", "direct"]


def test_fp16_accumulator_split_k_points_are_on_the_default_grid():
    assert SPACE.check(F16_SPLIT) is None and SPACE.check(V(acc="fp16", split_k=8, pdl=True)) is None
    assert SPACE.pruned(F16_SPLIT) is None and F16_SPLIT in set(SPACE.points("fp16"))


def test_the_split_k_fixup_is_legal_off_the_default_grid_and_modelled_as_one_kernel():
    assert SPACE.check(F32_FIXUP) is None and "slower than the reduce kernel" in SPACE.pruned(F32_FIXUP)
    assert SPACE.check(V(acc="fp16", split_k=8, schedule="pingpong", split_reduce="fixup")) is None
    assert SPACE.resources(F32_FIXUP)["split_reduce"] == "fixup"
    problem = GemmProblem(256, 512, 4096)
    assert SPACE.workspace_bytes(F32_FIXUP, problem) == 4 * 256 * 512 * 4  # the partials, as the workspace split-K


def test_a_programmatically_launched_main_kernel_is_named_legal_for_single_ctas_and_off_the_default_grid():
    assert F32_MAIN_PDL.name == "wgmma_f32_kn_64x128x64_s8_r1_k4_co_pdlmain"
    assert V(split_k=4, pdl=True, main_pdl=True).name.endswith("_k4_co_pdl_pdlmain")
    assert SPACE.check(F32_MAIN_PDL) is None and "until verified on a GPU" in SPACE.pruned(F32_MAIN_PDL)
    assert "single CTAs" in SPACE.check(V(cluster="2x1", main_pdl=True))
    assert "single CTAs" in SPACE.check(V(BM=64, split_k=4, split_reduce="dsmem", main_pdl=True))


def test_points_stored_before_main_pdl_read_back_as_plain_launches():
    stored = {"family": "wgmma", "acc": "fp32", "params": {k: v for k, v in V().p.items() if k != "main_pdl"}}
    assert Variant.from_dict(stored).p["main_pdl"] is False


def test_the_model_gives_a_persistent_point_one_slot_per_sm_whatever_its_shared_memory():
    """The kernel launches one CTA per SM, which takes the units in turn: a point small enough for six CTAs an SM
    still fills 132 slots, so 1024 tiles take 8 waves (8 units for the busiest CTA), not 2."""
    from kernelrl.space.model import _resources, blocks_per_sm, waves
    small = V(BM=64, BN=64, stages=2, raster=1)
    assert blocks_per_sm(_resources(small)) > 1
    assert waves(small, GemmProblem(2048, 2048, 1024)) == (1024, 8, 1024 / (8 * 132))


def test_the_model_charges_a_persistent_cta_for_every_unit_it_takes():
    from kernelrl.space.model import unit_overhead_us, waves
    units, _, _ = waves(V(), GemmProblem(4096, 4096, 64))  # 1024 tiles of 128 x 128: the busiest of 132 CTAs takes 8
    assert unit_overhead_us(SPACE.resources(V()), units) == 8 * 0.5
    assert unit_overhead_us(SPACE.resources(V(schedule="pingpong")), units) == 8 * 0.25  # half hidden
    assert unit_overhead_us({"tile": (128, 128, 64)}, units) == 0.0  # a family that declares none


def test_the_split_k_fixup_counts_at_most_its_tiles():
    assert SPACE.supports(F32_FIXUP, GemmProblem(4096, 8192, 1024)) is None  # 64 x 64 = 4096 tiles
    why = SPACE.supports(F32_FIXUP, GemmProblem(4160, 8192, 1024))
    assert why is not None and "at most 4096 output tiles" in why


def test_cluster_and_pdl_points_are_legal_but_off_the_default_grid():
    assert SPACE.check(F32_CLUSTER_B) is None and "off the default grid" in SPACE.pruned(F32_CLUSTER_B)
    assert SPACE.check(F32_PINGPONG_SPLIT) is None and "off the default grid" in SPACE.pruned(F32_PINGPONG_SPLIT)
    assert SPACE.pruned(V(split_k=4)) is None
    assert "slower than the workspace split-K" in SPACE.pruned(F32_DSMEM_SPLIT)
    assert F32_CLUSTER_B not in set(SPACE.points("fp32")) and F32_CLUSTER_B in set(SPACE.points("fp32", full=True))
    from kernelrl.space.learned import variants_by_name
    assert variants_by_name("fp32")[F32_CLUSTER_B.name] == F32_CLUSTER_B  # buildable by name (profiles, confirms)
    assert any(v.p["cluster"] == "2x1" for v in SPACE.neighbours(V(BM=128, BN=128, stages=6)))  # refinement reaches


def _kernel_body(source: str) -> str:
    start = source.index("hgemm_wgmma_kernel(")
    return source[start:source.index("\n}\n", start)]


@pytest.mark.parametrize("variant", [F32_PINGPONG_SPLIT, F32_MAIN_PDL], ids=["pdl", "main_pdl"])
def test_the_dependent_launch_is_triggered_after_the_producers_last_loads(variant):
    body = _kernel_body(SPACE.render(variant))
    trigger = body.index('asm volatile("griddepcontrol.launch_dependents;"')
    assert body.count("griddepcontrol.launch_dependents;\"") == 1
    last_load = max(body.rfind("tma_load("), body.rfind("tma_load_multicast("))
    consumers = body.index("// ---- consumers")
    assert last_load < trigger < consumers  # after every load the producer issues, not at the kernel's start
    assert body[body.rindex("\n", 0, trigger):trigger].strip() == "if constexpr (PDL || MAIN_PDL)"  # PDL only


def test_256_row_tiles_are_on_the_grid_where_measured_faster(points):
    """Two cooperative consumers of 128 rows each. On the default grid where the H100 measured them faster than their
    128-row twins (fp32 accumulators, 128 columns and up, unsplit, one CTA); the rest valid by name, off that grid."""
    assert SPACE.check(F32_COOP_256) is None and SPACE.consumers(F32_COOP_256) == 2
    assert SPACE.m_blocks(F32_COOP_256) == 2 and SPACE.accumulator_regs(F32_COOP_256) == 128
    tall = [v for v in points["fp32"] if v.p["BM"] == 256]
    assert tall and all(v.p["BN"] >= 128 and v.p["split_k"] == 1 and v.p["cluster"] == "1x1" for v in tall)
    assert not any(v.p["BM"] == 256 for v in points["fp16"])
    narrow = V("fp32", 256, 64, 5, 8, "kn")
    assert SPACE.check(narrow) is None and "256x64 lost" in SPACE.pruned(narrow)
    assert SPACE.check(F32_COOP_256_CLUSTER) is None and SPACE.pruned(F32_COOP_256_CLUSTER) is not None
    assert "BM=96" in SPACE.check(V("fp32", 96, 128, 4, 8, "kn"))
    assert not any(v.p["BM"] == 192 for v in points["fp32"] + points["fp16"])  # valid, not on the default grid yet
    assert "one m64 block per consumer" in SPACE.check(V("fp32", 256, 64, 4, 1, "kn", split_k=2,
                                                         split_reduce="dsmem"))
    assert "registers" in SPACE.check(V("fp32", 256, 256, 2, 8, "kn"))  # 256 accumulators a thread
