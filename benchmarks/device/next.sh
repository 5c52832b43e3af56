#!/usr/bin/env bash
# The next GPU session's calls, in order (from the repository root; CALL=N picks one; each fits one 10-minute call).
# Carry [".carry/KernelBench", ".whl"] (benchmarks/device/pack_carry.sh, and KernelBench as harness.sh says), plus
# .carry/cuda_l1_h100.json for call 3. Calls 1 and 2 must run on an H100 (nvidia-h100-x1): they verify worker changes
# with the sandbox (Landlock) on, which the H200's gVisor machines do not have.
#   1. the KernelBench and HGEMM GPU suites with the sandbox on: the worker changes since the last GPU run (f5df896
#      every timed call watched, 820696b/ce82f30 a working directory per pair, 9bcbd27/1aa68e7 kernelbench_rule, and
#      the in-process guards: the evaluator's modules, the standard library, the profiler, the dispatcher, the HGEMM
#      worker's watch) and their corpus cheats (patches_kernelrl_judge, patches_statistics_median,
#      hides_kernels_from_census, overrides_aten_kernel, cheat_python_at_load);
#   2. the fused epilogues' GPU suite, then level 3 reference-as-candidate (self-pairs should read 1.00 +- noise);
#   3. CUDA-L1's released H100 kernels, level 1 whole (copy $OUT/published.db back to .carry/ after it, and repeat
#      with PUBLISHED_LEVELS=2, 3);
#   4. the Llama decoder end to end with the fused MLP and under torch.compile (llama.sh: record, tune, e2e; three
#      calls, DIR carried between them as llama.sh says);
#   5. the 192-row wgmma tiles: their GPU test points (tests/gpu/test_wgmma.py) and the bench beside their 128- and
#      256-row twins (wgmma.sh ONLY=bm192).
set -uo pipefail
case "${CALL:-1}" in
  1) STEPS="env tests" TESTS_LIMIT=560 TESTS="tests/gpu/test_kernelbench_gpu.py tests/gpu/test_verification.py" \
         bash benchmarks/device/sandbox.sh ;;
  2) STEPS="tests level3" TESTS_LIMIT=200 LEVEL_LIMIT=330 TESTS=tests/gpu/test_fused_mlp.py \
         bash benchmarks/device/sandbox.sh ;;
  3) STEPS=published PUBLISHED_LEVELS="${PUBLISHED_LEVELS:-1}" bash benchmarks/device/harness.sh ;;
  4) STEPS="${LLAMA_STEPS:-record tune}" RECORD_ARGS=--fused bash benchmarks/device/llama.sh ;;
  5) ONLY=bm192 bash benchmarks/device/wgmma.sh ;;
  *) echo "CALL=$CALL: choose 1-5 (see this file's header)"; exit 2 ;;
esac
