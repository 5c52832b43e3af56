// Honest: the project's WMMA reference kernel as it is (any M, N, K; pads into its workspace inside the call).
#include "../../../examples/hgemm_wmma.cu"
