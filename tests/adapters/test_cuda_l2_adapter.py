"""The CUDA-L2 adapter: parsing, rejection, the generated wrapper, workspace sizing, the bench/CLI wiring; an nvcc
compile of the wrapper (-c only); and, on a GPU, the wrapper built and evaluated end to end.

The kernel files here are synthetic: written for these tests in CUDA-L2's format, not taken from CUDA-L2."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from kernelrl.adapters import cuda_l2
from kernelrl.jobs.measure import NullUI
from kernelrl.adapters.cuda_l2 import ALIGN, is_cuda_l2_source, parse_cuda_l2, workspace_bytes, wrapper_source

ROOT = Path(__file__).resolve().parents[2]

# A small kernel in CUDA-L2's format: tiles declared as `BM = Int<..>`, b_col_major read as B^T (N x K), a launch
# on the default stream, and a kernel with no bounds checks (the inputs must come padded to the tiles). The macros
# at the top use names of the wrapper's own code: the wrapper must not see them.
SYNTHETIC = r'''
#define Layout int
#define kr_run 0
#define Staged struct {}
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <torch/extension.h>
#include <torch/types.h>

template <int V> struct Int { static constexpr int value = V; };

template <int TM, int TN, int TK>
__global__ void synthetic_tile_kernel(const half* a, const half* bt, half* c, int m, int n, int k) {
  const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
  for (int e = threadIdx.x; e < TM * TN; e += blockDim.x) {
    const int r = row0 + e / TN, col = col0 + e % TN;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += TK)
      for (int kk = 0; kk < TK; ++kk)
        acc += __half2float(a[(size_t)r * k + k0 + kk]) * __half2float(bt[(size_t)col * k + k0 + kk]);
    c[(size_t)r * n + col] = __float2half(acc);
  }
}

void synthetic_launch(const half* a, const half* bt, half* c, int m, int n, int k) {
  auto BM = Int<32>{};
  auto BN = Int<64>{};
  auto BK = Int<16>{};
  dim3 grid(n / decltype(BN)::value, m / decltype(BM)::value);
  synthetic_tile_kernel<decltype(BM)::value, decltype(BN)::value, decltype(BK)::value><<<grid, 128>>>(a, bt, c,
                                                                                                     m, n, k);
}

#define CHECK_HALF(T) \
  if ((T).options().dtype() != torch::kHalf) throw std::runtime_error("values must be half");

void cuda_l2_synth_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c) {
  CHECK_HALF(a)
  CHECK_HALF(b)
  CHECK_HALF(c)
  const int M = a.size(0);
  const int K = a.size(1);
  const int N = b.size(1);
  if (b.size(0) != K || c.size(0) != M || c.size(1) != N) throw std::runtime_error("Tensor size mismatch!");
  if (M % 32 || N % 64 || K % 16) throw std::runtime_error("inputs not padded to the tiles");
  synthetic_launch(reinterpret_cast<const half*>(a.data_ptr()), reinterpret_cast<const half*>(b_col_major.data_ptr()),
                   reinterpret_cast<half*>(c.data_ptr()), M, N, K);
}
'''


def write(tmp_path: Path, text: str = SYNTHETIC, name: str = "synth.cu") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_parse_synthetic_file(tmp_path):
    spec = parse_cuda_l2(SYNTHETIC, write(tmp_path, name="256_128_64.cu"))
    assert spec.function == "cuda_l2_synth_fp32"
    assert (spec.gpu, spec.declared_acc, spec.acc) == ("synth", "fp32", "fp32")
    assert spec.tiles == (32, 64, 16)
    assert spec.shape == (256, 128, 64)
    assert spec.param_types == ("torch::Tensor",) * 4
    assert spec.reads_b is False  # b only lends its sizes (and a CHECK macro)
    assert spec.acc_evidence == ()
    assert spec.name == "256_128_64.cu"


def test_parse_tiles_by_cuda_l2s_rule():
    assert cuda_l2.extract_tiles("auto BM = Int<128>{};\n auto  BN=Int< 256 >{};\n"
                                 "auto BK = Int<32>{};") == (128, 256, 32)
    assert cuda_l2.extract_tiles("auto BM = Int<64>{};\nauto BM = Int<16>{};\nauto BN = Int<8>{};\n"
                                 "auto BK = Int<8>{};") == (16, 8, 8)  # the last line wins
    assert cuda_l2.extract_tiles("#define BN 64\n#define BK 64\n") is None  # their harness then pads nothing
    assert cuda_l2.extract_tiles("auto BM = Int<64>{};\nauto BK = Int<32>{};") is None


def test_fp16_mma_in_an_fp32_named_file_declares_fp16(tmp_path):
    text = SYNTHETIC + "\nusing mma_op = SM80_16x8x16_F16F16F16F16_TN;\n"
    spec = parse_cuda_l2(text, write(tmp_path, text))
    assert (spec.declared_acc, spec.acc) == ("fp32", "fp16")
    assert spec.acc_evidence == ("SM80_16x8x16_F16F16F16F16_TN",)
    ptx = SYNTHETIC + '\nconst char* s = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ";\n'
    spec = parse_cuda_l2(ptx)
    assert spec.acc == "fp32" and spec.acc_evidence == ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",)
    commented = SYNTHETIC + "\n// using mma_op = SM80_16x8x16_F16F16F16F16_TN;\n"
    assert parse_cuda_l2(commented).acc == "fp32"  # comments are not code


def test_reads_b_when_the_function_uses_bs_data():
    text = SYNTHETIC.replace("b_col_major.data_ptr()", "b.data_ptr()")
    assert parse_cuda_l2(text).reads_b is True


@pytest.mark.parametrize("text, words", [
    ("__global__ void k(float* x) { }\n", "not a CUDA-L2 kernel file"),
    ("void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor b_col_major, torch::Tensor c);\n",
     "not a CUDA-L2 kernel file"),  # a declaration (as in their pybind files) is not a definition
    ("void cuda_l2_h100_bf16(torch::Tensor a, torch::Tensor b, torch::Tensor bt, torch::Tensor c) {}\n",
     "is not named cuda_l2_<gpu>_<fp16|fp32>"),
    ("void cuda_l2_h100_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor c) {}\n",
     "must take four torch::Tensor parameters"),
    ("void cuda_l2_a_fp32(torch::Tensor a, torch::Tensor b, torch::Tensor bt, torch::Tensor c) {}\n"
     "void cuda_l2_b_fp16(torch::Tensor a, torch::Tensor b, torch::Tensor bt, torch::Tensor c) {}\n",
     "defines 2 cuda_l2_ functions"),
])
def test_rejects_files_not_in_the_format_with_one_line(tmp_path, text, words):
    path = write(tmp_path, text, "bad.cu")
    with pytest.raises(ValueError) as info:
        parse_cuda_l2(text, path)
    message = str(info.value)
    assert words in message and "\n" not in message and message.startswith("bad.cu: ")


def test_detection():
    assert is_cuda_l2_source(SYNTHETIC)
    assert not is_cuda_l2_source((ROOT / "examples" / "hgemm_wmma.cu").read_text())
    assert not is_cuda_l2_source("__global__ void k() {}")


def _info_from(source: str) -> dict:
    literal = re.search(r'kr_info = "((?:\\.|[^"\\])*)";', source).group(1)
    return json.loads(literal.encode().decode("unicode_escape"))


def test_wrapper_has_the_entry_points_and_includes_the_file_last(tmp_path):
    path = write(tmp_path, name="256_128_64.cu")
    spec = parse_cuda_l2(path.read_text(), path)
    source = wrapper_source(spec)
    for symbol in ("int kernelrl_hgemm(", "size_t kernelrl_hgemm_workspace(", "int kernelrl_hgemm_supports(",
                   "const char* kernelrl_hgemm_info(", 'extern "C"', "at::for_blob(",
                   "CUDAStreamGuard", "getStreamFromExternal", "void cuda_l2_synth_fp32(torch::Tensor, torch::Tensor,"
                   " torch::Tensor, torch::Tensor);", "catch (const std::exception& ex)", spec.sha256):
        assert symbol in source, symbol  # both header modes share the text; the preprocessor picks
    assert "#define KR_CL2_SHIM 1" in source and "#define KR_CL2_SHIM 0" in wrapper_source(spec, torch_api="torch")
    # after every line of the wrapper (the file's macros reach nothing): inline, its one launch on the caller's stream
    inline = f'#line 1 "{path.resolve()}"\n' + cuda_l2.direct_launch_source(path.read_text())
    assert source.rstrip().endswith(inline.rstrip()) and "#define KR_CL2_DIRECT 1" in source
    assert "#define KR_CL2_UNTIMED 0" in source
    assert "kr_exact = true" in source and "kr_shape_m = 256, kr_shape_n = 128, kr_shape_k = 64" in source
    assert "kr_exact = false" in wrapper_source(spec, any_shape=True)
    untimed = wrapper_source(spec, untimed_padding=True)
    assert "#define KR_CL2_UNTIMED 1" in untimed
    assert "int kernelrl_hgemm_stage(const __half* A, const __half* B," in untimed
    assert "@@" not in source + untimed
    assert "const char* kernelrl_hgemm_b_layout(void)" in source and "constexpr bool kr_reads_b = false;" in source
    info = _info_from(source)
    assert info == {"acc": "fp32", "family": "cuda_l2",
                    "params": {"BM": 32, "BN": 64, "BK": 16, "source": "256_128_64.cu",
                               "function": "cuda_l2_synth_fp32", "declared_acc": "fp32", "mma": [],
                               "shape": [256, 128, 64], "padding": "timed",
                               "sha256": spec.sha256[:16], "device_syncs": 0, "torch_api": "shim",
                               "launch": "direct"}}
    assert _info_from(untimed)["params"]["padding"] == "untimed"


def test_a_file_that_enqueues_work_another_way_is_included_unchanged_and_joined(tmp_path):
    text = SYNTHETIC.replace("void synthetic_launch(", "void unused_copy(void* d, const void* s) {\n"
                             "  cudaMemcpyAsync(d, s, 16, cudaMemcpyDeviceToDevice);\n}\n\nvoid synthetic_launch(")
    path = write(tmp_path, text)
    source = wrapper_source(parse_cuda_l2(text, path))
    assert source.rstrip().endswith(f'#include "{path.resolve()}"') and "#define KR_CL2_DIRECT 0" in source
    assert _info_from(source)["params"]["launch"] == "joined"


@pytest.mark.parametrize("launch, rewritten", [
    ("k<<<grid, 128>>>(x);", "k<<<grid, 128, 0, kr_cl2_launch_stream>>>(x);"),
    ("k<<<dim3(a, b), dim3(32, 4), smem>>>(x);", "k<<<dim3(a, b), dim3(32, 4), smem, kr_cl2_launch_stream>>>(x);"),
    ("k<<<g, b, s, 0>>>(x);", "k<<<g, b, s, kr_cl2_launch_stream>>>(x);"),
    ("k<T<1>><<<g, b /* one, two */>>>(x);", "k<T<1>><<<g, b /* one, two */, 0, kr_cl2_launch_stream>>>(x);"),
])
def test_default_stream_launches_are_rewritten_onto_the_callers_stream(launch, rewritten):
    assert cuda_l2.direct_launch_source(f"void f() {{ {launch} }}") == f"void f() {{ {rewritten} }}"


@pytest.mark.parametrize("text", [
    "void f(cudaStream_t mine) { k<<<g, b, 0, mine>>>(x); }",    # the file's own stream
    "void f() { k<<<g, b>>>(x); cudaMemsetAsync(p, 0, 4); }",     # enqueued another way
    "void f() { cudaLaunchKernel((void*)k, g, b, args, 0, 0); }",
    "void f() { int x = 1; }",                                    # nothing to rewrite
])
def test_files_the_rewrite_cannot_make_safe_keep_the_joined_path(text):
    assert cuda_l2.direct_launch_source(text) is None


def test_device_synchronizes_in_the_code_are_counted_and_those_in_comments_are_not():
    text = SYNTHETIC.replace("{\n", "{\n    cudaDeviceSynchronize();  // cudaDeviceSynchronize()\n", 1)
    assert parse_cuda_l2(text).device_syncs == 1 and parse_cuda_l2(SYNTHETIC).device_syncs == 0


def test_cute_check_last_counts_as_a_device_synchronize():
    text = SYNTHETIC.replace("{\n", "{\n    CUTE_CHECK_LAST();\n", 1)
    assert parse_cuda_l2(text).device_syncs == 1


def test_workspace_sizing_padded_and_unpadded():
    spec = parse_cuda_l2(SYNTHETIC)  # tiles 32 x 64 x 16, b not read
    aligned = cuda_l2.layout(spec, 256, 128, 64)
    assert aligned["padded"] == (256, 128, 64)
    assert aligned["regions"] == {}  # A, C and B^T (the caller's, b_col_major's memory: b is not read) in place
    assert workspace_bytes(spec, 256, 128, 64) == ALIGN
    padded = cuda_l2.layout(spec, 100, 200, 72)  # -> 128 x 256 x 80
    assert padded["padded"] == (128, 256, 80)
    a_bytes, bcm_bytes, c_bytes = 128 * 80 * 2, 256 * 80 * 2, 128 * 256 * 2
    assert padded["regions"] == {"a": 0, "b_col_major": a_bytes, "c": a_bytes + bcm_bytes}
    assert workspace_bytes(spec, 100, 200, 72) == a_bytes + bcm_bytes + c_bytes + ALIGN
    only_m = cuda_l2.layout(spec, 100, 128, 64)  # M alone padded: A and C, not B
    assert set(only_m["regions"]) == {"a", "c"}
    reads_b = parse_cuda_l2(SYNTHETIC.replace("b_col_major.data_ptr()", "b.data_ptr()"))
    both = cuda_l2.layout(reads_b, 100, 200, 72)
    assert list(both["regions"]) == ["a", "b", "b_col_major", "c"]
    assert set(cuda_l2.layout(reads_b, 256, 128, 64)["regions"]) == {"b_col_major"}  # it reads B: B^T is made
    assert all(off % ALIGN == 0 for off in both["regions"].values())
    odd = cuda_l2.layout(spec, 33, 65, 17)  # 64 x 128 x 32; regions stay aligned
    assert odd["padded"] == (64, 128, 32) and all(off % ALIGN == 0 for off in odd["regions"].values())
    untiled = parse_cuda_l2(SYNTHETIC.replace("Int<", "Int <").replace("auto BM", "auto BMX"))
    assert untiled.tiles is None and cuda_l2.layout(untiled, 100, 200, 72)["padded"] == (100, 200, 72)


@pytest.mark.parametrize("change, why", [
    (None, None),
    (("const int M = a.size(0);", "const int M = a.size(0); auto t = torch::empty({M});"), "torch::empty"),
    (("#include <torch/types.h>", "#include <torch/types.h>\n#include <ATen/cuda/CUDAContext.h>"), "ATen"),
    (("const int K = a.size(1);", "const int K = a.stride(0);"), "stride"),
    (("reinterpret_cast<half*>(c.data_ptr())", "reinterpret_cast<half*>(c.contiguous().data_ptr())"), "contiguous"),
])
def test_a_file_that_asks_only_sizes_pointers_and_dtypes_is_built_without_torch(change, why):
    text = SYNTHETIC if change is None else SYNTHETIC.replace(*change)
    assert text != SYNTHETIC or change is None
    assert parse_cuda_l2(text).torch_api == ("shim" if why is None else "torch"), why


def test_a_shim_build_links_no_torch_and_a_torch_build_does(tmp_path):
    path = write(tmp_path)
    shim = cuda_l2.build_request(path)
    assert shim.include_dirs == (str(cuda_l2.SHIM_DIR),) and shim.link == cuda_l2.SHIM_LINK
    assert (cuda_l2.SHIM_DIR / "torch" / "extension.h").is_file()
    full = cuda_l2.build_request(path, torch_api="torch")
    assert "-ltorch" in full.link and "#define KR_CL2_SHIM 0" in full.source
    torchy = write(tmp_path, SYNTHETIC.replace("const int M = a.size(0);", "const int M = a.numel();"), "t.cu")
    with pytest.raises(ValueError, match="more of torch than kernelrl's stand-in"):
        cuda_l2.build_request(torchy, torch_api="shim")


def test_a_wrapper_that_fails_against_the_shim_is_built_again_with_torch(tmp_path):
    from kernelrl.build.builder import BuildResult
    from kernelrl.jobs.measure import BenchConfig, NullUI, _rebuild_shim_failures

    path = write(tmp_path)
    request = cuda_l2.build_request(path, name="synth")

    class Builder:
        asked = []

        def build_many(self, requests, workers=None, on_done=None):
            self.asked += requests
            return [BuildResult(name=r.name, key="k", ok=True, lib_path="/x.so") for r in requests]
    builder = Builder()
    failed = [BuildResult(name="synth", key="k", ok=False, error="nvcc: no member named foo")]
    [result] = _rebuild_shim_failures(failed, [request], {"synth"}, {"synth": str(path)},
                                      BenchConfig(problems=[], modes=["device"]), builder, NullUI())
    assert result.ok and [r.include_dirs != (str(cuda_l2.SHIM_DIR),) for r in builder.asked] == [True]
    assert "-ltorch" in builder.asked[0].link


def test_torch_build_flags():
    import torch

    flags = cuda_l2.torch_build_flags()
    assert flags["flags"] == (f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",)
    assert any(Path(d, "torch", "extension.h").exists() for d in flags["include_dirs"])
    assert any(Path(d, "Python.h").exists() for d in flags["include_dirs"])
    for lib in ("-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-lc10", "-lc10_cuda"):
        assert lib in flags["link"]
    assert any(x.startswith("-Xlinker=-rpath,") for x in flags["link"])


def test_bench_and_cli_wiring(tmp_path):
    from kernelrl.jobs.measure import BenchConfig, candidate_request
    from kernelrl.cli import build_parser

    path = write(tmp_path)
    cfg = BenchConfig(problems=[], modes=["device"], candidate_flags=("-DX=1",))
    request, adapted = candidate_request("synth", str(path), cfg)
    assert adapted and request.name == "synth" and request.origin == str(path.resolve())
    assert "int kernelrl_hgemm(" in request.source and "#define KR_CL2_UNTIMED 0" in request.source
    assert "--default-stream" in request.flags and request.flags[-1] == "-DX=1"
    assert request.include_dirs == (str(cuda_l2.SHIM_DIR),) and request.link == cuda_l2.SHIM_LINK  # no torch
    cfg.cuda_l2_untimed_padding = True
    assert "#define KR_CL2_UNTIMED 1" in candidate_request("synth", str(path), cfg)[0].source
    plain, adapted = candidate_request("wmma", str(ROOT / "examples" / "hgemm_wmma.cu"), cfg)
    assert not adapted and plain.source == (ROOT / "examples" / "hgemm_wmma.cu").read_text()
    bad = write(tmp_path, "void cuda_l2_x_fp32(torch::Tensor a) {}\n", "bad.cu")
    with pytest.raises(ValueError, match="four torch::Tensor parameters"):
        candidate_request("bad", str(bad), cfg)
    assert build_parser().parse_args(["eval", "x.cu", "--untimed-padding"]).untimed_padding is True
    assert build_parser().parse_args(["bench"]).untimed_padding is False


def _cuda_headers_missing() -> str | None:
    import torch
    include = Path(torch.__file__).parent / "include"
    missing = [h for h in ("ATen/cuda/CUDAContext.h", "c10/cuda/CUDAStream.h", "c10/cuda/CUDAGuard.h")
               if not (include / h).exists()]
    return f"torch's CUDA headers are missing from this install: {', '.join(missing)}" if missing else None


def _generated_header_stub(tmp_path: Path) -> list[str]:
    """A CPU-only torch ships c10/cuda's headers but not the one its CUDA build generates,
    c10/cuda/impl/cuda_cmake_macros.h; for a compile-only check, supply what that build writes there."""
    import torch
    if (Path(torch.__file__).parent / "include" / "c10/cuda/impl/cuda_cmake_macros.h").exists():
        return []
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True)
    stub.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    return [str(tmp_path / "stub")]


@pytest.mark.nvcc
def test_wrapper_compiles_with_nvcc(tmp_path):
    """nvcc -c of the generated wrappers (timed and untimed padding) around the synthetic file, with torch's
    headers and with kernelrl's stand-in; no link (a CPU-only torch has no libtorch_cuda). torch/extension.h makes
    each torch build take a minute or two, so they compile side by side (the stand-in's take seconds)."""
    if reason := _cuda_headers_missing():
        pytest.skip(reason)
    from kernelrl.build.toolchain import arch_flags, find_nvcc

    path, stub = write(tmp_path), _generated_header_stub(tmp_path)
    procs = []
    for untimed, api in ((False, "torch"), (True, "torch"), (False, "shim"), (True, "shim")):
        request = cuda_l2.build_request(path, untimed_padding=untimed, torch_api=api)
        src, obj = tmp_path / f"wrapper{int(untimed)}{api}.cu", tmp_path / f"wrapper{int(untimed)}{api}.o"
        src.write_text(request.source)
        cmd = [find_nvcc() or "nvcc", "-c", "-std=c++17", "-O1", "-Xcompiler", "-fPIC", *arch_flags("sm_90a"),
               *request.flags, *[f"-I{d}" for d in [*request.include_dirs, *stub]], str(src), "-o", str(obj)]
        procs.append((obj, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for obj, proc in procs:
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, out[-4000:]
        assert obj.stat().st_size > 0


# -- on a GPU ------------------------------------------------------------------------------------------------------
class BuildCheckingUI(NullUI):
    """Silent, except that a failed build fails the test with the compiler's log."""

    def build_done(self, result):
        assert result.ok, result.log[-3000:]


@pytest.mark.gpu
def test_on_gpu_timed_padding_verifies(tmp_path):
    """The adapted synthetic file through the whole evaluator: padded (100x200x72 -> 128x256x80) and unpadded, with
    CUDA-graph capture (device mode) and host timing (offline mode)."""
    from kernelrl.jobs.measure import BenchConfig, run_bench
    from kernelrl.run.runner import RunSettings
    from kernelrl.workloads.hgemm import parse_shapes

    cfg = BenchConfig(problems=parse_shapes("100x200x72,256x128x64", acc="fp32"), modes=["device", "offline"],
                      candidates=[str(write(tmp_path))], baselines=["torch"], db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3))
    rows = [r for r in run_bench(cfg, BuildCheckingUI()).rows if r["method"] == "synth"]
    assert len(rows) == 4
    for row in rows:
        assert row["verified"], row["reason"]


@pytest.mark.gpu
def test_on_gpu_untimed_padding_needs_the_stage_call(tmp_path):
    import ctypes

    import torch

    from kernelrl.build.builder import LocalBuilder
    from kernelrl.verify.checks import compare_output, reference

    request = cuda_l2.build_request(write(tmp_path), untimed_padding=True)
    result = LocalBuilder().build(request)
    assert result.ok, result.log[-3000:]
    lib = ctypes.CDLL(result.lib_path)
    vp, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    lib.kernelrl_hgemm.argtypes = [vp, vp, vp, i, i, i, vp, sz, vp]
    lib.kernelrl_hgemm_stage.argtypes = [vp, vp, i, i, i, vp, sz, vp]
    lib.kernelrl_hgemm_workspace.argtypes = [i, i, i]
    lib.kernelrl_hgemm_workspace.restype = sz
    lib.kernelrl_hgemm_b_layout.restype = ctypes.c_char_p
    assert lib.kernelrl_hgemm_b_layout() == b"nk"  # the file never reads b: it is given B^T
    spec = parse_cuda_l2(SYNTHETIC)
    for shape in ((100, 200, 72), (256, 128, 64), (33, 65, 17)):
        assert lib.kernelrl_hgemm_workspace(*shape) == workspace_bytes(spec, *shape)  # C++ and Python agree
    m, n, k = 100, 200, 72
    a = torch.randn(m, k, device="cuda").half()
    b = torch.randn(k, n, device="cuda").half()
    bt = b.t().contiguous()
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.half)
    ws = torch.full((lib.kernelrl_hgemm_workspace(m, n, k),), 0xFF, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    args = (a.data_ptr(), bt.data_ptr(), c.data_ptr(), m, n, k, ws.data_ptr(), ws.numel(), stream.cuda_stream)
    assert lib.kernelrl_hgemm(*args) == 600  # cudaErrorNotReady: nothing staged yet
    assert lib.kernelrl_hgemm_stage(a.data_ptr(), bt.data_ptr(), m, n, k, ws.data_ptr(), ws.numel(),
                                    stream.cuda_stream) == 0
    assert lib.kernelrl_hgemm(*args) == 0
    torch.cuda.synchronize()
    outcome = compare_output(c, reference(a, b), "fp32", k)
    assert outcome.ok, outcome.reason


@pytest.mark.gpu
def test_on_gpu_untimed_padding_verifies_through_the_evaluator(tmp_path):
    """--untimed-padding: the worker stages every new input set outside timing, and the kernel still verifies on
    the re-checks made during timing (fresh inputs behind the same pointers are staged again)."""
    from kernelrl.jobs.measure import BenchConfig, run_bench
    from kernelrl.run.runner import RunSettings
    from kernelrl.workloads.hgemm import parse_shapes

    cfg = BenchConfig(problems=parse_shapes("100x200x72", acc="fp32"), modes=["device", "offline"],
                      candidates=[str(write(tmp_path))], baselines=["torch"], db_path=tmp_path / "r.db",
                      settings=RunSettings(rounds=3), cuda_l2_untimed_padding=True)
    rows = [r for r in run_bench(cfg, BuildCheckingUI()).rows if r["method"] == "synth"]
    assert len(rows) == 2
    for row in rows:
        assert row["verified"], row["reason"]


@pytest.mark.nvcc
def test_a_file_that_prints_with_std_cout_builds_against_the_stand_in(tmp_path):
    """CUDA-L2's CHECK macros print the tensor options with std::cout, which torch's headers bring in: the stand-in
    brings it too (128_12288_64.cu did not build before it did)."""
    if reason := _cuda_headers_missing():
        pytest.skip(reason)
    from kernelrl.build.toolchain import arch_flags, find_nvcc

    text = SYNTHETIC.replace('throw std::runtime_error("values must be half");',
                             '{ std::cout << (T).options() << std::endl; throw std::runtime_error("half"); }')
    assert text != SYNTHETIC
    request = cuda_l2.build_request(write(tmp_path, text), untimed_padding=True)
    assert request.include_dirs == (str(cuda_l2.SHIM_DIR),)
    src, obj = tmp_path / "w.cu", tmp_path / "w.o"
    src.write_text(request.source)
    cmd = [find_nvcc() or "nvcc", "-c", "-std=c++17", "-O1", "-Xcompiler", "-fPIC", *arch_flags("sm_90a"),
           *request.flags, *[f"-I{d}" for d in request.include_dirs], str(src), "-o", str(obj)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
