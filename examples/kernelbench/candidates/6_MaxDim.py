"""Honest candidate: maximum over one dimension (values), the input seen as (outer, R, inner). Reducing the
innermost dimension (the task's case) is one warp per row with float4 loads and a shuffle reduction; other
dimensions use 32 x 8 thread blocks reading 32 consecutive inner positions. NaN propagates, as in torch.max.

task: 6_MaxDim
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>
#include <math_constants.h>

static __device__ __forceinline__ float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

static __global__ void max_last(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t reduce,
                                bool vec4) {
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* p = x + row * reduce;
    float m = -CUDART_INF_F;
    if (vec4) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        for (int64_t r = lane; r < reduce / 4; r += 32) {
            float4 v = p4[r];
            m = max_nan(m, max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w)));
        }
    } else {
        for (int64_t r = lane; r < reduce; r += 32) m = max_nan(m, p[r]);
    }
    for (int off = 16; off > 0; off >>= 1) m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) y[row] = m;
}

static __global__ void max_mid(const float* __restrict__ x, float* __restrict__ y, int64_t reduce, int64_t inner) {
    __shared__ float part[8][33];
    const int64_t tiles = (inner + 31) / 32;  // 32-wide tiles of the inner positions, one per block
    const int64_t o = blockIdx.x / tiles;
    const int64_t i = (blockIdx.x % tiles) * 32 + threadIdx.x;
    float m = -CUDART_INF_F;
    if (i < inner) {
        const float* p = x + o * reduce * inner + i;
        for (int64_t r = threadIdx.y; r < reduce; r += 8) m = max_nan(m, p[r * inner]);
    }
    part[threadIdx.y][threadIdx.x] = m;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = part[0][threadIdx.x];
#pragma unroll
        for (int k = 1; k < 8; ++k) t = max_nan(t, part[k][threadIdx.x]);
        y[o * inner + i] = t;
    }
}

void kr_max_dim(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner, cudaStream_t stream) {
    if (inner == 1) {
        const bool vec4 = reduce % 4 == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
        const int warps = 8;
        max_last<<<(unsigned)((outer + warps - 1) / warps), warps * 32, 0, stream>>>(x, y, outer, reduce, vec4);
    } else {
        dim3 block(32, 8);
        const int64_t blocks = outer * ((inner + 31) / 32);
        max_mid<<<(unsigned)blocks, block, 0, stream>>>(x, y, reduce, inner);
    }
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_max_dim(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner, cudaStream_t stream);

torch::Tensor max_dim_values(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "max_dim_values: expects a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "max_dim_values: expects at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "max_dim_values: dim out of range");
    TORCH_CHECK(x.size(dim) > 0, "max_dim_values: cannot reduce an empty dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    auto sizes = xc.sizes().vec();
    sizes.erase(sizes.begin() + dim);
    auto y = torch::empty(sizes, xc.options());
    if (outer * inner > 0)
        kr_max_dim(xc.data_ptr<float>(), y.data_ptr<float>(), outer, xc.size(dim), inner,
                   c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_max_dim", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC, functions=["max_dim_values"],
                   no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.max_dim_values(x, self.dim)
