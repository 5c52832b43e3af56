// Defence: fp32-accumulation tolerance (fp16-accumulating kernel whose info claims "acc":"fp32").
#define KR_ACC_FP16 1
#define kernelrl_hgemm_info kr_ref_hgemm_info
#include "../../../examples/hgemm_wmma.cu"
#undef kernelrl_hgemm_info

// The lie: the kernel rounds its running sums to fp16 every k-step, yet asks for fp32 tolerances.
extern "C" const char* kernelrl_hgemm_info(void) {
    return "{\"acc\":\"fp32\",\"family\":\"wmma_reference\",\"params\":{\"BM\":128,\"BN\":128,\"BK\":32,"
           "\"WM\":64,\"WN\":32,\"warps\":8,\"stages\":2}}";
}
