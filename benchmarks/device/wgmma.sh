#!/usr/bin/env bash
# The wgmma family on one H200 (from the repository root; nothing to carry: the family is plain CUDA, no CUTLASS):
#   1. wgmma_smoke.md: six points called directly on five shapes (benchmarks/suites/wgmma_smoke.py), the gate for 2 and 3;
#   2. wgmma_device.csv: `kernelrl bench`, device mode, fp32 accumulation, kn points (cooperative and ping-pong,
#      split-K 1 to 16 (4 and 8 also with the reduce launched by PDL), direct and TMA-store epilogues, 2-CTA
#      clusters with TMA multicast) beside torch, cuBLAS (NN and TN) and cuBLASLt autotuning, and one nk point (it gets B^T
#      made outside timing, as cublas_tn does);
#   3. gpu_tests_wgmma.log: tests/gpu/test_wgmma.py (every evaluator check on representative points; TESTS_LIMIT=0
#      skips it);
#   4. with PROFILE_SHAPES=N: profile/ and profile_medium.txt, Nsight Compute beside cuBLAS (benchmarks/experiments/profile_gap.py).
# ONLY=clusters benches only the cluster points and their single-CTA twins; ONLY=dsmem the DSMEM split-K points and
# their workspace twins; ONLY=widths the paper-layout tile widths off the 64-column box (BN % 64 != 0) and, for each,
# the same point at the multiples of 64 around it; ONLY=f16split split-K with fp16 accumulators beside the same points
# without split-K, with fp16 accumulation (cuBLAS baselines with COMPUTE_16F) on deep-K shapes; ONLY=fixup the
# in-kernel split-K fixup beside the same points with the workspace and reduce kernel, on deep-K shapes; ONLY=mainpdl
# the main kernel launched programmatically beside the same points launched plainly, on short calls; ONLY=bm256
# the 256-row tiles (off the grid until measured) beside their 128-row twins, on the square shapes, the fastest one
# also in CTA pairs (2x1, 1x2); ONLY=bm192 the 192-row tiles (three consumers) beside their 128- and 256-row twins,
# on the square shapes; ONLY=subtile the subtiled TMA-store epilogue beside the whole-tile staging (3 stages) and the
# direct store (same stages), on the square shapes; ONLY=subclusters the subtiled 256x128 and 128x256 points in CTA
# pairs (1x2: A multicast, as cuBLAS's; 2x1: B) beside their single-CTA twins. SHAPES replaces the bench's shapes.
set -uo pipefail
source benchmarks/device/env.sh
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export COLUMNS=200
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
if [ -z "${ONLY:-}" ]; then
    timeout "${SMOKE_LIMIT:-150}" python3 benchmarks/suites/wgmma_smoke.py --out "$OUT/wgmma_smoke.md"
    smoke=$?
    if [ "$smoke" -ne 0 ]; then echo "smoke test failed ($smoke): no bench"; exit 1; fi
fi
# The cluster points have their own gate: if they fail, the rest is still benched without them.
if [[ -z "${ONLY:-}" || "${ONLY:-}" == clusters || "${ONLY:-}" == dsmem ]]; then
    timeout "${SMOKE_LIMIT:-150}" python3 benchmarks/suites/wgmma_smoke.py --clusters --out "$OUT/wgmma_smoke_clusters.md"
    export CLUSTERS_OK=$([ $? -eq 0 ] && echo 1 || echo 0)
    echo "cluster points verified: $CLUSTERS_OK"
fi
POINTS=/tmp/wgmma_points; rm -rf "$POINTS"; mkdir -p "$POINTS"  # this run's points only (ONLY runs in one call)
python3 - "$POINTS" <<'PY'
import os
import sys
from pathlib import Path
from kernelrl.space import SPACES, Variant
points = []
for bm, bn, stages, raster, layout, split, schedule, *rest in [
        (128, 256, 4, 8, "kn", 1, "cooperative"), (128, 192, 4, 8, "kn", 1, "cooperative"),
        (128, 128, 6, 8, "kn", 1, "pingpong"), (64, 256, 4, 8, "kn", 1, "pingpong"), (64, 128, 8, 8, "kn", 1, "pingpong"),
        (128, 128, 6, 8, "kn", 2, "pingpong"), (64, 128, 8, 1, "kn", 4, "cooperative"),
        (64, 128, 8, 1, "kn", 8, "cooperative"), (64, 128, 8, 8, "kn", 16, "pingpong"),
        (128, 128, 6, 8, "nk", 1, "pingpong"), (128, 256, 3, 8, "kn", 1, "cooperative", "tma"),
        (128, 128, 5, 8, "kn", 1, "pingpong", "tma"), (64, 256, 4, 8, "kn", 1, "pingpong", "tma"),
        (64, 128, 8, 1, "kn", 4, "cooperative", "direct", True), (64, 128, 8, 1, "kn", 8, "cooperative", "direct", True),
        # 2-CTA clusters, twins of points above: B multicast (2x1) or A multicast (1x2)
        (128, 256, 3, 8, "kn", 1, "cooperative", "tma", False, "2x1"), (128, 128, 6, 8, "kn", 1, "pingpong", "direct", False, "2x1"),
        (128, 128, 6, 8, "kn", 1, "pingpong", "direct", False, "1x2"), (64, 256, 4, 8, "kn", 1, "pingpong", "direct", False, "2x1"),
        (64, 128, 8, 8, "kn", 1, "pingpong", "direct", False, "2x1"), (128, 128, 5, 8, "kn", 1, "pingpong", "tma", False, "2x1"),
        (128, 192, 4, 8, "kn", 1, "cooperative", "direct", False, "2x1"), (128, 256, 4, 8, "kn", 1, "cooperative", "direct", False, "2x1"),
        # split-K summed in distributed shared memory, beside the same points with a workspace and a reduce kernel
        (64, 128, 8, 1, "kn", 4, "cooperative", "direct", False, "1x1", "dsmem"),
        (64, 128, 8, 1, "kn", 8, "cooperative", "direct", False, "1x1", "dsmem"),
        (128, 128, 4, 8, "kn", 2, "cooperative", "direct", False, "1x1", "dsmem"), (128, 128, 4, 8, "kn", 2, "cooperative"),
        (64, 64, 12, 1, "kn", 4, "cooperative", "direct", False, "1x1", "dsmem"), (64, 64, 12, 1, "kn", 4, "cooperative"),
        (128, 64, 8, 1, "kn", 2, "cooperative", "direct", False, "1x1", "dsmem"), (128, 64, 8, 1, "kn", 2, "cooperative")]:
    epilogue, pdl, cluster, reduce = (list(rest) + ["direct", False, "1x1", "workspace"][len(rest):])[:4]
    if (cluster != "1x1" or reduce == "dsmem") and os.environ.get("CLUSTERS_OK") != "1":
        continue
    v = Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=stages, raster=raster, b_layout=layout, split_k=split,
                   schedule=schedule, epilogue=epilogue, pdl=pdl, cluster=cluster, split_reduce=reduce)
    points.append(v)
# Tile widths off the 64-column box on the paper's layout (B in 32- or 16-column boxes): the wave-quantization lever
for bm, bn, stages, raster in [(64, 80, 8, 1), (64, 96, 8, 1), (64, 112, 8, 1), (64, 144, 6, 1), (64, 160, 6, 1),
                               (128, 96, 6, 8), (128, 160, 4, 8), (128, 176, 4, 8), (128, 208, 4, 8),
                               (128, 240, 3, 8)]:
    points.append(Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=stages, raster=raster, b_layout="kn"))
only = os.environ.get("ONLY")
space = SPACES["wgmma"]
if only in ("clusters", "dsmem"):  # those points and their twins: single CTAs, or the workspace split-K
    knob, plain = {"clusters": ("cluster", "1x1"), "dsmem": ("split_reduce", "workspace")}[only]
    twins = {Variant.of("wgmma", "fp32", **{**v.p, knob: plain}) for v in points if v.p[knob] != plain}
    points = [v for v in points if v.p[knob] != plain or v in twins]
elif only == "f16split":  # fp16 accumulators: split-K points and the same points with split_k 1
    split = [Variant.of("wgmma", "fp16", BM=bm, BN=bn, stages=st, raster=r, b_layout="kn", split_k=sk, schedule=sc)
             for bm, bn, st, r, sk, sc in [(64, 64, 12, 1, 2, "pingpong"), (64, 64, 12, 1, 4, "pingpong"),
                                           (64, 64, 12, 1, 8, "cooperative"), (64, 128, 8, 1, 4, "cooperative"),
                                           (64, 128, 8, 1, 8, "cooperative"), (128, 128, 6, 8, 2, "cooperative"),
                                           (128, 64, 8, 1, 4, "pingpong"), (64, 64, 12, 1, 16, "cooperative")]]
    points = split + sorted({Variant.of("wgmma", "fp16", **{**v.p, "split_k": 1}) for v in split}, key=lambda v: v.name)
elif only == "fixup":  # the last slice to arrive sums a tile in-kernel, beside the second-kernel reduce
    fix = [Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=st, raster=r, b_layout="kn", split_k=sk, schedule=sc,
                      split_reduce="fixup")
           for bm, bn, st, r, sk, sc in [(64, 128, 8, 1, 4, "cooperative"), (64, 128, 8, 1, 8, "cooperative"),
                                         (128, 128, 6, 8, 2, "pingpong"), (64, 64, 12, 1, 4, "cooperative"),
                                         (64, 64, 12, 1, 8, "pingpong"), (128, 64, 8, 1, 2, "cooperative"),
                                         (64, 64, 12, 1, 16, "cooperative")]]
    points = fix + [Variant.of("wgmma", "fp32", **{**v.p, "split_reduce": "workspace"}) for v in fix]
elif only == "mainpdl":  # the main kernel launched programmatically, beside the same points launched plainly
    plain = [Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=st, raster=r, b_layout="kn", split_k=sk, schedule=sc,
                        epilogue=ep)
             for bm, bn, st, r, sk, sc, ep in [(64, 128, 8, 1, 1, "pingpong", "direct"),
                                               (128, 128, 6, 8, 1, "pingpong", "direct"),
                                               (128, 128, 5, 8, 1, "pingpong", "tma"),
                                               (64, 64, 12, 1, 1, "cooperative", "direct"),
                                               (128, 64, 8, 1, 1, "pingpong", "direct"),
                                               (64, 128, 8, 1, 4, "cooperative", "direct"),
                                               (128, 256, 4, 8, 1, "cooperative", "direct")]]
    points = plain + [Variant.of("wgmma", "fp32", **{**v.p, "main_pdl": True}) for v in plain]
elif only == "bm256":  # 256-row tiles (two cooperative consumers of 128 rows) beside their 128-row twins
    tall = [Variant.of("wgmma", acc, BM=256, BN=bn, stages=st, raster=8, b_layout=layout, epilogue=ep, dtype=dtype)
            for acc, bn, st, layout, ep, dtype in [("fp32", 128, 4, "kn", "direct", "fp16"),
                                                   ("fp32", 128, 3, "kn", "tma", "fp16"),
                                                   ("fp32", 64, 5, "kn", "direct", "fp16"),
                                                   ("fp32", 128, 4, "nk", "direct", "fp16")]]
    # the fastest of them (256x128, 3 stages, TMA store) in CTA pairs sharing B (2x1) or A (1x2)
    tall += [Variant.of("wgmma", "fp32", BM=256, BN=128, stages=3, raster=8, b_layout="kn", epilogue="tma",
                        dtype="fp16", cluster=c) for c in ("2x1", "1x2")]
    twins = [Variant.of("wgmma", v.acc, **{**v.p, "BM": 128}) for v in tall]
    points = [v for v in tall + twins if space.check(v) is None]
elif only == "bm192":  # 192-row tiles (three cooperative consumers of 64 rows) beside their 128- and 256-row twins
    mid = [Variant.of("wgmma", "fp32", BM=192, BN=bn, stages=st, raster=8, b_layout=layout, epilogue=ep, dtype=dtype)
           for bn, st, layout, ep, dtype in [(128, 4, "kn", "direct", "fp16"), (128, 4, "kn", "tma", "fp16"),
                                             (128, 4, "nk", "direct", "fp16"), (176, 3, "nk", "direct", "fp16")]]
    twins = [Variant.of("wgmma", v.acc, **{**v.p, "BM": bm}) for v in mid for bm in (128, 256)]
    points = [v for v in mid + twins if space.check(v) is None]
elif only == "subtile":  # the subtiled TMA store (two staging boxes a consumer) beside the whole-tile staging
    sub = [Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=st, raster=8, b_layout=layout, epilogue="tma_sub")
           for bm, bn, st, layout in [(256, 128, 4, "kn"), (256, 128, 3, "kn"), (128, 256, 4, "kn"),
                                      (256, 128, 4, "nk"), (128, 128, 5, "kn")]]
    # the whole-tile twins: the same point with epilogue tma where it fits (at most 3 stages at 256x128), and the
    # 4-stage direct-store twin (what the fourth stage buys without any staging)
    twins = {Variant.of("wgmma", "fp32", **{**v.p, "epilogue": ep, "stages": st})
             for v in sub for ep, st in (("tma", 3), ("direct", v.p["stages"]))}
    points = sub + sorted((v for v in twins if space.check(v) is None), key=lambda v: v.name)
elif only == "subclusters":  # the subtiled points in CTA pairs (cuBLAS's large-shape kernels run 2-CTA clusters
    # multicasting A: benchmarks/results/h100/ncu_large/) beside the same points as single CTAs
    single = [Variant.of("wgmma", "fp32", BM=bm, BN=bn, stages=4, raster=8, b_layout=layout, epilogue="tma_sub")
              for bm, bn, layout in [(256, 128, "kn"), (128, 256, "kn"), (256, 128, "nk")]]
    points = single + [Variant.of("wgmma", "fp32", **{**v.p, "cluster": c}) for v in single for c in ("1x2", "2x1")]
    points = [v for v in points if space.check(v) is None]
elif only == "widths":  # those points and the same point at the multiples of 64 below and above their width
    odd = [v for v in points if v.p["BN"] % 64]
    twins = {Variant.of("wgmma", "fp32", **{**v.p, "BN": bn}) for v in odd for bn in (v.p["BN"] // 64 * 64,
                                                                                     v.p["BN"] // 64 * 64 + 64)}
    points = odd + sorted((v for v in twins if space.check(v) is None), key=lambda v: v.name)
else:  # the default bench: the points measured before
    points = [v for v in points if v.p["b_layout"] == "nk" or v.p["BN"] % 64 == 0]
for v in points:
    (Path(sys.argv[1]) / f"{v.name}.cu").write_text(v.source())
PY
# Short calls (about 4 to 50 us): under 10 us the family pays a fixed ~0.9 us over cuBLAS (tuned_wgmma/gap_regimes.md)
SHORT=256x1024x1024,512x512x1024,1024x512x2048,1024x1024x1024,2048x1024x1024,512x512x4096,1024x2048x1024,2048x2048x1024,2048x2048x2048,4096x4096x1024
DEEP_K=64x64x16384,128x128x16384,256x128x16384,512x64x16384,128x256x16384,256x512x16384,512x512x4096,512x1024x8192,2048x64x8192,1024x1024x1024
SQUARE=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x1024,1024x4096x4096,512x1024x8192,256x512x16384,512x512x4096,2048x1024x1024
ACC=$([ "${ONLY:-}" = f16split ] && echo fp16 || echo fp32)
timeout "${BENCH_LIMIT:-220}" python3 -m kernelrl.cli bench --candidates "$POINTS" \
    --shapes "${SHAPES:-$([[ "${ONLY:-}" == f16split || "${ONLY:-}" == fixup ]] && echo $DEEP_K ||
                         ([[ "${ONLY:-}" == mainpdl ]] && echo $SHORT || echo $SQUARE))}" \
    --acc "$ACC" \
    --mode device --baselines torch,cublas_nn,cublas_tn,cublaslt_auto_nn --timeout 15 \
    --db "$OUT/wgmma.db" --csv "$OUT/wgmma_device.csv" > "$OUT/wgmma_device.log" 2>&1
tail -n 3 "$OUT/wgmma_device.log"
if [ "${TESTS_LIMIT:-150}" != 0 ]; then
    timeout "${TESTS_LIMIT:-150}" python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/gpu/test_wgmma.py \
        > "$OUT/gpu_tests_wgmma.log" 2>&1
    tail -n 4 "$OUT/gpu_tests_wgmma.log"
fi
# PROFILE_SHAPES=N: Nsight Compute, the fastest point beside cuBLAS on the N medium shapes it loses most on
if [ -n "${PROFILE_SHAPES:-}" ]; then
    timeout "${PROFILE_LIMIT:-240}" python3 benchmarks/experiments/profile_gap.py "$OUT/wgmma_device.csv" "$OUT/profile" \
        --class medium --shapes "$PROFILE_SHAPES" > "$OUT/profile_medium.txt" 2>&1
    tail -n 30 "$OUT/profile_medium.txt"
fi
python3 - "$OUT/wgmma_device.csv" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(dict)
for r in rows:
    by[(r["m"], r["n"], r["k"])][r["method"]] = (float(r["time_us_median"]) if r["verified"] in ("1", "True") else None, r["reason"])
for shape, methods in by.items():
    best = {m: t for m, (t, _) in methods.items() if t}
    lt = best.get("cublaslt_auto_nn")
    cells = [f"{m[9:] if m.startswith('wgmma_') else m}={t:.1f}" if t else f"{m[9:] if m.startswith('wgmma_') else m}=X"
             for m, (t, _) in methods.items()]
    print("x".join(shape), " ".join(cells))
PY
