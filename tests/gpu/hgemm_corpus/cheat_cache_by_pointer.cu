// Defence: inputs changed in place between calls (skips the work when pointers and shape repeat).
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

static const __half* kr_last_a = nullptr;
static const __half* kr_last_b = nullptr;
static __half* kr_last_c = nullptr;
static int kr_last_m = -1, kr_last_n = -1, kr_last_k = -1;

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (A == kr_last_a && B == kr_last_b && C == kr_last_c && M == kr_last_m && N == kr_last_n &&
        K == kr_last_k)
        return 0;   // stale: assumes same pointers mean same contents
    int err = kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
    if (err) return err;
    kr_last_a = A; kr_last_b = B; kr_last_c = C;
    kr_last_m = M; kr_last_n = N; kr_last_k = K;
    return 0;
}
