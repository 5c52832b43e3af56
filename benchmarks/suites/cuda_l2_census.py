"""A source read of CUDA-L2's released kernel files, through kernelrl's adapter (no GPU): per file, the function,
the accumulator its name claims and the one its MMA instructions use, the cudaDeviceSynchronize() calls inside, the
tiles its harness pads to, whether it reads `b`, and whether the wrapper can put its launches on the caller's
stream. What the read shows becomes a verdict when the file is
measured: an fp16-accumulating file on an fp32 problem is `acc mismatch`, and a device-wide synchronize inside the
call is `synchronizes the device inside the call` in device mode (CUDA graphs cannot capture it; offline mode can
time it).

    python benchmarks/suites/cuda_l2_census.py CUDA_L2/kernels/h100_F32F16F16F32 OUT_DIR [--select 120 --seed 0]

Writes OUT_DIR/census.csv and OUT_DIR/census.md. With --select N it also picks N files for the GPU comparison, an
equal share from each paper size class (small, medium, large by GFLOP), at random with a fixed seed: their names
go to OUT_DIR/selected.txt and their shapes to OUT_DIR/selected_shapes.txt (for `kernelrl bench --shapes`)."""

from __future__ import annotations

import argparse
import collections
import csv
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernelrl.adapters.cuda_l2 import parse_cuda_l2  # noqa: E402
from kernelrl.workloads.hgemm import size_class  # noqa: E402


def census(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.cu")):
        text = path.read_text(errors="replace")
        try:
            spec = parse_cuda_l2(text, path)
        except ValueError as exc:
            rows.append({"file": path.name, "error": str(exc)})
            continue
        m, n, k = spec.shape or (0, 0, 0)
        rows.append({"file": path.name, "m": m, "n": n, "k": k,
                     "class": size_class(2 * m * n * k) if spec.shape else "",
                     "function": spec.function, "declared_acc": spec.declared_acc, "mma_acc": spec.acc,
                     "mma": " ".join(spec.acc_evidence), "device_syncs": spec.device_syncs,
                     "tiles": "x".join(map(str, spec.tiles)) if spec.tiles else "", "reads_b": int(spec.reads_b),
                     "torch_api": spec.torch_api,
                     "launch": spec.launch, "error": ""})
    return rows


def select(rows: list[dict], count: int, seed: int) -> list[dict]:
    """`count` files, an equal share per size class (what a class lacks goes to the others), by a seeded draw."""
    by_class = collections.defaultdict(list)
    for r in rows:
        if not r.get("error") and r["class"]:
            by_class[r["class"]].append(r)
    rng = random.Random(seed)
    classes = sorted(by_class)
    picked: list[dict] = []
    for i, cls in enumerate(classes):
        share = (count - len(picked)) // (len(classes) - i)
        picked += rng.sample(by_class[cls], min(share, len(by_class[cls])))
    return sorted(picked, key=lambda r: (r["m"], r["n"], r["k"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--select", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", default="", help="where the files came from (repository and commit), for the record")
    args = ap.parse_args()
    rows = census(args.folder)
    if not rows:
        print(f"{args.folder}: no .cu files")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    fields = ["file", "m", "n", "k", "class", "function", "declared_acc", "mma_acc", "mma", "device_syncs", "tiles",
              "reads_b", "torch_api", "launch", "error"]
    with open(args.out / "census.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    ok = [r for r in rows if not r["error"]]
    fp16 = [r for r in ok if r["mma_acc"] == "fp16" and r["declared_acc"] == "fp32"]
    syncs = [r for r in ok if r["device_syncs"]]
    lines = [f"# CUDA-L2 kernel files, read through kernelrl's adapter: {args.folder}", "",
             f"- command: `python benchmarks/suites/cuda_l2_census.py {args.folder} {args.out}"
             + (f" --select {args.select} --seed {args.seed}" if args.select else "")
             + (f" --source '{args.source}'" if args.source else "") + "`",
             *([f"- source: {args.source}"] if args.source else []),
             f"- files: {len(rows)}; parsed: {len(ok)}; not in the format: {len(rows) - len(ok)}",
             f"- named fp32 but accumulating in fp16 (an fp16 MMA atom, PTX mma or WMMA accumulator in the code): "
             f"{len(fp16)}",
             f"- calling cudaDeviceSynchronize() in the code: {len(syncs)}",
             f"- both: {len([r for r in fp16 if r['device_syncs']])}",
             f"- built against kernelrl's stand-in torch header (they use only tensor sizes, data pointers and a "
             f"dtype check): {sum(r['torch_api'] == 'shim' for r in ok)}; with torch's headers: "
             f"{sum(r['torch_api'] == 'torch' for r in ok)}",
             f"- launches rewritten onto the caller's stream (every launch a `<<<>>>` on the default stream, nothing "
             f"enqueued another way; no fork/join around the call): {sum(r['launch'] == 'direct' for r in ok)}; "
             f"joined: {sum(r['launch'] == 'joined' for r in ok)}", "",
             "| class | files | fp16 accumulation | device synchronize |", "|---|---:|---:|---:|"]
    for cls in ("small", "medium", "large"):
        mine = [r for r in ok if r["class"] == cls]
        syncing = sum(bool(r["device_syncs"]) for r in mine)
        lines.append(f"| {cls} | {len(mine)} | {sum(r in fp16 for r in mine)} | {syncing} |")
    evidence = collections.Counter(e for r in fp16 for e in r["mma"].split() if "F16F16F16F16" in e or "half" in e
                                   or ".f16.f16.f16.f16" in e)
    if evidence:
        lines += ["", "fp16-accumulating instructions found (files):"]
        lines += [f"- `{e}`: {n}" for e, n in evidence.most_common(8)]
    if args.select:
        picked = select(rows, args.select, args.seed)
        (args.out / "selected.txt").write_text("".join(f"{r['file']}\n" for r in picked))
        (args.out / "selected_shapes.txt").write_text(",".join(f"{r['m']}x{r['n']}x{r['k']}" for r in picked) + "\n")
        per = collections.Counter(r["class"] for r in picked)
        classes = ", ".join(f"{c} {n}" for c, n in sorted(per.items()))
        lines += ["", f"Selected for the GPU comparison: {len(picked)} files ({classes}), "
                  f"{sum(r in fp16 for r in picked)} of them fp16-accumulating, "
                  f"{sum(bool(r['device_syncs']) for r in picked)} with a device synchronize: `selected.txt`, "
                  f"`selected_shapes.txt`."]
    (args.out / "census.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
