"""The wgmma family's fused epilogues on the GPU (kernelrl_hgemm_ex): SwiGLU over interleaved gate/up columns and a
bias, on every epilogue path (register stores, the split-K reduce kernel, the in-kernel fixup, the DSMEM cluster
sum, TMA stores), through kernelrl/library/fused.py and kernelrl.linear; judged against an fp32 reference by the
bf16 output rule, which a zero answer fails."""

import json
import shutil

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kernelrl
from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.harness.compare import closeness
from kernelrl.harness.tolerance import output_tolerance
from kernelrl.library import fused
from kernelrl.library.export import shape_key
from kernelrl.space import Variant

from tests.library.test_fused import GatedMLP

pytestmark = pytest.mark.gpu
K, INTER = 1024, 384  # the GEMM is M x 2I x K


def V(M, inter=INTER, **kw):
    p = dict(BM=128, BN=128, stages=4, raster=8, b_layout="nk", split_k=1, schedule="pingpong", dtype="bf16")
    p.update(kw)
    return M, inter, Variant.of("wgmma", "fp32", **p)


# One point per epilogue path, each tuned for its own M (the route is by shape); the *_edges points end in partial
# tiles both ways (M = 200 and 456 of 128-row tiles, 2I = 656 of 128-column ones: the TMA store clips at N/2 = 328)
POINTS = {
    "direct": V(256),
    "split_reduce": V(64, BM=64, stages=8, raster=1, split_k=4, schedule="cooperative"),
    "fixup": V(72, BM=64, stages=8, raster=1, split_k=4, schedule="cooperative", split_reduce="fixup"),
    "dsmem": V(80, BM=64, stages=8, raster=1, split_k=4, schedule="cooperative", split_reduce="dsmem"),
    "tma_store": V(512, schedule="cooperative", epilogue="tma"),
    "direct_edges": V(200, inter=328),
    "tma_store_edges": V(456, inter=328, schedule="cooperative", epilogue="tma"),
    # the subtiled TMA store: two staging boxes a consumer taken in turn (256 rows: two m64 blocks a consumer)
    "tma_sub": V(640, schedule="cooperative", epilogue="tma_sub"),
    "tma_sub_edges": V(584, inter=328, BM=256, schedule="cooperative", epilogue="tma_sub"),
}


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("fusedlib")
    (root / "lib").mkdir()
    builder = LocalBuilder()
    results = builder.build_many([BuildRequest(v.source(), name=v.name) for *_, v in POINTS.values()], workers=4)
    shapes, kernels = {}, {}
    for (m, inter, v), built in zip(POINTS.values(), results):
        assert built.ok, built.log[-2000:]
        shutil.copy2(built.lib_path, root / "lib" / f"lib{v.name}.so")
        kernels[v.name] = {**v.to_dict(), "library": f"lib/lib{v.name}.so"}
        shapes[shape_key(m, 2 * inter, K, "fp32", "bf16", "nt")] = {
            "m": m, "n": 2 * inter, "k": K, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": v.name,
            "dispatch": "kernel"}
    (root / "manifest.json").write_text(json.dumps({"shapes": shapes, "kernels": kernels}))
    return kernelrl.Library(root)


TOL = output_tolerance(torch.bfloat16)  # the harness's rule for a bf16 output: atol = rtol = 1e-2


def error(y, ref):
    """The tightest atol = rtol that y meets against the fp32 reference (the harness's closeness). A max error
    over the output's RMS is no rule for SwiGLU: silu(g) * u is heavy-tailed, so the fp32 reference rounded once to
    bf16 already reads 0.024-0.047 of the RMS on these operands (computed on the CPU), over the 2e-2 this file used
    first; the first H100 run failed every SwiGLU case on that metric while the patched MLP, whose down_proj averages
    the errors, passed. Under this rule the once-rounded result reads 0.003, the unfused one 0.009, zeros 0.9."""
    return closeness(y, ref.to(y.device), TOL)[2]


def operands(m, bias, seed=0, inter=INTER):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16, generator=g)
    gate, up = (torch.randn(inter, K, device="cuda", dtype=torch.bfloat16, generator=g) / K ** 0.5 for _ in range(2))
    bg, bu = (torch.randn(inter, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2)) if bias else \
        (None, None)
    return x, gate, up, bg, bu


@pytest.mark.parametrize("path", list(POINTS))
@pytest.mark.parametrize("bias", [False, True])
def test_the_swiglu_epilogue_is_the_gated_product_rounded_once(library, path, bias):
    m, inter, _ = POINTS[path]
    x, gate, up, bg, bu = operands(m, bias, inter=inter)
    f32 = [t.float() if t is not None else None for t in (x, gate, up, bg, bu)]
    ref = F.silu(F.linear(f32[0], f32[1], f32[3])) * F.linear(f32[0], f32[2], f32[4])
    unfused = F.silu(F.linear(x, gate, bg)) * F.linear(x, up, bu)
    before = list(library.fused_calls.get((m, 2 * inter, K, "bf16"), [0, 0]))
    h = fused.gate_up_silu(library, x, fused.interleave(gate, up),
                           fused.interleave(bg, bu) if bias else None)
    torch.cuda.synchronize()
    assert h.shape == (m, inter) and error(h, ref) < TOL and error(torch.zeros_like(h), ref) > TOL
    assert error(h, ref) <= error(unfused, ref) * 1.25  # one rounding is no worse than three
    after = library.fused_calls[(m, 2 * inter, K, "bf16")]
    assert after == [before[0] + 1, before[1]]  # fused in the kernel on every path, TMA stores included


@pytest.mark.parametrize("path", list(POINTS))
def test_the_bias_epilogue_is_f_linear_s_answer(library, path):
    m, inter, _ = POINTS[path]
    x, gate, up, bg, bu = operands(m, True, seed=1, inter=inter)
    w, b = fused.interleave(gate, up), fused.interleave(bg, bu)
    ref = F.linear(x.float(), w.float(), b.float())
    for _ in range(2):  # decided in Python, then from the C++ fast path
        y = library.linear(x, w, b)
        torch.cuda.synchronize()
        assert error(y, ref) < TOL and error(torch.zeros_like(y), ref) > TOL
    assert library.stats()[(m, 2 * inter, K, "bf16", "nt")]["calls"] >= 2


def test_a_patched_gated_mlp_runs_fused_and_keeps_its_answer(library):
    m, _, _ = POINTS["direct"]
    torch.manual_seed(0)
    mlp = GatedMLP(hidden=K, inter=INTER).cuda().to(torch.bfloat16)
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        ref = mlp.float()(x.float())
        mlp.to(torch.bfloat16)
        kernelrl.patch(mlp, library, fuse_mlp=True)
        before = library.fused_calls.get((m, 2 * INTER, K, "bf16"), [0, 0])[0]
        y = mlp(x)
    assert error(y, ref) < TOL and library.fused_calls[(m, 2 * INTER, K, "bf16")][0] == before + 1


def test_a_fused_mlp_replays_in_a_cuda_graph_with_new_inputs(library):
    m, _, _ = POINTS["direct"]
    x, gate, up, _, _ = operands(m, False, seed=2)
    w = fused.interleave(gate, up)
    fused.gate_up_silu(library, x, w)  # warm-up outside capture
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        h = torch.ops.kernelrl.gate_up_silu(x, w, None, library.handle)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    ref = F.silu(F.linear(x.float(), gate.float())) * F.linear(x.float(), up.float())
    assert error(h, ref) < TOL


def test_under_torch_compile_the_fused_op_is_traced(library):
    m, _, _ = POINTS["direct"]
    torch.manual_seed(1)
    mlp = nn.Sequential(GatedMLP(hidden=K, inter=INTER)).cuda().to(torch.bfloat16)
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        ref = mlp(x).float()
        kernelrl.patch(mlp, library, fuse_mlp=True)
        y = torch.compile(mlp, fullgraph=True)(x)
    assert error(y, ref) < TOL
