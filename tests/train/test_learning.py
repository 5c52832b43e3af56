"""Learning, shown on the CPU: the trainer and reward code of `kernelrl train` against the recorded-reward replay of
the committed H200 measurements (benchmarks/results/h200/learning/recorded/table.csv). A small policy trained from
scratch (SFT on median-speed specs, 30 % of them cheats), then GRPO: its reward rises and its cheats die out.
Behaviour only: a fixed seed, no timing."""

import json
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


@pytest.fixture(scope="module")
def curve(tmp_path_factory):
    shapes = json.loads((LEARNING / "split.json").read_text())["train_live"][::3]
    run_dir = tmp_path_factory.mktemp("learning") / "run"
    train(parse_config(config(run_dir, shapes)), quiet=True, say=lambda *_: None)
    steps = grpo_steps(run_dir / "metrics.jsonl")
    return steps, windows(steps)


def test_every_grpo_step_is_recorded(curve):
    steps, w = curve
    assert [s["step"] for s in steps] == list(range(80))


def test_the_starting_policy_writes_cheats(curve):
    assert curve[1]["first_cheat_rate"] >= 0.1


def test_the_mean_reward_rises(curve):
    w = curve[1]
    assert w["last_reward"] >= 1.5 * w["first_reward"] > 0, w


def test_cheats_die_out(curve):
    w = curve[1]
    assert w["last_cheat_rate"] <= 0.5 * w["first_cheat_rate"], w


def test_no_cheat_is_ever_rewarded(curve):
    assert curve[1]["cheat_verified_total"] == 0


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
