// Defence: a library changes nothing of the process that the methods after it run under. Loading this one sets an
// interval timer from a static initializer, with SIGALRM's default action (end the process): three seconds later the
// worker dies during whatever runs then (a baseline's timing, another candidate's checks), and that method gets the
// crash. It also turns SIGTERM off, as a library that wants to outlive its run would. The GEMM itself is honest, so
// only the process-settings check (harness/process_settings.py: timers and handlers as the kernel holds them) can
// name it; the worker puts both back.
#include <csignal>
#include <sys/time.h>

#define kernelrl_hgemm kr_ref_hgemm
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm

namespace {
struct Alarm {
    Alarm() {
        itimerval later = {};
        later.it_value.tv_sec = 3;
        setitimer(ITIMER_REAL, &later, nullptr);
        signal(SIGTERM, SIG_IGN);
    }
} kr_alarm;  // constructed when the library is loaded
}  // namespace

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    return kr_ref_hgemm(A, B, C, M, N, K, workspace, workspace_bytes, stream);
}
