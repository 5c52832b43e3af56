#!/usr/bin/env bash
# The next GPU session's first call (from the repository root on the H200), about 7 minutes:
#   1. benchmarks/suites/kb_guard_check.py: the KernelBench worker's verdicts on pure-PyTorch pairs (no builds), proving the
#      memory guard's host-side comparison (the first KB run flagged every candidate; see results/h200/summary.md);
#   2. benchmarks/device/kernelbench.sh: the adversarial corpus and the honest candidates through the GPU tests, then
#      `kb eval` of the own tasks, kernelbench_own.csv under $OUT.
# Carry .whl with the ninja wheel (load_inline needs it):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_17_x86_64 -d .whl ninja
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
timeout 90 python3 benchmarks/suites/kb_guard_check.py cuda 2>&1 | tee "$OUT/kb_guard_check.log" | tail -n 6
bash benchmarks/device/kernelbench.sh
