"""Adapters that turn kernels written for other harnesses into kernelrl candidates (a .cu wrapper to build)."""

from kernelrl.adapters.cuda_l2 import (CudaL2File, build_request, is_cuda_l2_source, parse_cuda_l2,
                                       torch_build_flags, workspace_bytes, wrapper_source)

__all__ = ["CudaL2File", "build_request", "is_cuda_l2_source", "parse_cuda_l2", "torch_build_flags",
           "workspace_bytes", "wrapper_source"]
