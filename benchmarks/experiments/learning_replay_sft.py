"""Issue 26, on the CPU: does SFT breadth carry over to held-out shapes? SFT (plain prompts) on one list of the split
(train_live: 40 shapes, or train_all: 970), a short GRPO against the recorded-reward replay, then `train eval` on the
30 held-out shapes with the same replay (best of 8; a spec the replay never measured is unrecorded and fails).

    python benchmarks/experiments/learning_replay_sft.py sft40 --sft-set train_live --epochs 30 --steps 100
    python benchmarks/experiments/learning_replay_sft.py sft970 --sft-set train_all --epochs 10 --steps 40

Writes /tmp/exp/NAME/run (the run) and /tmp/exp/NAME/heldout (heldout.csv, best.csv, summary.*)."""
import argparse
import json
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# after the sys.path lines above: the package and the tests' helpers are imported from this checkout
from kernelrl.train.config import parse_config  # noqa: E402
from kernelrl.train.pipeline import train  # noqa: E402
from kernelrl.train.curves import grpo_steps, windows  # noqa: E402
from kernelrl.train.heldout import run_heldout  # noqa: E402
from tests.train.test_learning import LEARNING, config  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--sft-set", default="train_live")
    ap.add_argument("--rl-set", default="grpo_live")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--neg", type=int, default=0)
    ap.add_argument("--copies", default="keep")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-temp", type=float, default=1.0)
    ap.add_argument("--gens", type=int, default=8)
    ap.add_argument("--per-step", type=int, default=1)
    ap.add_argument("--plain-share", type=float, default=0.0)
    a = ap.parse_args()
    split = json.loads((LEARNING / "split.json").read_text())
    run_dir = Path(f"/tmp/exp/{a.name}/run")
    raw = config(run_dir, split[a.sft_set])
    raw["seed"] = a.seed
    raw["data"]["hgemm"]["rl_shapes"] = ",".join(split[a.rl_set])
    raw["data"]["prompt_order"] = "cycle"
    raw["data"].update(plain_share=a.plain_share, top_k=a.top_k, negatives=a.neg,
                       prompts_per_target=max(4, a.steps // len(split[a.rl_set]) + 2))
    raw["reward"]["copies"] = a.copies
    raw["stages"][0]["epochs"] = a.epochs
    raw["stages"][1].update(max_steps=a.steps, num_generations=a.gens, batch_size=a.per_step, save_steps=1000)
    train(parse_config(raw), quiet=True, say=print)
    w = windows(grpo_steps(run_dir / "metrics.jsonl"))
    print(json.dumps({k: w[k] for k in ("first_reward", "last_reward", "reward_ratio", "last_cheat_rate",
                                        "last_copy_rate") if k in w}))
    state = json.loads((run_dir / "state.json").read_text())["done"]
    print(state)
    args = types.SimpleNamespace(policy=[f"sft={state['0-sft-hgemm']}", f"grpo={state['1-grpo-hgemm']}"], shapes=None,
        split=str(LEARNING / "split.json"), k=8, acc="fp32", baselines="torch", objective="torch", runner="recorded",
        recorded=str(LEARNING / "recorded" / "table.csv"), random=8, cost_model=True, out=f"/tmp/exp/{a.name}/heldout",
        seed=0, turns=1, contrastive=[], top_k=3, negatives=1, confirm=False, resume=False, tasks=[], reference=False,
        device="cpu", temperature=a.eval_temp, max_new_tokens=40, prompt_format="text", rounds=3, hang_timeout=60,
        timeout=300)
    s = run_heldout(args, say=print)
    for m, v in s.items():
        print(f"{m:12s} geo {v['geomean_best']} ({v['verified_shapes']}/{v['shapes']}) vs_cm {v['vs_cost_model']}")

if __name__ == "__main__":
    main()
