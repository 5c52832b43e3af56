"""Honest candidate: gelu(x) * y (exact, erf-based GELU) fused in one pass, four elements per thread.

task: 11_GeluMul
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

static __device__ __forceinline__ float gelu_mul(float a, float b) {
    return 0.5f * a * (1.0f + erff(a * 0.70710678118654752440f)) * b;
}

static __global__ void gelu_mul_vec4(const float4* __restrict__ x, const float4* __restrict__ g,
                                     float4* __restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 a = x[i], b = g[i], r;
        r.x = gelu_mul(a.x, b.x);
        r.y = gelu_mul(a.y, b.y);
        r.z = gelu_mul(a.z, b.z);
        r.w = gelu_mul(a.w, b.w);
        y[i] = r;
    }
}

static __global__ void gelu_mul_scalar(const float* __restrict__ x, const float* __restrict__ g,
                                       float* __restrict__ y, int64_t start, int64_t n) {
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = gelu_mul(x[i], g[i]);
}

static int blocks_for(int64_t work, int threads) {
    int64_t b = (work + threads - 1) / threads;
    return (int)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

void kr_gelu_mul(const float* x, const float* g, float* y, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    int64_t start = 0;
    uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(g) | reinterpret_cast<uintptr_t>(y);
    if ((bits & 15) == 0) {
        int64_t n4 = n / 4;
        if (n4 > 0)
            gelu_mul_vec4<<<blocks_for(n4, threads), threads, 0, stream>>>(
                reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(g),
                reinterpret_cast<float4*>(y), n4);
        start = n4 * 4;
    }
    if (start < n)
        gelu_mul_scalar<<<blocks_for(n - start, threads), threads, 0, stream>>>(x, g, y, start, n);
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_gelu_mul(const float* x, const float* g, float* y, int64_t n, cudaStream_t stream);

torch::Tensor gelu_mul(torch::Tensor x, torch::Tensor g) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && g.scalar_type() == torch::kFloat32,
                "gelu_mul: expects float32 CUDA tensors");
    TORCH_CHECK(x.sizes() == g.sizes(), "gelu_mul: x and y must have the same shape");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto gc = g.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() > 0)
        kr_gelu_mul(xc.data_ptr<float>(), gc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(),
                    c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_gelu_mul", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["gelu_mul"],
                   no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return _ext.gelu_mul(x, y)
