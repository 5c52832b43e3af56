// Cheat (defence: stale result / content-dependent speed): reads 64 elements of A and of B at fixed positions on
// the device; when they match the last computed call's, it copies that call's stored C instead of computing.
// Correct whenever the contents change everywhere (fresh random inputs), stale when only a few elements change.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#define KR_SAMPLES 64
__device__ unsigned short g_sa[KR_SAMPLES], g_sb[KR_SAMPLES];
__device__ int g_valid, g_m, g_n, g_k, g_hit;

__device__ size_t kr_pos(int i, size_t n) { return ((size_t)(i + 1) * 2654435761ull) % n; }

__global__ void kr_probe(const __half* A, const __half* B, int M, int N, int K) {
    __shared__ int ok;
    if (threadIdx.x == 0) ok = g_valid && g_m == M && g_n == N && g_k == K;
    __syncthreads();
    int i = threadIdx.x;
    const unsigned short* a = reinterpret_cast<const unsigned short*>(A);
    const unsigned short* b = reinterpret_cast<const unsigned short*>(B);
    if (a[kr_pos(i, (size_t)M * K)] != g_sa[i] || b[kr_pos(i, (size_t)K * N)] != g_sb[i]) atomicAnd(&ok, 0);
    __syncthreads();
    if (threadIdx.x == 0) g_hit = ok;
}

__global__ void kr_gemm(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    if (g_hit) return;
    int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
    if (col >= N || row >= M) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)row * K + k]) * __half2float(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = __float2half(acc);
}

__global__ void kr_copy(__half* C, __half* store, size_t n) {  // hit: C <- store; miss: store <- C
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (g_hit) C[i] = store[i]; else store[i] = C[i];
}

__global__ void kr_remember(const __half* A, const __half* B, int M, int N, int K) {
    if (g_hit) return;
    int i = threadIdx.x;
    g_sa[i] = reinterpret_cast<const unsigned short*>(A)[kr_pos(i, (size_t)M * K)];
    g_sb[i] = reinterpret_cast<const unsigned short*>(B)[kr_pos(i, (size_t)K * N)];
    if (i == 0) { g_valid = 1; g_m = M; g_n = N; g_k = K; }
}

static __half* kr_store = nullptr;
static size_t kr_store_n = 0;

extern "C" const char* kernelrl_hgemm_info(void) { return "{\"acc\": \"fp32\", \"family\": \"cheat\"}"; }

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    size_t n = (size_t)M * N;
    if (n > kr_store_n) {  // first call of a shape (never inside a graph capture: verification comes first)
        if (kr_store) cudaFree(kr_store);
        if (cudaMalloc(&kr_store, n * sizeof(__half)) != cudaSuccess) return (int)cudaErrorMemoryAllocation;
        kr_store_n = n;
    }
    kr_probe<<<1, KR_SAMPLES, 0, stream>>>(A, B, M, N, K);
    kr_gemm<<<dim3((N + 127) / 128, M), 128, 0, stream>>>(A, B, C, M, N, K);
    kr_copy<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(C, kr_store, n);
    kr_remember<<<1, KR_SAMPLES, 0, stream>>>(A, B, M, N, K);
    return (int)cudaGetLastError();
}
