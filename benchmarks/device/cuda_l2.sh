#!/usr/bin/env bash
# CUDA-L2's released H100 kernels beside kernelrl's tuned library and every baseline on one H200 (issue 14), from the
# repository root. What to carry (prepare here, then name the paths in the run's carry list):
#   .carry/cuda_l2/      the 120 files benchmarks/results/h200/cuda_l2/selected.txt names, from CUDA-L2 @ dbe0177
#                        (kernels/h100_F32F16F16F32); with a fetched mirror M of github:deepreinforce-ai/CUDA-L2:
#                          mkdir -p .carry/cuda_l2 && git -C M archive HEAD kernels/h100_F32F16F16F32 | tar -x -C /tmp
#                          && xargs -I{} cp /tmp/kernels/h100_F32F16F16F32/{} .carry/cuda_l2/ \
#                             < benchmarks/results/h200/cuda_l2/selected.txt
#   .whl/                nvidia_cutlass-*.whl (CuTe headers for the files and the library's CUTLASS kernels;
#                        benchmarks/device/pack_carry.sh)
#   .carry/cuda_l2.db    (optional) an earlier call's database, returned as $OUT/cuda_l2.db: this call resumes it
#   .carry/cuda_l2_cache.tar.xz  (optional, strongly advised) the wrappers built on the CPU machine, which spares the
#                        GPU machine about 15 minutes of compiling (67-355 s a wrapper, measured):
#                          python benchmarks/suites/cuda_l2_prebuild.py .carry/cuda_l2 /tmp/cl2cache --untimed-padding
#                          tar -cJf .carry/cuda_l2_cache.tar.xz -C /tmp/cl2cache .
#                        (--untimed-padding: the wrappers offline mode and DEVICE_UNTIMED=1 device mode build)
# STEPS (default "wrapper offline device"), each its own device call if time is short (10 minutes a call):
#   wrapper: $OUT/wrapper_cost.md, the adapter's own per-call cost (benchmarks/suites/cuda_l2_wrapper_cost.py)
#   offline: $OUT/cuda_l2_offline.csv, offline mode with --untimed-padding (CUDA-L2's own protocol: padding and B^T
#            outside the timed call)
#   device:  $OUT/cuda_l2_device.csv, device mode (graph replay). Files that synchronize the device inside the call
#            get `synchronizes the device inside the call` (offline mode times them); fp16-accumulating files get
#            `acc mismatch` in both modes.
#   server:  $OUT/cuda_l2_server.csv, server mode (the paper's second mode: calls at random gaps, `kernelrl bench
#            --qps`, default 100 a second), with --untimed-padding as offline mode.
# DEVICE_UNTIMED=1: device mode pads and transposes outside the timed call too. The wrappers then build once for
# both modes (a wrapper's source depends on where it pads), which halves the compile time; the paper's shapes need
# padding only where a file's tile does not divide them.
# Each step builds what the machine lacks (a CUDA-L2 wrapper with torch's headers takes about a minute; 16 build at
# once; the build cache survives between calls only while the machine stays warm). LIB=none leaves the library out;
# LIBRARY names the committed library to bench beside the files (default: benchmarks/results/h200/tuned_wgmma/
# tuned_library, which needs .carry/build-cache.tar.xz for its CUTLASS kernels, as benchmarks/device/tune.sh says).
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
carry_cutlass
carry_ninja
mkdir -p "$KERNELRL_CACHE"
if [ -f .carry/cuda_l2_cache.tar.xz ]; then tar -xJf .carry/cuda_l2_cache.tar.xz -C "$KERNELRL_CACHE"; fi
carry_build_cache
DB="$OUT/cuda_l2.db"; [ -f .carry/cuda_l2.db ] && cp .carry/cuda_l2.db "$DB"
SHAPES="${SHAPES:-$(cat benchmarks/results/h200/cuda_l2/selected_shapes.txt)}"  # SHAPES: a subset (comma-separated)
LIBARG=()
if [ "${LIB:-}" != "none" ]; then
    LIB=/tmp/tuned_library; rm -rf "$LIB"; cp -r "${LIBRARY:-benchmarks/results/h200/tuned_wgmma/tuned_library}" "$LIB"
    timeout "${LIB_BUILD_LIMIT:-300}" python3 -m kernelrl.cli library build "$LIB" > "$OUT/library_build.log" 2>&1
    tail -n 2 "$OUT/library_build.log"; LIBARG=(--library "$LIB")
fi
STEPS=" ${STEPS:-wrapper offline device} "
if [[ $STEPS == *" wrapper "* ]]; then
    timeout "${WRAPPER_LIMIT:-240}" python3 benchmarks/suites/cuda_l2_wrapper_cost.py --out "$OUT/wrapper_cost.md" \
        > "$OUT/wrapper_cost.log" 2>&1; tail -n 12 "$OUT/wrapper_cost.log"
fi
for mode in offline device server; do
    [[ $STEPS == *" $mode "* ]] || continue
    extra=(); { [ "$mode" != device ] || [ -n "${DEVICE_UNTIMED:-}" ]; } && extra=(--untimed-padding)
    timeout "${BENCH_LIMIT:-540}" python3 -m kernelrl.cli bench --candidates .carry/cuda_l2 --shapes "$SHAPES" \
        --mode "$mode" "${extra[@]}" --baselines all "${LIBARG[@]}" --timeout 30 --db "$DB" \
        --csv "$OUT/cuda_l2_$mode.csv" > "$OUT/cuda_l2_$mode.log" 2>&1
    grep -v "^  built" "$OUT/cuda_l2_$mode.log" | tail -n 14
done
# cuda_l2_comparison.csv and comparison.md from whatever modes have a CSV
CSVS=(); for mode in offline device server; do [ -f "$OUT/cuda_l2_$mode.csv" ] && CSVS+=("$OUT/cuda_l2_$mode.csv"); done
[ ${#CSVS[@]} -gt 0 ] && python3 benchmarks/suites/cuda_l2_compare.py "$OUT" "${CSVS[@]}" | tail -n 30
