"""kernelrl.linear and torch.ops.kernelrl.linear on the GPU with a real nt kernel (a wgmma point that takes the
weight as N x K): the tuned shape runs the kernel, in eager mode, replayed in a CUDA graph with new inputs and
under torch.compile; a patched model's answer stays F.linear's; untuned calls fall back and are counted; a shape
sent to cuBLASLt (TN, bf16) with a stored algorithm computes F.linear's answer."""

import json
import shutil

import pytest
import torch
from torch import nn

import kernelrl
from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.library.export import shape_key
from kernelrl.space import Variant

pytestmark = pytest.mark.gpu
M, N, K = 256, 512, 1024
POINT = Variant.of("wgmma", "fp32", BM=128, BN=128, stages=4, raster=8, b_layout="nk", split_k=1,
                   schedule="pingpong")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib")
    built = LocalBuilder().build(BuildRequest(POINT.source(), name=POINT.name))
    assert built.ok, built.log[-2000:]
    (root / "lib").mkdir()
    shutil.copy2(built.lib_path, root / "lib" / f"lib{POINT.name}.so")
    entry = {"m": M, "n": N, "k": K, "acc": "fp32", "dtype": "fp16", "layout": "nt", "kernel": POINT.name,
             "dispatch": "kernel"}
    manifest = {"shapes": {shape_key(M, N, K, "fp32", "fp16", "nt"): entry},
                "kernels": {POINT.name: {**POINT.to_dict(), "library": f"lib/lib{POINT.name}.so"}}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return kernelrl.load_library(root)


def close(y, ref, tol=4e-3):
    return float(((y.float() - ref.float()).abs() / (ref.float().abs() + ref.float().pow(2).mean().sqrt())).max()) < tol


def test_the_tuned_shape_runs_the_kernel_with_batch_dims_and_bias(library):
    x = torch.randn(2, M // 2, K, device="cuda", dtype=torch.float16)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, device="cuda", dtype=torch.float16)
    first, again = kernelrl.linear(x, w, b), kernelrl.linear(x, w, b)  # decided in Python, then from C++
    ref = torch.nn.functional.linear(x, w, b)
    assert first.shape == again.shape == (2, M // 2, N) and close(first, ref) and close(again, ref)
    assert library.stats()[(M, N, K, "fp16", "nt")] == {"kernel": POINT.name, "calls": 2, "fallbacks": 0}


def test_an_untuned_shape_falls_back_on_every_call_and_each_is_counted(library):
    x, w = (torch.randn(8, 96, device="cuda", dtype=torch.float16),
            torch.randn(40, 96, device="cuda", dtype=torch.float16))
    for _ in range(3):
        assert torch.equal(kernelrl.linear(x, w), torch.nn.functional.linear(x, w))
    assert library.stats()[(8, 40, 96, "fp16", "nt")] == {"kernel": None, "calls": 0, "fallbacks": 3}


def test_a_patched_model_in_eager_inference(library):
    model = nn.Sequential(nn.Linear(K, N), nn.ReLU(), nn.Linear(N, 64)).cuda().half()
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        ref = model(x)
        kernelrl.patch(model, library)
        before = library.stats()[(M, N, K, "fp16", "nt")]["calls"]
        assert close(model(x), ref) and close(model(x), ref)
    assert library.stats()[(M, N, K, "fp16", "nt")]["calls"] == before + 2
    kernelrl.unpatch(model)


def test_a_cuda_graph_replay_recomputes_from_new_inputs(library):
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    torch.ops.kernelrl.linear(x, w)  # warm-up outside capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = torch.ops.kernelrl.linear(x, w)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert close(y, torch.nn.functional.linear(x, w))


def test_a_patched_model_under_torch_compile(library):
    model = nn.Sequential(nn.Linear(K, N), nn.ReLU(), nn.Linear(N, 64)).cuda().half()
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    ref = model(x)
    kernelrl.patch(model, library)
    compiled = torch.compile(model, fullgraph=True)
    assert close(compiled(x), ref)
    stats = library.stats()
    assert stats[(M, N, K, "fp16", "nt")]["calls"] >= 1 and stats[(M, 64, N, "fp16", "nt")]["fallbacks"] >= 1


@pytest.fixture(scope="module")
def lt_library(tmp_path_factory):
    """A library that sends one bf16 nt shape to cuBLASLt (TN) with a stored algorithm: the heuristic's first."""
    import ctypes

    from kernelrl.baselines import native_lib
    root = tmp_path_factory.mktemp("ltlib")
    (root / "lib").mkdir()
    shutil.copy2(native_lib.build(), root / "lib" / "libkr_blas.so")
    lib = native_lib.load(str(root / "lib" / "libkr_blas.so"))
    ctx = lib.kr_blas_create()
    plan = lib.kr_lt_plan_create(ctx, native_lib.LAYOUTS["tn"], native_lib.CODES[("bf16", "fp32")], 64, 384, 256)
    algos, needed, found = (ctypes.create_string_buffer(native_lib.ALGO_BYTES), (ctypes.c_size_t * 1)(),
                            ctypes.c_int())
    assert plan and not lib.kr_lt_heuristics(plan, native_lib.LT_WORKSPACE_BYTES, 1, algos, needed,
                                             ctypes.byref(found)) and found.value == 1
    entry = {"m": 64, "n": 384, "k": 256, "acc": "fp32", "dtype": "bf16", "layout": "nt", "kernel": None,
             "dispatch": "fallback", "fallback": {"method": "cublaslt_auto_tn", "algo": algos.raw.hex()}}
    manifest = {"shapes": {shape_key(64, 384, 256, "fp32", "bf16", "nt"): entry}, "kernels": {},
                "native": "lib/libkr_blas.so"}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return kernelrl.Library(root)


def test_an_nt_shape_sent_to_cublaslt_computes_f_linear_s_answer_from_python_and_cpp(lt_library):
    x = torch.randn(4, 16, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(384, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(384, device="cuda", dtype=torch.bfloat16)
    ref = torch.nn.functional.linear(x, w, b)
    for _ in range(2):  # decided in Python, then from the C++ table
        y = lt_library.linear(x, w, b)
        assert y.shape == ref.shape and close(y, ref, 1e-2)  # bf16: an output rounding apart at most
    assert lt_library.stats()[(64, 384, 256, "bf16", "nt")] == {"kernel": "cublaslt_auto_tn", "calls": 0,
                                                                 "fallbacks": 2}
