// Defence: work must run on the given stream (GEMM hidden on a private non-blocking stream).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

static cudaStream_t kr_side = nullptr;

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    (void)stream;   // ignored: no event links the side stream back to the caller's
    if (!kr_side) {
        cudaError_t e = cudaStreamCreateWithFlags(&kr_side, cudaStreamNonBlocking);
        if (e != cudaSuccess) return (int)e;
    }
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, kr_side);
}
