"""Issue 26's recorded-reward run on the CPU: `kernelrl train` against the replay of the committed H200
measurements (recorded/table.csv: the tune exports and the live runs' judged specs), the tests' configuration on
all 40 live training shapes and for 200 GRPO steps, with plain prompts and with contrastive ones, three seeds each.

    python benchmarks/suites/learning_recorded.py [OUT_DIR]   # default benchmarks/results/h200/learning/recorded

Writes OUT_DIR/<run>_seed<N>/config.yaml, OUT_DIR/<run>_seed<N>/metrics.jsonl (one record per GRPO step),
OUT_DIR/windows.json and OUT_DIR/curves.png; the runs themselves go to temporary folders."""

import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kernelrl.train.config import parse_config  # noqa: E402
from kernelrl.train.curves import grpo_steps, plot, windows, write_steps  # noqa: E402
from kernelrl.train.pipeline import train  # noqa: E402
from tests.train.test_learning import LEARNING, config  # noqa: E402


RUNS = {"plain": {"top_k": 0, "negatives": 0}, "contrastive": {"top_k": 3, "negatives": 1}}
SEEDS = (0, 1, 2)  # a single run's windows move with its seed (and a contrastive one with how prompts shuffle)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else LEARNING / "recorded"
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"]
    curves, table = {}, {}
    for name, prompts in RUNS.items():
        for seed in SEEDS:
            label = f"{name}_seed{seed}"
            run_dir = Path(tempfile.mkdtemp(prefix="kernelrl_recorded_")) / "run"
            raw = config(run_dir, shapes)
            raw["seed"] = seed
            raw["stages"][1]["max_steps"] = 200
            raw["data"].update(prompts)
            (out / label).mkdir(parents=True, exist_ok=True)
            shown = json.loads(json.dumps(raw).replace(str(ROOT) + "/", ""))
            shown["run_dir"] = "(a temporary folder)"
            (out / label / "config.yaml").write_text(yaml.safe_dump(shown, sort_keys=False))
            train(parse_config(raw), quiet=True, say=print)
            curves[label] = grpo_steps(run_dir / "metrics.jsonl")
            write_steps(curves[label], out / label / "metrics.jsonl")
            table[label] = windows(curves[label])
    (out / "windows.json").write_text(json.dumps(table, indent=1) + "\n")
    plot({k: v for k, v in curves.items() if k.endswith("seed0")}, out / "curves.png")
    for label, w in table.items():
        print(f"{label}: reward {w['first_reward']:.3f} -> {w['last_reward']:.3f} (x{w['reward_ratio']:.2f}), "
              f"revisits x{w['revisit_speedup_ratio']:.3f} ({w['revisits_faster']}/{w['revisits']} faster), "
              f"cheats {w['first_cheat_rate']:.3f} -> {w['last_cheat_rate']:.3f}, copies "
              f"{w['first_copy_rate']:.3f} -> {w['last_copy_rate']:.3f}, cheats rewarded {w['cheat_verified_total']}")


if __name__ == "__main__":
    main()
