"""Each stage runs real optimisation steps on a tiny random causal LM (no download) and changes its weights, with
rewards from the real reward module, the real judge and the dummy runner; the pipeline resumes and keeps to its
time budget; `kernelrl train` runs from a YAML file.

The tiny model's vocabulary holds two whole answers as single tokens (an honest kernel and a cheat), with a raised
output bias, so even a random model writes some completions that verify and some that do not: the reward varies
inside a GRPO group and the self-supervised round has something to keep."""

import json
import textwrap

import pytest

from kernelrl.evolve.extract import extract
from kernelrl.train.config import parse_config
from kernelrl.train.metrics import read_metrics
from kernelrl.train.pipeline import Run, train
from tests import train_helpers as h

pytest.importorskip("trl", reason="the training stages run on TRL (pip install -e '.[rl]')")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers' own deprecations, not ours


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    return h.tiny_policy(tmp_path_factory.mktemp("policy"), [h.fenced(h.KERNEL), h.fenced(h.CHEAT)])


def config(tmp_path, policy, stages, lora=None, budget=None, seeds=True):
    (tmp_path / "seeds").mkdir(exist_ok=True)
    (tmp_path / "seeds" / "naive.cu").write_text(h.KERNEL)
    raw = {"run_dir": str(tmp_path / "run"), "device": "cpu",
           "model": {"path": str(policy), **({"lora": lora} if lora else {})},
           "data": {"hgemm": {"shapes": "64x64x64,128x128x128", "shapes_per_prompt": 1, "runner": "dummy",
                              "baselines": ["torch"], "rounds": 1},
                    "seeds": [str(tmp_path / "seeds")] if seeds else [], "prompts_per_target": 1,
                    "hardware": "H200"},
           "evaluation": {"timeout_s": 120},
           "stages": [{"data": ["hgemm"], "learning_rate": 1e-2, "save_steps": 100, **s} for s in stages],
           "budgets": {"max_minutes": budget}}
    return parse_config(raw)


def weights(path):
    from transformers import AutoModelForCausalLM
    return {k: v.clone() for k, v in AutoModelForCausalLM.from_pretrained(path).state_dict().items()}


def changed(a, b):
    return [k for k in a if not torch.equal(a[k], b[k])]


def quiet_train(cfg):
    return train(cfg, quiet=True, say=lambda text: None)


def test_sft_trains_on_verified_seeds_and_changes_the_weights(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "sft", "max_steps": 2}])
    summary = quiet_train(cfg)
    assert summary["stopped"] == "all phases done" and summary["model"].endswith("0-sft-hgemm/model")
    assert changed(weights(policy), weights(summary["model"]))
    pairs = [json.loads(line) for line in (cfg.run_dir / "sft_pairs_hgemm.jsonl").read_text().splitlines()]
    assert pairs and all(p["verified"] and "kernelrl_hgemm" in p["completion"] for p in pairs)
    losses = [m["loss"] for m in read_metrics(cfg.run_dir / "metrics.jsonl") if m.get("kind") == "trainer"
              and "loss" in m]
    assert len(losses) == 2


def test_a_self_supervised_round_keeps_what_verifies_and_retrains(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "self_supervised", "rounds": 1, "samples_per_prompt": 4,
                                     "max_completion_length": 3, "max_steps": 1}], seeds=False)
    summary = quiet_train(cfg)
    kept = [json.loads(line) for line in
            (cfg.run_dir / "0-self_supervised-hgemm" / "round0" / "kept.jsonl").read_text().splitlines()]
    rewards = [m for m in read_metrics(cfg.run_dir / "metrics.jsonl") if m.get("kind") == "reward"]
    # what was judged is the completion's last cuda block: a sampled cheat block before an honest one is text, not
    # the kernel that verified (random sampling writes such completions now and then)
    judged = [extract(p["completion"]).code or "" for p in kept]
    assert kept and all("kernelrl_hgemm" in code and "cudaStreamCreate" not in code for code in judged)
    assert 0 < rewards[0]["pass_rate"] < 1  # some verified, some not: only those were kept
    assert changed(weights(policy), weights(summary["model"]))


def test_grpo_steps_change_the_weights_with_rewards_from_the_evaluator(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 2, "num_generations": 4,
                                     "max_completion_length": 3}], seeds=False)
    summary = quiet_train(cfg)
    metrics = read_metrics(cfg.run_dir / "metrics.jsonl")
    rewards = [m for m in metrics if m.get("kind") == "reward"]
    assert len(rewards) == 2 and any(0 < r["pass_rate"] < 1 for r in rewards)
    assert any(r["reward_std"] > 0 for r in rewards) and all("speedup_p50" in r for r in rewards)
    assert any(m.get("grad_norm") for m in metrics if m.get("kind") == "trainer")
    assert changed(weights(policy), weights(summary["model"]))


def test_grpo_records_judged_completions_as_context_for_later_prompts(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 4,
                                     "max_completion_length": 3}], seeds=False)
    quiet_train(cfg)
    from kernelrl.evolve.population import Population
    pop = Population(cfg.run_dir / "population.db")
    cats = {c.category for k in [r[0] for r in pop.conn.execute("SELECT DISTINCT target FROM evolve_candidates")]
            for c in pop.all(k)}
    pop.close()
    assert "ok" in cats


def test_grpo_with_lora_saves_a_merged_model_that_changed(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 4,
                                     "max_completion_length": 3, "learning_rate": 0.1}], seeds=False,
                 lora={"r": 4, "lora_alpha": 8, "lora_dropout": 0.0})
    summary = quiet_train(cfg)
    after = weights(summary["model"])
    assert not any("lora" in k for k in after) and changed(weights(policy), after)


class StepClock:
    """A minute passes at every reading: the budget runs out at a known point inside a phase."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 60.0
        return self.t


def test_a_phase_stopped_by_the_budget_resumes_from_its_checkpoint(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "sft", "max_steps": 4}], budget=3)
    run = Run(cfg, quiet=True, say=lambda text: None, clock=StepClock())
    try:
        first = run.run()
    finally:
        run.close()
    assert first["stopped"] == "time budget spent" and first["done"] == []
    assert (cfg.run_dir / "0-sft-hgemm" / "checkpoint-2").is_dir()
    cfg.budgets.max_minutes = None
    second = quiet_train(cfg)
    steps = [m["step"] for m in read_metrics(cfg.run_dir / "metrics.jsonl") if m.get("kind") == "trainer"
             and "loss" in m]
    assert second["done"] == ["0-sft-hgemm"] and steps == [1, 2, 3, 4]


def test_a_finished_run_skips_its_phases_when_run_again(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "sft", "max_steps": 1}])
    first = quiet_train(cfg)
    said = []
    second = train(cfg, quiet=True, say=said.append)
    assert second["model"] == first["model"] and not any(s.startswith("phase ") for s in said)


def test_the_train_command_runs_a_yaml_config(tmp_path, policy, capsys):
    from kernelrl.cli import main
    yaml_path = tmp_path / "t.yaml"
    yaml_path.write_text(textwrap.dedent(f"""\
        run_dir: {tmp_path / 'run'}
        device: cpu
        model: {{path: {policy}}}
        data:
          hgemm: {{shapes: "64x64x64", runner: dummy, baselines: [torch], rounds: 1}}
          prompts_per_target: 1
          hardware: H200
        stages:
          - {{kind: grpo, data: [hgemm], max_steps: 1, num_generations: 2, max_completion_length: 2}}
        """))
    assert main(["train", "--config", str(yaml_path), "--quiet"]) == 0
    assert "all phases done: 1 of 1 phases done" in capsys.readouterr().out


def test_vllm_generation_without_vllm_is_one_clear_error(tmp_path, policy):
    import importlib.util
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    from kernelrl.train.config import TrainError
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "use_vllm": True}], seeds=False)
    with pytest.raises(TrainError, match="vLLM is not installed"):
        quiet_train(cfg)


def test_the_train_command_reports_a_bad_config_in_one_line(tmp_path, capsys):
    from kernelrl.cli import main
    bad = tmp_path / "bad.yaml"
    bad.write_text("run_dir: r\nmodel: {path: m}\nstages: [{kind: ppo}]\n")
    assert main(["train", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kernelrl: ") and "ppo" in err and "\n" not in err


def test_prompts_are_fitted_to_the_policys_context_in_its_own_tokens(tmp_path, policy):
    from kernelrl.evolve.tokens import message_tokens
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 2,
                                     "max_completion_length": 64}], seeds=False)
    cfg.data.context_tokens = 100_000
    run = Run(cfg, quiet=True, say=lambda text: None)
    spec = run.specs("hgemm", rl=True)[0].to_json()
    messages = run.prompter.messages(spec)
    fit = run.prompter.fit
    assert fit is not None and fit.max_new_tokens == 64
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(policy)
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    exact = len(tok(text, add_special_tokens=False)["input_ids"])  # the rendered request, counted on its own
    assert exact > 1000 and message_tokens(messages, fit.counter) == exact <= 100_000 - 64


def test_a_context_too_small_for_any_prompt_is_one_line(tmp_path, policy):
    from kernelrl.evolve.prompts import PromptTooLong
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 2,
                                     "max_completion_length": 64}], seeds=False)
    cfg.data.context_tokens = 200
    run = Run(cfg, quiet=True, say=lambda text: None)
    with pytest.raises(PromptTooLong, match="over the 136 a prompt may take"):
        run.prompter.messages(run.specs("hgemm", rl=True)[0].to_json())


def test_multi_turn_grpo_judges_every_turn_and_pays_the_discounted_return(tmp_path, policy, monkeypatch):
    from kernelrl.train import multiturn
    seen = []
    original = multiturn.MultiTurnRollout.__call__

    def recording(self, prompts, trainer):
        out = original(self, prompts, trainer)
        seen.append((out, self.tok))
        return out
    monkeypatch.setattr(multiturn.MultiTurnRollout, "__call__", recording)
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 2,
                                     "max_completion_length": 3, "turns": 2, "gamma": 0.5}], seeds=False)
    quiet_train(cfg)
    (out, tok), = seen
    assert [len(r) for r in out["turn_rewards"]] == [2, 2]  # both turns judged, for each trajectory
    for ids, mask in zip(out["completion_ids"], out["env_mask"]):
        assert len(ids) == len(mask) and 0 in mask and mask[0] == 1  # the policy's turn, then the feedback
        feedback = tok.decode([i for i, m in zip(ids, mask) if m == 0])
        assert "Turn 2 of 2" in feedback
    rewards = [m for m in read_metrics(cfg.run_dir / "metrics.jsonl") if m.get("kind") == "reward"]
    assert len(rewards) == 2  # one judged batch per turn


def test_an_overlapped_grpo_stage_judges_group_by_group_and_says_where_its_time_went(tmp_path, policy):
    cfg = config(tmp_path, policy, [{"kind": "grpo", "max_steps": 1, "num_generations": 2, "batch_size": 2,
                                     "max_completion_length": 3, "overlap": True}], seeds=False)
    quiet_train(cfg)
    metrics = read_metrics(cfg.run_dir / "metrics.jsonl")
    assert len([m for m in metrics if m.get("kind") == "reward"]) == 2  # two prompts' groups, judged one by one
    (rollout,) = [m for m in metrics if m.get("kind") == "rollout"]
    assert rollout["overlap"] is True and 0 < rollout["generate_busy"] <= 1 and 0 < rollout["judge_busy"] <= 1


def test_overlap_with_vllm_is_refused_with_its_reason():
    from kernelrl.train.config import StageConfig
    with pytest.raises(ValueError, match="overlap: grpo only, and without use_vllm"):
        StageConfig(kind="grpo", overlap=True, use_vllm=True)
