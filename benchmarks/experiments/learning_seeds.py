"""tests/train/test_learning.py's training run at another seed (the model's and the run's), with the spec vocabulary
as it is in this checkout; prints the run's first and last windows as one JSON line.

    python benchmarks/experiments/learning_seeds.py SEED OUT_DIR"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if __name__ == "__main__":
    from kernelrl.train.config import parse_config
    from kernelrl.train.curves import grpo_steps, windows
    from kernelrl.train.pipeline import train
    from tests.train.test_learning import config, LEARNING
    seed, out = int(sys.argv[1]), Path(sys.argv[2])
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"][::3]
    raw = config(out / f"run{seed}", shapes)
    raw["seed"] = seed
    raw["model"]["random"]["seed"] = seed
    train(parse_config(raw), quiet=True, say=lambda *_: None)
    w = windows(grpo_steps(out / f"run{seed}" / "metrics.jsonl"))
    print(json.dumps({"seed": seed, **{k: w[k] for k in ("first_cheat_rate", "last_cheat_rate", "first_reward",
                                                            "last_reward", "cheat_verified_total")}}), flush=True)
