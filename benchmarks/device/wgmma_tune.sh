#!/usr/bin/env bash
# The wgmma family tuned on its own on a seeded sample of the paper's medium and large shapes (one H200, from the
# repository root; nothing to carry: the family is plain CUDA). Each shape's cost-model short list (TOP_K points of
# the default grid) is measured beside torch.matmul and autotuned cuBLASLt in device mode, and its best CONFIRM are
# measured again in a fresh interleaved run of 15 rounds, which picks (kernelrl tune --confirm).
#   $OUT/shapes.txt   the sample (MEDIUM medium and LARGE large shapes, random.Random(SEED))
#   $OUT/tune.log     the tuner's log;  $OUT/lib.tar.gz  the library (manifest.json with every time, kernels/*.cu)
#   $OUT/tune.db.xz   every measurement (resume: carry it back as .carry/wgmma_tune.db.xz)
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
python3 - "${MEDIUM:-40}" "${LARGE:-12}" "${SEED:-1}" > "$OUT/shapes.txt" <<'PY'
import random, sys
from kernelrl.workloads.hgemm import paper_grid
medium, large, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
pick = [p for cls, n in (("medium", medium), ("large", large))
        for p in rng.sample([q for q in paper_grid() if q.size_class == cls], n)]
print(",".join(p.name for p in sorted(pick, key=lambda p: (p.m, p.n, p.k))))
PY
DB=/tmp/wgmma_tune.db
if [ -f .carry/wgmma_tune.db.xz ] && [ ! -f "$DB" ]; then xz -dc .carry/wgmma_tune.db.xz > "$DB"; fi
timeout "${TUNE_LIMIT:-420}" python3 -m kernelrl.cli tune --shapes "$(cat "$OUT/shapes.txt")" --families wgmma \
    --out "$OUT/lib" --db "$DB" --top-k "${TOP_K:-8}" --neighbours 0 --confirm "${CONFIRM:-3}" --batch 13 \
    --budget-minutes "${TUNE_MINUTES:-5}" --timeout 15 2>&1 | grep -v "^  built" > "$OUT/tune.log"
tail -n 12 "$OUT/tune.log"
tar -czf "$OUT/lib.tar.gz" -C "$OUT" --exclude='lib/lib' lib 2>/dev/null && rm -rf "$OUT/lib"
python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" "$DB"
xz -T0 -6 -c "$DB" > "$OUT/tune.db.xz"
