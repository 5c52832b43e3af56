// Defence: device faults are caught and isolated (kernel writes through a near-null pointer).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

__global__ void kr_write_garbage(float* p) {
    p[threadIdx.x] = 1.0f;   // p = 0x10: unmapped, so the kernel dies with cudaErrorIllegalAddress
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K; (void)workspace; (void)workspace_bytes;
    // The pointer comes from the host so the compiler cannot prove the store undefined and drop it.
    kr_write_garbage<<<1, 32, 0, stream>>>(reinterpret_cast<float*>(static_cast<uintptr_t>(0x10)));
    return (int)cudaGetLastError();   // the launch itself succeeds; the fault shows at the next sync
}
