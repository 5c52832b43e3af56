#!/usr/bin/env bash
# `kernelrl train` on the H200 (from the repository root): all three stages (SFT on a verified seed, one
# self-supervised round, GRPO) with a small random model and the REAL evaluator (nvcc, every defence, device-mode
# timing beside torch.matmul and cuBLAS) on four HGEMM shapes. About 4-5 minutes; at most 8 (the run's own budget is
# 6.5 min, the command's limit 470 s). Logs, metrics and the run's state land in $OUT.
#
# The random model's vocabulary holds a few whole kernels as single tokens (the honest WMMA example, a file that
# does not compile, one that returns a CUDA error, and a static-screen cheat), so completions of a model that knows
# nothing still get every kind of verdict from the evaluator and the rewards vary inside each GRPO group.
# The training process and the reward worker share the one GPU here, so the measured speedups are noisy: this run
# proves the pipeline, not a speedup.
#
# The GPU image has torch, transformers, accelerate, peft, pyyaml, pyarrow, pandas, xxhash, fsspec and
# huggingface_hub, but not trl, datasets, or two of datasets' own needs. Carry their wheels (1.8 MB together, far
# under the 64 MiB a call carries), made here, in .whl/ (git-ignored):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl \
#       trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
# then run with carry [".whl"]: `bash benchmarks/device/train_smoke.sh`. datasets 5.2 wants pyarrow >= 24: the check
# below prints the image's version; if it is older, carry pyarrow's wheel too (about 42 MB, still under the limit).
# With RAY=local (a machine of several GPUs, issue 7), the reward batches go to Ray tasks with num_gpus=1, one per GPU
# at a time, while training runs on GPU 0; carry .carry/ray-py3.12.tar.xz (benchmarks/device/pack_ray.sh) as well. The
# metrics' `service` counters ("on HOST:gpuN") show where each batch ran.
set -uo pipefail
source benchmarks/device/env.sh
if [ -n "${RAY:-}" ]; then carry_ray; fi
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
RUN="${RUN_DIR:-/tmp/train_smoke}"; mkdir -p "$RUN/snippets"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target ${SITE:-/tmp/site} \
        .whl/*.whl && export PYTHONPATH="$PYTHONPATH:${SITE:-/tmp/site}"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/train_env.txt"
python3 - <<'EOF' 2>&1 | tee -a "$OUT/train_env.txt" || exit 1
import importlib, sys
bad = []
for name in ("torch", "transformers", "trl", "datasets", "accelerate", "peft", "yaml", "pyarrow", "ray"):
    try:
        print(f"{name} {importlib.import_module(name).__version__}")
    except Exception as exc:
        print(f"{name} MISSING ({type(exc).__name__})")
        bad += [name] if name not in ("ray", "peft") else []
sys.exit(f"missing: {', '.join(bad)} (carry their wheels: see the top of this script)" if bad else 0)
EOF

# Whole-file tokens: honest, does not compile, returns an error, and a cheat the static screen rejects.
cp examples/hgemm_wmma.cu tests/gpu/hgemm_corpus/bad_compile_error.cu tests/gpu/hgemm_corpus/bad_returns_error.cu "$RUN/snippets/"
python3 - "$RUN/snippets" <<'EOF'
import pathlib, sys
src = pathlib.Path("examples/hgemm_wmma.cu").read_text()
cheat = src.replace('extern "C"', 'static cudaStream_t kr_side() { cudaStream_t s; cudaStreamCreate(&s); return s; }\n'
                    'extern "C"', 1)
assert cheat != src
(pathlib.Path(sys.argv[1]) / "side_stream_cheat.cu").write_text(cheat)
EOF

cat > "$RUN/config.yaml" <<EOF
run_dir: $RUN/run
seed: 0
model:
  random: {hidden: 256, layers: 4, heads: 4, snippet_bias: 6.0, seed: 0,
           snippet_files: [$RUN/snippets/hgemm_wmma.cu, $RUN/snippets/bad_compile_error.cu,
                           $RUN/snippets/bad_returns_error.cu, $RUN/snippets/side_stream_cheat.cu]}
  prompt_format: chat
data:
  hgemm: {shapes: "256x256x256,1024x1024x1024,2048x4096x1024,4096x4096x4096", shapes_per_prompt: 2,
          baselines: [torch, cublas_tn], objective: torch, runner: local, rounds: 3, hang_timeout_s: 60}
  seeds: [examples/hgemm_wmma.cu]
  prompts_per_target: 4
  hardware: H200
evaluation: {workers: 1, timeout_s: 240, retries: 1, batch_size: 16${RAY:+, ray_address: $RAY}}
stages:
  - {kind: sft, data: [hgemm], max_steps: 4, learning_rate: 1.0e-3, max_length: 16384}
  - {kind: self_supervised, data: [hgemm], rounds: 1, samples_per_prompt: 4, max_completion_length: 8,
     max_steps: 2, learning_rate: 1.0e-3, max_length: 16384}
  - {kind: grpo, data: [hgemm], max_steps: 4, batch_size: 2, num_generations: 4, max_completion_length: 8,
     learning_rate: 1.0e-3}
budgets: {max_minutes: ${TRAIN_MINUTES:-6.5}}
EOF
cp "$RUN/config.yaml" "$OUT/train_config.yaml"

timeout "${TRAIN_LIMIT:-470}" python3 -m kernelrl.cli train --config "$RUN/config.yaml" --quiet \
    2>&1 | tee "$OUT/train_smoke.log" | grep -v -i "warn" | tail -n 40
cp "$RUN/run/metrics.jsonl" "$RUN/run/state.json" "$OUT/" 2>/dev/null
python3 - "$RUN/run/metrics.jsonl" <<'EOF' | tee "$OUT/train_summary.txt"
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["kind"] == "reward":
        print(f"{d['phase']:32} step {d['step']:>2}: n={d['n']} reward {d['reward_mean']:.3f}±{d['reward_std']:.3f} "
              f"pass {d['pass_rate']:.2f} hack {d['hack_rate']:.2f} compile {d['compile_rate']:.2f} "
              f"malformed {d['malformed_rate']:.2f} speedup p50 {d['speedup_p50']}")
        placed = {k[3:]: v for k, v in d.get("service", {}).items() if k.startswith("on ")}
        if placed:
            print(f"{'':32} batches so far by worker: {placed}")
    elif d["kind"] in ("phase", "self_supervised"):
        print({k: v for k, v in d.items() if k != "time"})
    elif d["kind"] == "trainer" and "loss" in d:
        print(f"{d['phase']:32} step {d['step']:>2}: loss {d['loss']:.4g} grad_norm {d.get('grad_norm')}")
EOF
