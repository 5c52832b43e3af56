"""Honest candidate: LayerNorm over the last dimension, one warp per row: the row is read once into registers
(float4, up to 4096 columns), mean and variance by two warp-shuffle reductions over the registers (no E[x^2] - E[x]^2
cancellation), then scaled and shifted by the module's weight and bias. Other rows take a block-per-row kernel.

task: 8_LayerNorm
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

static __global__ void layernorm_warp_rows(const float* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ b, float* __restrict__ y, int64_t rows,
                                           int cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int n4 = cols >> 2;
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    float4 v[MAX_V];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < MAX_V; ++k) {
        int j = lane + 32 * k;
        if (j < n4) {
            v[k] = xr[j];
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
    }
    const float mean = warp_sum(s) / (float)cols;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < MAX_V; ++k) {
        int j = lane + 32 * k;
        if (j < n4) {
            float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean, dw = v[k].w - mean;
            q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
    }
    const float rstd = rsqrtf(warp_sum(q) / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < MAX_V; ++k) {
        int j = lane + 32 * k;
        if (j < n4) {
            float4 g = w4[j], h = b4[j], o;
            o.x = (v[k].x - mean) * rstd * g.x + h.x;
            o.y = (v[k].y - mean) * rstd * g.y + h.y;
            o.z = (v[k].z - mean) * rstd * g.z + h.z;
            o.w = (v[k].w - mean) * rstd * g.w + h.w;
            yr[j] = o;
        }
    }
}

static __device__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < warps ? scratch[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0) scratch[32] = t;
    }
    __syncthreads();
    float out = scratch[32];
    __syncthreads();
    return out;
}

static __global__ void layernorm_block_rows(const float* __restrict__ x, const float* __restrict__ w,
                                            const float* __restrict__ b, float* __restrict__ y, int cols,
                                            float eps) {
    __shared__ float scratch[33];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    const float mean = block_sum(s, scratch) / (float)cols;
    float q = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) q += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = rsqrtf(block_sum(q, scratch) / (float)cols + eps);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) y[row * cols + j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

void kr_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols, float eps,
                  cudaStream_t stream) {
    bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w) |
                     reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
    if (aligned && cols % 4 == 0 && cols <= 32 * 4 * MAX_V) {
        const int warps = 8;
        int64_t blocks = (rows + warps - 1) / warps;
        layernorm_warp_rows<<<(unsigned)blocks, warps * 32, 0, stream>>>(x, w, b, y, rows, cols, eps);
    } else {
        layernorm_block_rows<<<(unsigned)rows, 256, 0, stream>>>(x, w, b, y, cols, eps);
    }
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols, float eps,
                  cudaStream_t stream);

torch::Tensor layernorm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "layernorm: expects float32 CUDA tensors");
    TORCH_CHECK(x.dim() >= 1 && weight.numel() == x.size(-1) && bias.numel() == x.size(-1),
                "layernorm: weight and bias must match the last dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto wc = weight.contiguous();
    auto bc = bias.contiguous();
    auto y = torch::empty_like(xc);
    const int cols = (int)xc.size(-1);
    const int64_t rows = cols > 0 ? xc.numel() / cols : 0;
    if (rows > 0)
        kr_layernorm(xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), rows,
                     cols, static_cast<float>(eps), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_layernorm", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["layernorm"],
                   no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm(x, self.ln.weight, self.ln.bias, float(self.ln.eps))
