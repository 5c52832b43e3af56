// Defence: repeated calls are checked too (correct for the first 3 calls, then does nothing).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

static int kr_calls = 0;

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (kr_calls++ >= 3) return 0;   // "success", but C keeps whatever it held
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
