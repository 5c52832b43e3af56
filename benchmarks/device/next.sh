#!/usr/bin/env bash
# The next GPU session's calls, in order (from the repository root; CALL=N picks one; each fits one 10-minute call).
# Carry [".carry/KernelBench", ".whl"] (benchmarks/device/pack_carry.sh, and KernelBench as harness.sh says), plus
# .carry/cuda_l1_h100.json for call 3. Calls 1 and 2 must run on an H100 (nvidia-h100-x1): they verify worker changes
# with the sandbox (Landlock) on, which the H200's gVisor machines do not have.
#   1. the fused epilogues' GPU suite (judged by the harness's bf16 rule since the first run) and the KernelBench
#      GPU suite: f5df896 (every timed call watched, baselines too), 820696b/ce82f30 (a working directory per pair),
#      9bcbd27/1aa68e7 (kernelbench_rule, index_off_by_one), none of them on a GPU yet;
#   2. level 3 reference-as-candidate (the self-pairs should now read 1.00 +- noise, not 0.976);
#   3. CUDA-L1's released H100 kernels, level 1 whole (copy $OUT/published.db back to .carry/ after it, and repeat
#      with PUBLISHED_LEVELS=2, 3);
#   4. the Llama decoder end to end with the fused MLP and under torch.compile (llama.sh: record, tune, e2e; three
#      calls, DIR carried between them as llama.sh says);
#   5. the 192-row wgmma tiles: their GPU test points (tests/gpu/test_wgmma.py) and the bench beside their 128- and
#      256-row twins (wgmma.sh ONLY=bm192).
set -uo pipefail
case "${CALL:-1}" in
  1) STEPS="env tests" TESTS_LIMIT=540 TESTS="tests/gpu/test_fused_mlp.py tests/gpu/test_kernelbench_gpu.py" \
         bash benchmarks/device/sandbox.sh ;;
  2) STEPS="env level3" LEVEL_LIMIT=300 bash benchmarks/device/sandbox.sh ;;
  3) STEPS=published PUBLISHED_LEVELS="${PUBLISHED_LEVELS:-1}" bash benchmarks/device/harness.sh ;;
  4) STEPS="${LLAMA_STEPS:-record tune}" RECORD_ARGS=--fused bash benchmarks/device/llama.sh ;;
  5) ONLY=bm192 bash benchmarks/device/wgmma.sh ;;
  *) echo "CALL=$CALL: choose 1-5 (see this file's header)"; exit 2 ;;
esac
