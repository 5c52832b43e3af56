#define KR_ACC_FP16 1
#include "hgemm_wmma.cu"
