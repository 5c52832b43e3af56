#!/usr/bin/env bash
# The next GPU session's calls, in order (from the repository root; CALL=N picks one; each fits one 10-minute call).
# Carry [".carry/KernelBench", ".whl"] (benchmarks/device/pack_carry.sh, and KernelBench as harness.sh says), plus
# .carry/cuda_l1_h100.json and .carry/published.db for call 3. Calls 1-3 must run on an H100 (nvidia-h100-x1, or
# whatever the reply calls an H100): they verify worker changes with the sandbox (Landlock) on, which the H200's
# gVisor machines do not have.
# Done on 2026-12-06 23:21-23:41 UTC at b28209f (benchmarks/results/h100/summary.md, "Seventeenth session"): the
# KernelBench suite with the fence and the HGEMM results-database cheats (75 passed), the wgmma suite (8 passed) with
# the subtiled store and 192-row benches, the fused-epilogue suite (30 passed), CUDA-L1 level 1 whole and level 2's
# first 20 pairs, Nsight Compute on three large shapes.
# On 2026-12-07 02:56 UTC at 5ec108a call 1 gave no result: the suite's fixture (73 pairs in one run) had not
# finished in 450 s, where b28209f's whole suite took 391.5 s (benchmarks/results/h100/summary.md, "Eighteenth
# session"); the same 30 and 63 adversarial pairs on CPU workers take as long at both commits.
# On 2026-12-07 06:11 UTC at d3d76e1 call 0 ran (an H100 on image v1272): the 74 pairs in 409 s, every verdict as the
# suite expects, no stall, 65 worker starts (summary.md, "Nineteenth session"); call 7's three new cases passed.
# On 2026-12-07 13:02-13:25 UTC at 1877479 (benchmarks/results/h100/summary.md, "Twentieth session"): call 1 (78
# passed, the code-origin cheats among them), 5 (wgmma_subclusters/), 3 twice (level 2 finished), 9 on 68 shapes.
# Then, CPU only: 1e4d3f8 (guarded functions' code, the CPU thread count), 5c780b4, 38fe59e and ee7ea4e (the
# worker's own state and the objects it holds, the candidate's processes) change what a worker does, with eight
# new cheats and an honest max-autotune candidate: call 1 first (sandbox on, on an H100).
# On 2026-12-07 15:51-16:25 UTC at e2c873b (summary.md, "Twenty-first session"): call 1 (85 of 87: the two honest
# torch.compile candidates failed, their compile workers unable to start CUDA under the sandbox; fixed in 6530bd1 and
# those two pairs then accepted, the whole suite not run again) and 3 with PUBLISHED_LEVELS=3 (level 3 finished: the
# whole released set is judged). Then, CPU only: 06cd372 (routes to the worker and its connection closed: the call
# trace, the build wrapper, refused introspection, the spawn arguments, the announced report) and 7efabf1 (every
# worker message HMAC-tagged, checked before unpickling) change what every worker does, with four new cheats: call 1
# first again (sandbox on, on an H100), and one HGEMM call (7).
# On 2026-12-07 19:16-19:26 UTC at 14ad049 call 1 gave no result (87 pairs did not fit 560 s). On 2026-12-07
# 21:50-22:17 UTC at 8fa5932 (summary.md, "Twenty-third session"): call 0 twice (the 100 pairs, all as expected, the
# worker changes of the twenty-first and twenty-second sessions verified), 7 (19 passed), 9 on the other 47 shapes,
# 3 with PUBLISHED_LEVELS=2 PUBLISHED_BASELINES=eager,compile_default (39 of 83 pairs). Then, CPU only: the runner
# reads worker messages as plain data (30964d7) and the referee (cafadc9 and after: every accepted pair run again in
# two processes the candidate cannot reach) change what every run does, with the corpus cheat
# forges_result_through_memmove. First: call 0 with
#   FIRST=forges_result_through_memmove,forges_zeros_wide_softmax,forges_skips_timed_wide_softmax,10_SwishPlusOne,11_GeluMul,12_ScaleAddClamp,13_RMSNorm,5_SumDim,6_MaxDim,\
#   7_Softmax,8_LayerNorm,14_WideSoftmax,compiled_reduce_overhead_cloned,compiled_max_autotune,releases_cache LIMIT=15
# (sandbox on, H100): each accepted pair's line gives the worker's and the referee's speedup over eager: the referee's
# factor of 2 (referee.SPEEDUP_FACTOR) is calibrated from them; then a level-1 share at real size (call 2's kind,
# LEVEL_LIMIT) to see the referee's memory beside the largest tasks; then the timeline's other pairs.
# On 2026-12-08 (twenty-fourth session, no device time left: CPU only): the referee's stretches sized by the device's
# free memory (49a29ce), its workload-neutral parts moved to harness/ (e57c9c5), an HGEMM referee (423dba1, opt-in:
# kernelrl bench --referee), the HGEMM worker's shadowed-method check (cce7f81, corpus cheat_replaces_worker_judge)
# and the forge it cannot see (98cb3cd, cheat_forges_worker_report); the KernelBench referee judging by the worker's
# rule with seeded calls (fb900d7), digests on an output's own scale (f32fa0d), a helper review's fixes (846e270): call
# 0 as above (the two new wide-softmax forges among its first pairs), then call 7 (now with
# tests/gpu/test_hgemm_referee_gpu.py: honest libraries pass the HGEMM referee, the forge is rejected; and
# cheat_replaces_worker_judge in test_verification), sandbox on, H100. Once both pass, the HGEMM referee can be made
# the default for candidate files (bench, evolve).
# Next: 0 (the referee, above), 7, then 3 with PUBLISHED_LEVELS=2 PUBLISHED_BASELINES=eager,compile_default resuming
# `xz -dc benchmarks/results/h100/cuda_l1/published_8fa5932.db.xz` as .carry/published.db (44 pairs left), 9 with
# CL2_STEPS=server (server mode: not run yet), 8, 2, 4, 6.
#   0. the suite's pairs with a timeline (benchmarks/device/diag/kb_corpus_timeline.py: a line per build, worker
#      start, phase and verdict), which says where the time goes even when cut; then call 1 with a limit that fits;
#   1. (KB_SUITE_PART=1/2, then 2/2: the suite no longer fits one call) the KernelBench suite again after the victim record's review fixes (904ad66, 5f24b77: what a pair leaves in
#      its worker, kernelbench/pair_residue.py: libraries loaded from outside its folder, operators it defined,
#      modules, the environment in Python and C; bounded walks; no record for a candidate the build step did not
#      build; a stale lock empties the folder). The log's "a fresh worker after this pair" lines say which honest
#      pairs pay a worker restart (the rule's cost on a GPU is not measured yet): STEPS=tests,
#      TESTS=tests/gpu/test_kernelbench_gpu.py (+ the HGEMM results-database cheats), TESTS_LIMIT=560 (75 tests took
#      392 s);
#   3. CUDA-L1's released H100 kernels, level 2 resumed after its first 20 pairs, then level 3: first
#      `xz -dc benchmarks/results/h100/cuda_l1/published_b28209f.db.xz > .carry/published.db`, carry it, run with
#      PUBLISHED_LEVELS=2 (then 3), and copy each call's $OUT/published.db back to .carry/published.db;
#   5. the subtiled 256x128 and 128x256 points in CTA pairs (cuBLAS's large-shape kernels are 2-CTA clusters
#      multicasting A) beside their single-CTA twins (wgmma.sh ONLY=subclusters) and the wgmma suite;
#   2. level 3 reference-as-candidate whole (LEVEL_LIMIT=330): the CSV's time_spread says whether an RNN self-pair
#      off 1.00 (36_LSTMHn, 41_GRUBidirectional: 0.83-1.08 in four runs) is a slow spell on one side;
#   4. the Llama decoder end to end with the fused MLP and under torch.compile (llama.sh: record, tune, e2e; three
#      calls, DIR carried between them as llama.sh says): the tuner's grid now has the subtiled store;
#   7. the cheats added on 2026-12-07: cuDNN's switches and per-area TF32 (tests/gpu/test_kernelbench_switches.py), a
#      library that sets a timer and a handler at load (hgemm_corpus/cheat_timer_at_load.cu), with the rest of the
#      HGEMM corpus (about 2 minutes);
#   8. KernelBench's few-shot examples with the CuTe DSL installed (issue 28: its CuTe example got `environment`):
#      three calls on one warm machine, call K carrying .carry/cute_dsl_K, the last also .carry/KernelBench and
#      .whl/ninja-1.13.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl (the tracked tree is 38 MB of the
#      64 MiB a call sends; benchmarks/device/pack_cute_dsl.sh makes the parts);
#   6. Nsight Compute on this card: the family's points beside cuBLAS's kernel on the medium shapes
#      (benchmarks/experiments/profile_gap.py --points; the large ones are in benchmarks/results/h100/ncu_large/);
#   9. CUDA-L2's released H100 kernels on their home card (issue 30: the seed's claim tested where it was made): the
#      115 shapes of benchmarks/results/h200/cuda_l2/comparison/ in offline and device mode beside torch.matmul,
#      best-of-layout cuBLAS and cuBLASLt (heuristic and autotuned), without the library (LIB=none: it was tuned on
#      the H200). Carry .whl (nvidia-cutlass), .carry/cuda_l2 and .carry/cuda_l2_cache.tar.xz, made as
#      benchmarks/device/cuda_l2.sh says (the wrappers take about 100 minutes of this machine's 2 cores).
set -uo pipefail
case "${CALL:-0}" in
  0) OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; source benchmarks/device/env.sh; carry_ninja
     { date -u; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
     timeout "${TIMELINE_LIMIT:-540}" python3 benchmarks/device/diag/kb_corpus_timeline.py > "$OUT/kb_timeline.log" 2>&1
     echo "rc=$?"; grep -v -i warn "$OUT/kb_timeline.log" | grep -E "^ +[0-9.]+s (worker|pair|done|no event|[0-9]+ pairs)" | tail -n 40 ;;
  1) STEPS="env tests" TESTS_LIMIT=560 TESTS="tests/gpu/test_kernelbench_gpu.py tests/gpu/test_verification.py::test_a_library_that_writes_the_results_database_at_load_leaves_it_as_it_was" \
       bash benchmarks/device/sandbox.sh
     # the what-a-pair-leaves cases (CPU workers) with this machine's sandbox: Landlock is what they run under here
     timeout "${CPU_LIMIT:-110}" python3 -m pytest -q -p no:cacheprovider -rfEs tests/kernelbench/test_extension_fence.py tests/kernelbench/test_process_settings.py \
       > "${OUT:-/tmp/out}/cpu_fence_tests.log" 2>&1; tail -n 3 "${OUT:-/tmp/out}/cpu_fence_tests.log"
     echo "fresh workers: $(grep -c 'a fresh worker after this pair' "${OUT:-/tmp/out}/gpu_tests.log")" ;;
  2) STEPS="level3" LEVEL_LIMIT=330 bash benchmarks/device/sandbox.sh ;;
  3) STEPS=published PUBLISHED_LEVELS="${PUBLISHED_LEVELS:-2,3}" bash benchmarks/device/harness.sh ;;
  4) STEPS="${LLAMA_STEPS:-record tune}" RECORD_ARGS=--fused bash benchmarks/device/llama.sh ;;
  5) ONLY=subclusters BENCH_LIMIT=200 TESTS_LIMIT=220 bash benchmarks/device/wgmma.sh
     rm -f "${OUT:-/tmp/out}/wgmma.db" ;;  # at most 8 files come back: the CSV holds the database's rows
  6) OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT/ncu"; source benchmarks/device/env.sh
     nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/ncu/gpu.txt"
     sub=wgmma_f32_kn_128x128x64_s5_r8_k1_co_es; wide=wgmma_f32_kn_128x256x64_s4_r8_k1_co_es  # wgmma_subtile/'s best
     timeout "${PROFILE_LIMIT:-560}" python3 benchmarks/experiments/profile_gap.py - "$OUT/ncu" --points \
       "2048x2048x2048=$wide,1024x4096x4096=$wide,2048x1024x1024=$sub,1024x1024x1024=$sub,512x1024x8192=$sub,\
512x512x4096=$sub" > "$OUT/ncu/profile.txt" 2>&1; echo "rc=$?"; tail -n 80 "$OUT/ncu/profile.txt" ;;
  7) STEPS="env tests" TESTS_LIMIT="${TESTS_LIMIT:-300}" TESTS="tests/gpu/test_hgemm_referee_gpu.py tests/gpu/test_kernelbench_switches.py tests/gpu/test_verification.py::test_broken_candidate_is_rejected_for_its_reason" \
       bash benchmarks/device/sandbox.sh ;;
  8) source benchmarks/device/env.sh; carry_cute_dsl  # call K carries .carry/cute_dsl_K (the last, .whl/ninja too)
     if [ -d /tmp/cutedsl ]; then STEPS="env fewshot" FEWSHOT_LIMIT=400 bash benchmarks/device/sandbox.sh; fi ;;
  9) export SHAPES="${SHAPES:-$(cat benchmarks/results/h200/cuda_l2/comparison/shapes.txt)}"
     LIB=none DEVICE_UNTIMED=1 STEPS="${CL2_STEPS:-offline device}" BENCH_LIMIT="${BENCH_LIMIT:-260}" \
       bash benchmarks/device/cuda_l2.sh ;;
  *) echo "CALL=$CALL: choose 0-9 (see this file's header)"; exit 2 ;;
esac
