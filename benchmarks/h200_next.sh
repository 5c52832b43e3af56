#!/usr/bin/env bash
# A GPU session's first call (from the repository root on the H200): every GPU test (evaluator defences, baselines,
# CUDA-L2 adapter, the families' points, the library runtime), then a short tuning run whose database and library
# come back under $OUT. CUTLASS headers must travel as a wheel: here, once,
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl nvidia-cutlass==4.2.0.0
# and name .whl in the run's carry list.
set -uo pipefail
source benchmarks/device_env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
if ls .whl/nvidia_cutlass-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/nvidia_cutlass-*.whl
    export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
timeout "${TEST_LIMIT:-330}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/gpu tests/test_cuda_l2_adapter.py \
    2>&1 | tee "$OUT/gpu_tests.log" | tail -40
timeout "${TUNE_LIMIT:-200}" python3 -m kernelrl.cli tune --shapes "${TUNE_SHAPES:-sample:12:0}" --out "$OUT/lib" \
    --budget-minutes 2 --db "$OUT/tune.db" 2>&1 | tee "$OUT/tune.log" | tail -30
