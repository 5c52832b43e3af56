"""CUDA-L2's released kernels beside kernelrl's tuned library and the baselines, from the CSVs of
benchmarks/device/cuda_l2.sh (offline mode with --untimed-padding, device mode), no GPU needed.

    python benchmarks/suites/cuda_l2_compare.py OUT_DIR CSV [CSV ...]

Per mode and shape: the CUDA-L2 file of that shape (method M_N_K) with its time or its verdict, the library
(`kernelrl`), torch.matmul, best-of-layout cuBLAS and autotuned cuBLASLt, all from the same run. Ratios are
baseline time / method time (above 1: the method is faster). Writes OUT_DIR/cuda_l2_comparison.csv and
OUT_DIR/comparison.md (per mode and size class: verdict counts, geomeans over the shapes where both sides verified).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.harness.stats import geomean  # noqa: E402
from kernelrl.results import read_csv, times_by_shape  # noqa: E402
from kernelrl.workloads.hgemm import SIZE_CLASSES, size_class  # noqa: E402

# the paper's four baselines, each at its faster layout (NN or TN)
YARDSTICKS = ("torch", "cublas_best", "cublaslt_heur_best", "cublaslt_auto_best")
FIELDS = ["mode", "m", "n", "k", "class", "cuda_l2_file", "cuda_l2_us", "cuda_l2_verdict", "kernelrl_us",
          *[f"{y}_us" for y in YARDSTICKS], *[f"cuda_l2_vs_{y}" for y in YARDSTICKS], "kernelrl_vs_cublas_best",
          "kernelrl_vs_cuda_l2"]


def rows(measurements: list[dict]) -> list[dict]:
    times = times_by_shape(measurements)
    verdicts = {(r["mode"], r["m"], r["n"], r["k"], r["method"]): (r.get("verdict") or r.get("reason") or "failed")
                for r in measurements if not r["verified"]}
    out = []
    for (mode, (m, n, k, _acc)), t in sorted(times.items(), key=lambda item: (item[0][0], item[0][1])):
        name = f"{m}_{n}_{k}"
        ours, theirs = t.get("kernelrl"), t.get(name)
        verdict = "" if theirs else verdicts.get((mode, m, n, k, name), "not measured")
        cublas = t.get("cublas_best")
        out.append({"mode": mode, "m": m, "n": n, "k": k, "class": size_class(2 * m * n * k),
                    "cuda_l2_file": f"{name}.cu", "cuda_l2_us": _r(theirs), "cuda_l2_verdict": verdict,
                    "kernelrl_us": _r(ours), **{f"{y}_us": _r(t.get(y)) for y in YARDSTICKS},
                    **{f"cuda_l2_vs_{y}": _ratio(t.get(y), theirs) for y in YARDSTICKS},
                    "kernelrl_vs_cublas_best": _ratio(cublas, ours),
                    "kernelrl_vs_cuda_l2": _ratio(theirs, ours)})
    return out


def summary(table: list[dict]) -> list[str]:
    lines = []
    for mode in sorted({r["mode"] for r in table}):
        mine = [r for r in table if r["mode"] == mode]
        verdicts = Counter(r["cuda_l2_verdict"].split(":")[0] for r in mine if r["cuda_l2_verdict"])
        lines += [f"## {mode} mode: {len(mine)} shapes, {sum(1 for r in mine if r['cuda_l2_us'] != '')} CUDA-L2 "
                  f"files verified", "",
                  *[f"- {v}: {c}" for v, c in verdicts.most_common()], "",
                  "| class | shapes | CUDA-L2 verified | CUDA-L2 vs cuBLAS best | kernelrl vs cuBLAS best | "
                  "kernelrl vs CUDA-L2 (both verified) |", "|---|---:|---:|---:|---:|---:|"]
        for cls in (*SIZE_CLASSES, "all"):
            part = [r for r in mine if cls in ("all", r["class"])]
            if part:
                lines.append(f"| {cls} | {len(part)} | {sum(1 for r in part if r['cuda_l2_us'] != '')} | "
                             + " | ".join(_geomean(part, col) for col in ("cuda_l2_vs_cublas_best",
                                                                          "kernelrl_vs_cublas_best",
                                                                          "kernelrl_vs_cuda_l2")) + " |")
        lines += ["", "CUDA-L2's files over each of the paper's baselines (its faster layout), on the shapes where "
                  "the file verified:", "",
                  "| class | CUDA-L2 verified | torch.matmul | cuBLAS (best of NN/TN) | cuBLASLt heuristic | "
                  "cuBLASLt autotuning |", "|---|---:|---:|---:|---:|---:|"]
        for cls in (*SIZE_CLASSES, "all"):
            part = [r for r in mine if cls in ("all", r["class"])]
            if part:
                lines.append(f"| {cls} | {sum(1 for r in part if r['cuda_l2_us'] != '')} | "
                             + " | ".join(_geomean(part, f"cuda_l2_vs_{y}") for y in YARDSTICKS) + " |")
        lines.append("")
    return lines


def _geomean(part: list[dict], col: str) -> str:
    values = [r[col] for r in part if r[col] != ""]
    return f"{geomean(values):.3f} ({len(values)})" if values else "-"


def _r(x: float | None):
    return "" if x is None else round(x, 3)


def _ratio(base: float | None, method: float | None):
    return round(base / method, 4) if base and method else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("csvs", nargs="+")
    args = ap.parse_args()
    measurements = [r for path in args.csvs for r in read_csv(path)]
    table = rows(measurements)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "cuda_l2_comparison.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(table)
    text = "\n".join(["# CUDA-L2's kernels beside kernelrl's library and the baselines", "",
                      f"- command: `python benchmarks/suites/cuda_l2_compare.py {' '.join(sys.argv[1:])}`",
                      "- ratios: baseline time / method time; geomeans over the shapes where both verified "
                      "(count in brackets)", "", *summary(table)])
    (args.out / "comparison.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
