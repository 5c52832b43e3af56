"""Training data: targets from the configuration, contrastive prompts from the evolve prompt builder and the run's
population, RL rows rendered when drawn, and SFT pairs from populations, results databases and seeds."""

import json
from types import SimpleNamespace

import pytest

from kernelrl.evolve.population import Population
from kernelrl.train.config import HgemmData, KernelBenchData
from kernelrl.train.datasets import (ANSWER_CUE, Prompter, hgemm_specs, import_population, kernelbench_specs,
                                     population_pairs, prompt_rows, results_db_pairs, rl_dataset, seed_pairs,
                                     sft_dataset, Pair)
from kernelrl.train.targets import TargetSpec, make_target
from tests import train_helpers as h

pytest.importorskip("datasets", reason="training data are datasets.Dataset objects (pip install -e '.[rl]')")
HW = "- GPU: NVIDIA H200"


def data_cfg(tmp_path, **over):
    (tmp_path / "tasks").mkdir(exist_ok=True)
    (tmp_path / "tasks" / "5_SumDim.py").write_text(h.SUM_TASK)
    d = dict(hgemm=HgemmData(shapes="64x64x64,128x128x128,256x64x64", shapes_per_prompt=2, runner="dummy",
                             baselines=["torch"], rounds=1),
             kernelbench=KernelBenchData(tasks=[str(tmp_path / "tasks")], device="cpu", rounds=1),
             min_speedup=0.0)
    d.update(over)
    return SimpleNamespace(**d)


@pytest.fixture
def pop(tmp_path):
    p = Population(tmp_path / "run_pop.db")
    yield p
    p.close()


def spec(tmp_path):
    return hgemm_specs(data_cfg(tmp_path).hgemm, tmp_path)[0]


def verified(pop, key, source, score, name=None, parent=None, analysis=""):
    c, _ = pop.add(key, source, "llm", 1, parent=parent, analysis=analysis, name=name)
    detail = {"64x64x64": {"us": 10.0, "baselines": {"torch": 10.0 * score}}}
    return pop.record(c.id, "ok", None, score, {"torch": score}, detail)


def test_hgemm_shapes_are_grouped_per_prompt(tmp_path):
    specs = hgemm_specs(data_cfg(tmp_path).hgemm, tmp_path)
    assert [s.shapes for s in specs] == [("64x64x64", "128x128x128"), ("256x64x64",)]


def test_each_kernelbench_task_is_one_target(tmp_path):
    [s] = kernelbench_specs(data_cfg(tmp_path).kernelbench, tmp_path)
    assert s.kind == "kernelbench" and s.task_path.endswith("5_SumDim.py") and s.device == "cpu"


def test_a_missing_task_folder_is_one_line(tmp_path):
    from kernelrl.train.config import TrainError
    with pytest.raises(TrainError, match="no such file"):
        kernelbench_specs(KernelBenchData(tasks=[str(tmp_path / "nope")]), tmp_path)


def test_without_variants_the_prompt_asks_for_a_first_kernel(tmp_path, pop):
    [_, user] = Prompter(pop, HW).messages(spec(tmp_path).to_json())
    assert "There is no verified candidate yet" in user["content"] and "64x64x64" in user["content"]


def test_a_prompt_contrasts_earlier_variants_with_their_speedups(tmp_path, pop):
    s = spec(tmp_path)
    key = make_target(s).key
    verified(pop, key, h.KERNEL, 1.5, name="fast_one")
    verified(pop, key, h.KERNEL_2, 0.7, name="slow_one")
    [_, user] = Prompter(pop, HW).messages(s.to_json())
    text = user["content"]
    assert "comparative analysis" in text and "fast_one" in text and "slow_one" in text and "1.500×" in text


def test_a_failed_variant_is_shown_with_its_verdict(tmp_path, pop):
    s = spec(tmp_path)
    key = make_target(s).key
    verified(pop, key, h.KERNEL, 1.2)
    c, _ = pop.add(key, h.CHEAT, "llm", 1)
    pop.record(c.id, "rejected", "static screen: cuda-stream (line 3)")
    [_, user] = Prompter(pop, HW).messages(s.to_json())
    assert "static screen: cuda-stream" in user["content"]


def test_the_same_row_and_population_give_the_same_prompt(tmp_path, pop):
    s = spec(tmp_path)
    key = make_target(s).key
    for i in range(4):
        verified(pop, key, h.KERNEL + f"// {i}\n", 1.0 + i / 10)
    prompter = Prompter(pop, HW)
    assert prompter.messages(s.to_json(), 3) == prompter.messages(s.to_json(), 3)


def test_a_new_variant_changes_the_prompt(tmp_path, pop):
    s = spec(tmp_path)
    key = make_target(s).key
    verified(pop, key, h.KERNEL, 1.1)
    prompter = Prompter(pop, HW)
    before = prompter.messages(s.to_json())
    verified(pop, key, h.KERNEL_2, 2.0, name="newcomer")
    after = prompter.messages(s.to_json())
    assert before != after and "newcomer" in after[1]["content"]


def test_text_format_prompts_are_plain_text_ending_in_the_answer_cue(tmp_path, pop):
    [row] = prompt_rows([spec(tmp_path)], Prompter(pop, HW, fmt="text"))
    assert isinstance(row["prompt"], str) and row["prompt"].endswith(ANSWER_CUE) and row["messages"]


def test_rl_rows_are_rendered_when_read(tmp_path, pop):
    specs = hgemm_specs(data_cfg(tmp_path).hgemm, tmp_path)
    ds = rl_dataset(specs, Prompter(pop, HW), per_target=3)
    row = ds[0]
    assert len(ds) == 6 and row["prompt"][1]["role"] == "user" and TargetSpec.from_json(row["target"]).kind == "hgemm"


def test_sft_rows_in_chat_format_have_an_assistant_completion(tmp_path):
    ds = sft_dataset([Pair("{}", [{"role": "user", "content": "q"}], "answer", "seed")], "chat")
    assert ds[0]["completion"] == [{"role": "assistant", "content": "answer"}]


def test_sft_rows_in_text_format_are_strings(tmp_path):
    ds = sft_dataset([Pair("{}", [{"role": "user", "content": "q"}], "answer", "seed")], "text")
    assert ds[0]["prompt"] == "q" + ANSWER_CUE and ds[0]["completion"] == "answer"


def test_population_pairs_keep_the_context_and_the_analysis(tmp_path, pop):
    src = Population(tmp_path / "evolve.db")
    key = "hgemm:fp32:1:abc"
    parent = verified(src, key, h.KERNEL, 1.0, name="the_parent")
    verified(src, key, h.KERNEL_2, 1.4, parent=parent.id, analysis="Tiling beats the parent.")
    src.close()
    pairs = population_pairs(tmp_path / "evolve.db", data_cfg(tmp_path), tmp_path, Prompter(pop, HW))
    child = next(p for p in pairs if "variant two" in p.completion)
    assert child.completion.startswith("Tiling beats the parent.") and "```cuda" in child.completion
    assert "the_parent" in child.messages[1]["content"] and TargetSpec.from_json(child.spec).shapes == ("64x64x64",)


def test_population_pairs_skip_kernels_below_the_minimum_speedup(tmp_path, pop):
    src = Population(tmp_path / "evolve.db")
    verified(src, "hgemm:fp32:1:abc", h.KERNEL, 0.5)
    src.close()
    pairs = population_pairs(tmp_path / "evolve.db", data_cfg(tmp_path, min_speedup=1.0), tmp_path,
                             Prompter(pop, HW))
    assert pairs == []


def test_an_evolve_population_is_imported_as_context_for_overlapping_shapes(tmp_path, pop):
    src = Population(tmp_path / "evolve.db")
    verified(src, "hgemm:fp32:1:abc", h.KERNEL, 1.3, name="from_evolve")
    src.close()
    s = spec(tmp_path)
    assert import_population(tmp_path / "evolve.db", pop, [s]) == 1
    assert [c.name for c in pop.all(make_target(s).key)] == ["from_evolve"]
    assert import_population(tmp_path / "evolve.db", pop, [s]) == 0  # once per target


def test_results_db_pairs_take_the_shapes_where_a_kernel_verified(tmp_path, pop):
    from kernelrl.jobs.measure import BenchConfig, NullUI, run_bench
    from kernelrl.workloads.hgemm import parse_shapes
    kernel = tmp_path / "tuned_a.cu"
    kernel.write_text(h.KERNEL)
    run_bench(BenchConfig(problems=parse_shapes("64x64x64,128x128x128,256x64x64"), modes=["device"],
                          candidates=[str(kernel)], baselines=["torch"], runner="dummy", db_path=tmp_path / "r.db"),
              NullUI())
    [pair] = results_db_pairs(tmp_path / "r.db", [str(tmp_path)], data_cfg(tmp_path), tmp_path, Prompter(pop, HW))
    assert len(TargetSpec.from_json(pair.spec).shapes) == 2 and h.KERNEL.strip() in pair.completion


def test_seed_files_are_paired_with_targets_that_take_them(tmp_path, pop):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "k.cu").write_text(h.KERNEL)
    (tmp_path / "seeds" / "5_SumDim.py").write_text(h.SUM_HONEST)
    (tmp_path / "seeds" / "9_Other.py").write_text(h.SUM_HONEST)
    d = data_cfg(tmp_path)
    specs = hgemm_specs(d.hgemm, tmp_path) + kernelbench_specs(d.kernelbench, tmp_path)
    pairs = seed_pairs([str(tmp_path / "seeds")], specs, Prompter(pop, HW))
    kinds = sorted(TargetSpec.from_json(p.spec).kind for p in pairs)
    assert kinds == ["hgemm", "kernelbench"] and not any(p.verified for p in pairs)
    assert any("```python" in p.completion for p in pairs)


def test_pairs_serialise_to_json(tmp_path):
    from dataclasses import asdict
    p = Pair("{}", [{"role": "user", "content": "q"}], "a", "seed")
    assert Pair(**json.loads(json.dumps(asdict(p)))) == p


def test_the_policy_reward_records_judged_code_as_context(tmp_path, pop):
    from kernelrl.train.metrics import MetricsLog, read_metrics
    from kernelrl.train.reward_fn import PolicyReward
    from kernelrl.train.service import RewardService
    from tests.train_helpers import InlineExecutor
    s = spec(tmp_path).to_json()
    svc = RewardService(executor=InlineExecutor(h.ok_judge))
    fn = PolicyReward(svc, MetricsLog(tmp_path / "m.jsonl"), "p", pop)
    rewards = fn(prompts=["p"] * 2, completions=[h.fenced(h.KERNEL), "nothing"], target=[s, s])
    [c] = pop.all(make_target(spec(tmp_path)).key)
    assert rewards[0] > 0 and rewards[1] == 0.0 and c.ok and c.analysis.startswith("The naive kernel")
    [line] = read_metrics(tmp_path / "m.jsonl")
    assert line["kind"] == "reward" and line["pass_rate"] == 0.5 and line["malformed_rate"] == 0.5


def test_cycled_rl_rows_take_every_target_in_turn(tmp_path, pop):
    specs = hgemm_specs(data_cfg(tmp_path).hgemm, tmp_path)
    ds = rl_dataset(specs, Prompter(pop, HW), per_target=3, order="cycle")
    order = [(specs.index(TargetSpec.from_json(ds[i]["target"])), ds[i]["variant"]) for i in range(len(ds))]
    assert order == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]


def test_own_kernels_travel_from_the_data_config_to_the_kernelbench_target(tmp_path):
    from kernelrl.train.targets import make_target
    data = data_cfg(tmp_path).kernelbench
    data.own_kernels = True
    [s] = kernelbench_specs(data, tmp_path)
    assert s.own_kernels and make_target(s).own_kernels
