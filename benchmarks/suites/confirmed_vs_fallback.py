"""Per shape of a tuned library: its best kernel against the faster fallback (torch.matmul / F.linear or autotuned
cuBLASLt), both from the confirmation run that picked it (`kernelrl tune --confirm`), beside what the screening run
had said. Per size class: the geomean and how many shapes a kernel wins. No GPU needed.

    python benchmarks/suites/confirmed_vs_fallback.py LIB/manifest.json OUT.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelrl.library.policy import LT_FALLBACKS, YARDSTICK  # noqa: E402
from kernelrl.workloads.hgemm import SIZE_CLASSES, size_class  # noqa: E402


def rows(manifest: dict) -> list[dict]:
    out = []
    for key, e in sorted(manifest["shapes"].items()):
        fallbacks = {m: e["measured_us"][m] for m in (YARDSTICK, *LT_FALLBACKS.values()) if m in e["measured_us"]}
        if not e.get("time_us") or not fallbacks:
            continue
        faster = min(fallbacks, key=fallbacks.get)
        screening = e.get("screening") or {}
        out.append({"shape": key, "class": size_class(2 * e["m"] * e["n"] * e["k"]), "kernel": e["kernel"],
                    "kernel_us": round(e["time_us"], 3), "fallback": faster, "fallback_us": round(fallbacks[faster], 3),
                    "confirmed_gain": round(fallbacks[faster] / e["time_us"], 4),
                    "screening_kernel": screening.get("kernel", ""),
                    "screening_gain": round(screening["fallback_us"] / screening["time_us"], 4)
                    if screening.get("time_us") and screening.get("fallback_us") else "",
                    "dispatch": e["dispatch"]})
    return out


def summary(table: list[dict]) -> list[str]:
    lines = [f"{'class':8} {'shapes':>6} {'geomean':>8} {'wins':>5} {'dispatched':>10}"]
    for cls in (*SIZE_CLASSES, "all"):
        part = [r for r in table if cls in ("all", r["class"])]
        if part:
            g = math.exp(sum(math.log(r["confirmed_gain"]) for r in part) / len(part))
            lines.append(f"{cls:8} {len(part):>6} {g:>8.3f} {sum(r['confirmed_gain'] > 1 for r in part):>5} "
                         f"{sum(r['dispatch'] == 'kernel' for r in part):>10}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("out")
    args = ap.parse_args()
    table = rows(json.loads(Path(args.manifest).read_text()))
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]) if table else ["shape"])
        writer.writeheader()
        writer.writerows(table)
    print("\n".join(summary(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
