"""The cutlass_sm90 family: grid, constraint rules, names, resources and rendered source (no GPU, no nvcc), plus one
opt-in real compile (KERNELRL_CUTLASS_TESTS=1: a CUTLASS instantiation costs minutes on a 2-core machine)."""

import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from kernelrl.space.base import SPACES, Variant
from kernelrl.space.cutlass_sm90 import SMEM_CAPACITY, CutlassSm90Space
from kernelrl.workloads.hgemm import GemmProblem

SPACE = SPACES["cutlass_sm90"]
DEFAULTS = dict(tile="128x128x64", cluster="1x1", schedule="coop", tile_scheduler="persistent", splits=1,
                stages="auto", raster="along_m", swizzle=1)


def point(acc="fp32", **kw) -> Variant:
    return Variant.of("cutlass_sm90", acc, **{**DEFAULTS, **kw})


# -- the grid ----------------------------------------------------------------------------------------------------

def test_registered_under_its_family_name():
    assert isinstance(SPACE, CutlassSm90Space)
    assert SPACE.family == "cutlass_sm90"


@pytest.mark.parametrize("acc, grid, legal", [("fp32", 44, 912), ("fp16", 50, 984)])
def test_grid_sizes(acc, grid, legal):
    # The default grid is a few dozen structures per accumulator; the legal space adds the raster/swizzle
    # refinements of every persistent point (8 each) and the pruned structures.
    assert len(list(SPACE.points(acc))) == grid
    assert len(list(SPACE.points(acc, full=True))) == legal


def test_grid_composition_fp32():
    from collections import Counter
    counts = Counter((v.p["schedule"], v.p["tile_scheduler"]) for v in SPACE.points("fp32"))
    assert counts == {("ws", "persistent"): 8, ("pingpong", "persistent"): 12, ("coop", "persistent"): 16,
                      ("coop", "streamk"): 8}


def test_names_are_unique_and_procedural():
    names = [v.name for acc in ("fp32", "fp16") for v in SPACE.points(acc, full=True)]
    assert len(names) == len(set(names))
    for name in names:
        assert re.fullmatch(r"cutlass_sm90_f(32|16)_\d+x\d+x64_c\dx\d_(ws|(coop|pingpong)_(persistent|streamk)"
                            r"(_sk(2|4|8|16))?_ras_[mn]_sw[1248])", name), name


def test_name_of_the_brief_example():
    v = point(tile="128x256x64", cluster="2x1", swizzle=4)
    assert v.name == "cutlass_sm90_f32_128x256x64_c2x1_coop_persistent_ras_m_sw4"
    assert point("fp16", schedule="ws", cluster="2x1").name == "cutlass_sm90_f16_128x128x64_c2x1_ws"
    assert point(stages=3).name == "cutlass_sm90_f32_128x128x64_c1x1_s3_coop_persistent_ras_m_sw1"


def test_every_point_is_legal_and_fits():
    for acc in ("fp32", "fp16"):
        for v in SPACE.points(acc, full=True):
            assert SPACE.check(v) is None
            r = SPACE.resources(v)
            assert r["stages"] >= 2 and r["smem_bytes"] <= SMEM_CAPACITY and r["acc_regs"] <= 128


def test_variants_survive_a_json_round_trip():
    for v in list(SPACE.points("fp16"))[:10]:
        back = Variant.from_dict(json.loads(json.dumps(v.to_dict())))
        assert back == v and SPACE.check(back) is None


# -- check(): the rules and their reasons ---------------------------------------------------------------------------

@pytest.mark.parametrize("kw, acc, reason", [
    (dict(tile="64x128x64"), "fp32", "BM % 128"),                                  # cooperative needs 2x64 rows
    (dict(tile="64x256x64"), "fp16", "BM % 128"),
    (dict(schedule="pingpong", tile_scheduler="streamk"), "fp32", "stream-K runs only on the cooperative"),
    (dict(schedule="ws", tile_scheduler="streamk"), "fp32", "stream-K runs only on the cooperative"),
    (dict(schedule="pingpong", tile="128x256x64"), "fp32", "256 accumulator registers"),
    (dict(schedule="ws", tile="256x128x64"), "fp32", "256 accumulator registers"),
    (dict(schedule="ws", raster="along_n"), "fp32", "ignores raster/swizzle"),
    (dict(schedule="ws", swizzle=4), "fp16", "ignores raster/swizzle"),
    (dict(stages=1), "fp32", "at least 2"),
    (dict(tile="128x256x64", stages=5), "fp32", "exceeds 232448"),
    (dict(tile="256x128x64", stages="max"), "fp32", "'auto' or an integer"),
    (dict(tile="96x128x64"), "fp32", "is not one of"),
    (dict(cluster="4x1"), "fp32", "is not one of"),
    (dict(schedule="auto"), "fp32", "is not one of"),
    (dict(swizzle=16), "fp32", "is not one of"),
])
def test_check_rejects_with_a_reason(kw, acc, reason):
    why = SPACE.check(point(acc, **kw))
    assert why is not None and reason in why, why


def test_check_rejects_foreign_and_incomplete_points():
    assert "family" in SPACE.check(Variant.of("mma_sync", "fp32", **DEFAULTS))
    assert "acc" in SPACE.check(point("bf16"))
    partial = Variant.of("cutlass_sm90", "fp32", **{k: v for k, v in DEFAULTS.items() if k != "raster"})
    assert "missing ['raster']" in SPACE.check(partial)


def test_fp16_accumulators_admit_bigger_single_warpgroup_tiles():
    # A 128x256 fp16 tile is 128 registers per thread on one warpgroup: legal for pingpong (not for fp32).
    assert SPACE.check(point("fp16", schedule="pingpong", tile="128x256x64")) is None
    assert SPACE.check(point("fp32", schedule="pingpong", tile="128x256x64")) is not None


def test_explicit_stage_counts_are_legal_when_they_fit():
    assert SPACE.check(point(tile="128x256x64", stages=4)) is None
    assert SPACE.resources(point(tile="128x256x64", stages=3))["stages"] == 3
    assert "explicit stage" in SPACE.pruned(point(stages=4))


def test_pruned_points_are_legal_but_off_the_grid():
    grid = set(SPACE.points("fp32"))
    for kw, why in [(dict(raster="along_n"), "second round"),
                    (dict(schedule="ws", cluster="2x2"), "ws"),
                    (dict(schedule="ws", tile="64x256x64", cluster="1x2"), "ws"),
                    (dict(tile_scheduler="streamk", cluster="1x2"), "stream-K"),
                    (dict(schedule="pingpong", cluster="2x2"), "4-CTA")]:
        v = point(**kw)
        assert SPACE.check(v) is None
        assert why in SPACE.pruned(v)
        assert v not in grid
    assert SPACE.pruned(point("fp16", schedule="ws", tile="256x128x64")) is not None  # legal in fp16, pruned
    assert SPACE.pruned(point(schedule="ws", tile="64x256x64")) is None


def test_siblings_enumerate_raster_and_swizzle():
    coop = point(tile="128x256x64", cluster="2x1")
    sibs = SPACE.siblings(coop)
    assert len(sibs) == 8 and coop in sibs
    assert {(s.p["raster"], s.p["swizzle"]) for s in sibs} == {(r, s) for r in ("along_m", "along_n")
                                                              for s in (1, 2, 4, 8)}
    assert SPACE.siblings(point(schedule="ws")) == [point(schedule="ws")]


# -- supports(), resources() -------------------------------------------------------------------------------------

@pytest.mark.parametrize("m, n, k, ok", [(4096, 4096, 4096, True), (64, 64, 64, True), (8, 8, 8, True),
                                         (4100, 4096, 4096, False), (4096, 4100, 4096, False),
                                         (4096, 4096, 4100, False), (1, 4096, 4096, False)])
def test_supports_needs_multiples_of_8(m, n, k, ok):
    for acc in ("fp32", "fp16"):
        for v in list(SPACE.points(acc))[:5]:
            why = SPACE.supports(v, GemmProblem(m, n, k, acc))
            assert (why is None) == ok, why
            if not ok:
                assert "% 8 == 0" in why


def test_resources_follow_cutlass_stage_rules():
    r = SPACE.resources(point(tile="128x256x64", cluster="2x1"))
    assert r["threads"] == 384 and r["tile"] == (128, 256, 64) and r["cluster"] == (2, 1) and r["split_k"] == 1
    assert r["stages"] == 4  # (227 KB - 16 KB of D staging) // 48 KB per stage
    assert SPACE.resources(point(schedule="ws"))["threads"] == 256
    assert SPACE.resources(point(schedule="ws"))["stages"] == 7      # no epilogue carveout: 227 KB // 32 KB
    assert SPACE.resources(point(schedule="pingpong", tile="64x128x64"))["stages"] == 9
    assert SPACE.resources(point(tile="256x128x64"))["acc_regs"] == 128
    assert SPACE.resources(point("fp16", tile="256x128x64"))["acc_regs"] == 64


# -- render() ----------------------------------------------------------------------------------------------------

EXPORTS = ("int kernelrl_hgemm(", "size_t kernelrl_hgemm_workspace(", "int kernelrl_hgemm_supports(",
           "const char* kernelrl_hgemm_info(void)", 'extern "C"')


@pytest.mark.parametrize("kw, acc, types", [
    (dict(tile="128x256x64", cluster="2x1", swizzle=4), "fp32",
     ["cutlass::gemm::KernelTmaWarpSpecializedCooperative", "cutlass::epilogue::TmaWarpSpecializedCooperative",
      "cutlass::gemm::PersistentScheduler", "cute::Int<128>, cute::Int<256>, cute::Int<64>",
      "cute::Int<2>, cute::Int<1>, cute::_1", "using ElementAccumulator = float;", "kSwizzle = 4;",
      "kRasterAlongN = false;", "kStages = 0;"]),
    (dict(schedule="pingpong", tile="64x128x64", raster="along_n"), "fp32",
     ["cutlass::gemm::KernelTmaWarpSpecializedPingpong", "cutlass::epilogue::TmaWarpSpecialized;",
      "kRasterAlongN = true;"]),
    (dict(schedule="ws", cluster="2x1"), "fp16",
     ["cutlass::gemm::KernelTmaWarpSpecialized;", "cutlass::epilogue::NoSmemWarpSpecialized",
      "using ElementAccumulator = cutlass::half_t;"]),
    (dict(tile_scheduler="streamk", stages=5), "fp32", ["cutlass::gemm::StreamKScheduler", "kStages = 5;"]),
])
def test_render_has_the_contract_and_the_chosen_types(kw, acc, types):
    v = point(acc, **kw)
    src = SPACE.render(v)
    assert src == v.source()
    for needle in EXPORTS + tuple(types):
        assert needle in src, needle
    for needle in ("GemmUniversalAdapter<GemmKernel>", "cutlass::gemm::kernel::GemmUniversal<",
                   "cutlass::gemm::collective::CollectiveBuilder<", "cutlass::epilogue::collective::CollectiveBuilder<",
                   "cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp", "using LayoutB = cutlass::layout::RowMajor;",
                   "Gemm::can_implement(args)", "Gemm::get_workspace_size(args)", "gemm.run(args,"):
        assert needle in src, needle
    # the info string is the family's JSON, and it parses back to this variant
    info = re.search(r'kernelrl_hgemm_info\(void\) \{ return "(.*)"; \}', src).group(1)
    data = json.loads(info.replace('\\"', '"'))
    assert data["acc"] == acc and data["family"] == "cutlass_sm90" and data["name"] == v.name
    assert Variant.from_dict(data) == v
    # no stray host synchronisation or allocation in the call path
    for banned in ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaMalloc", "cudaFree", "new "):
        assert banned not in src, banned


def test_render_refuses_an_illegal_point():
    with pytest.raises(ValueError, match="BM % 128"):
        SPACE.render(point(tile="64x128x64"))


def test_every_grid_point_renders():
    for acc in ("fp32", "fp16"):
        for v in SPACE.points(acc):
            assert "kernelrl_hgemm(" in v.source()


# -- one real compile (opt-in) --------------------------------------------------------------------------------------

def _sass_tools() -> tuple[str, dict] | None:
    """cuobjdump and the nvdisasm it runs for --dump-sass (the CUDA toolkit's, or the PyPI wheels
    nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm); None when either is missing."""
    candidates = [shutil.which("cuobjdump")] + [
        path for base in sys.path for path in glob.glob(os.path.join(base, "nvidia", "cu1*", "bin", "cuobjdump"))]
    for tool in filter(None, candidates):
        folder = os.path.dirname(tool)
        env = {**os.environ, "PATH": folder + os.pathsep + os.environ.get("PATH", "")}
        if shutil.which("nvdisasm", path=env["PATH"]) and os.access(tool, os.X_OK):
            return tool, env
    return None


@pytest.mark.nvcc
@pytest.mark.skipif(os.environ.get("KERNELRL_CUTLASS_TESTS") != "1",
                    reason="set KERNELRL_CUTLASS_TESTS=1: one CUTLASS compile takes minutes")
def test_one_variant_compiles_to_wgmma(tmp_path):
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain, cutlass_include_dirs

    if not cutlass_include_dirs():
        pytest.skip("CUTLASS headers not installed: pip install nvidia-cutlass")
    v = point(schedule="pingpong", tile="64x128x64")
    builder = LocalBuilder(Toolchain.discover(arch="sm_90a"), timeout_s=1800, cache_dir=tmp_path / "build")
    result = builder.build(BuildRequest(source=v.source(), name=v.name))
    assert result.ok, result.error + "\n" + result.log[-3000:]
    assert result.resources.get("spill_bytes", 0) == 0, result.ptxas

    lib = ctypes.CDLL(result.lib_path)  # cudart is linked statically: loads without a GPU
    for symbol in ("kernelrl_hgemm", "kernelrl_hgemm_workspace", "kernelrl_hgemm_supports", "kernelrl_hgemm_info"):
        assert hasattr(lib, symbol), symbol
    lib.kernelrl_hgemm_info.restype = ctypes.c_char_p
    assert json.loads(lib.kernelrl_hgemm_info().decode())["name"] == v.name
    # The Python estimates against what the compiler instantiated.
    r = SPACE.resources(v)
    assert lib.kernelrl_cutlass_stages() == r["stages"]
    assert lib.kernelrl_cutlass_threads() == r["threads"]
    assert lib.kernelrl_cutlass_smem_bytes() == r["smem_bytes"]
    assert lib.kernelrl_cutlass_smem_bytes() <= SMEM_CAPACITY
    # kernelrl_hgemm_supports (arithmetic + Gemm::can_implement) needs no GPU: it must agree with supports().
    for m, n, k in [(4096, 4096, 4096), (8, 8, 8), (64, 16384, 8), (4100, 4096, 4096), (4096, 4100, 4096),
                    (4096, 4096, 4100), (1, 8, 8)]:
        python_ok = SPACE.supports(v, GemmProblem(m, n, k, v.acc)) is None
        assert bool(lib.kernelrl_hgemm_supports(m, n, k)) == python_ok, (m, n, k)
    assert lib.kernelrl_hgemm_supports(0, 8, 8) == 0

    tools = _sass_tools()
    if tools is None:
        return  # no cuobjdump/nvdisasm here: the SASS check is skipped
    tool, env = tools
    dump = subprocess.run([tool, "--dump-sass", result.lib_path], capture_output=True, text=True, timeout=600,
                          env=env)
    assert dump.returncode == 0, dump.stderr
    assert "HGMMA" in dump.stdout  # wgmma made it into the sm_90a machine code


def test_neighbours_add_the_raster_and_swizzle_siblings_the_grid_prunes():
    from kernelrl.space import SPACES
    space = SPACES["cutlass_sm90"]
    name = "cutlass_sm90_f32_128x256x64_c1x1_coop_persistent_ras_m_sw1"
    winner = next(v for v in space.points("fp32") if v.name == name)
    names = {v.name for v in space.neighbours(winner)}
    assert "cutlass_sm90_f32_128x256x64_c1x1_coop_persistent_ras_n_sw8" in names  # a sibling, off the default grid
    assert "cutlass_sm90_f32_128x256x64_c2x1_coop_persistent_ras_m_sw1" in names  # one cluster step
    assert winner.name not in names and all(space.check(v) is None for v in space.neighbours(winner))


# -- explicit split-K (stream-K scheduler) --------------------------------------------------------------------------
def test_explicit_splits_need_the_stream_k_scheduler():
    assert "stream-K scheduler only" in SPACE.check(point(splits=8))
    assert SPACE.check(point(tile_scheduler="streamk", splits=8)) is None


def test_explicit_splits_are_named_and_set_in_the_arguments():
    v = point(tile="128x64x64", tile_scheduler="streamk", splits=8)
    assert v.name == "cutlass_sm90_f32_128x64x64_c1x1_coop_streamk_sk8_ras_m_sw1"
    assert "args.scheduler.splits = 8;" in v.source()
    assert "scheduler.splits" not in point(tile_scheduler="streamk").source()


def test_points_without_splits_render_as_before_the_knob():
    """Sources of splits=1 points carry no trace of the knob, so earlier builds and measurements stay valid."""
    info = re.search(r'kernelrl_hgemm_info\(void\) \{ return "(.*)"; \}', point().source()).group(1)
    assert "splits" not in info.replace('\\"', '"')


def test_explicit_splits_are_legal_but_off_the_default_grid():
    v = point(tile="128x64x64", tile_scheduler="streamk", splits=8)
    assert SPACE.check(v) is None and "off the default grid" in SPACE.pruned(v)
    assert all(p.p["splits"] == 1 for p in SPACE.points("fp32"))


def test_a_stored_point_from_before_the_splits_knob_loads_as_splits_1():
    stored = {"family": "cutlass_sm90", "acc": "fp32", "params": {k: v for k, v in DEFAULTS.items() if k != "splits"}}
    assert Variant.from_dict(stored) == point()


def test_the_model_counts_explicit_splits_as_more_ctas_in_one_launch():
    from kernelrl.space.model import predict_us, waves
    deep = GemmProblem(256, 512, 16384)
    plain, split = point(tile="128x64x64", tile_scheduler="streamk"), \
        point(tile="128x64x64", tile_scheduler="streamk", splits=8)
    assert waves(split, deep)[0] == 8 * waves(plain, deep)[0]
    assert predict_us(split, deep) < predict_us(plain, deep)
