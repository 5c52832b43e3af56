#!/usr/bin/env bash
# Issue 26's held-out evaluation on the H200 (from the repository root), after benchmarks/device/learning.sh: on the
# 30 held-out shapes of benchmarks/results/h200/learning/split.json (no training prompt or SFT pair names them),
# k = 8 samples of each policy (sft: the SFT model the contrastive run started GRPO from; grpo: the contrastive
# run's final model; grpo_plain: the plain run's), 8 uniform random specs and the cost model's pick, every method's
# specs of a shape in one interleaved measurement beside cuBLAS (device mode). The policies write their 8 in TURNS
# turns (default 2 of 4), each measured before the next: the contrastive policy then reads its own earlier specs
# with their speedups, as in training; the others read the plain prompt again. Then every method's best spec of a
# shape is measured once more, all together (--confirm), and that is what best.csv reports. Then the GPU test that
# every trick a spec can ask for is caught (SKIP_TRICKS=1 skips it). heldout.csv grows shape by shape: a call
# stopped by its time limit keeps the shapes it finished (they come back in $OUT/heldout/), and RESUME=1 with that
# folder carried as runs/heldout goes on from there.
# Needs runs/$RUNS_DIR/ (default learning; left by the training calls, or carried as .carry/$RUNS_DIR.tar.xz, for
# learning .carry/learning_runs.tar.xz) and the .whl/ carry. PLAIN_DIR (default RUNS_DIR) names the runs folder
# whose plain run gives grpo_plain.
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
carried() { [ "$1" = learning ] && echo .carry/learning_runs.tar.xz || echo ".carry/$1.tar.xz"; }
RUNS_DIR="${RUNS_DIR:-learning}"; PLAIN_DIR="${PLAIN_DIR:-$RUNS_DIR}"
for dir in "$RUNS_DIR" "$PLAIN_DIR"; do
    if ! ls "$PWD/runs/$dir"/*/state.json >/dev/null 2>&1 && [ -f "$(carried "$dir")" ]; then
        mkdir -p "$PWD/runs" && tar -xJf "$(carried "$dir")" -C "$PWD/runs"; fi
done
ROOT="$PWD/runs/$RUNS_DIR"
[ -n "${RESUME:-}" ] && EVAL_DIR="$PWD/runs/heldout"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/trl-*.whl .whl/datasets-*.whl .whl/dill-*.whl .whl/multiprocess-*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader; date -u;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > "$OUT/eval_env.txt" 2>&1
# a phase's model: the one it wrote when done, else its newest checkpoint (a run its time budget stopped)
model() { python3 -c "
import json, pathlib
done = json.load(open('$1/state.json'))['done']
cks = sorted(pathlib.Path('$1/$2').glob('checkpoint-*'), key=lambda p: int(p.name.split('-')[1]))
print(done.get('$2') or (cks[-1] if cks else ''))"; }
SFT=$(model "$ROOT/contrastive" 0-sft-hgemm); GRPO=$(model "$ROOT/contrastive" 1-grpo-hgemm)
PLAIN=$(model "$PWD/runs/$PLAIN_DIR/plain" 1-grpo-hgemm)
for ck in "$GRPO" "$PLAIN"; do  # a trainer checkpoint holds no tokenizer: the SFT model's is the same one
    [ -f "$ck/tokenizer.json" ] || cp "$SFT"/tokenizer* "$SFT"/special_tokens_map.json "$ck/" 2>/dev/null; done
echo "sft=$SFT grpo=$GRPO grpo_plain=$PLAIN" | tee "$OUT/eval_models.txt"
timeout "${EVAL_LIMIT:-420}" python3 -m kernelrl.cli train eval --split benchmarks/results/h200/learning/split.json \
    --policy sft="$SFT" --policy grpo="$GRPO" --policy grpo_plain="$PLAIN" --k 8 --turns "${TURNS:-2}" --contrastive grpo --confirm --random 8 --cost-model ${RESUME:+--resume} \
    --baselines cublas_nn,torch --objective cublas_nn --rounds 3 --out "${EVAL_DIR:-$OUT/heldout}" 2>&1 | tee "$OUT/heldout.log" | tail -n 30
# stopped by its limit: the summaries of the shapes it finished (the missing ones are named in summary.json)
[ -f "${EVAL_DIR:-$OUT/heldout}/summary.md" ] || python3 -m kernelrl.cli train eval --report \
    --split benchmarks/results/h200/learning/split.json --policy sft="$SFT" --policy grpo="$GRPO" \
    --policy grpo_plain="$PLAIN" --k 8 --turns "${TURNS:-2}" --contrastive grpo --confirm --random 8 --cost-model \
    --baselines cublas_nn,torch --objective cublas_nn --rounds 3 --out "${EVAL_DIR:-$OUT/heldout}" | tail -n 12
[ -z "${EVAL_DIR:-}" ] || cp -r "$EVAL_DIR" "$OUT/heldout"
[ -n "${SKIP_TRICKS:-}" ] || timeout 150 python3 -m pytest -q tests/gpu/test_spec_tricks.py 2>&1 | tail -n 5 | tee "$OUT/gpu_spec_tricks.log"
