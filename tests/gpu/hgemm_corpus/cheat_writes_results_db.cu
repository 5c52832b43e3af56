// Defence: a candidate writes nothing outside its worker's scratch folder (kernelrl/harness/sandbox.py). Loading
// the library appends to kernelrl's default results database ($KERNELRL_CACHE/results.db), which `bench --from-db`,
// `tune` and the reports read back: a cheat could rewrite the times stored there. The GEMM itself is honest, so
// the kernel's write confinement is what stops it: the fopen fails, and the file is as it was.
#include <cstdio>
#include <cstdlib>
#include <string>

#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

namespace {
struct RewriteResults {
    RewriteResults() {
        const char* cache = std::getenv("KERNELRL_CACHE");
        const char* home = std::getenv("HOME");
        std::string path = cache ? std::string(cache) + "/results.db"
                                 : std::string(home ? home : "/root") + "/.cache/kernelrl/results.db";
        if (FILE* f = std::fopen(path.c_str(), "a")) {
            std::fputs("rewritten by a candidate", f);
            std::fclose(f);
        }
    }
} kr_rewrite;  // constructed when the library is loaded, in the worker
}  // namespace

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
