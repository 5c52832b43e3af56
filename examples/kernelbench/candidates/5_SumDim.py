"""Honest candidate: sum over one dimension (keepdim), the input seen as (outer, R, inner): a block of 32 x 8
threads takes 32 consecutive inner positions (coalesced reads), its 8 thread rows split R, and a shared-memory tree
adds the 8 partial sums. Reducing the innermost dimension (inner = 1) takes a warp-per-row kernel instead.

task: 5_SumDim
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

static __global__ void sum_mid(const float* __restrict__ x, float* __restrict__ y, int64_t reduce, int64_t inner) {
    __shared__ float part[8][33];
    const int64_t tiles = (inner + 31) / 32;  // 32-wide tiles of the inner positions, one per block
    const int64_t o = blockIdx.x / tiles;
    const int64_t i = (blockIdx.x % tiles) * 32 + threadIdx.x;
    float s = 0.0f;
    if (i < inner) {
        const float* p = x + o * reduce * inner + i;
        for (int64_t r = threadIdx.y; r < reduce; r += 8) s += p[r * inner];
    }
    part[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
        float t = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];
        y[o * inner + i] = t;
    }
}

static __global__ void sum_last(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t reduce) {
    const int lane = threadIdx.x & 31;
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* p = x + row * reduce;
    float s = 0.0f;
    for (int64_t r = lane; r < reduce; r += 32) s += p[r];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) y[row] = s;
}

void kr_sum_dim(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner, cudaStream_t stream) {
    if (inner == 1) {
        const int warps = 8;
        sum_last<<<(unsigned)((outer + warps - 1) / warps), warps * 32, 0, stream>>>(x, y, outer, reduce);
    } else {
        dim3 block(32, 8);
        const int64_t blocks = outer * ((inner + 31) / 32);
        sum_mid<<<(unsigned)blocks, block, 0, stream>>>(x, y, reduce, inner);
    }
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_sum_dim(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner, cudaStream_t stream);

torch::Tensor sum_dim_keepdim(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "sum_dim_keepdim: expects a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "sum_dim_keepdim: expects at least one dimension");
    if (dim < 0) dim += x.dim();
    TORCH_CHECK(dim >= 0 && dim < x.dim(), "sum_dim_keepdim: dim out of range");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    const int64_t reduce = xc.size(dim);
    auto sizes = xc.sizes().vec();
    sizes[dim] = 1;
    auto y = torch::empty(sizes, xc.options());
    if (outer * inner == 0) return y;
    if (reduce == 0) return y.zero_();
    kr_sum_dim(xc.data_ptr<float>(), y.data_ptr<float>(), outer, reduce, inner,
               c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_sum_dim", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["sum_dim_keepdim"], no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.sum_dim_keepdim(x, self.dim)
