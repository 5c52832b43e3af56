"""The tuned library's runtime on the GPU: kernelrl.hgemm and torch.ops.kernelrl.hgemm in eager mode, inside a CUDA
graph and under torch.compile, with the shape's own kernel, a supporting kernel off the grid, and the fallback."""

import json
import shutil
from pathlib import Path

import pytest
import torch

import kernelrl
from kernelrl.build.builder import BuildRequest, LocalBuilder

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib")
    built = LocalBuilder().build(BuildRequest.from_file(ROOT / "examples" / "hgemm_wmma.cu", name="wmma"))
    assert built.ok, built.log[-2000:]
    (root / "lib").mkdir()
    shutil.copy2(built.lib_path, root / "lib" / "libwmma.so")
    manifest = {"shapes": {"256x512x128:fp32": {"m": 256, "n": 512, "k": 128, "acc": "fp32", "kernel": "wmma",
                                                "dispatch": "kernel"}},
                "kernels": {"wmma": {"library": "lib/libwmma.so", "family": "wmma_reference"}}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return kernelrl.load_library(root)


def inputs(m, n, k):
    return torch.randn(m, k, device="cuda").half(), torch.randn(k, n, device="cuda").half()


def close(c, a, b):
    ref = torch.matmul(a.float(), b.float())
    return float(((c.float() - ref).abs() / (ref.abs() + ref.pow(2).mean().sqrt())).max()) < 4e-3


def test_eager_uses_the_tuned_kernel(library):
    a, b = inputs(256, 512, 128)
    assert library.choose(256, 512, 128) == "wmma"
    assert close(kernelrl.hgemm(a, b), a, b)


def test_off_grid_shape_uses_a_kernel_that_supports_it(library):
    a, b = inputs(100, 72, 40)
    assert library.choose(100, 72, 40) == "wmma"
    assert close(torch.ops.kernelrl.hgemm(a, b), a, b)


def test_cuda_graph_replay_recomputes_from_new_inputs(library):
    a, b = inputs(256, 512, 128)
    torch.ops.kernelrl.hgemm(a, b)  # warm-up outside capture (library load, workspace)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.ops.kernelrl.hgemm(a, b)
    a2, b2 = inputs(256, 512, 128)
    a.copy_(a2)
    b.copy_(b2)
    graph.replay()
    torch.cuda.synchronize()
    assert close(out, a2, b2)


def test_torch_compile(library):
    fn = torch.compile(lambda x, y: torch.ops.kernelrl.hgemm(x, y) * 2.0, fullgraph=True)
    a, b = inputs(256, 512, 128)
    assert close(fn(a, b) / 2.0, a, b)


def test_misaligned_input_falls_back_correctly(library):
    big = torch.randn(256 * 128 + 1, device="cuda").half()
    a = big[1:].view(256, 128)  # 2-byte offset: no 16-byte loads possible
    b = torch.randn(128, 512, device="cuda").half()
    assert close(kernelrl.hgemm(a, b), a, b)


def test_repeated_calls_take_the_fast_path_and_stay_correct(library):
    a, b = inputs(256, 512, 128)
    kernelrl.hgemm(a, b)
    assert (256, 512, 128, "fp32", a.get_device()) in library._fast
    a2, b2 = inputs(256, 512, 128)
    out = torch.empty(256, 512, device="cuda").half()
    assert kernelrl.hgemm(a2, b2, out) is out and close(out, a2, b2)


def test_bad_input_after_a_fast_path_call_still_raises(library):
    a, b = inputs(256, 512, 128)
    kernelrl.hgemm(a, b)
    with pytest.raises(kernelrl.LibraryError, match="float16"):
        kernelrl.hgemm(a.float(), b)
    with pytest.raises(kernelrl.LibraryError, match="out must be"):
        kernelrl.hgemm(a, b, torch.empty(256, 512, device="cuda"))


def test_cublaslt_fallback_runs_the_stored_algorithm(tmp_path):
    """A shape whose manifest says 'cuBLASLt with this algorithm': the runtime calls it through the library's shim
    (the algorithm here is cuBLASLt's first heuristic answer; the tuner stores its autotuned one)."""
    import ctypes

    from kernelrl.baselines import native_lib
    from kernelrl.run.methods import LT_WORKSPACE_BYTES
    shim = native_lib.build()
    lib = native_lib.load(shim)
    ctx = lib.kr_blas_create()
    plan = lib.kr_lt_plan_create(ctx, native_lib.LAYOUTS["nn"], native_lib.ACCS["fp32"], 256, 512, 128)
    algos = ctypes.create_string_buffer(native_lib.ALGO_BYTES)
    needed, found = (ctypes.c_size_t * 1)(), ctypes.c_int()
    assert lib.kr_lt_heuristics(plan, LT_WORKSPACE_BYTES, 1, algos, needed, ctypes.byref(found)) == 0
    (tmp_path / "lib").mkdir()
    shutil.copy2(shim, tmp_path / "lib" / "libkr_blas.so")
    (tmp_path / "manifest.json").write_text(json.dumps({"native": "lib/libkr_blas.so", "kernels": {}, "shapes": {
        "256x512x128:fp32": {"m": 256, "n": 512, "k": 128, "acc": "fp32", "kernel": None, "dispatch": "fallback",
                             "fallback": {"method": "cublaslt_auto_nn", "algo": algos.raw.hex()}}}}))
    lt_library = kernelrl.Library(tmp_path)
    a, b = inputs(256, 512, 128)
    assert close(lt_library.hgemm(a, b), a, b)
    assert lt_library._fast[(256, 512, 128, "fp32", a.get_device())][3] == "cublaslt_auto_nn"
    a2, b2 = inputs(256, 512, 128)
    assert close(lt_library.hgemm(a2, b2), a2, b2)  # the fast path


def test_the_cpp_fast_path_serves_repeated_calls_and_stays_correct(library):
    from kernelrl.library import native
    if native.load() is None:
        pytest.skip(f"no C++ fast path here: {native.failure()}")
    a, b = inputs(256, 512, 128)
    kernelrl.hgemm(a, b)
    assert library._plans is not None and len(library._plans) >= 1
    a2, b2 = inputs(256, 512, 128)
    c = library._plans.run(a2, b2)  # the C++ path alone, not the Python one behind it
    assert c is not None and close(c, a2, b2)


def test_the_cpp_fast_path_replays_in_a_cuda_graph(library):
    a, b = inputs(256, 512, 128)
    kernelrl.hgemm(a, b)  # registers the plan before capture
    out = torch.empty(256, 512, device="cuda").half()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernelrl.hgemm(a, b, out)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    assert close(out, a, b)


def test_the_cpp_fast_path_runs_the_cublaslt_fallback(tmp_path):
    from kernelrl.library import native
    if native.load() is None:
        pytest.skip(f"no C++ fast path here: {native.failure()}")
    test_cublaslt_fallback_runs_the_stored_algorithm(tmp_path)
    lt_library = kernelrl.Library(tmp_path)
    a, b = inputs(256, 512, 128)
    lt_library.hgemm(a, b)
    a2, b2 = inputs(256, 512, 128)
    c = lt_library._plans.run(a2, b2)
    assert c is not None and close(c, a2, b2)


def test_a_shape_left_to_torch_runs_mm_from_the_cpp_fast_path(tmp_path):
    from kernelrl.library import native
    if native.load() is None:
        pytest.skip(f"no C++ fast path here: {native.failure()}")
    (tmp_path / "manifest.json").write_text(json.dumps({"kernels": {}, "shapes": {"128x256x64:fp32": {
        "m": 128, "n": 256, "k": 64, "acc": "fp32", "kernel": None, "dispatch": "fallback"}}}))
    torch_library = kernelrl.Library(tmp_path)
    a, b = inputs(128, 256, 64)
    assert close(torch_library.hgemm(a, b), a, b)
    a2, b2 = inputs(128, 256, 64)
    c = torch_library._plans.run(a2, b2)
    assert c is not None and close(c, a2, b2)


def test_bench_measures_the_library_as_users_call_it_in_every_mode(library, tmp_path):
    """`kernelrl bench --library`: the worker loads the folder and times Library.hgemm, verified like any method,
    on the tuned shape and on an off-grid shape that the nearest tuned kernel supports."""
    from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
    from kernelrl.run.runner import RunSettings
    from kernelrl.workloads.hgemm import parse_shapes
    cfg = BenchConfig(problems=parse_shapes("256x512x128,64x64x64"), modes=["device", "offline"],
                      baselines=["torch"], db_path=tmp_path / "b.db", library=library.root,
                      settings=RunSettings(rounds=3, calls_per_round=5))
    rows = [r for r in run_bench(cfg, NullUI()).rows if r["method"] == "kernelrl"]
    assert len(rows) == 4 and all(r["verified"] for r in rows), [r["reason"] for r in rows]
    assert {(r["m"], r["dispatch"]) for r in rows} == {(256, "wmma"), (64, "wmma")}
