#!/usr/bin/env bash
# KernelBench-format tasks on the H200 (from the repository root), about 6 minutes of GPU time:
#   1. (gone: kb eval and run_pairs build every candidate's extensions themselves, in parallel, before evaluating)
#   2. the GPU test file: each adversarial candidate (tests/gpu/kb_adversarial) rejected for the reason its
#      docstring names, each honest one (examples/kernelbench/candidates) accepted (~2-3 min);
#   3. `kernelrl kb eval` of the honest candidates against the project's own tasks and all four baselines (eager,
#      torch.compile default and reduce-overhead, CUDA graph): $OUT/kernelbench_own.csv (~2-3 min).
# Each step has its own time limit (590 s in all, under one call's 10 minutes). The logs land beside the CSV.
# STEPS picks some of them (default "tests eval").
# load_inline needs ninja on PATH (torch.utils.cpp_extension refuses to build without it). Where the machine has
# none, carry a wheel, git-ignored, in the run's carry list:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl ninja
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
carry_ninja
command -v ninja >/dev/null 2>&1 || echo "WARNING: no ninja on PATH: every load_inline candidate will fail to build"
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-$KERNELRL_CACHE/torch_extensions}"
export MAX_JOBS="${MAX_JOBS:-4}"  # ninja jobs per extension (each has two sources)
export COLUMNS="${COLUMNS:-180}"  # rich tables in the logs: wide enough not to wrap
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
STEPS=" ${STEPS:-tests eval} "
[[ $STEPS == *" tests "* ]] && timeout "${TEST_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/gpu/test_kernelbench_gpu.py ${EXTRA_TESTS:-} \
    2>&1 | tee "$OUT/kernelbench_gpu_tests.log" | tail -n 40
[[ $STEPS == *" eval "* ]] && timeout "${EVAL_LIMIT:-270}" python3 -m kernelrl.cli kb eval --tasks examples/kernelbench/tasks \
    --candidates examples/kernelbench/candidates --rounds "${ROUNDS:-5}" ${KB_BASELINES:+--baselines "$KB_BASELINES"} --csv "$OUT/kernelbench_own.csv" \
    2>&1 | tee "$OUT/kernelbench_own.log" | tail -n 45
