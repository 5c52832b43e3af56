#!/usr/bin/env bash
# Tune the paper grid on the H200 (from the repository root). Resumable: run it again with the database it wrote
# and it goes on where it stopped. What it expects to find (both git-ignored, named in the run's carry list):
#   .whl/nvidia_cutlass-*.whl      CUTLASS headers (benchmarks/device/pack_carry.sh)
#   .carry/build-cache.tar.xz      optional: a build cache filled on a CPU machine, which spares the GPU machine the
#                                  compiles:  kernelrl tune --build-only --out LIB --shapes paper --arch sm_90a
#                                             tar -cJf .carry/build-cache.tar.xz -C "$KERNELRL_CACHE" build
#   .carry/tune.db.xz              optional: the database of an earlier run (this script's $OUT/tune.db.xz), to resume
# Environment: TUNE_MINUTES (budget, default 5), FAMILIES (default all), SHAPES (default paper), REFINE (a second
# round around each winner: up to this many one-step neighbours, default 0; prebuild them on the CPU machine with
# `kernelrl tune --build-only --refine N --out LIB --shapes paper --arch sm_90a`, LIB holding the first round),
# RAY (e.g. `local` on a machine of several GPUs: the shapes spread over all of them; carry
# .carry/ray-py3.12.tar.xz from benchmarks/device/pack_ray.sh), LEARN_FROM (measurements of an earlier run: the
# cost model's learned correction, e.g. benchmarks/results/h200x2/tune_one_measurements.csv), BASE (extend this
# library: e.g. FAMILIES=wgmma SHAPES=medium+large BASE=benchmarks/results/h200/tuned_library tunes the wgmma family
# on those shapes, measuring the library's own kernel beside it, and keeps the other shapes as they were), TOP_K and
# CONFIRM (kernelrl tune --top-k, --confirm), ACC (fp32 or fp16: the accumulator; an fp16 tune starts a library of
# its own, without BASE).
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT" "$KERNELRL_CACHE"
carry_build_cache
carry_cutlass
if [ -n "${RAY:-}" ]; then carry_ray; fi
DB=/tmp/tune.db  # handed back xz-compressed: a paper-grid database is ~18 MB, over the 16 MiB a result file may be
if [ -f .carry/tune.db.xz ] && [ ! -f "$DB" ]; then xz -dc .carry/tune.db.xz > "$DB"; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
FAMILIES="${FAMILIES:-all}"
if [ -n "${RUN_FAMILY_TESTS:-}" ]; then
    timeout "${TEST_LIMIT:-150}" python3 -m pytest -q -p no:cacheprovider -rfE tests/gpu/test_spaces.py tests/gpu/test_library.py \
        -k "${FAMILY_TESTS:-small or library}" \
        2>&1 | tee "$OUT/family_tests.log" | tail -15
    # A family whose representatives do not verify on this GPU is left out of the tuning run, not debugged on it.
    if grep -q "FAILED.*small" "$OUT/family_tests.log"; then FAMILIES="cutlass_sm90,mma_sync"; fi
fi
echo "families: $FAMILIES"
timeout "${TUNE_LIMIT:-420}" python3 -m kernelrl.cli tune --shapes "${SHAPES:-paper}" --families "$FAMILIES" \
    --out "$OUT/lib" --db "$DB" --budget-minutes "${TUNE_MINUTES:-5}" --batch 100 --timeout 15 \
    --refine "${REFINE:-0}" ${RAY:+--ray "$RAY"} ${LEARN_FROM:+--learn-from "$LEARN_FROM"} ${BASE:+--base "$BASE"} \
    ${TOP_K:+--top-k "$TOP_K"} ${CONFIRM:+--confirm "$CONFIRM"} --acc "${ACC:-fp32}" 2>&1 \
    | grep -v "^  built" > "$OUT/tune.log"
tail -n 25 "$OUT/tune.log"
# Only a handful of files come back: the library without its binaries (they rebuild from the cache) in one archive.
tar -czf "$OUT/lib.tar.gz" -C "$OUT" --exclude='lib/lib' lib 2>/dev/null && rm -rf "$OUT/lib"
# A run cut short by its time limit may leave pages in the write-ahead log: fold them in before packing.
python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
xz -T0 -6 -c "$DB" > "$OUT/tune.db.xz"
