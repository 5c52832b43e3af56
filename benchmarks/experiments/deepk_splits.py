"""Do CUTLASS's stream-K split-K kernels close the deep-K gap? A controlled measurement on a GPU machine.

    python benchmarks/experiments/deepk_splits.py OUT_DIR [--ray local] [--limit N] [--runner dummy]

The shapes: the paper grid's medium shapes with K >= 8 * max(M, N) (62; benchmarks/experiments/tune_gap.py calls them
deep-K), where the tuned kernels run at ~0.5-0.7 of the faster library (benchmarks/results/h200/profile_gap/). The
candidates: every stream-K point of the cutlass_sm90 default grid, with CUTLASS's own decomposition (splits=1) and with
an explicit split count (4, 8, 16), measured beside torch.matmul and autotuned cuBLASLt in device mode. Writes
OUT_DIR/deepk_splits.csv (long format, environment in OUT_DIR/deepk_splits.db) and prints, per shape, the best of each
kind against the faster library."""

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.jobs.measure import BenchConfig, run_bench  # noqa: E402
from kernelrl.space import SPACES  # noqa: E402
from kernelrl.workloads.hgemm import GemmProblem, size_class  # noqa: E402

GRID = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384]
FALLBACKS = ["torch", "cublaslt_auto_nn"]
SPLITS, SPLIT_TILES = (4, 8, 16), ("128x64x64", "128x128x64")  # the explicit split-K points measured


def deep_k_shapes() -> list[GemmProblem]:
    return [GemmProblem(m, n, k) for m in GRID for n in GRID for k in GRID
            if size_class(2 * m * n * k) == "medium" and k >= 8 * max(m, n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ray", default=None)
    ap.add_argument("--limit", type=int, default=0, help="only the first N shapes")
    ap.add_argument("--runner", default="local", help="dummy: check this script without a GPU (made-up times)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shapes = deep_k_shapes()[:args.limit or None]
    space = SPACES["cutlass_sm90"]
    variants = [v for v in space.points("fp32") if v.p["tile_scheduler"] == "streamk"]  # CUTLASS's decomposition
    variants += [v for v in space.points("fp32", full=True)  # explicit splits, small tiles, canonical tile order
                 if v.p["splits"] in SPLITS and v.p["tile"] in SPLIT_TILES and v.p["cluster"] == "1x1"
                 and (v.p["raster"], v.p["swizzle"], v.p["stages"]) == ("along_m", 1, "auto")]
    cfg = BenchConfig(problems=shapes, modes=["device"], baselines=FALLBACKS, db_path=out / "deepk_splits.db",
                      csv_path=out / "deepk_splits.csv", sources={v.name: v.source() for v in variants},
                      ray_address=args.ray, runner=args.runner, command="benchmarks/experiments/deepk_splits.py")
    from kernelrl.jobs.measure import NullUI
    rows = run_bench(cfg, NullUI()).rows
    times: dict[tuple, dict[str, float]] = {}
    for r in rows:
        if r["verified"] and r["time_us_median"]:
            times.setdefault((r["m"], r["n"], r["k"]), {})[r["method"]] = r["time_us_median"]
    failed = sorted({(r["method"], r["reason"]) for r in rows if not r["verified"]})
    ratios = {"streamk (CUTLASS's decomposition)": [], "streamk, explicit splits": []}
    print(f"{'shape':>18}  {'library':>8}  {'streamk':>8}  {'split-K':>8}  best split-K kernel")
    for (m, n, k), t in sorted(times.items()):
        lib = min(t.get(f, math.inf) for f in FALLBACKS)
        plain = min((v, n_) for n_, v in t.items() if "_streamk_ras" in n_) if any("_streamk_ras" in x for x in t) \
            else (math.inf, "-")
        split = min((v, n_) for n_, v in t.items() if "_streamk_sk" in n_) if any("_streamk_sk" in x for x in t) \
            else (math.inf, "-")
        ratios["streamk (CUTLASS's decomposition)"].append(lib / plain[0])
        ratios["streamk, explicit splits"].append(lib / split[0])
        print(f"{f'{m}x{n}x{k}':>18}  {lib:8.2f}  {plain[0]:8.2f}  {split[0]:8.2f}  {split[1]}")
    for kind, rs in ratios.items():
        ok = [r for r in rs if r > 0]
        if ok:
            print(f"{kind}: geomean (library time / kernel time) {math.exp(sum(map(math.log, ok)) / len(ok)):.3f}, "
                  f"faster than the library on {sum(r > 1 for r in ok)} of {len(ok)} shapes")
    for name, reason in failed[:20]:
        print(f"not verified: {name}: {reason}")


if __name__ == "__main__":
    main()
