"""The mma_sync kernel family: its grid and constraints (no GPU, no nvcc), and real sm_90a compiles of a few points
(nvcc only: no spills, the four exports, and a C++ kernelrl_hgemm_supports/workspace that agree with Python)."""

import ctypes
import json
import re

import pytest

from kernelrl.space import SPACES, Variant
from kernelrl.space import mma_sync as mod
from kernelrl.space.base import HOPPER
from kernelrl.workloads.hgemm import GemmProblem

SPACE = SPACES["mma_sync"]
EXPORTS = ("kernelrl_hgemm", "kernelrl_hgemm_workspace", "kernelrl_hgemm_supports", "kernelrl_hgemm_info")


def V(acc="fp32", BM=128, BN=128, BK=32, WM=64, WN=64, stages=3, db=1, sw=8, sk=1, ep="smem"):
    return Variant.of("mma_sync", acc, BM=BM, BN=BN, BK=BK, WM=WM, WN=WN, stages=stages, frag_double_buffer=db,
                      swizzle=sw, split_k=sk, epilogue=ep)


# The points the nvcc tests build: the two the family is judged by, and one split-K point.
F32_MAIN = V("fp32", 128, 128, 32, 64, 64, 3, 1, 8, 1, "smem")
F16_SMALL = V("fp16", 64, 64, 32, 32, 32, 2, 0, 1, 1, "direct")
F32_SPLITK = V("fp32", 128, 64, 64, 64, 32, 4, 1, 8, 4, "direct")


@pytest.fixture(scope="module")
def points():
    return {acc: list(SPACE.points(acc)) for acc in ("fp32", "fp16")}


# -- the grid ------------------------------------------------------------------------------------------------

def test_family_is_registered_by_importing_the_package():
    assert isinstance(SPACE, mod.MmaSyncSpace) and SPACE.family == "mma_sync"


def test_grid_has_a_sane_number_of_valid_points(points):
    n32, n16 = len(points["fp32"]), len(points["fp16"])
    # 18 (BM, BN, WM, WN) combinations give 4 or 8 warps; x 2 BK x 3 stages (shared memory and registers reject
    # none of them on sm_90) x 2 frag_double_buffer x 2 swizzle x, for fp32, 4 (split_k 1 with either epilogue,
    # split_k 2 and 4 with the direct one), for fp16 2 (split_k 1 with either epilogue).
    assert n32 == 18 * 2 * 3 * 2 * 2 * 4 == 1728
    assert n16 == 18 * 2 * 3 * 2 * 2 * 2 == 864
    tiles = {(v.p["BM"], v.p["BN"], v.p["WM"], v.p["WN"]) for v in points["fp32"]}
    assert len(tiles) == 18 and all((bm // wm) * (bn // wn) in (4, 8) for bm, bn, wm, wn in tiles)
    assert all(v.p["split_k"] == 1 for v in points["fp16"])
    assert {v.p["split_k"] for v in points["fp32"]} == {1, 2, 4}
    for knob, values in SPACE.knobs.items():   # every value of every knob is reachable
        assert {v.p[knob] for v in points["fp32"]} == set(values), knob


def test_every_valid_point_respects_the_hardware(points):
    for _acc, vs in points.items():
        for v in vs:
            r = SPACE.resources(v)
            assert r["threads"] in (128, 256)
            assert r["smem_bytes"] <= HOPPER["smem_per_block"]
            assert SPACE.register_estimate(v) <= mod.MAX_REGS


def test_names_are_unique_and_stable(points):
    names = [v.name for acc in points for v in points[acc]]
    assert len(names) == len(set(names))
    assert F32_MAIN.name == "mma_sync_f32_128x128x32_w64x64_s3_db1_sw8_sk1_esmem"
    assert F16_SMALL.name == "mma_sync_f16_64x64x32_w32x32_s2_db0_sw1_sk1_edirect"
    assert F32_MAIN.name == V().name   # same knobs, same name; knob order does not matter
    assert Variant.from_dict(F32_SPLITK.to_dict()) == F32_SPLITK
    assert all(re.fullmatch(r"mma_sync_f(32|16)_\d+x\d+x\d+_w\d+x\d+_s\d_db[01]_sw\d_sk\d_e(direct|smem)", n)
               for n in names)


def test_resources():
    r = SPACE.resources(F32_MAIN)
    assert r == {"threads": 128, "smem_bytes": 3 * (128 * 32 + 32 * 128) * 2, "tile": (128, 128, 32),
                 "split_k": 1, "stages": 3}
    # the smem epilogue stages the fp16 C tile over the pipeline buffers: the larger of the two is allocated
    big_c = V("fp32", 128, 256, 32, 64, 64, 2, 0, 8, 1, "smem")
    assert SPACE.resources(big_c)["smem_bytes"] == 128 * (256 + mod.C_PAD) * 2
    direct = V("fp32", 128, 256, 32, 64, 64, 2, 0, 8, 1, "direct")
    assert SPACE.resources(direct)["smem_bytes"] == 2 * (128 * 32 + 32 * 256) * 2


# -- check(): each invalid category is rejected with its reason ----------------------------------------------

@pytest.mark.parametrize("variant, reason", [
    (V(BM=64, BN=64, WM=64, WN=64), "warps"),                           # 1 warp
    (V(BM=64, BN=128, WM=64, WN=64), "warps"),                          # 2 warps
    (V(BM=256, BN=256, WM=64, WN=64), "warps"),                         # 16 warps
    (V(BM=256, BN=128, WM=32, WN=32), "warps"),                         # 32 warps
    (V("fp16", sk=2, ep="direct"), "fp32 accumulator only"),
    (V("fp32", sk=4, ep="smem"), "duplicate"),
    (V(BM=96), "BM=96 is not one of"),
    (V(stages=5), "stages=5 is not one of"),
    (V(ep="tma"), "epilogue='tma' is not one of"),
    (Variant.of("mma_sync", "fp32", BM=128), "missing"),
    (V(acc="bf16"), "acc="),
])
def test_check_rejects_with_a_reason(variant, reason):
    why = SPACE.check(variant)
    assert why is not None and reason in why, why


def test_check_rejects_too_much_shared_memory(monkeypatch):
    # The largest grid points with 4 or 8 warps fit: 4 stages x (256x64 + 64x128) halves = 196608 B (and 256x256
    # block tiles, which would not fit, need 16 warps of 64x64). A smaller per-block limit shows the rule works.
    fits = V("fp32", 256, 128, 64, 64, 64, 4, 0, 8, 1, "direct")
    assert SPACE.check(fits) is None and SPACE.smem_bytes(fits) == 196608
    monkeypatch.setitem(mod.HOPPER, "smem_per_block", 160 * 1024)
    why = SPACE.check(fits)
    assert why is not None and "shared memory 196608 B exceeds" in why
    assert SPACE.check(V("fp32", 256, 128, 64, 64, 64, 3, 0, 8, 1, "direct")) is None   # 147456 B


def test_check_rejects_register_hungry_points(monkeypatch):
    v = V("fp32", 128, 128, 32, 64, 64, 3, 1, 8, 1, "direct")
    assert SPACE.check(v) is None
    # 128 fp32 accumulators + 2 x 32 fragment registers + overhead: over a smaller budget it must be rejected,
    # while the fp16 accumulator (half the accumulator registers) and single-buffered fragments still fit
    budget = SPACE.register_estimate(v) - 1
    monkeypatch.setattr(mod, "MAX_REGS", budget)
    why = SPACE.check(v)
    assert why is not None and "registers" in why
    assert SPACE.check(V("fp16", 128, 128, 32, 64, 64, 3, 1, 8, 1, "direct")) is None
    assert SPACE.check(V("fp32", 128, 128, 32, 64, 64, 3, 0, 8, 1, "direct")) is None


# -- supports() ----------------------------------------------------------------------------------------------

SHAPES = [(1, 8, 8), (100, 72, 40), (64, 64, 64), (4096, 4096, 4096), (3, 16384, 8), (16384, 64, 16384),
          (100, 72, 44), (100, 76, 40), (7, 9, 16), (5, 8, 12), (2**31 - 1, 8, 8), (2**31 - 257, 8, 8),
          (2**31 - 264, 2**31 - 264, 8), (1 << 24, 1 << 24, 8), (8, 8, 2**31 - 264)]


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_supports_follows_the_rule(m, n, k):
    for v in (F32_MAIN, F16_SMALL, F32_SPLITK):
        why = SPACE.supports(v, GemmProblem(m, n, k, v.acc))
        bm, bn = v.p["BM"], v.p["BN"]
        expected = (k % 8 == 0 and n % 8 == 0 and max(m, n, k) <= 2**31 - 1 - 256
                    and -(-m // bm) * -(-n // bn) <= 2**31 - 1)
        assert (why is None) == expected, (v.name, m, n, k, why)
        if k % 8:
            assert "K" in why
        elif n % 8:
            assert "N" in why


# -- render() ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", [F32_MAIN, F16_SMALL, F32_SPLITK])
def test_rendered_source_has_the_contract_and_the_constants(variant):
    src = variant.source()
    p = variant.p
    for name in EXPORTS:
        assert re.search(rf"\b{name}\(", src), name
    assert 'extern "C"' in src
    assert f"static constexpr int BM = {p['BM']}, BN = {p['BN']}, BK = {p['BK']};" in src
    assert f"static constexpr int WM = {p['WM']}, WN = {p['WN']};" in src
    assert f"static constexpr int STAGES = {p['stages']};" in src
    assert f"static constexpr bool FRAG_DB = {'true' if p['frag_double_buffer'] else 'false'};" in src
    assert f"static constexpr int SWIZZLE = {p['swizzle']};" in src
    assert f"static constexpr int SPLIT_K = {p['split_k']};" in src
    assert f"static constexpr bool EPI_SMEM = {'true' if p['epilogue'] == 'smem' else 'false'};" in src
    assert f"static constexpr bool ACC_F16 = {'true' if variant.acc == 'fp16' else 'false'};" in src
    assert f'return "{SPACE.info_json(variant)}";' in src
    assert variant.name in src
    mma = "f16.f16.f16.f16" if variant.acc == "fp16" else "f32.f16.f16.f32"
    assert f"mma.sync.aligned.m16n8k16.row.col.{mma}" in src
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in src and "cp.async.cg.shared.global" in src
    assert "#include" in src and not re.search(
        r"#include\s*[<\"](?!cooperative_groups\.h|cuda_fp16\.h|cuda_runtime\.h|stddef\.h|stdint\.h)", src)


def test_render_refuses_an_invalid_point():
    with pytest.raises(ValueError, match="not a valid point"):
        SPACE.render(V("fp16", sk=2, ep="direct"))


def test_sources_differ_between_points(points):
    sample = points["fp32"][::97] + points["fp16"][::97]
    assert len({v.source() for v in sample}) == len(sample)


# -- real compiles (sm_90a, no GPU needed) -------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.build.toolchain import Toolchain
    toolchain = Toolchain.discover(arch="sm_90a", with_cutlass=False)
    builder = LocalBuilder(toolchain, cache_dir=tmp_path_factory.mktemp("mma-sync-build"))
    variants = [F32_MAIN, F16_SMALL, F32_SPLITK]
    results = builder.build_many([BuildRequest(v.source(), name=v.name) for v in variants], workers=2)
    return dict(zip([v.name for v in variants], zip(variants, results)))


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", [F32_MAIN, F16_SMALL, F32_SPLITK], ids=lambda v: v.name)
def test_compiles_for_sm90a_without_spills(built, variant):
    _, result = built[variant.name]
    assert result.ok, result.error or result.log[-3000:]
    kernels = {name: info for name, info in result.ptxas.items() if info.get("arch", "sm_90a") == "sm_90a"}
    gemm = [info for name, info in kernels.items() if "hgemm_mma_kernel" in name]
    assert len(gemm) == 1
    assert any("splitk_reduce_kernel" in name for name in kernels) == (variant.p["split_k"] > 1)
    for name, info in kernels.items():
        assert info["spill_stores"] == 0 and info["spill_loads"] == 0 and info["stack_bytes"] == 0, (name, info)
        assert info["registers"] <= 255
    assert "0 bytes spill stores, 0 bytes spill loads" in result.log


@pytest.mark.nvcc
@pytest.mark.parametrize("variant", [F32_MAIN, F16_SMALL, F32_SPLITK], ids=lambda v: v.name)
def test_library_exports_agree_with_python(built, variant):
    _, result = built[variant.name]
    assert result.ok
    lib = ctypes.CDLL(result.lib_path)
    for name in EXPORTS:
        assert hasattr(lib, name), name
    lib.kernelrl_hgemm_info.restype = ctypes.c_char_p
    info = json.loads(lib.kernelrl_hgemm_info().decode())
    assert info == {"acc": variant.acc, "family": "mma_sync", "params": variant.p, "name": variant.name}
    supports, workspace = lib.kernelrl_hgemm_supports, lib.kernelrl_hgemm_workspace
    supports.argtypes = workspace.argtypes = [ctypes.c_int] * 3
    supports.restype, workspace.restype = ctypes.c_int, ctypes.c_size_t
    for m, n, k in SHAPES:
        expected = SPACE.supports(variant, GemmProblem(m, n, k, variant.acc)) is None
        assert bool(supports(m, n, k)) == expected, (m, n, k)
        sk = variant.p["split_k"]
        assert workspace(m, n, k) == (sk * m * n * 4 if sk > 1 and expected else 0), (m, n, k)
    for bad in [(0, 8, 8), (8, 0, 8), (8, 8, 0), (-1, 8, 8)]:
        assert supports(*bad) == 0
