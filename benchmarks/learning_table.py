"""The recorded-reward table (kernelrl/train/recorded.py) from committed H200 measurements.

Rows: every verified device-mode measurement of a spec family's point in the committed tune exports (speedup
over torch.matmul measured in the same run), and, where a live learning run's population is given, every spec
its policy wrote with the evaluator's verdict or time (cheats included: what the evaluator said about them on
the H200). Usage:

    python benchmarks/learning_table.py OUT.csv [--population RUN/population.db ...]
"""

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kernelrl.train.recorded import write_table  # noqa: E402
from kernelrl.train.specs import measured_specs, spec_text_of  # noqa: E402

SPLIT = ROOT / "benchmarks/results/h200/learning/split.json"


def target_shapes(rows) -> dict[str, str]:
    """A target key's shape (keys are hashes): read off its verified candidates' measurements."""
    out = {}
    for target, _, _, _, detail in rows:
        shapes = json.loads(detail or "{}")
        if shapes:
            out.setdefault(target, next(iter(shapes)))
    return out


def _verdict_shape(verdict: str | None) -> str | None:
    m = re.match(r"on (\d+x\d+x\d+): ", verdict or "")
    return m.group(1) if m else None


def population_rows(path: Path, baseline: str) -> list[dict]:
    """What a live run's evaluator said about each spec its policy wrote (one shape per target)."""
    conn = sqlite3.connect(path)
    out = []
    rows = list(conn.execute("SELECT target, source, category, verdict, detail FROM evolve_candidates "
                             "WHERE status = 'done'"))
    shape_of = target_shapes(rows)
    for target, source, category, verdict, detail in rows:
        spec = spec_text_of(source)
        shapes = json.loads(detail or "{}")
        shape = next(iter(shapes)) if shapes else shape_of.get(target) or _verdict_shape(verdict)
        acc = target.split(":")[1]
        if shape is None:
            continue
        if spec is None:
            continue
        if category == "ok":
            d = shapes[shape]
            base = (d.get("baselines") or {}).get(baseline)
            if not base or not d.get("us"):
                continue
            out.append({"spec": spec, "shape": shape, "acc": acc, "us": d["us"], "baseline": baseline,
                        "baseline_us": base, "verdict": "", "source": path.parent.name})
        else:
            out.append({"spec": spec, "shape": shape, "acc": acc, "us": "", "baseline": baseline, "baseline_us": "",
                        "verdict": verdict or category, "source": path.parent.name})
    conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--population", action="append", default=[], help="a live run's population.db (repeatable)")
    ap.add_argument("--baseline", default="torch")
    args = ap.parse_args()
    teacher = json.loads(SPLIT.read_text())["teacher"]
    rows = {}
    for shape, ms in measured_specs([ROOT / t for t in teacher], "fp32", args.baseline).items():
        for m in ms:
            rows[(m.spec, m.shape, m.acc)] = {"spec": m.spec, "shape": m.shape, "acc": m.acc, "us": m.us,
                                              "baseline": m.baseline, "baseline_us": m.baseline_us, "verdict": "",
                                              "source": m.source}
    for pop in args.population:
        for r in population_rows(Path(pop), args.baseline):
            rows.setdefault((r["spec"], r["shape"], r["acc"]), r)  # the tuner's own measurement wins
    write_table(args.out, sorted(rows.values(), key=lambda r: (r["shape"], r["spec"])))
    print(f"{len(rows)} rows -> {args.out}")


if __name__ == "__main__":
    main()
