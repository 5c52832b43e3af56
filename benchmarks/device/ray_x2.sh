#!/usr/bin/env bash
# Issue 7 on a multi-GPU machine (nvidia-h200-x2 or larger), from the repository root: `kernelrl tune` spread over
# every GPU through Ray (one actor per GPU, the driver the database's only writer), then, with SINGLE=1, the same
# tuning on one GPU in the same call, and a comparison of the two runs' verdicts (they must be identical; times
# differ by noise). Carry (all git-ignored):
#   .whl                          bash benchmarks/device/pack_carry.sh       (CUTLASS headers)
#   .carry/ray-py3.12.tar.xz      bash benchmarks/device/pack_ray.sh         (Ray core, 21 MB)
#   .carry/build-cache.tar.xz     see benchmarks/device/tune.sh         (the candidates compiled on a CPU machine)
# Environment: SHAPES (default paper), SINGLE (also run on one GPU), TUNE_LIMIT (seconds per tuning run),
# RUNS (which runs, default "ray", plus "one" with SINGLE; a call of 10 minutes holds about one paper-grid run on one
# GPU, so the two can be separate calls: RUNS=one ONE_GPU=1 beside other work on GPU 0, then RUNS=ray), ONE_GPU (the
# GPU of the one-GPU run), COMPARE (the other run's database, for the verdict comparison).
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT" "$KERNELRL_CACHE" /tmp/site
carry_build_cache
carry_ray
carry_cutlass
nvidia-smi -L | tee "$OUT/gpus.txt"
python3 -c "import ray; print('ray', ray.__version__)" | tee -a "$OUT/gpus.txt"
SHAPES="${SHAPES:-paper}"
run() {  # name, extra args
    local start end
    start=$(date +%s.%N)
    timeout "${TUNE_LIMIT:-280}" python3 -m kernelrl.cli tune --shapes "$SHAPES" --out "$OUT/lib_$1" \
        --db "$OUT/tune_$1.db" --batch 100 --timeout 15 "${@:2}" 2>&1 | grep -v "^  built" > "$OUT/tune_$1.log"
    end=$(date +%s.%N)
    echo "$1: $(python3 -c "print(f'{$end - $start:.1f}')") s wall" | tee -a "$OUT/wall.txt"
    tail -n 9 "$OUT/tune_$1.log"
}
RUNS="${RUNS:-ray${SINGLE:+ one}}"
case " $RUNS " in *" ray "*) run ray --ray local ;; esac
case " $RUNS " in *" one "*) CUDA_VISIBLE_DEVICES="${ONE_GPU:-0}" run one ;; esac
A="$OUT/tune_ray.db"; B="$OUT/tune_one.db"
[ -f "$A" ] || A="${COMPARE:-}"
[ -f "$B" ] || B="${COMPARE:-}"
if [ -f "$A" ] && [ -f "$B" ] && [ "$A" != "$B" ]; then
    python3 - "$A" "$B" <<'PY' | tee "$OUT/verdicts.txt"
import sqlite3, sys
def verdicts(path):
    rows = sqlite3.connect(path).execute("SELECT m, n, k, method, verified, reason FROM measurements")
    return {(m, n, k, method): (bool(v), (reason or "").split(":")[0]) for m, n, k, method, v, reason in rows}
a, b = verdicts(sys.argv[1]), verdicts(sys.argv[2])
common = a.keys() & b.keys()
differ = [key for key in common if a[key] != b[key]]
print(f"{len(common)} (shape, method) verdicts in both runs; {len(differ)} differ; "
      f"{len(a.keys() - b.keys())} only in the Ray run, {len(b.keys() - a.keys())} only in the one-GPU run")
for key in sorted(differ)[:20]:
    print("  ", key, a[key], b[key])
PY
fi
cat "$OUT/wall.txt"
