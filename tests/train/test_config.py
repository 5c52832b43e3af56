"""The training configuration: the example parses; every mistake is refused with one line naming it."""

from pathlib import Path

import pytest

from kernelrl.train.config import TrainError, load_config, parse_config
from kernelrl.train.pipeline import phases_of

pytest.importorskip("yaml", reason="kernelrl train reads YAML (pip install -e '.[rl]')")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_smoke.yaml"


def minimal(**over):
    raw = {"run_dir": "r", "model": {"path": "m"}, "data": {"hgemm": {"runner": "dummy"}},
           "stages": [{"kind": "grpo", "data": ["hgemm"]}]}
    raw.update(over)
    return raw


def test_the_example_config_parses():
    cfg = load_config(EXAMPLE)
    assert [s.kind for s in cfg.stages] == ["sft", "self_supervised", "grpo"]
    assert cfg.data.hgemm.runner == "dummy" and cfg.device == "cpu" and cfg.source.startswith("#")


def test_the_curriculum_puts_general_kernels_before_hgemm():
    cfg = load_config(EXAMPLE)
    assert [p.id for p in phases_of(cfg)] == ["0-sft-kernelbench", "0-sft-hgemm", "1-self_supervised-kernelbench",
                                              "1-self_supervised-hgemm", "2-grpo-kernelbench", "2-grpo-hgemm"]


def test_a_minimal_config_gets_the_defaults():
    cfg = parse_config(minimal())
    assert cfg.stages[0].num_generations == 8 and cfg.reward.aggregate == "mean" and cfg.evaluation.workers == 1


def test_an_unknown_top_level_key_is_refused():
    with pytest.raises(TrainError, match="stagez"):
        parse_config(minimal(stagez=[]))


@pytest.mark.parametrize("where,raw", [
    ("model", {"model": {"path": "m", "lora_rank": 8}}),
    ("data.hgemm", {"data": {"hgemm": {"shape": "paper"}}}),
    ("stages\\[0\\]", {"stages": [{"kind": "grpo", "data": ["hgemm"], "generations": 4}]}),
    ("budgets", {"budgets": {"hours": 1}}),
])
def test_an_unknown_nested_key_is_refused_with_where_it_is(where, raw):
    with pytest.raises(TrainError, match=where):
        parse_config(minimal(**raw))


def test_a_stage_using_undefined_data_is_refused():
    with pytest.raises(TrainError, match="kernelbench"):
        parse_config(minimal(stages=[{"kind": "sft", "data": ["kernelbench"]}]))


def test_an_unknown_stage_kind_is_refused():
    with pytest.raises(TrainError, match="ppo"):
        parse_config(minimal(stages=[{"kind": "ppo", "data": ["hgemm"]}]))


def test_a_plain_share_outside_zero_to_one_is_refused():
    with pytest.raises(TrainError, match="plain_share 1.5: give a share from 0 to 1"):
        parse_config(minimal(data={"hgemm": {"runner": "dummy"}, "plain_share": 1.5}))


def test_an_unknown_prompt_order_is_refused():
    with pytest.raises(TrainError, match="prompt_order: shuffled or cycle"):
        parse_config(minimal(data={"hgemm": {"runner": "dummy"}, "prompt_order": "sorted"}))


def test_a_config_without_stages_is_refused():
    with pytest.raises(TrainError, match="stages"):
        parse_config(minimal(stages=[]))


def test_a_config_without_run_dir_is_refused():
    with pytest.raises(TrainError, match="run_dir"):
        parse_config(minimal(run_dir=None))


def test_a_model_needs_a_path_or_a_random_spec():
    with pytest.raises(TrainError, match="model.path"):
        parse_config(minimal(model={}))


def test_a_bad_reward_setting_is_a_train_error():
    with pytest.raises(TrainError, match="transform"):
        parse_config(minimal(reward={"transform": "sqrt"}))


def test_a_reward_baseline_missing_from_a_dataset_is_refused():
    raw = minimal(reward={"baseline": "torch"}, data={"hgemm": {}, "kernelbench": {"device": "cpu"}},
                  stages=[{"kind": "grpo"}])
    with pytest.raises(TrainError, match="kernelbench"):
        parse_config(raw)


def test_a_missing_config_file_is_one_line(tmp_path):
    with pytest.raises(TrainError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


def test_invalid_yaml_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run_dir: [unclosed\n")
    with pytest.raises(TrainError, match="not valid YAML"):
        load_config(bad)


def test_one_process_trains_on_the_first_of_several_visible_gpus():
    from kernelrl.train.pipeline import one_training_gpu
    env = {"CUDA_VISIBLE_DEVICES": "2,3"}
    assert one_training_gpu(parse_config(minimal()), env) == "2" and env["CUDA_VISIBLE_DEVICES"] == "2"


def test_a_local_ray_cluster_starts_before_the_trainer_is_pinned():
    from kernelrl.train.pipeline import one_training_gpu
    env, seen = {}, []
    cfg = parse_config(minimal(evaluation={"ray_address": "local"}))
    one_training_gpu(cfg, env, gpu_count=lambda: 2, start_ray=lambda a: seen.append(dict(env)))
    assert seen == [{}] and env["CUDA_VISIBLE_DEVICES"] == "0"


@pytest.mark.parametrize("env", [{"CUDA_VISIBLE_DEVICES": "1"}, {"CUDA_VISIBLE_DEVICES": "0,1", "WORLD_SIZE": "2"}])
def test_one_gpu_or_a_distributed_launch_is_left_alone(env):
    from kernelrl.train.pipeline import one_training_gpu
    before = dict(env)
    assert one_training_gpu(parse_config(minimal()), env, gpu_count=lambda: 2) is None and env == before


@pytest.mark.parametrize("hgemm, says", [
    ({"completion": "spec", "shapes_per_prompt": 2}, "one shape per prompt"),
    ({"completion": "spec", "runner": "recorded"}, "recorded: TABLE.csv"),
    ({"runner": "recorded", "recorded": "t.csv"}, "replays kernel specs"),
    ({"completion": "prose"}, "completion: code or spec"),
    ({"completion": "spec", "teacher_cheat_share": 1.0}, "teacher_cheat_share"),
])
def test_a_spec_setting_that_cannot_work_is_one_line(hgemm, says):
    with pytest.raises(TrainError, match=says):
        parse_config(minimal(data={"hgemm": {"shapes_per_prompt": 1, **hgemm}}))


def test_spec_targets_carry_their_completion_kind_and_replay_table(tmp_path):
    from kernelrl.train.datasets import hgemm_specs
    cfg = parse_config(minimal(data={"hgemm": {"shapes": "64x64x64,128x128x128", "shapes_per_prompt": 1,
                                               "completion": "spec", "runner": "recorded", "recorded": "t.csv"}}))
    specs = hgemm_specs(cfg.data.hgemm, tmp_path)
    assert [s.shapes for s in specs] == [("64x64x64",), ("128x128x128",)]
    assert {(s.completion, s.runner, s.recorded) for s in specs} == {("spec", "recorded", "t.csv")}


def test_multi_turn_is_a_grpo_setting_without_vllm():
    from kernelrl.train.config import StageConfig
    assert StageConfig("grpo", turns=3, gamma=0.4).turns == 3
    with pytest.raises(ValueError, match="grpo only, and without use_vllm"):
        StageConfig("grpo", turns=3, use_vllm=True)
    with pytest.raises(ValueError, match="turns at least 1"):
        StageConfig("grpo", turns=0)
