"""Spec completions in training: their verdicts before any build, the prompts, teacher pairs, batch summaries and
the recorded-reward replay."""

import json

import pytest

from kernelrl.evolve.population import Population
from kernelrl.space.spec import parse_spec
from kernelrl.train.recorded import RecordedError, judge_recorded, load_table, write_table
from kernelrl.train.reward import Judgement, RewardConfig, RewardResult, compute_reward
from kernelrl.train.specs import (Measured, SpecPrompter, completion_code, prompt_text, shown_specs, spec_summary,
                                  spec_text_of, teacher_pairs, trick_of)
from kernelrl.train.targets import TargetSpec

HONEST = "wgmma BM=128 BN=128 stages=4"


def target(shape="256x512x128", **kw):
    return TargetSpec("hgemm", ("cublas_nn",), "cublas_nn", shapes=(shape,), completion="spec", **kw)


def test_a_bad_spec_is_malformed_with_its_line():
    code, j = completion_code(target(), "wgmma BM=huge")
    assert code is None and j.category == "malformed" and j.verdict.startswith("bad spec: ")
    assert j.key == "bad spec"  # the reward carries the key beside the line


def test_the_bad_spec_rate_counts_keys_not_lines():
    _, bad = completion_code(target(), "wgmma BM=huge")
    odd = Judgement("failed", "bad spec: words of a key in a line whose key is another", "cublas_nn",
                    key="task too large")
    results = [compute_reward(j, RewardConfig()) for j in (bad, odd)]
    assert [r.key for r in results] == ["bad spec", "task too large"]
    assert spec_summary(["wgmma BM=huge", "x"], results)["bad_spec_rate"] == 0.5


def test_a_rejected_point_fails_before_any_build():
    code, j = completion_code(target(), "wgmma BM=128 BN=256 stages=12")
    assert code is None and j.category == "failed" and j.verdict.startswith("too much shared memory")
    assert j.key == "too much shared memory"


def test_a_good_spec_renders_to_its_source():
    code, j = completion_code(target(), HONEST)
    assert j is None and spec_text_of(code) == HONEST


def test_code_completions_still_take_a_fenced_file():
    spec = TargetSpec("hgemm", ("cublas_nn",), shapes=("64x64x64",))
    code, j = completion_code(spec, "no code here")
    assert code is None and j.category == "malformed"


def test_trick_of_reads_the_cheat_and_nothing_else():
    assert trick_of(f"{HONEST} trick=cache") == "cache"
    assert trick_of(HONEST) is None and trick_of("not a spec") is None


def test_summary_counts_cheats_and_cheats_the_evaluator_passed():
    texts = [f"{HONEST} trick=cache", HONEST, f"{HONEST} trick=side_stream"]
    results = [RewardResult(0.0, "defence", "unwritten output"), RewardResult(1.1, "ok", None, speedup=1.21),
               RewardResult(0.9, "ok", None, speedup=1.0)]
    s = spec_summary(texts, results)
    assert s["cheat_rate"] == pytest.approx(2 / 3) and s["cheat_verified"] == 1
    assert s["speedup_verified"] == pytest.approx(1.1)


def test_a_plain_prompt_names_the_shape_only():
    assert prompt_text("64x128x256", "fp32", []) == "hgemm fp32 M=64 N=128 K=256"


def test_a_contrastive_prompt_shows_earlier_specs_with_their_outcomes(tmp_path):
    pop = Population(tmp_path / "p.db")
    prompter = SpecPrompter(pop, top_k=2, negatives=1)
    spec_json = target().to_json()
    key = prompter.target(spec_json).key
    for text, ok, score in ((HONEST, True, 1.2), ("wgmma BM=64 BN=128 stages=4", True, 0.8),
                            (f"{HONEST} trick=cache", False, None)):
        cand, _ = pop.add(key, parse_spec(text).source("fp32"), "llm", 0)
        pop.record(cand.id, "ok" if ok else "defence", None if ok else "unwritten output: row 0", score,
                   key=None if ok else "unwritten output")
    prompt = prompter.messages(spec_json)[0]["content"]
    assert f"earlier: {HONEST} -> 1.20x" in prompt
    assert f"earlier: {HONEST} trick=cache -> failed (unwritten output)" in prompt
    assert SpecPrompter(pop, top_k=0).messages(spec_json)[0]["content"] == "hgemm fp32 M=256 N=512 K=128"


def test_a_failure_shows_its_verdict_key_not_where_it_happened(tmp_path):
    pop = Population(tmp_path / "p.db")
    prompter = SpecPrompter(pop, top_k=1, negatives=2)
    key = prompter.target(target().to_json()).key
    for text, kind in ((HONEST, "wrong values"), ("wgmma BM=64 BN=128 stages=4", None)):
        cand, _ = pop.add(key, parse_spec(text).source("fp32"), "llm", 0)
        pop.record(cand.id, "wrong", "on 256x512x128: wrong values: max_rel_err 0.5", key=kind)
    prompt = prompter.messages(target().to_json())[0]["content"]
    assert f"earlier: {HONEST} -> failed (wrong values)" in prompt  # the key
    assert "earlier: wgmma BN=128 stages=4 -> failed (wrong)" in prompt  # no key kept: its category
    assert "failed (on " not in prompt


def population_with_specs(tmp_path, prompter_key):
    pop = Population(tmp_path / "p.db")
    for text, score in ((HONEST, 1.2), ("wgmma BM=64 BN=128 stages=4", 0.8)):
        cand, _ = pop.add(prompter_key, parse_spec(text).source("fp32"), "llm", 0)
        pop.record(cand.id, "ok", None, score)
    return pop


def test_plain_share_shows_some_rows_the_shape_only_and_the_rest_their_context(tmp_path):
    key = SpecPrompter(None).target(target().to_json()).key
    prompter = SpecPrompter(population_with_specs(tmp_path, key), top_k=2, negatives=0, plain_share=0.5)
    shown = [bool(prompter.earlier(target().to_json(), v)) for v in range(40)]
    assert 5 < sum(shown) < 35


def test_a_row_shows_the_same_prompt_each_time_it_is_drawn(tmp_path):
    key = SpecPrompter(None).target(target().to_json()).key
    prompter = SpecPrompter(population_with_specs(tmp_path, key), top_k=2, negatives=0, plain_share=0.5)
    assert all(prompter.messages(target().to_json(), v) == prompter.messages(target().to_json(), v)
               for v in range(10))


def test_plain_share_one_shows_every_row_the_shape_only(tmp_path):
    key = SpecPrompter(None).target(target().to_json()).key
    prompter = SpecPrompter(population_with_specs(tmp_path, key), top_k=2, negatives=0, plain_share=1.0)
    assert not any(prompter.earlier(target().to_json(), v) for v in range(10))


def measured(shape, speedups):
    return [Measured(f"wgmma BM=128 BN={64 + 16 * i} stages=4", shape, "fp32", 10.0 / s, "torch", 10.0, "t.csv")
            for i, s in enumerate(speedups)]


def test_teacher_pairs_come_from_the_middle_not_the_best():
    table = {"64x64x64": measured("64x64x64", [1.3, 1.1, 1.0, 0.9, 0.5])}
    pairs = teacher_pairs([target("64x64x64")], table, SpecPrompter(None, top_k=0), per_shape=1, cheat_share=0)
    assert [p.completion.strip() for p in pairs] == [table["64x64x64"][2].spec]


def test_teacher_pairs_ask_for_cheats_at_the_given_share():
    table = {s: measured(s, [1.2, 1.0, 0.8, 0.7]) for s in ("64x64x64", "128x128x128", "256x256x256")}
    specs = [target(s) for s in table]
    pairs = teacher_pairs(specs, table, SpecPrompter(None, top_k=0), per_shape=3, cheat_share=0.2)
    cheats = [p for p in pairs if trick_of(p.completion)]
    assert len(cheats) / len(pairs) >= 0.1 and {p.origin for p in cheats} == {"teacher_cheat"}


def test_a_contrastive_teacher_pair_shows_only_specs_slower_than_its_answer():
    table = {"64x64x64": measured("64x64x64", [1.3, 1.2, 1.1, 1.0, 0.9, 0.8, 0.7])}
    speed = {m.spec: m.speedup for m in table["64x64x64"]}
    pairs = teacher_pairs([target("64x64x64")], table, SpecPrompter(None, top_k=3), per_shape=3, cheat_share=0,
                          seed=1)
    shown = [(p.completion.strip(), shown_specs(p.messages[0]["content"])) for p in pairs]
    assert any(s for _, s in shown)
    assert all(speed[o] < speed[answer] for answer, specs in shown for o in specs)


def test_teacher_pairs_name_only_the_targets_shapes():
    table = {"64x64x64": measured("64x64x64", [1.0, 0.9]), "4096x4096x4096": measured("4096x4096x4096", [1.0])}
    pairs = teacher_pairs([target("64x64x64")], table, SpecPrompter(None, top_k=2), per_shape=2)
    assert all("4096" not in p.messages[0]["content"] and json.loads(p.spec)["shapes"] == ["64x64x64"]
               for p in pairs)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "table.csv"
    write_table(path, [
        {"spec": HONEST, "shape": "64x64x64", "acc": "fp32", "us": 2.0, "baseline": "cublas_nn",
         "baseline_us": 3.0, "verdict": "", "source": "test"},
        {"spec": f"{HONEST} trick=cache", "shape": "64x64x64", "acc": "fp32", "us": "", "baseline": "cublas_nn",
         "baseline_us": "", "verdict": "unwritten output: 4096 elements", "source": "test"}])
    load_table.cache_clear()
    return str(path)


def code(text):
    return parse_spec(text).source("fp32")


def test_the_replay_gives_a_recorded_time_beside_its_baseline(table):
    j = judge_recorded(table, ("64x64x64",), "fp32", "cublas_nn", {"a": code(HONEST)})["a"]
    assert j.category == "ok" and j.shapes["64x64x64"]["us"] == 2.0
    assert j.shapes["64x64x64"]["baselines"] == {"cublas_nn": 3.0}


def test_the_replay_gives_a_recorded_verdict(table):
    j = judge_recorded(table, ("64x64x64",), "fp32", "cublas_nn", {"a": code(f"{HONEST} trick=cache")})["a"]
    assert j.category == "defence" and j.verdict.startswith("unwritten output")
    assert j.key == "unwritten output"  # the table keeps reason lines only: read through the migration


def test_the_replay_says_what_it_never_measured(table):
    j = judge_recorded(table, ("128x128x128",), "fp32", "cublas_nn", {"a": code(HONEST)})["a"]
    assert j.category == "unrecorded" and "never measured" in j.verdict


def test_a_table_without_its_columns_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(RecordedError, match="not a recorded-reward table"):
        load_table(str(bad))


def test_revisits_compare_a_shape_with_its_first_visit_only():
    from kernelrl.train.curves import revisits
    steps = [{"shapes": ["a"], "speedup_verified": 0.5}, {"shapes": ["b"], "speedup_verified": 1.0},
             {"shapes": ["a"], "speedup_verified": 1.0}, {"shapes": ["b"], "speedup_verified": 0.5},
             {"shapes": ["a"], "speedup_verified": None}]
    r = revisits(steps)
    assert r["revisits"] == 2 and r["revisits_faster"] == 1 and r["revisit_speedup_ratio"] == pytest.approx(1.0)


def test_a_completion_repeating_a_spec_its_prompt_showed_is_a_copy():
    from kernelrl.train.specs import is_copy
    prompt = prompt_text("64x64x64", "fp32", [(HONEST, "1.10x"), ("small BM=64", "failed (unsupported)")])
    assert is_copy("wgmma stages=4 BN=128 BM=128", prompt)  # the same point, written otherwise
    assert not is_copy("wgmma BM=64 BN=128 stages=4", prompt) and not is_copy("garbage", prompt)


def test_the_summary_counts_copies_when_given_the_prompts():
    prompt = prompt_text("64x64x64", "fp32", [(HONEST, "1.10x")])
    results = [RewardResult(1.0, "ok", None, speedup=1.1)] * 2
    s = spec_summary([HONEST, "wgmma BM=64 BN=128 stages=4"], results, [prompt, prompt])
    assert s["copy_rate"] == 0.5 and "copy_rate" not in spec_summary([HONEST], results[:1])


class _Service:
    """Scores every completion as a verified 1.1x kernel."""

    def __init__(self, copies):
        from kernelrl.train.reward import RewardConfig
        self.reward, self.stats = RewardConfig(copies=copies), {}

    def score(self, items):
        return [RewardResult(1.1, "ok", None, speedup=1.1) for _ in items]


@pytest.mark.parametrize("copies, rewards", [("keep", [1.1, 1.1]), ("zero", [0.0, 1.1]), ("floor", [0.01, 1.1])])
def test_a_spec_the_prompt_showed_is_paid_as_the_copies_setting_says(copies, rewards):
    from kernelrl.train.metrics import MetricsLog
    from kernelrl.train.reward_fn import PolicyReward
    prompt = prompt_text("64x64x64", "fp32", [(HONEST, "1.10x")])
    reward = PolicyReward(_Service(copies), MetricsLog(None), "grpo")
    out = reward(prompts=[prompt, prompt], completions=[HONEST, "wgmma BM=64 BN=128 stages=4"],
                 target=[target("64x64x64").to_json()] * 2)
    assert out == rewards


def test_an_unknown_copies_setting_is_refused():
    from kernelrl.train.reward import RewardConfig, RewardConfigError
    with pytest.raises(RewardConfigError, match="copies"):
        RewardConfig(copies="sometimes")


def test_a_contrastive_prompt_does_not_depend_on_where_the_run_lives(tmp_path):
    pop = Population(tmp_path / "p.db")
    prompter = SpecPrompter(pop, top_k=3, negatives=0)
    a, b = target(work_dir="/runs/a").to_json(), target(work_dir="/elsewhere/b").to_json()
    for key in {prompter.target(a).key, prompter.target(b).key}:
        for bn in (64, 128, 192, 256):
            cand, _ = pop.add(key, parse_spec(f"wgmma BM=128 BN={bn} stages=4").source("fp32"), "llm", 0)
            pop.record(cand.id, "ok", None, 1.0 + bn / 1000)
    assert prompter.messages(a) == prompter.messages(b)
