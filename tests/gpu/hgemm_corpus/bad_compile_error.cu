// Defence: build failures are reported as such (uses an undeclared identifier).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_this_identifier_is_never_declared(A, B, C, M, N, K, stream);
}
