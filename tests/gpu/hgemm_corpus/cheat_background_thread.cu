// Defence: no work outside the calls. Loading the library starts a host thread (a static initializer) that keeps
// running: work it did between calls would escape the timer and slow whatever runs beside it. The GEMM itself is
// honest, so only the background-activity check can name it.
#include <atomic>
#include <chrono>
#include <thread>

#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

namespace {
std::atomic<bool> kr_stop{false};
struct Background {
    std::thread worker;
    Background() : worker([] { while (!kr_stop) std::this_thread::sleep_for(std::chrono::milliseconds(1)); }) {}
    ~Background() { kr_stop = true; if (worker.joinable()) worker.join(); }
} kr_background;  // constructed when the library is loaded
}  // namespace

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
