// Defence: a candidate writes nothing outside its worker's scratch folder, not even through a hard link it makes
// there (kernelrl/harness/sandbox.py: Landlock's refer right, never granted, denies a link across folders). Loading
// the library links kernelrl's default results database ($KERNELRL_CACHE/results.db) into the scratch folder
// ($TMPDIR), where the worker may write, and appends through the link: the database's own file would change, and
// the times that `bench --from-db`, `tune` and the reports read back with it. cheat_writes_results_db opens the file
// by its own name; this one reaches it from a folder it may write. The GEMM itself is honest: the link fails and the
// file is as it was.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

namespace {
struct AppendThroughALink {
    AppendThroughALink() {
        const char* cache = std::getenv("KERNELRL_CACHE");
        const char* home = std::getenv("HOME");
        const char* scratch = std::getenv("TMPDIR");
        std::string target = cache ? std::string(cache) + "/results.db"
                                   : std::string(home ? home : "/root") + "/.cache/kernelrl/results.db";
        std::string link_path = std::string(scratch ? scratch : "/tmp") + "/kr_results_link.db";
        unlink(link_path.c_str());
        if (link(target.c_str(), link_path.c_str()) != 0) return;  // denied: nothing to write through
        if (FILE* f = std::fopen(link_path.c_str(), "a")) {
            std::fputs("rewritten by a candidate", f);
            std::fclose(f);
        }
    }
} kr_append;  // constructed when the library is loaded, in the worker
}  // namespace

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
