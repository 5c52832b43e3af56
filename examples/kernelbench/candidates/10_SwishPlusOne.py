"""Honest candidate: x * sigmoid(x) + 1 in one pass, four elements per thread (float4 loads and stores).

task: 10_SwishPlusOne
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

static __device__ __forceinline__ float swish_plus_one(float v) { return v / (1.0f + expf(-v)) + 1.0f; }

static __global__ void swish_plus_one_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = x[i];
        v.x = swish_plus_one(v.x);
        v.y = swish_plus_one(v.y);
        v.z = swish_plus_one(v.z);
        v.w = swish_plus_one(v.w);
        y[i] = v;
    }
}

static __global__ void swish_plus_one_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t start,
                                             int64_t n) {
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = swish_plus_one(x[i]);
}

static int blocks_for(int64_t work, int threads) {
    int64_t b = (work + threads - 1) / threads;
    return (int)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

void kr_swish_plus_one(const float* x, float* y, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    int64_t start = 0;
    if (((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0) {
        int64_t n4 = n / 4;
        if (n4 > 0)
            swish_plus_one_vec4<<<blocks_for(n4, threads), threads, 0, stream>>>(
                reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
        start = n4 * 4;
    }
    if (start < n)
        swish_plus_one_scalar<<<blocks_for(n - start, threads), threads, 0, stream>>>(x, y, start, n);
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_swish_plus_one(const float* x, float* y, int64_t n, cudaStream_t stream);

torch::Tensor swish_plus_one(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "swish_plus_one: expects a float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() > 0)
        kr_swish_plus_one(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(),
                          c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_swish_plus_one", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["swish_plus_one"], no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.swish_plus_one(x)
