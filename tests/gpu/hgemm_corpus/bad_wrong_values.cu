// Defence: value check against a reference GEMM (one element off by +1.0, everything else exact).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

// One thread nudges the middle element; +1.0 changes any fp16 value below 2048 in magnitude.
__global__ void kr_bump_middle(__half* C, int M, int N) {
    __half* p = C + (size_t)(M / 2) * N + N / 2;
    *p = __float2half(__half2float(*p) + 1.0f);
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    int err = kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
    if (err) return err;
    kr_bump_middle<<<1, 1, 0, stream>>>(C, M, N);
    return (int)cudaGetLastError();
}
