"""The wgmma family's TMA-store epilogue beside its direct-store twin (the same point otherwise), per shape, from a
tuning database: device-mode medians, verified rows only.

    python benchmarks/experiments/epilogue_pairs.py TUNE_DB OUT.csv
"""

from __future__ import annotations

import argparse
import csv
import sqlite3


def pairs(db: str) -> list[dict]:
    query = ("select m, n, k, dtype, layout, method, min(time_us_median) from measurements where verified = 1 and "
             "mode = 'device' and method like 'wgmma%' group by m, n, k, dtype, layout, method")
    times = {(m, n, k, dtype, layout, method): t for m, n, k, dtype, layout, method, t in
             sqlite3.connect(db).execute(query)}
    out = []
    for (m, n, k, dtype, layout, method), tma_us in sorted(times.items()):
        direct_us = times.get((m, n, k, dtype, layout, method.removesuffix("_et")))
        if method.endswith("_et") and direct_us:
            out.append({"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout, "point": method.removesuffix("_et"),
                        "direct_us": round(direct_us, 2), "tma_store_us": round(tma_us, 2),
                        "direct_over_tma_store": round(direct_us / tma_us, 3)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("out")
    args = ap.parse_args()
    rows = pairs(args.db)
    if not rows:
        print(f"{args.db}: no shape measured both a TMA-store point and its direct twin")
        return 1
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} pairs; {sum(r['direct_over_tma_store'] > 1 for r in rows)} faster with the TMA store; "
          f"{args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
