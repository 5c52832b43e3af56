"""Honest candidate: softmax over the last dimension, one block per row, the row held in registers (float4 loads,
up to 32768 columns): a block-wide max, exp(x - max) kept in registers, a block-wide sum, one write. Other rows
(not a multiple of 4, or wider) take a three-pass kernel over global memory.

task: 7_Softmax
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>
#include <math_constants.h>

static __device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Reduce over the block (MAX: max, else sum); every thread gets the result. `scratch` holds 33 floats.
template <bool MAX>
static __device__ __forceinline__ float block_reduce(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < warps ? scratch[lane] : (MAX ? -CUDART_INF_F : 0.0f);
        t = MAX ? warp_max(t) : warp_sum(t);
        if (lane == 0) scratch[32] = t;
    }
    __syncthreads();
    float out = scratch[32];
    __syncthreads();  // scratch is reused by the next reduction
    return out;
}

template <int VPT>
static __global__ void softmax_rows_regs(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[33];
    const int64_t row = blockIdx.x;
    const int n4 = cols >> 2;
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    float4 v[VPT];
    float m = -CUDART_INF_F;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < n4) {
            v[k] = xr[j];
            m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        }
    }
    m = block_reduce<true>(m, scratch);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < n4) {
            v[k].x = expf(v[k].x - m);
            v[k].y = expf(v[k].y - m);
            v[k].z = expf(v[k].z - m);
            v[k].w = expf(v[k].w - m);
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
    }
    s = block_reduce<false>(s, scratch);
    const float inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < n4) {
            float4 o;
            o.x = v[k].x * inv;
            o.y = v[k].y * inv;
            o.z = v[k].z * inv;
            o.w = v[k].w * inv;
            yr[j] = o;
        }
    }
}

static __global__ void softmax_rows_global(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[33];
    const int64_t row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float m = -CUDART_INF_F;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    m = block_reduce<true>(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - m);
    s = block_reduce<false>(s, scratch);
    const float inv = 1.0f / s;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}

void kr_softmax_lastdim(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream) {
    const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15) == 0;
    const int n4 = cols >> 2;
    const int max_threads = 512;
    if (aligned && cols % 4 == 0 && n4 <= 16 * max_threads) {
        int vpt = 1;
        while (vpt * max_threads < n4) vpt *= 2;
        int threads = ((n4 + vpt - 1) / vpt + 31) / 32 * 32;
        switch (vpt) {
            case 1: softmax_rows_regs<1><<<(unsigned)rows, threads, 0, stream>>>(x, y, cols); break;
            case 2: softmax_rows_regs<2><<<(unsigned)rows, threads, 0, stream>>>(x, y, cols); break;
            case 4: softmax_rows_regs<4><<<(unsigned)rows, threads, 0, stream>>>(x, y, cols); break;
            case 8: softmax_rows_regs<8><<<(unsigned)rows, threads, 0, stream>>>(x, y, cols); break;
            default: softmax_rows_regs<16><<<(unsigned)rows, threads, 0, stream>>>(x, y, cols); break;
        }
    } else {
        softmax_rows_global<<<(unsigned)rows, 256, 0, stream>>>(x, y, cols);
    }
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_softmax_lastdim(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream);

torch::Tensor softmax_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "softmax_lastdim: expects a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "softmax_lastdim: expects at least one dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int cols = (int)xc.size(-1);
    const int64_t rows = cols > 0 ? xc.numel() / cols : 0;
    if (rows > 0)
        kr_softmax_lastdim(xc.data_ptr<float>(), y.data_ptr<float>(), rows, cols,
                           c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_softmax", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["softmax_lastdim"], no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_lastdim(x)
