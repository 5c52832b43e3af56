"""Issue 26's recorded-reward run on the CPU: `kernelrl train` against the replay of the committed H200
measurements (recorded/table.csv: the tune exports and the live runs' judged specs), the tests' configuration on
all 40 live training shapes and for 200 GRPO steps.

    python benchmarks/learning_recorded.py [OUT_DIR]   # default benchmarks/results/h200/learning/recorded

Writes OUT_DIR/config.yaml, OUT_DIR/metrics.jsonl (one record per GRPO step), OUT_DIR/windows.json and
OUT_DIR/curves.png; the run itself goes to a temporary folder."""

import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from kernelrl.train.config import parse_config  # noqa: E402
from kernelrl.train.curves import grpo_steps, plot, windows, write_steps  # noqa: E402
from kernelrl.train.pipeline import train  # noqa: E402
from test_train_learning import LEARNING, config  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else LEARNING / "recorded"
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"]
    run_dir = Path(tempfile.mkdtemp(prefix="kernelrl_recorded_")) / "run"
    raw = config(run_dir, shapes)
    raw["stages"][1]["max_steps"] = 200
    out.mkdir(parents=True, exist_ok=True)
    shown = json.loads(json.dumps(raw).replace(str(ROOT) + "/", ""))
    shown["run_dir"] = "(a temporary folder)"
    (out / "config.yaml").write_text(yaml.safe_dump(shown, sort_keys=False))
    train(parse_config(raw), quiet=True, say=print)
    steps = grpo_steps(run_dir / "metrics.jsonl")
    write_steps(steps, out / "metrics.jsonl")
    w = windows(steps)
    (out / "windows.json").write_text(json.dumps(w, indent=1) + "\n")
    plot({"recorded": steps}, out / "curves.png")
    print(json.dumps(w, indent=1))


if __name__ == "__main__":
    main()
