"""Issue 26's learning results from the runs' folders: per GRPO step records, every judged spec, the windows a
learning claim is read from, and the training curves.

    python benchmarks/learning_report.py RUNS_DIR OUT_DIR [--names contrastive,plain]

RUNS_DIR holds one folder per run (runs/learning/ of benchmarks/h200_learning.sh, or its learning_runs.tar.xz
unpacked). Writes OUT_DIR/<name>/metrics.jsonl (one record per GRPO step: step, reward_mean, pass_rate, cheat_rate,
cheat_verified, speedup_verified, ...), OUT_DIR/<name>/judged.csv (each distinct spec the policy wrote per shape,
with the evaluator's verdict or time beside cuBLAS), OUT_DIR/windows.json and OUT_DIR/curves.png."""

import argparse
import csv
import json
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernelrl.train.curves import grpo_steps, plot, windows, write_steps  # noqa: E402
from kernelrl.train.specs import spec_text_of  # noqa: E402
from learning_table import _verdict_shape, target_shapes  # noqa: E402


def judged(population: Path) -> list[dict]:
    conn = sqlite3.connect(population)
    rows = []
    found = list(conn.execute("SELECT target, generation, source, category, verdict, score, detail "
                              "FROM evolve_candidates WHERE status = 'done' ORDER BY id"))
    shape_of = target_shapes([(t, s, c, v, d) for t, _, s, c, v, _, d in found])
    for target, generation, source, category, verdict, score, detail in found:
        spec = spec_text_of(source)
        d = json.loads(detail or "{}")
        shape, times = (next(iter(d.items())) if d else (shape_of.get(target) or _verdict_shape(verdict), {}))
        base = times.get("baselines") or {}
        rows.append({"step": generation, "shape": shape, "spec": spec, "category": category, "verdict": verdict or "",
                     "speedup_vs_cublas": score if category == "ok" else "", "us": times.get("us") or "",
                     "cublas_nn_us": base.get("cublas_nn") or "", "torch_us": base.get("torch") or ""})
    conn.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs")
    ap.add_argument("out")
    ap.add_argument("--names", default="contrastive,plain")
    args = ap.parse_args()
    out = Path(args.out)
    runs, table = {}, {}
    for name in args.names.split(","):
        run = Path(args.runs) / name
        steps = grpo_steps(run / "metrics.jsonl")
        (out / name).mkdir(parents=True, exist_ok=True)
        write_steps(steps, out / name / "metrics.jsonl")
        rows = judged(run / "population.db")
        with open(out / name / "judged.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["step"])
            w.writeheader()
            w.writerows(rows)
        runs[name], table[name] = steps, windows(steps)
    (out / "windows.json").write_text(json.dumps(table, indent=1) + "\n")
    plot(runs, out / "curves.png")
    for name, w in table.items():
        print(f"{name}: {w['steps']} steps; reward {w['first_reward']:.3f} -> {w['last_reward']:.3f} "
              f"(x{w['reward_ratio']:.2f}); speedup {w['first_speedup']:.3f} -> {w['last_speedup']:.3f}; cheat rate "
              f"{w['first_cheat_rate']:.3f} -> {w['last_cheat_rate']:.3f}; cheats verified {w['cheat_verified_total']}")


if __name__ == "__main__":
    main()
