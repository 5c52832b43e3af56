"""Our fastest kernel beside cuBLAS's under Nsight Compute, on the shapes where the tuned kernels lose the most.

    python benchmarks/experiments/profile_gap.py MEASUREMENTS.csv OUT_DIR [--class medium] [--shapes 6] [--sets all]
                                     [--only MxNxK,...]
    python benchmarks/experiments/profile_gap.py - OUT_DIR --points MxNxK=NAME,...   # named points, no measurements

From a tuning run's measurements (benchmarks/experiments/tune_gap.py reads the same file), picks the shapes of one size
class whose fastest verified candidate is furthest behind the faster fallback (or, with `--points`, the named
candidate on each named shape: the points a bench measured, on a card with no tuning run). For each, rebuilds that
candidate (build cache) and profiles one call of it and one of torch.matmul with `ncu --clock-control none`. Prints
kernel time, grid and block, DRAM throughput, tensor-pipe use, occupancy, L2 hit rate and the top stalls side by side.
Writes the summaries as JSON to OUT_DIR/profile_gap.json. GPU machine with Nsight Compute only."""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernelrl.evolve import profile  # noqa: E402
from kernelrl.workloads.hgemm import GemmProblem, size_class  # noqa: E402
from tune_gap import fastest_candidates  # noqa: E402  (the same reading of the measurements)


def worst_shapes(path: str, cls: str, count: int, only: set | None = None) -> list[tuple[GemmProblem, str, float]]:
    gaps = [(ratio, GemmProblem(m, n, k), best) for m, n, k, best, ratio, _ in fastest_candidates(path)
            if ((f"{m}x{n}x{k}" in only) if only else size_class(2 * m * n * k) == cls)]
    return [(p, name, ratio) for ratio, p, name in sorted(gaps, key=lambda g: g[0])[:count]]


def named_points(spec: str) -> list[tuple[GemmProblem, str, float]]:
    """`MxNxK=NAME,...` as worst_shapes' triples (no measured ratio: NaN)."""
    out = []
    for item in filter(None, (x.strip() for x in spec.split(","))):
        shape, sep, name = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--points: {item!r} is not MxNxK=NAME")
        m, n, k = (int(x) for x in shape.lower().split("x"))
        out.append((GemmProblem(m, n, k), name, float("nan")))
    return out


def build(name: str) -> str:
    from kernelrl.build.builder import BuildRequest, LocalBuilder
    from kernelrl.space.learned import variants_by_name
    variant = variants_by_name("fp32").get(name)
    if variant is None:
        raise RuntimeError(f"{name}: no kernel space has a point of that name")
    built = LocalBuilder().build(BuildRequest(variant.source(), name=name))
    if not built.ok:
        raise RuntimeError(f"{name} does not build: {built.log[-300:]}")
    return str(built.lib_path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements")
    ap.add_argument("out")
    ap.add_argument("--class", dest="cls", default="medium")
    ap.add_argument("--shapes", type=int, default=6)
    ap.add_argument("--sets", default="all")
    ap.add_argument("--only", default="", help="these shapes (MxNxK,...) instead of the class's worst")
    ap.add_argument("--points", default="", help="MxNxK=NAME,...: these candidates on these shapes (MEASUREMENTS: -)")
    args = ap.parse_args()
    if profile.ncu_path() is None:
        print(profile.missing_message())
        return 1
    sets = profile.parse_sets(args.sets)
    results = []
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    from kernelrl import environment
    env = environment.collect({"command": " ".join(sys.argv), "ncu": profile.ncu_path()})
    (Path(args.out) / "environment.json").write_text(json.dumps(env, indent=1))
    chosen = (named_points(args.points) if args.points else
              worst_shapes(args.measurements, args.cls, args.shapes if not only else len(only), only))
    for problem, name, ratio in chosen:
        ours = profile.collect_hgemm(build(name), problem, sets)
        theirs = profile.collect_hgemm("torch", problem, sets)
        results.append({"shape": problem.name, "ratio": ratio, "candidate": name, "ours": ours, "cublas": theirs})
        print(f"\n{problem.name}: " + (f"{name}" if ratio != ratio else
                                       f"fastest candidate at {ratio:.3f} of the faster library ({name})"))
        for label, s in (("ours", ours), ("cuBLAS", theirs)):
            if s.get("error"):
                print(f"  {label:7s} {s['error']}")
                continue
            print(f"  {label:7s} {s.get('kernel', '')[:90]}\n          grid {s.get('grid')} block {s.get('block')}, "
                  f"{s.get('kernels')} kernel(s) per call")
            print(f"          {profile.format_summary(s)}")
        # after every shape: a run cut short by its time limit keeps what it profiled
        (Path(args.out) / "profile_gap.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
