"""The recorded-reward table (kernelrl/train/recorded.py) from committed H200 measurements.

Rows: every verified device-mode measurement of a spec family's point in the committed tune exports (speedup
over torch.matmul measured in the same run), and, where a live learning run's population is given, every spec
its policy wrote with the evaluator's verdict or time (cheats included: what the evaluator said about them on
the H200). Usage:

    python benchmarks/suites/learning_table.py OUT.csv [--population RUN/population.db ...]
"""

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kernelrl.train.recorded import write_table  # noqa: E402
from kernelrl.train.specs import measured_specs, spec_text_of  # noqa: E402

SPLIT = ROOT / "benchmarks/results/h200/learning/split.json"


def _verdict_shape(verdict: str | None) -> str | None:
    m = re.match(r"on (\d+x\d+x\d+): ", verdict or "")
    return m.group(1) if m else None


def judged_specs(path: Path) -> list[dict]:
    """Every judged candidate of a live run's population that a spec rendered, in order: step, acc, shape, spec,
    category, verdict, score, and (when verified) us and baselines. Target keys are hashes: a shape is read off
    the target's verified measurements, else off the verdict line ("on MxNxK: ...")."""
    conn = sqlite3.connect(path)
    rows = list(conn.execute("SELECT target, generation, source, category, verdict, score, detail "
                             "FROM evolve_candidates WHERE status = 'done' ORDER BY id"))
    conn.close()
    shape_of = {}
    for target, *_, detail in rows:
        shapes = json.loads(detail or "{}")
        if shapes:
            shape_of.setdefault(target, next(iter(shapes)))
    out = []
    for target, step, source, category, verdict, score, detail in rows:
        spec, times = spec_text_of(source), json.loads(detail or "{}")
        shape = next(iter(times)) if times else shape_of.get(target) or _verdict_shape(verdict)
        if spec is None or shape is None:
            continue
        d = times.get(shape, {})
        out.append({"step": step, "acc": target.split(":")[1], "shape": shape, "spec": spec, "category": category,
                    "verdict": verdict or "", "score": score, "us": d.get("us"), "baselines": d.get("baselines") or {}})
    return out


def population_rows(path: Path, baseline: str) -> list[dict]:
    """What a live run's evaluator said about each spec its policy wrote, as replay rows beside `baseline`."""
    out = []
    for j in judged_specs(path):
        row = {"spec": j["spec"], "shape": j["shape"], "acc": j["acc"], "us": "", "baseline": baseline,
               "baseline_us": "", "verdict": j["verdict"] or j["category"], "source": path.parent.name}
        if j["category"] == "ok":
            base = j["baselines"].get(baseline)
            if not base or not j["us"]:
                continue
            row.update(us=j["us"], baseline_us=base, verdict="")
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--population", action="append", default=[], help="a live run's population.db (repeatable)")
    ap.add_argument("--baseline", default="torch")
    args = ap.parse_args()
    teacher = json.loads(SPLIT.read_text())["teacher"]
    rows = {}
    for _shape, ms in measured_specs([ROOT / t for t in teacher], "fp32", args.baseline).items():
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
