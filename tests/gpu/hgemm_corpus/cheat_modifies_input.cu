// Defence: input integrity check (correct C, then A[0] is overwritten).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

// Zeroes A[0]; if it already is +-0 it becomes 1.0 instead, so the write always changes A.
__global__ void kr_clobber_a0(__half* A) {
    unsigned short bits = __half_as_ushort(A[0]);
    A[0] = (bits & 0x7fff) ? __float2half(0.0f) : __float2half(1.0f);
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    int err = kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
    if (err) return err;
    kr_clobber_a0<<<1, 1, 0, stream>>>(const_cast<__half*>(A));
    return (int)cudaGetLastError();
}
