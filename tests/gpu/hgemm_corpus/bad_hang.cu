// Defence: per-candidate timeout (kernel spins forever on a flag nothing sets).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>

__device__ volatile int kr_flag = 0;   // volatile: every iteration re-reads memory, so the loop stays

__global__ void kr_spin(void) {
    while (kr_flag == 0) {
        __nanosleep(1000);
    }
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)A; (void)B; (void)C; (void)M; (void)N; (void)K; (void)workspace; (void)workspace_bytes;
    kr_spin<<<1, 1, 0, stream>>>();
    return (int)cudaGetLastError();
}
