#!/usr/bin/env bash
# The tuned library against every baseline on the H200 (from the repository root): what
# benchmarks/results/h200/tuned_*.csv hold. Needs what benchmarks/device/tune.sh needs, with .carry/tune.db.xz from the
# tuning run(s): the library is rewritten from that database (nothing is re-measured, winners come from the cache).
# LIBRARY (a committed library folder, e.g. benchmarks/results/h200/tuned_wgmma/tuned_library): bench that one as
# committed, built here from its kernels/*.cu, instead of rewriting it (no database needed). RESUME (a carried
# final.db, e.g. .carry/final.db from a call that reached its limit): the benches go on from it (rows are keyed by
# the library's content, so only the same library resumes).
# Environment: TUNE_MINUTES (budget for shapes the tuning runs left, default 3; resumed shapes cost seconds), RAY
# (e.g. `local`: the paper-grid bench spreads over every GPU; the host-mode samples stay on one; carry
# .carry/ray-py3.12.tar.xz), REFINE and LEARN_FROM (as the tuning run had them, so its short lists and
# refined winners are read back), and SHAPES, FAMILIES, BASE, TOP_K, CONFIRM as the tuning run had them (see
# benchmarks/device/tune.sh; the bench always covers the whole paper grid), and ACC (fp16: the fp16-accumulation
# library and tuned_*_fp16acc.csv files, with cuBLAS's COMPUTE_16F baselines).
# STEPS (default "paper offline server tests overhead"): which of the steps after the library is written run, so a
# call that reached its 10-minute limit can be finished by another (the 1000-shape bench alone takes about 7 minutes
# on one H200): paper (tuned_paper_device.csv), offline and server (the sample:50:0 CSVs), tests (the library GPU
# tests), overhead (dispatch_overhead.txt).
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT" "$KERNELRL_CACHE"
carry_build_cache
carry_cutlass
if [ -n "${RAY:-}" ]; then carry_ray; fi
carry_ninja  # for the library's C++ dispatch fast path
LIB=/tmp/lib
if [ -n "${RESUME:-}" ]; then  # with its write-ahead log where a timed-out call left one beside it
    cp "$RESUME" "$OUT/final.db" || exit 1
    if [ -f "$RESUME-wal" ]; then cp "$RESUME-wal" "$OUT/final.db-wal"; fi
fi
ACC="${ACC:-fp32}"; SUFFIX=$([ "$ACC" = fp16 ] && echo _fp16acc || echo "")  # tuned_paper_device_fp16acc.csv
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -n "${LIBRARY:-}" ]; then  # a committed library, built here from its own kernels/*.cu
    rm -rf "$LIB" && cp -r "$LIBRARY" "$LIB" && rm -rf "$LIB/lib"
    kernelrl library build "$LIB" 2>&1 | grep -v "^  built" | tee "$OUT/library_build.log" | tail -n 5
else
    xz -dc .carry/tune.db.xz > /tmp/tune.db || exit 1
    python3 -m kernelrl.cli tune --shapes "${SHAPES:-paper}" --families "${FAMILIES:-all}" --out "$LIB" \
        --db /tmp/tune.db --budget-minutes "${TUNE_MINUTES:-3}" --batch 100 --timeout 15 --refine "${REFINE:-0}" \
        ${LEARN_FROM:+--learn-from "$LEARN_FROM"} ${BASE:+--base "$BASE"} ${TOP_K:+--top-k "$TOP_K"} \
        ${CONFIRM:+--confirm "$CONFIRM"} --acc "$ACC" 2>&1 \
        | grep -v "^  built" > "$OUT/tune_final.log"
    grep -E "^library|budget" "$OUT/tune_final.log"
    # What this call measured for shapes the tuning runs left: carried to the next call, which then rewrites the same
    # library (STEPS splits the bench over calls).
    python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" /tmp/tune.db
    xz -T0 -6 -c /tmp/tune.db > "$OUT/tune.db.xz"
fi
STEPS=" ${STEPS:-paper offline server tests overhead} "
if [[ $STEPS == *" paper "* ]]; then
    # PAPER_LIMIT (seconds, default none): stop the 1000-shape bench there and write what its run measured, so a call
    # near its 10 minutes still returns a CSV (tuned_paper_device*_partial.csv: this call's run; RESUME goes on from
    # final.db, and the next call's partial CSV holds what it adds).
    ${PAPER_LIMIT:+timeout "$PAPER_LIMIT"} python3 -m kernelrl.cli bench --library "$LIB" --shapes paper --mode device \
        --acc "$ACC" --db "$OUT/final.db" ${RAY:+--ray "$RAY"} --csv "$OUT/tuned_paper_device$SUFFIX.csv" 2>&1 \
        | grep -v "^  built" | tail -n 30
    if [ ! -f "$OUT/tuned_paper_device$SUFFIX.csv" ] && [ -f "$OUT/final.db" ]; then
        run=$(python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT MAX(run_id) FROM runs').fetchone()[0])" "$OUT/final.db")
        python3 benchmarks/suites/export_run.py "$OUT/final.db" --run "$run" --library "$LIB" \
            --csv "$OUT/tuned_paper_device${SUFFIX}_partial.csv"
    fi
fi
for mode in offline server; do
    [[ $STEPS == *" $mode "* ]] || continue
    kernelrl bench --library "$LIB" --shapes sample:50:0 --mode $mode --acc "$ACC" --db "$OUT/final.db" \
        --csv "$OUT/tuned_sample_$mode$SUFFIX.csv" 2>&1 | tail -n 12
done
if [[ $STEPS == *" tests "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/gpu/test_library.py 2>&1 | tail -n 3
fi
if [[ $STEPS == *" overhead "* ]]; then
    for shape in 64x64x64 1024x1024x1024 4096x4096x4096; do
        python3 benchmarks/suites/dispatch_overhead.py "$LIB" --shape $shape --calls 20000
    done 2>&1 | tee "$OUT/dispatch_overhead.txt"
fi
tar -czf "$OUT/lib.tar.gz" -C /tmp --exclude='lib/lib' lib
