"""Honest candidate: RMSNorm over the last dimension, one warp per row: the row is read once into registers (float4,
up to 4096 columns), the sum of squares reduced with warp shuffles, then scaled and multiplied by the weight. Rows
wider than that, or not a multiple of 4, take a block-per-row kernel that reads the row twice.

task: 13_RMSNorm
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

#define MAX_V 8  // float4 registers per lane: rows up to 32 * 4 * 8 = 4096 columns

static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __global__ void rmsnorm_warp_rows(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int64_t rows, int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int n4 = cols >> 2;
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    float4 v[MAX_V];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < MAX_V; ++k) {
        int j = lane + 32 * k;
        if (j < n4) {
            v[k] = xr[j];
            ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
        }
    }
    ss = warp_sum(ss);
    const float r = rsqrtf(ss / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < MAX_V; ++k) {
        int j = lane + 32 * k;
        if (j < n4) {
            float4 g = w4[j], o;
            o.x = v[k].x * r * g.x;
            o.y = v[k].y * r * g.y;
            o.z = v[k].z * r * g.z;
            o.w = v[k].w * r * g.w;
            yr[j] = o;
        }
    }
}

static __global__ void rmsnorm_block_rows(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ y, int cols, float eps) {
    __shared__ float partial[32];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float ss = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) ss += xr[j] * xr[j];
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
        t = warp_sum(t);
        if (threadIdx.x == 0) partial[0] = t;
    }
    __syncthreads();
    const float r = rsqrtf(partial[0] / (float)cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[row * cols + j] = xr[j] * r * w[j];
}

void kr_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int cols, float eps, cudaStream_t stream) {
    bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) |
                     reinterpret_cast<uintptr_t>(y)) & 15) == 0;
    if (aligned && cols % 4 == 0 && cols <= 32 * 4 * MAX_V) {
        const int warps = 8;
        int64_t blocks = (rows + warps - 1) / warps;
        rmsnorm_warp_rows<<<(unsigned)blocks, warps * 32, 0, stream>>>(x, w, y, rows, cols, eps);
    } else {
        rmsnorm_block_rows<<<(unsigned)rows, 256, 0, stream>>>(x, w, y, cols, eps);
    }
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int cols, float eps, cudaStream_t stream);

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
                "rmsnorm: expects float32 CUDA tensors");
    TORCH_CHECK(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1),
                "rmsnorm: the weight must match the last dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto y = torch::empty_like(xc);
    const int cols = (int)xc.size(-1);
    const int64_t rows = cols > 0 ? xc.numel() / cols : 0;
    if (rows > 0)
        kr_rmsnorm(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), rows, cols,
                   static_cast<float>(eps), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_rmsnorm", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["rmsnorm"],
                   no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm(x, self.weight, float(self.eps))
