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
