#!/usr/bin/env bash
# The next GPU session's calls, in order (from the repository root; CALL=N picks one; each fits one 10-minute call).
# Carry [".carry/KernelBench", ".whl"] (benchmarks/device/pack_carry.sh, and KernelBench as harness.sh says), plus
# .carry/cuda_l1_h100.json for call 3. Calls 1-3 must run on an H100 (nvidia-h100-x1, or whatever the reply calls an
# H100): they verify worker changes with the sandbox (Landlock) on, which the H200's gVisor machines do not have.
# Done on 2026-12-06 20:10-20:41 UTC at bda2948 (benchmarks/results/h100/summary.md, "Sixteenth session"): the
# KernelBench suite (72 passed), the HGEMM verification suite (23 passed), the fused-epilogue suite (24 passed), the
# first 34 CUDA-L1 level-1 pairs, the level-3 RNN self-pairs four times.
#   3. CUDA-L1's released H100 kernels, level 1 whole (77 pairs): the first GPU run of the failed-build replay
#      (64e3ab9: the worker no longer compiles again an extension the build step saw fail; the pairs that ran without
#      their extension say so in `notes`); then PUBLISHED_LEVELS=2 and 3, copying $OUT/published.db back to
#      .carry/published.db (carried) between calls if a level does not finish;
#   1. the KernelBench suite again after 64e3ab9..d15c057 (the failed-build replay, the JSON build pipe, the extension
#      fence with its corpus cheat rewrites_other_extension, each side's time_spread) and the HGEMM results-database cheats (the new
#      cheat_links_results_db): STEPS=tests
#      TESTS=tests/gpu/test_kernelbench_gpu.py, TESTS_LIMIT=560 (72 tests took about 480 s with the HGEMM file behind);
#   2. level 3 reference-as-candidate whole (LEVEL_LIMIT=330): the CSV's time_spread says whether an RNN self-pair
#      off 1.00 (36_LSTMHn, 41_GRUBidirectional: 0.83-1.08 in four runs) is a slow spell on one side;
#   4. the Llama decoder end to end with the fused MLP and under torch.compile (llama.sh: record, tune, e2e; three
#      calls, DIR carried between them as llama.sh says);
#   5. the subtiled TMA-store epilogue (epilogue=tma_sub: a 256x128 tile with a fourth stage) beside the whole-tile
#      staging and the direct store (wgmma.sh ONLY=subtile), the 192-row tiles beside their 128- and 256-row twins
#      (ONLY=bm192), and both through every evaluator check (tests/gpu/test_wgmma.py, which has their points);
#   6. Nsight Compute on this card: the family's fastest point of benchmarks/results/h100/wgmma_bm256/ on each of its
#      large and medium shapes, and cuBLAS's kernel (torch.matmul) beside it (benchmarks/experiments/profile_gap.py
#      --points), so the next gap on the H100 is read, not guessed.
set -uo pipefail
case "${CALL:-1}" in
  1) STEPS="env tests" TESTS_LIMIT=560 TESTS="tests/gpu/test_kernelbench_gpu.py tests/gpu/test_verification.py::test_a_library_that_writes_the_results_database_at_load_leaves_it_as_it_was" \
       bash benchmarks/device/sandbox.sh ;;
  2) STEPS="level3" LEVEL_LIMIT=330 bash benchmarks/device/sandbox.sh ;;
  3) STEPS=published PUBLISHED_LEVELS="${PUBLISHED_LEVELS:-1}" bash benchmarks/device/harness.sh ;;
  4) STEPS="${LLAMA_STEPS:-record tune}" RECORD_ARGS=--fused bash benchmarks/device/llama.sh ;;
  5) O="${OUT:-/tmp/out}"
     # at most 8 files come back: the databases (the CSVs hold their rows) are left behind
     OUT="$O/subtile" ONLY=subtile BENCH_LIMIT=170 TESTS_LIMIT=0 bash benchmarks/device/wgmma.sh
     rm -f "$O/subtile/wgmma.db"
     OUT="$O/bm192" ONLY=bm192 BENCH_LIMIT=170 TESTS_LIMIT=220 bash benchmarks/device/wgmma.sh
     rm -f "$O/bm192/wgmma.db" ;;
  6) OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT/ncu"; source benchmarks/device/env.sh
     nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/ncu/gpu.txt"
     big=wgmma_f32_kn_256x128x64_s3_r8_k1_co_et; med=wgmma_f32_kn_128x128x64_s3_r8_k1_co_et
     thin=wgmma_f32_kn_128x64x64_s5_r8_k1_co
     timeout "${PROFILE_LIMIT:-560}" python3 benchmarks/experiments/profile_gap.py - "$OUT/ncu" --points \
       "4096x4096x4096=$big,8192x8192x8192=$big,4096x4096x1024=$big,1024x4096x4096=$big,2048x2048x2048=$big,\
4096x4096x4096=wgmma_f32_nk_256x128x64_s4_r8_k1_co,2048x1024x1024=$med,1024x1024x1024=$thin,512x1024x8192=$thin,\
512x512x4096=$thin" > "$OUT/ncu/profile.txt" 2>&1; echo "rc=$?"; tail -n 80 "$OUT/ncu/profile.txt" ;;
  *) echo "CALL=$CALL: choose 1-6 (see this file's header)"; exit 2 ;;
esac
