// Defence: NaN-poisoned output (the last row of C is never written).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    // Row-major: the first M-1 rows of C depend only on the first M-1 rows of A, so this is a
    // correct GEMM for every row except the last, which keeps whatever the buffer held.
    if (M <= 1) return 0;
    return kr_ref_hgemm(A, B, C, M - 1, N, K, workspace, workspace_bytes, stream);
}
