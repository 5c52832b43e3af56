#!/usr/bin/env bash
# Issues 4 and 5 on a machine of two GPUs (nvidia-h200-x2), from the repository root, in about 9 minutes: the work of
# the KernelBench guard check with benchmarks/device/kernelbench.sh, and benchmarks/suites/evolve_proof.py, split over two lanes that run at the same time.
#   GPU 0: the KernelBench guard check (no builds), every load_inline extension built once, the KernelBench GPU tests
#          (each adversarial candidate rejected for its reason, each honest one accepted) with the library-runtime
#          GPU tests, then issue 5's proof run (a scripted model replaying real kernels);
#   GPU 1: once the extensions are built, `kb eval` of the project's own tasks against all four baselines.
# Each lane writes under /tmp/lanes/<lane>; both are packed into $OUT (a call brings back 8 files).
# Carry .whl (ninja; openai and its dependencies): bash benchmarks/device/pack_carry.sh.
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; L=/tmp/lanes; mkdir -p "$OUT" "$L/kb" "$L/evolve"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
export TORCH_EXTENSIONS_DIR="$KERNELRL_CACHE/torch_extensions"
nvidia-smi -L | tee "$OUT/gpus.txt"

kb_and_evolve() {
    export CUDA_VISIBLE_DEVICES=0
    timeout 90 python3 benchmarks/suites/kb_guard_check.py cuda > "$L/kb/kb_guard_check.log" 2>&1
    # (the candidates' extensions were built here by a separate prebuild step; run_pairs builds them itself now)
    touch "$L/prebuilt"
    OUT="$L/kb" STEPS=tests TEST_LIMIT="${TEST_LIMIT:-200}" EXTRA_TESTS=tests/gpu/test_library.py \
        bash benchmarks/device/kernelbench.sh > "$L/kb/tests.txt" 2>&1
    PYTHONPATH="$PYTHONPATH:/tmp/site" timeout "${EVOLVE_LIMIT:-200}" \
        python3 benchmarks/suites/evolve_proof.py "$L/evolve" > "$L/evolve/evolve_proof.log" 2>&1
    echo "evolve proof exit $?" >> "$L/evolve/evolve_proof.log"
}

kb_eval() {
    export CUDA_VISIBLE_DEVICES=1
    while [ ! -f "$L/prebuilt" ]; do sleep 2; done
    OUT="$L/kb" STEPS=eval EVAL_LIMIT="${EVAL_LIMIT:-420}" bash benchmarks/device/kernelbench.sh > "$L/kb/eval.txt" 2>&1
}

start=$(date +%s)
kb_and_evolve & kb_eval & wait
echo "both lanes done in $(( $(date +%s) - start )) s" | tee -a "$OUT/gpus.txt"
tar -czf "$OUT/kb.tgz" -C "$L" kb
tar -czf "$OUT/evolve.tgz" -C "$L" evolve
tail -n 6 "$L/kb/kb_guard_check.log"; tail -n 30 "$L/kb/tests.txt"
tail -n 25 "$L/kb/eval.txt"; tail -n 25 "$L/evolve/evolve_proof.log"
