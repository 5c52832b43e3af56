"""The held-out split of the learning runs (issue 26): shapes no training prompt and no SFT example names.

Held out: 10 small, 10 medium and 10 large paper shapes (large ones under 600 GFLOP, so a held-out run fits a
device call). Training: the other paper shapes that a committed tune export measured (teacher data exists
for them); the live run's SFT trains on a stratified 40 of them and its GRPO cycles 10 of those, the recorded (CPU)
run on every one the replay table holds. Deterministic: `python benchmarks/suites/learning_split.py` rewrites
benchmarks/results/h200/learning/split.json byte-identical."""

import csv
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kernelrl.workloads.hgemm import paper_grid  # noqa: E402

TEACHER = ["benchmarks/results/h200/tuned_wgmma/tune_measurements.csv",
           "benchmarks/results/h200x2/tune_one_measurements.csv"]
OUT = ROOT / "benchmarks/results/h200/learning/split.json"


def measured(path: str) -> set[str]:
    with open(ROOT / path, newline="") as f:
        return {f"{r['m']}x{r['n']}x{r['k']}" for r in csv.DictReader(f) if r["acc"] == "fp32"}


def main() -> None:
    rng = random.Random(26)
    grid = paper_grid("fp32")
    gflop = {p.name: 2 * p.m * p.n * p.k / 1e9 for p in grid}
    by_class = {c: sorted(p.name for p in grid if p.size_class == c and (c != "large" or gflop[p.name] < 600))
                for c in ("small", "medium", "large")}
    heldout = sorted(s for c in ("small", "medium", "large") for s in rng.sample(by_class[c], 10))
    covered = measured(TEACHER[0]) | measured(TEACHER[1])
    train = sorted(p.name for p in grid if p.name in covered and p.name not in heldout)
    # the live run: short calls (under 600 GFLOP), stratified 16 small, 16 medium, 8 large
    live = sorted(s for c, n in (("small", 16), ("medium", 16), ("large", 8))
                  for s in rng.sample([t for t in train if t in by_class[c]], n))
    # the live GRPO cycles 10 of those (4 small, 4 medium, 2 large), so that the curve's first 10 % and last 20 %
    # of 100 steps each visit every shape equally often; SFT still teaches all 40 (a second generator keeps the
    # fields above as they were)
    grpo_rng = random.Random(2601)
    grpo = sorted(s for c, n in (("small", 4), ("medium", 4), ("large", 2))
                  for s in grpo_rng.sample([t for t in live if t in by_class[c]], n))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"heldout": heldout, "train_live": live, "grpo_live": grpo, "train_all": train,
                               "teacher": TEACHER, "seed": 26}, indent=1) + "\n")
    print(f"held out {len(heldout)}, train {len(train)} (live {len(live)}, GRPO {len(grpo)}) -> "
          f"{OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
