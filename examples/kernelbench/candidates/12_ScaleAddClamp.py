"""Honest candidate: clamp(x * scale + y, -1, 1) in one pass (the multiply and add rounded separately, as the
reference does; NaN passes through as torch.clamp lets it), four elements per thread.

task: 12_ScaleAddClamp
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

static __device__ __forceinline__ float scale_add_clamp(float a, float b, float s) {
    float v = __fadd_rn(__fmul_rn(a, s), b);
    return v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
}

static __global__ void scale_add_clamp_vec4(const float4* __restrict__ x, const float4* __restrict__ r,
                                            float4* __restrict__ y, float s, int64_t n4) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 a = x[i], b = r[i], o;
        o.x = scale_add_clamp(a.x, b.x, s);
        o.y = scale_add_clamp(a.y, b.y, s);
        o.z = scale_add_clamp(a.z, b.z, s);
        o.w = scale_add_clamp(a.w, b.w, s);
        y[i] = o;
    }
}

static __global__ void scale_add_clamp_scalar(const float* __restrict__ x, const float* __restrict__ r,
                                              float* __restrict__ y, float s, int64_t start, int64_t n) {
    for (int64_t i = start + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = scale_add_clamp(x[i], r[i], s);
}

static int blocks_for(int64_t work, int threads) {
    int64_t b = (work + threads - 1) / threads;
    return (int)(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

void kr_scale_add_clamp(const float* x, const float* r, float* y, float s, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    int64_t start = 0;
    uintptr_t bits = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(r) | reinterpret_cast<uintptr_t>(y);
    if ((bits & 15) == 0) {
        int64_t n4 = n / 4;
        if (n4 > 0)
            scale_add_clamp_vec4<<<blocks_for(n4, threads), threads, 0, stream>>>(
                reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(r),
                reinterpret_cast<float4*>(y), s, n4);
        start = n4 * 4;
    }
    if (start < n)
        scale_add_clamp_scalar<<<blocks_for(n - start, threads), threads, 0, stream>>>(x, r, y, s, start, n);
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_scale_add_clamp(const float* x, const float* r, float* y, float s, int64_t n, cudaStream_t stream);

torch::Tensor scale_add_clamp(torch::Tensor x, torch::Tensor r, double scale) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && r.scalar_type() == torch::kFloat32,
                "scale_add_clamp: expects float32 CUDA tensors");
    TORCH_CHECK(x.sizes() == r.sizes(), "scale_add_clamp: x and y must have the same shape");
    const c10::cuda::CUDAGuard guard(x.device());
    auto xc = x.contiguous();
    auto rc = r.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() > 0)
        kr_scale_add_clamp(xc.data_ptr<float>(), rc.data_ptr<float>(), y.data_ptr<float>(),
                           static_cast<float>(scale), xc.numel(), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_own_scale_add_clamp", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["scale_add_clamp"], no_implicit_headers=True, extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, scale: float = 0.5):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return _ext.scale_add_clamp(x, y, float(self.scale))
