#!/usr/bin/env bash
# The harness issue's GPU runs (from the repository root, on one H200), each with its own time limit:
#   1. adversarial_mixed.csv: every HGEMM honest_*, cheat_* and bad_* candidate of tests/gpu/hgemm_corpus benched
#      together, device and offline modes, three shapes (one with K >= 4096), with --referee (MIXED_REFEREE= for none);
#   2. kb_level1_reference.csv: all 100 KernelBench level-1 tasks against themselves, eager baseline;
#   3. kb_public_examples.csv: KernelBench's few-shot and add examples, and its unit-test kernels;
#   4. (STEPS=tests) the GPU test suites: HGEMM defences, KernelBench corpus, library, spaces;
#   5. (STEPS=level2 / level3) those levels against themselves (all 250 tasks with level1: kb_full/summary.md);
#   6. (STEPS=published) CUDA-L1's released H100 kernels judged against their own tasks, eager baseline
#      (CUDA_L1=path of optimized_cuda_code/h100.json, default .carry/cuda_l1_h100.json), resuming the database of
#      earlier calls: after each call, copy its published.db to .carry/published.db and carry it;
#      PUBLISHED_BASELINES=eager,compile_default on a later pass re-runs only the pairs that were timed (an untimed pair's
#      verdict is taken from the database), adding torch.compile beside eager;
#   7. (STEPS=probe) benchmarks/experiments/kb_selfpair_probe.py, the level-3 self-pair experiment (PROBE_ARGS);
#   8. (STEPS=kbtests) tests/gpu/test_kernelbench_gpu.py alone.
# KB=path of a KernelBench clone (default .carry/KernelBench); STEPS picks steps (default "mixed level1 examples").
# Before the call, on the CPU machine (both are git-ignored, carried with carry [".carry/KernelBench", ".whl"]):
#   the fetch tool's github:ScalingIntelligence/KernelBench, then
#   git -C <its git dir> archive HEAD KernelBench src/kernelbench/prompts src/kernelbench/unit_tests \
#       | tar -x -C .carry/KernelBench
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#       -d .whl ninja
#   and for STEPS=published: the fetch tool's github:deepreinforce-ai/CUDA-L1, then
#   git -C <its git dir> show HEAD:optimized_cuda_code/h100.json > .carry/cuda_l1_h100.json
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
carry_ninja
KB="${KB:-.carry/KernelBench}"
export COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
STEPS=" ${STEPS:-mixed level1 examples} "
if [[ $STEPS == *" mixed "* ]]; then
  /usr/bin/time -f "mixed: %e s" timeout "${MIXED_LIMIT:-200}" python3 -m kernelrl.cli bench --candidates tests/gpu/hgemm_corpus \
      --shapes 256x512x128,1024x1024x1024,128x256x4096 --mode device,offline --baselines torch,cublas_nn,cublaslt_auto_nn \
      --timeout 20 ${MIXED_REFEREE---referee} --db "$OUT/mixed.db" --csv "$OUT/adversarial_mixed.csv" \
      > "$OUT/adversarial_mixed.log" 2>&1
  tail -n 5 "$OUT/adversarial_mixed.log"
fi
if [[ $STEPS == *" level1 "* ]]; then
  timeout "${LEVEL1_LIMIT:-330}" python3 benchmarks/suites/kb_public.py --kernelbench "$KB" --what level1 \
      --csv "$OUT/kb_level1_reference.csv" > "$OUT/kb_level1_reference.log" 2>&1
  tail -n 9 "$OUT/kb_level1_reference.log"
fi
if [[ $STEPS == *" examples "* ]]; then
  timeout "${EXAMPLES_LIMIT:-120}" python3 benchmarks/suites/kb_public.py --kernelbench "$KB" --what examples \
      --csv "$OUT/kb_public_examples.csv" > "$OUT/kb_public_examples.log" 2>&1
  tail -n 9 "$OUT/kb_public_examples.log"
fi
for level in level2 level3; do
  if [[ $STEPS == *" $level "* ]]; then
    /usr/bin/time -f "$level: %e s" timeout "${LEVEL_LIMIT:-290}" python3 benchmarks/suites/kb_public.py --kernelbench "$KB" \
        --what "$level" --csv "$OUT/kb_${level}_reference.csv" > "$OUT/kb_${level}_reference.log" 2>&1
    tail -n 12 "$OUT/kb_${level}_reference.log"
  fi
done
if [[ $STEPS == *" published "* ]]; then  # PUBLISHED_LEVELS=1; a level takes more than one 10-minute call:
  # the database of the calls before (copied back here as .carry/published.db, carried) is resumed
  L="${PUBLISHED_LEVELS:-1}"; F="${L//,/_}"  # PUBLISHED_LEVELS=2,3: level 3 after level 2, in files named _l2_3
  [[ -f .carry/published.db ]] && cp .carry/published.db "$OUT/published.db"
  timeout "${PUBLISHED_LIMIT:-540}" python3 -m kernelrl.cli kb eval --published "cuda-l1:${CUDA_L1:-.carry/cuda_l1_h100.json}" \
      --published-levels "$L" --baselines "${PUBLISHED_BASELINES:-eager}" --rounds 3 --db "$OUT/published.db" --resume \
      --csv "$OUT/cuda_l1_h100_l$F.csv" > "$OUT/cuda_l1_h100_l$F.log" 2>&1
  [[ -f "$OUT/cuda_l1_h100_l$F.csv" ]] || python3 -m kernelrl.cli kb export --db "$OUT/published.db" \
      --csv "$OUT/cuda_l1_h100_l$F.csv"  # cut short: the pairs it finished
  grep -E "^\[[0-9]+/|pairs taken" "$OUT/cuda_l1_h100_l$F.log" | tail -n 3; tail -n 25 "$OUT/cuda_l1_h100_l$F.log"
fi
if [[ $STEPS == *" probe "* ]]; then
  timeout "${PROBE_LIMIT:-540}" python3 benchmarks/experiments/kb_selfpair_probe.py --kernelbench "$KB" ${PROBE_ARGS:-} \
      > "$OUT/kb_selfpair_probe.log" 2>&1
  grep -v -i warn "$OUT/kb_selfpair_probe.log" | tail -n 40
fi
if [[ $STEPS == *" kbtests "* ]]; then  # the KernelBench GPU suite alone (about 4 minutes)
  timeout "${TESTS_LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/gpu/test_kernelbench_gpu.py \
      > "$OUT/gpu_tests_kb.log" 2>&1
  tail -n 15 "$OUT/gpu_tests_kb.log"
fi
if [[ $STEPS == *" tests "* ]]; then
  timeout "${TESTS_LIMIT:-500}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/gpu \
      > "$OUT/gpu_tests.log" 2>&1
  tail -n 15 "$OUT/gpu_tests.log"
fi
python3 - "$OUT" <<'PY'
import csv, sys, collections
from pathlib import Path
p = Path(sys.argv[1]) / "adversarial_mixed.csv"
if p.exists():
    rows = list(csv.DictReader(open(p)))
    by = collections.defaultdict(list)
    for r in rows:
        by[r["method"]].append(r)
    for m, rs in sorted(by.items()):
        ok = sum(r["verified"] in ("1", "True", "true") for r in rs)
        print(f"{m:32s} verified {ok}/{len(rs)}  {sorted({(r.get('reason') or '')[:70] for r in rs if r['verified'] not in ('1','True','true')})[:2]}")
PY
