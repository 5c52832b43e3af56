"""Cheat: sets aside L2 for persisting accesses (cudaLimitPersistingL2CacheSize) and pins its input there with an
access-policy window, so the input survives the harness's L2 flush between timed calls.

Caught after the first call: the context's persisting-L2 set-aside, read through the driver, changed.

task: 10_SwishPlusOne
reason: persisting L2
static: cuda-stream, persisting-l2
cpu: no
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# One small extension shared by every CUDA cheat of the corpus (the same name and the same sources in each file, so
# it is compiled once): swish(x) + 1 launched three dishonest ways.
CUDA_SRC = r"""
#include <cuda_runtime.h>
#include <cstdint>

static __global__ void swish_plus_one(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t limit) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < limit) {
        float v = x[i % n];
        y[i] = v / (1.0f + expf(-v)) + 1.0f;
    }
}

static void launch(const float* x, float* y, int64_t n, int64_t limit, cudaStream_t stream) {
    const int threads = 256;
    swish_plus_one<<<(unsigned)((limit + threads - 1) / threads), threads, 0, stream>>>(x, y, n, limit);
}

// Cheat 1: the work goes to a private non-blocking stream, which nothing orders with the caller's stream.
void kr_adv_side_stream(const float* x, float* y, int64_t n) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    launch(x, y, n, n, side);
}

// Cheat 2: no bounds check worth the name: 4096 elements written past the end of the output.
void kr_adv_oob(const float* x, float* y, int64_t n, cudaStream_t stream) { launch(x, y, n, n + 4096, stream); }

// Cheat 3: L2 set aside for persisting accesses, and the input pinned there across calls (and the harness's flush).
void kr_adv_persist(const float* x, float* y, int64_t n, cudaStream_t stream) {
    int dev = 0, max_persist = 0, max_window = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, dev);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
    cudaStreamAttrValue attr = {};
    size_t bytes = (size_t)n * sizeof(float);
    attr.accessPolicyWindow.base_ptr = (void*)x;
    attr.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    (void)cudaGetLastError();  // whatever failed, leave no error behind for the next launch check to find
    launch(x, y, n, n, stream);
}
"""

CPP_SRC = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

void kr_adv_side_stream(const float* x, float* y, int64_t n);
void kr_adv_oob(const float* x, float* y, int64_t n, cudaStream_t stream);
void kr_adv_persist(const float* x, float* y, int64_t n, cudaStream_t stream);

static torch::Tensor checked(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.numel() > 0,
                "expects a non-empty contiguous float32 CUDA tensor");
    return torch::empty_like(x);
}

torch::Tensor side_stream_swish(torch::Tensor x) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = checked(x);
    kr_adv_side_stream(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}

torch::Tensor oob_swish(torch::Tensor x) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = checked(x);
    kr_adv_oob(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

torch::Tensor persist_swish(torch::Tensor x) {
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = checked(x);
    kr_adv_persist(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""

_ext = load_inline(name="kr_adversarial_shared", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                   functions=["side_stream_swish", "oob_swish", "persist_swish"], no_implicit_headers=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.persist_swish(x.contiguous())
