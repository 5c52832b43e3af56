"""Build (once, cached) and load the native cuBLAS/cuBLASLt shim kr_blas.cu.

A small C library through ctypes rather than nvmath-python: nothing to carry to an offline GPU machine beyond the
cuBLAS that torch already ships, no torch headers (so it compiles in seconds), and the same call path and overhead
as a candidate's kernelrl_hgemm."""

from __future__ import annotations

import ctypes
from pathlib import Path

from kernelrl.build.builder import BuildRequest, LocalBuilder
from kernelrl.build.toolchain import Toolchain, ToolchainError, cublas_paths

SOURCE = Path(__file__).with_name("native") / "kr_blas.cu"
ALGO_BYTES = 64
LAYOUTS = {"nn": 0, "tn": 1}
ACCS = {"fp32": 0, "fp16": 1}
# The shim's `acc` argument: inputs' dtype and accumulator together (bf16 accumulates in fp32 only).
CODES = {("fp16", "fp32"): 0, ("fp16", "fp16"): 1, ("bf16", "fp32"): 2}


def code(problem) -> int:
    return CODES[(getattr(problem, "dtype", "fp16"), problem.acc)]
LT_WORKSPACE_BYTES = 32 << 20  # cuBLAS's recommended workspace on Hopper; the same for every cuBLAS baseline


def build_request(toolchain: Toolchain) -> BuildRequest:
    include, lib = cublas_paths(toolchain.nvcc)
    return BuildRequest.from_file(SOURCE, name="kr_blas", include_dirs=(include,),
                                  link=(f"-L{lib}", "-lcublasLt", "-lcublas", f"-Xlinker=-rpath,{lib}"),
                                  flags=("-O2",))


def build(toolchain: Toolchain | None = None) -> str:
    """Path of the built shim; raises ToolchainError with the compiler's first error line on failure."""
    toolchain = toolchain or Toolchain.discover(with_cutlass=False)
    result = LocalBuilder(toolchain).build(build_request(toolchain))
    if not result.ok:
        raise ToolchainError(f"building the cuBLAS baseline library failed: {result.error}")
    assert result.lib_path is not None  # a build that succeeded has its library
    return result.lib_path


def load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    vp, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    lib.kr_blas_last_error.restype = ctypes.c_char_p
    lib.kr_cuda_error_name.restype = ctypes.c_char_p
    lib.kr_cuda_error_name.argtypes = [i]
    lib.kr_blas_versions.argtypes = [ctypes.POINTER(i), ctypes.POINTER(i)]
    lib.kr_blas_create.restype = vp
    lib.kr_blas_destroy.argtypes = [vp]
    lib.kr_cublas_gemm.argtypes = [vp, i, i, vp, vp, vp, i, i, i, vp, sz, vp]
    lib.kr_lt_plan_create.restype = vp
    lib.kr_lt_plan_create.argtypes = [vp, i, i, i, i, i]
    lib.kr_lt_plan_destroy.argtypes = [vp]
    lib.kr_lt_heuristics.argtypes = [vp, sz, i, vp, ctypes.POINTER(sz), ctypes.POINTER(i)]
    lib.kr_lt_run.argtypes = [vp, vp, vp, vp, vp, vp, sz, vp]
    lib.kr_lt_autotune.argtypes = [vp, vp, i, vp, vp, vp, vp, sz, vp, i, ctypes.POINTER(ctypes.c_float),
                                   ctypes.POINTER(i)]
    return lib


def last_error(lib: ctypes.CDLL) -> str:
    return (lib.kr_blas_last_error() or b"").decode(errors="replace")


def versions(lib: ctypes.CDLL) -> dict:
    cublas, cublaslt = ctypes.c_int(), ctypes.c_int()
    lib.kr_blas_versions(ctypes.byref(cublas), ctypes.byref(cublaslt))
    return {"cublas": cublas.value, "cublaslt": cublaslt.value}
