#!/usr/bin/env bash
# Issue 43's first H100 call (from the repository root, on an H100 with Landlock), each step with its own limit:
#   env.txt           kernel, driver, GPU, torch, Landlock ABI, the sandbox line
#   sandbox_diag.txt  which /proc grant CUDA needs under Landlock (benchmarks/device/diag/sandbox_cuda.sh)
#   gpu_tests_sandbox.log  tests/gpu/test_sandbox_gpu.py: confined HGEMM and KernelBench workers measure
#   newcomer.log      the README's first command as written, shortened (SHAPES, BUDGET minutes), sandbox on
#   few_shot.csv      KernelBench's few-shot and add examples (Triton, CuTe) and its unit-test kernels, sandbox on
#   (STEPS=level1, level2, level3) kb_levelN_reference.csv (+ _audit.csv, .md, .log): every task of the level at
#                     its real size against itself, with each task's tolerance audit (benchmarks/suites/kb_public.py)
#   (STEPS=tests)     gpu_tests.log: the GPU suites (tests/gpu), sandbox on; TESTS picks files (default all)
# Carry [".carry/KernelBench", ".whl"] (benchmarks/device/pack_carry.sh; KernelBench as benchmarks/device/harness.sh says).
#   (STEPS=multiturn) multiturn.log, multiturn.json, multiturn_<mode>/: issue 29's multi-turn evolve against the scripted
#                     model on MT_LIMIT (8) level-1 tasks, MT_MODES (sequential,overlap) halves (suites/multiturn_scripted.py),
#                     MT_BASELINES (default: evolve's four; eager: each evaluation several times cheaper)
# NUMBERS (a level step) takes a list: NUMBERS=45,51-52,96 measures those tasks again.
# STEPS picks steps (default "env diag newcomer fewshot").
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
source benchmarks/device/env.sh
carry_ninja
export COLUMNS=200
STEPS=" ${STEPS:-env diag sbtests newcomer fewshot} "
if [[ $STEPS == *" env "* ]]; then
  { date -u; uname -r; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
    python3 -c "from kernelrl.harness.sandbox import landlock_abi, describe; print('landlock', landlock_abi()); print(describe())"
    git rev-parse --short HEAD 2>/dev/null; } > "$OUT/env.txt" 2>&1
  cat "$OUT/env.txt"
fi
if [[ $STEPS == *" diag "* ]]; then
  timeout 120 bash benchmarks/device/diag/sandbox_cuda.sh > "$OUT/sandbox_diag.txt" 2>&1; cat "$OUT/sandbox_diag.txt"
fi
if [[ $STEPS == *" sbtests "* ]]; then  # confined workers start CUDA and measure (tests/gpu/test_sandbox_gpu.py)
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs -s tests/gpu/test_sandbox_gpu.py \
      > "$OUT/gpu_tests_sandbox.log" 2>&1
  tail -n 8 "$OUT/gpu_tests_sandbox.log"
fi
if [[ $STEPS == *" newcomer "* ]]; then  # the README's first command; offline: the carried wheels, no deps
  ( set -x
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . .whl/nvidia_cutlass-*.whl
    timeout 300 kernelrl tune --shapes "${SHAPES:-sample:4:0}" --out /tmp/LIB --budget-minutes "${BUDGET:-2}" &&
    timeout 200 kernelrl bench --library /tmp/LIB --shapes "${SHAPES:-sample:4:0}" --mode device --csv "$OUT/tuned.csv"
  ) > "$OUT/newcomer.log" 2>&1
  tail -n 25 "$OUT/newcomer.log"
fi
if [[ $STEPS == *" fewshot "* ]]; then
  carry_cute_dsl || true  # the CuTe example's package, where both halves were carried (pack_cute_dsl.sh)
  timeout "${FEWSHOT_LIMIT:-150}" python3 benchmarks/suites/kb_public.py --kernelbench "${KB:-.carry/KernelBench}" --what examples \
      --csv "$OUT/few_shot.csv" > "$OUT/few_shot.log" 2>&1
  tail -n 14 "$OUT/few_shot.log"
fi
for level in level1 level2 level3; do
  if [[ $STEPS == *" $level "* ]]; then
    part="${NUMBERS:+_${NUMBERS//,/_}}"  # NUMBERS=21-60: that part of the level, in its own files
    /usr/bin/time -f "$level: %e s" timeout "${LEVEL_LIMIT:-290}" python3 benchmarks/suites/kb_public.py \
        --kernelbench "${KB:-.carry/KernelBench}" --what "$level" ${NUMBERS:+--numbers "$NUMBERS"} \
        --csv "$OUT/kb_${level}${part}_reference.csv" > "$OUT/kb_${level}${part}_reference.log" 2>&1
    tail -n 14 "$OUT/kb_${level}${part}_reference.log"
  fi
done
if [[ $STEPS == *" multiturn "* ]]; then  # the scripted model needs openai (carried in .whl)
  python3 -m pip install -q --no-index --find-links .whl openai > /dev/null 2>&1 || echo "openai not installed"
  timeout "${MT_TIMEOUT:-560}" python3 benchmarks/suites/multiturn_scripted.py /tmp/multiturn \
      --tasks "${KB:-.carry/KernelBench}/KernelBench/level1" --limit "${MT_LIMIT:-8}" \
      --modes "${MT_MODES:-sequential,overlap}" ${MT_BASELINES:+--baselines "$MT_BASELINES"} \
      > "$OUT/multiturn.log" 2>&1
  for m in sequential overlap; do  # the logs only: the run's folders hold more files than a call brings back
    [[ -d /tmp/multiturn/$m ]] && mkdir -p "$OUT/multiturn_$m" &&
        cp /tmp/multiturn/$m/evolve.log /tmp/multiturn/$m/usage.jsonl "$OUT/multiturn_$m/" 2>/dev/null
  done
  cp /tmp/multiturn/multiturn.json "$OUT/" 2>/dev/null
  grep -v -i warn "$OUT/multiturn.log" | tail -n 14
fi
if [[ $STEPS == *" tests "* ]]; then
  # the CUTLASS headers for tests/gpu/test_spaces.py's cutlass_sm90 cases (the carried wheel; skipped without it)
  python3 -m pip install -q --no-index --no-deps .whl/nvidia_cutlass-*.whl > /dev/null 2>&1 ||
      echo "nvidia-cutlass wheel not installed: the CUTLASS cases will skip"
  timeout "${TESTS_LIMIT:-500}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs ${TESTS:-tests/gpu} \
      > "$OUT/gpu_tests.log" 2>&1
  tail -n 25 "$OUT/gpu_tests.log"
fi
