"""Per shape, a tuning database's fastest verified point of each kernel family beside the torch fallback (F.linear
for nt, torch.matmul for nn), device mode: how far a family is from the fallback where the library sent the shape
to the fallback anyway.

    python benchmarks/experiments/family_vs_fallback.py TUNE_DB OUT.csv [--family wgmma] [--layout nt] [--dtype bf16]
"""

from __future__ import annotations

import argparse
import csv
import math
import sqlite3


def rows(db: str, family: str, layout: str, dtype: str) -> list[dict]:
    best: dict[tuple, dict[str, tuple[float, str]]] = {}
    query = ("select m, n, k, method, time_us_median from measurements where mode = 'device' and verified = 1 "
             "and time_us_median is not null and layout = ? and dtype = ?")
    for m, n, k, method, t in sqlite3.connect(db).execute(query, (layout, dtype)):
        arm = family if method.startswith(family + "_") else method
        shape = best.setdefault((m, n, k), {})
        if arm not in shape or t < shape[arm][0]:
            shape[arm] = (t, method)
    out = []
    for (m, n, k), shape in sorted(best.items(), key=lambda item: (item[0][1], item[0][2], item[0][0])):
        if "torch" in shape and family in shape:
            (ft, _), (kt, name) = shape["torch"], shape[family]
            out.append({"m": m, "n": n, "k": k, "fallback_us": round(ft, 2), f"best_{family}_us": round(kt, 2),
                        f"best_{family}": name, "fallback_over_family": round(ft / kt, 3)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--family", default="wgmma")
    ap.add_argument("--layout", default="nt", choices=["nn", "nt"])
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    args = ap.parse_args()
    table = rows(args.db, args.family, args.layout, args.dtype)
    if not table:
        print(f"{args.db}: no shape with both torch and a {args.family} point ({args.layout} {args.dtype})")
        return 1
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    ratios = [r["fallback_over_family"] for r in table]
    print(f"{len(table)} shapes; geomean fallback / best {args.family}: "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}; {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
