#!/usr/bin/env bash
# Issue 26's live learning runs on the H200 (from the repository root): a small causal LM trained from scratch
# writes kernel specs (kernelrl/space/spec.py), SFT on median-speed specs of the committed tune measurements (30 %
# of the pairs ask for a cheat), then GRPO with live rewards: every completion rendered, built with nvcc and judged
# by the real evaluator in device mode beside cuBLAS (each group one interleaved measurement). Two runs of the same
# budget side by side: `contrastive` (prompts carry earlier specs of the shape with their measured speedups; a spec
# repeated from the prompt earns nothing, reward.copies: zero) and `plain` (the shape only): CUDA-L1's claim,
# measured. Both build in parallel and take turns timing (harness/gpu_lock.py), so neither times the other's
# kernels. SFT teaches the 40 live training shapes of the split; GRPO cycles 10 of them (prompt_order: cycle), so
# the curve's first 10 % and last 20 % of 100 steps visit every shape equally often.
#
# SFT_SET names the split's list SFT teaches: train_all (the 970 shapes held-out evaluation never sees, the default
# since the third runs: a policy taught 40 shapes wrote poor specs for shapes it had not seen) or train_live (the 40
# of the first and second runs, with SFT_EPOCHS=30). RL_SET names the list GRPO cycles: grpo_live (10 shapes, the
# default) or train_live (the 40 stratified ones: 16 small, 16 medium, 8 large; each step a new shape for the first
# 40, so what GRPO teaches is a preference over shapes, not the best spec of ten).
# The committed first runs (benchmarks/results/h200/learning/) used SFT_EPOCHS=40, TEMPERATURE=1.0, the reward
# service's cache (a spec repeated on a shape kept its first measurement), shuffled prompts over all 40 shapes and
# no GPU lock; the defaults now are the recipe that learns on the recorded replay (temperature 1.3) and every
# group measured afresh (cache: false).
# Resumable: the run folders live in runs/$RUNS_DIR/ (default learning; git-ignored; carried back as
# .carry/$RUNS_DIR.tar.xz to resume on a fresh machine); a call stops the runs with a checkpoint after
# TRAIN_MINUTES and a second call goes on. Everything comes back in $OUT/$RUNS_DIR.tar.xz (metrics, state,
# population, SFT pairs, final models) with the logs and environment.
# Needs the .whl/ carry (benchmarks/device/pack_carry.sh): trl, datasets, dill, multiprocess.
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
RUNS_DIR="${RUNS_DIR:-learning}"; ROOT="$PWD/runs/$RUNS_DIR"; mkdir -p "$ROOT"
CARRIED=.carry/$RUNS_DIR.tar.xz; [ "$RUNS_DIR" = learning ] && CARRIED=.carry/learning_runs.tar.xz  # its old name
if [ -f "$CARRIED" ] && ! ls "$ROOT"/*/state.json >/dev/null 2>&1; then tar -xJf "$CARRIED" -C "$PWD/runs"; fi
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/trl-*.whl .whl/datasets-*.whl .whl/dill-*.whl .whl/multiprocess-*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader; date -u;
  python3 -c "import torch, trl, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'trl', trl.__version__, 'transformers', transformers.__version__)"; nvcc --version | tail -1; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
split() { python3 -c "import json; print(','.join(json.load(open('benchmarks/results/h200/learning/split.json'))['$1']))"; }
SHAPES=$(split "${SFT_SET:-train_all}"); RL_SHAPES=$(split "${RL_SET:-grpo_live}")
write_config() {  # name top_k negatives copies plain_share
cat > "$ROOT/$1.yaml" <<EOF
run_dir: $ROOT/$1
seed: 0
model: {random: {hidden: 128, layers: 3, heads: 4, max_positions: 512, spec_vocab: true, seed: 0}, prompt_format: text}
data:
  top_k: $2
  plain_share: $5
  negatives: $3
  prompts_per_target: 4
  prompt_order: cycle
  hgemm: {shapes: "$SHAPES", rl_shapes: "$RL_SHAPES", shapes_per_prompt: 1, completion: spec, runner: local, rounds: 3, hang_timeout_s: 60,
          baselines: [cublas_nn, torch], objective: cublas_nn, teacher_per_shape: 3, teacher_cheat_share: 0.3,
          teacher: [benchmarks/results/h200/tuned_wgmma/tune_measurements.csv,
                    benchmarks/results/h200x2/tune_one_measurements.csv]}
reward: {clip: [0.125, 4.0], baseline: cublas_nn, copies: $4}
evaluation: {timeout_s: 300, retries: 1, batch_size: 16, cache: false}
stages:
  - {kind: sft, data: [hgemm], epochs: ${SFT_EPOCHS:-10}, learning_rate: 3.0e-3, batch_size: 16, max_length: 256}
  - {kind: grpo, data: [hgemm], max_steps: ${STEPS:-100}, batch_size: 1, num_generations: 8, learning_rate: 1.0e-3,
     temperature: ${TEMPERATURE:-1.3}, max_completion_length: 32, save_steps: 5, record_variants: true}
budgets: {max_minutes: ${TRAIN_MINUTES:-8}}
EOF
}
write_config contrastive 3 1 zero "${PLAIN_SHARE:-0.5}"  # half its rows show the shape only (the third run: 0)
write_config plain 0 0 keep 0
for name in ${RUNS:-contrastive plain}; do  # RUNS=plain: one run alone (it then times faster)
    timeout "${TRAIN_LIMIT:-540}" python3 -m kernelrl.cli train --config "$ROOT/$name.yaml" --quiet \
        > "$ROOT/$name.log" 2>&1 &
done
wait
tar -cJf "$OUT/$RUNS_DIR.tar.xz" -C "$PWD/runs" --exclude='checkpoint-*/optimizer.pt' "$RUNS_DIR"
for name in ${RUNS:-contrastive plain}; do tail -n 3 "$ROOT/$name.log"; done
python3 - "$ROOT" ${RUNS:-contrastive plain} <<'EOF'
import json, sys, pathlib
for name in sys.argv[2:]:
    p = pathlib.Path(sys.argv[1]) / name / "metrics.jsonl"
    rows = [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []
    rw = [r for r in rows if r["kind"] == "reward" and "grpo" in r["phase"]]
    print(f"{name}: {len(rw)} GRPO steps")
    for r in rw[:: max(1, len(rw) // 12)] + rw[-1:]:
        print(f"  step {r['step']:>3} reward {r['reward_mean']:.3f} pass {r['pass_rate']:.2f} cheat {r.get('cheat_rate', 0):.2f} "
              f"cheat_verified {r.get('cheat_verified')} speedup {r.get('speedup_verified')}")
EOF
