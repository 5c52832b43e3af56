#!/usr/bin/env bash
# Reproduces benchmarks/results/h200/baselines_*.csv on a GPU machine (run from the repository root).
# All seven baselines and the WMMA reference candidate, fp32 accumulation, every method interleaved per shape.
set -euo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-benchmarks/results/h200}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
kernelrl bench --shapes paper --mode device --candidates examples/hgemm_wmma.cu \
    --db "$OUT/h200.db" --csv "$OUT/paper_device.csv"
kernelrl bench --shapes sample:50:0 --mode offline,server --candidates examples/hgemm_wmma.cu \
    --db "$OUT/h200.db" --csv "$OUT/sample_host.csv"
