#!/usr/bin/env bash
# The library in a real model on one H200 (from the repository root; STEPS picks steps, one device call each):
#   record: DIR/shapes.json, the GEMMs of a 4-layer Llama decoder (hidden 4096, intermediate 14336, 32 heads, 8 KV
#           heads, bf16, random weights) in prefill 1 x 2048 and decode at batch 1, 8 and 64 over a 2048-token cache;
#   tune:   DIR/lib, `kernelrl tune --shapes DIR/shapes.json --families wgmma` (nt bf16, each (N, K) over an M grid);
#   bench:  DIR/gemm_device.csv, the library (`kernelrl`) against F.linear's product (torch), cuBLAS TN and cuBLASLt
#           autotuning TN on the recorded shapes, device mode;
#   e2e:    DIR/e2e.csv and DIR/e2e.md (benchmarks/suites/llama_e2e.py): E2E_METHODS (eager, kernelrl.patch and
#           kernelrl.patch with fuse_mlp, interleaved), then COMPILE_METHODS in a process of their own (torch.compile
#           max-autotune-no-cudagraphs, unpatched, patched and patched+fused, interleaved; compile_default... for the
#           default mode). The fused methods run on a library tuned from the plain model too: the gate/up GEMM
#           borrows one projection's kernel (library/fused.py); RECORD_ARGS=--fused records it to tune it itself.
# DIR defaults to /tmp/kernelrl_llama; every step ends by packing it, without the library's compiled lib/, into
# $OUT/llama_dir.tgz (a device call returns at most 8 files). Unpack that under .carry/ here, carry it, and point
# DIR at it on the next call: the library rebuilds its lib/ from kernels/*.cu when it loads.
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; DIR="${DIR:-/tmp/kernelrl_llama}"; mkdir -p "$DIR"
export COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
STEPS=" ${STEPS:-record tune} "
if [[ $STEPS == *" record "* ]]; then
  timeout "${RECORD_LIMIT:-300}" python3 benchmarks/suites/llama_e2e.py record --out "$DIR" ${RECORD_ARGS:-} \
      > "$OUT/record.log" 2>&1
  tail -n 2 "$OUT/record.log"
fi
if [[ $STEPS == *" tune "* ]]; then
  # without a record step in this DIR: the shapes recorded on the H200 and committed
  [ -f "$DIR/shapes.json" ] || cp benchmarks/results/h200/llama/shapes.json "$DIR/"
  timeout "${TUNE_LIMIT:-540}" python3 -m kernelrl.cli tune --shapes "$DIR/shapes.json" --families wgmma \
      --out "$DIR/lib" --db "$DIR/tune.db" --budget-minutes "${TUNE_MINUTES:-7}" ${TUNE_ARGS:-} > "$OUT/tune.log" 2>&1
  tail -n 12 "$OUT/tune.log"
fi
if [[ $STEPS == *" bench "* || $STEPS == *" e2e "* ]]; then
  # a carried DIR has no lib/: build it here (content-hash cached, so a library just tuned here costs nothing)
  python3 -m kernelrl.cli library build "$DIR/lib" > "$OUT/library_build.log" 2>&1; tail -n 2 "$OUT/library_build.log"
fi
if [[ $STEPS == *" bench "* ]]; then
  shapes=$(python3 -c "import json,sys; print(','.join(sorted({f\"{s['m']}x{s['n']}x{s['k']}\" for s in json.load(open(sys.argv[1]))['shapes'] if s['layout'] == 'nt'})))" "$DIR/shapes.json")
  timeout "${BENCH_LIMIT:-400}" python3 -m kernelrl.cli bench --library "$DIR/lib" --shapes "$shapes" --layout nt \
      --dtype bf16 --mode device --baselines torch,cublas_tn,cublaslt_auto_tn --db "$DIR/tune.db" \
      --csv "$DIR/gemm_device.csv" > "$OUT/bench.log" 2>&1
  tail -n 12 "$OUT/bench.log"
fi
if [[ $STEPS == *" e2e "* ]]; then
  # torch.compile in its own process: a CUDA error there (its max-autotune benchmarking) cannot end the others'
  # rows. --append keeps DIR/e2e.csv's other rows (COMPILE=0 keeps an earlier run's compile rows as they are;
  # COMPILE_ARGS="--settings decode_b64" re-measures one setting).
  timeout "${E2E_LIMIT:-200}" python3 benchmarks/suites/llama_e2e.py e2e --out "$DIR" --library "$DIR/lib" \
      --methods "${E2E_METHODS:-eager,kernelrl,kernelrl+fused}" --append > "$OUT/e2e.log" 2>&1
  if [[ ${COMPILE:-1} == 1 ]]; then
    timeout "${COMPILE_LIMIT:-360}" python3 benchmarks/suites/llama_e2e.py e2e --out "$DIR" --library "$DIR/lib" \
        --methods "${COMPILE_METHODS:-compile,compile+kernelrl,compile+kernelrl+fused}" --append \
        ${COMPILE_ARGS:-} > "$OUT/e2e_compile.log" 2>&1
  fi
  cat "$DIR/e2e.md"
fi
tar -czf "$OUT/llama_dir.tgz" -C "$(dirname "$DIR")" --exclude='*.so' "$(basename "$DIR")"
