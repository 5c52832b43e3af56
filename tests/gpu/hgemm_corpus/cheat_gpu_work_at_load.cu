// Defence: no GPU work outside the calls. Loading the library launches a kernel (from a static initializer, on a
// stream of its own) that spins on every SM for about a second and is still running when the load returns:
// whatever the harness verifies or times next (baselines included) shares the GPU with it. The GEMM itself is
// honest, so only the background-activity check can name it.
#include <cuda_runtime.h>

#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

namespace {
__global__ void kr_spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

struct Spinner {
    Spinner() {
        cudaStream_t stream;
        if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess)
            kr_spin<<<132, 32, 0, stream>>>(2000000000LL);  // ~1 s at ~2 GHz, one block per SM
    }
} kr_spinner;  // constructed when the library is loaded
}  // namespace

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
