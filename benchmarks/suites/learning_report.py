"""Issue 26's learning results from the runs' folders: per GRPO step records, every judged spec, the windows a
learning claim is read from, and the training curves.

    python benchmarks/suites/learning_report.py RUNS_DIR OUT_DIR [--names contrastive,plain]

RUNS_DIR holds one folder per run (runs/learning/ of benchmarks/device/learning.sh, or its learning_runs.tar.xz
unpacked). Writes OUT_DIR/<name>/metrics.jsonl (one record per GRPO step: step, reward_mean, pass_rate, cheat_rate,
cheat_verified, speedup_verified, ...), OUT_DIR/<name>/judged.csv (each distinct spec the policy wrote per shape,
with the evaluator's verdict or time beside cuBLAS), OUT_DIR/windows.json and OUT_DIR/curves.png."""

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "suites"))
from kernelrl.train.curves import grpo_steps, plot, windows, write_steps  # noqa: E402
from learning_table import judged_specs  # noqa: E402


def judged(population: Path) -> list[dict]:
    return [{"step": j["step"], "shape": j["shape"], "spec": j["spec"], "category": j["category"],
             "verdict": j["verdict"], "speedup_vs_cublas": j["score"] if j["category"] == "ok" else "",
             "us": j["us"] or "", "cublas_nn_us": j["baselines"].get("cublas_nn") or "",
             "torch_us": j["baselines"].get("torch") or ""} for j in judged_specs(population)]


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
