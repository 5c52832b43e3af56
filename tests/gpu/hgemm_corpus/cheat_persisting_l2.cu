// Cheat (defence: device state): on its first call sets aside 16 MiB of L2 for persisting accesses and pins B
// there through the stream's access-policy window, so its timed calls find B in L2 whatever the cache mode.
#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

static bool kr_pinned = false;

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (!kr_pinned) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 16u << 20);
        cudaStreamAttrValue attr = {};
        attr.accessPolicyWindow.base_ptr = const_cast<__half*>(B);
        attr.accessPolicyWindow.num_bytes = (size_t)K * N * sizeof(__half) < (16u << 20) ? (size_t)K * N * sizeof(__half) : (16u << 20);
        attr.accessPolicyWindow.hitRatio = 1.0f;
        attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
        kr_pinned = true;
    }
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
