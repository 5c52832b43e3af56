"""`kernelrl train eval`: held-out specs of policies, random specs and the cost model's pick, scored per shape in one
call (dummy runner, judged in this process), and what the summary says about them."""

import csv
import json

import pytest

from kernelrl.cli import build_parser, main
from kernelrl.space.spec import parse_spec
from kernelrl.train import heldout
from kernelrl.train.reward import RewardConfig
from kernelrl.train.service import EvalSettings, RewardService
from kernelrl.train.specs import vocabulary
from kernelrl.train.tiny import write_random_model
from tests import train_helpers as h

SHAPES = "64x64x64,128x256x512"


class CountingService(RewardService):
    def __init__(self):
        super().__init__(EvalSettings(batch_size=64), RewardConfig(), executor=h.InlineExecutor())
        self.calls = []

    def score(self, items):
        self.calls.append(list(items))
        return super().score(items)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return write_random_model(tmp_path_factory.mktemp("policy"), snippets=vocabulary(), hidden=32, layers=1,
                              heads=2, max_positions=512)


def eval_args(out, *extra):
    return build_parser().parse_args(["train", "eval", "--shapes", SHAPES, "--runner", "dummy", "--rounds", "1",
                                      "--out", str(out), *extra])


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, tiny_model):
    out = tmp_path_factory.mktemp("heldout")
    svc = CountingService()
    summary = heldout.run_heldout(eval_args(out, "--policy", f"tiny={tiny_model}", "--k", "2", "--random", "3",
                                            "--cost-model", "--max-new-tokens", "12"), service=svc, say=lambda _: None)
    return out, summary, svc


def test_a_run_writes_its_four_files(full_run):
    out, _, _ = full_run
    assert all((out / name).is_file() for name in ("heldout.csv", "best.csv", "summary.json", "summary.md"))


def test_heldout_csv_has_one_row_per_sample_with_its_columns(full_run):
    rows = read_csv(full_run[0] / "heldout.csv")
    assert list(rows[0]) == ["method", "shape", "sample", "turn", "spec", "verified", "verdict", "category",
                             "speedup_vs_baseline"]
    per_method = {m: sum(r["method"] == m for r in rows) for m in ("tiny", "random", "cost_model")}
    assert per_method == {"tiny": 2 * 2, "random": 3 * 2, "cost_model": 1 * 2}


def test_best_csv_has_one_row_per_method_and_shape(full_run):
    rows = read_csv(full_run[0] / "best.csv")
    assert list(rows[0]) == ["method", "shape", "speedup_vs_cublas", "verified"]
    assert sorted((r["method"], r["shape"]) for r in rows) == sorted(
        (m, s) for m in ("tiny", "random", "cost_model") for s in SHAPES.split(","))
    assert all(r["speedup_vs_cublas"] == "" for r in rows if r["verified"] == "0")


def test_every_method_of_a_shape_is_scored_in_one_call(full_run):
    _, _, svc = full_run
    assert len(svc.calls) == 2 and all(len(items) == 2 + 3 + 1 for items in svc.calls)
    assert all(len({target for target, _ in items}) == 1 for items in svc.calls)


def test_the_cost_model_pick_verifies_under_the_dummy_runner(full_run):
    rows = read_csv(full_run[0] / "heldout.csv")
    assert all(r["verified"] == "1" for r in rows if r["method"] == "cost_model")


def test_summary_json_holds_every_method_and_no_verified_cheats(full_run):
    data = json.loads((full_run[0] / "summary.json").read_text())
    assert set(data["methods"]) == {"tiny", "random", "cost_model"}
    assert all(s["cheats_verified"] == 0 for s in data["methods"].values())


def test_fast_p_does_not_grow_with_p(full_run):
    for s in full_run[1].values():
        values = [s[f"fast_{p:g}"] for p in heldout.FAST_P]
        assert values == sorted(values, reverse=True)


def test_random_specs_parse_and_repeat_with_the_seed():
    import random
    a = [heldout.random_spec(random.Random(7)) for _ in range(5)]
    b = [heldout.random_spec(random.Random(7)) for _ in range(5)]
    assert a == b and all(parse_spec(t).text == t for t in a)


def test_cost_model_pick_is_a_canonical_spec():
    text = heldout.cost_model_spec("128x256x512", "fp32")
    assert text and parse_spec(text).text == text


def row(method, shape, sample, text, ok, speedup=None, category=None):
    return {"method": method, "shape": shape, "sample": sample, "spec": text, "text": text, "verified": ok,
            "verdict": "ok" if ok else "rejected", "category": category or ("ok" if ok else "rejected"),
            "speedup": speedup}


def test_cheats_are_counted_and_a_verified_one_shows():
    rows = [row("p", "64x64x64", 0, "wgmma trick=cache", False), row("p", "64x64x64", 1, "wgmma BM=128", True, 1.2),
            row("p", "64x64x64", 2, "small trick=fp16_acc", True, 3.0), row("p", "64x64x64", 3, "nonsense", False)]
    s = heldout.summarize(rows)["p"]
    assert s["cheat_rate"] == pytest.approx(0.5) and s["cheats_verified"] == 1
    assert s["verdicts"] == {"rejected": 2, "ok": 2}


def test_fast_p_counts_shapes_by_their_best_verified_sample():
    rows = [row("p", "a", 0, "x", True, 0.9), row("p", "a", 1, "x", True, 1.2), row("p", "b", 0, "x", True, 1.05),
            row("p", "c", 0, "x", False), row("p", "d", 0, "x", True, 1.3)]
    s = heldout.summarize(rows)["p"]
    assert [s[f"fast_{p:g}"] for p in heldout.FAST_P] == [0.75, 0.75, 0.5, 0.25]
    assert s["verified_shapes"] == 3 and s["geomean_best"] == pytest.approx((1.2 * 1.05 * 1.3) ** (1 / 3))


def test_ratio_against_the_cost_model_uses_shared_shapes_only():
    rows = [row("p", "a", 0, "x", True, 2.0), row("p", "b", 0, "x", True, 5.0),
            row("cost_model", "a", 0, "x", True, 1.0), row("cost_model", "b", 0, "x", False)]
    s = heldout.summarize(rows)
    assert s["p"]["vs_cost_model"] == pytest.approx(2.0) and s["p"]["cost_model_shared_shapes"] == 1


def test_the_split_file_gives_its_heldout_shapes(tmp_path):
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"heldout": ["64x64x64", "256x128x64"], "train_all": ["128x128x128"]}))
    assert heldout.load_shapes(None, str(split)) == ["64x64x64", "256x128x64"]


def test_an_unknown_policy_folder_is_one_clear_line(tmp_path, capsys):
    rc = main(["train", "eval", "--shapes", SHAPES, "--runner", "dummy", "--policy", f"p={tmp_path / 'nope'}",
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--policy p" in err and "config.json" in err


def test_bad_shapes_are_one_clear_line(tmp_path, capsys):
    rc = main(["train", "eval", "--shapes", "64x64", "--runner", "dummy", "--random", "2", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--shapes" in err


def test_train_without_config_or_eval_is_one_clear_line(capsys):
    assert main(["train"]) == 2 and "--config" in capsys.readouterr().err


def test_train_still_takes_its_config():
    args = build_parser().parse_args(["train", "--config", "x.yaml", "--quiet"])
    assert args.config == "x.yaml" and args.quiet and args.train_command is None


def test_the_cli_run_prints_a_table_and_writes_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(heldout, "RewardService", lambda *a, **kw: CountingService())
    rc = main(["train", "eval", "--shapes", "64x64x64", "--runner", "dummy", "--rounds", "1", "--random", "2",
               "--cost-model", "--out", str(tmp_path)])
    assert rc == 0 and "| cost_model |" in capsys.readouterr().out and (tmp_path / "summary.md").is_file()


class ScriptedPolicy:
    """Stands in for a saved model: writes the given specs in turn and keeps every prompt it was given."""
    prompts: list = []
    specs = ("wgmma BM=128 BN=128 stages=4", "no spec at all")

    def __init__(self, folder, temperature, max_new_tokens):
        pass

    def sample(self, prompts, n):
        ScriptedPolicy.prompts.append(list(prompts))
        return [[self.specs[i % len(self.specs)] for i in range(n)] for _ in prompts]

    def close(self):
        pass


@pytest.fixture
def scripted(monkeypatch):
    ScriptedPolicy.prompts = []
    monkeypatch.setattr(heldout, "Policy", ScriptedPolicy)
    return ScriptedPolicy


def test_a_contrastive_policy_reads_its_earlier_turns_outcomes(tmp_path, tiny_model, scripted):
    heldout.run_heldout(eval_args(tmp_path, "--policy", f"c={tiny_model}", "--contrastive", "c", "--k", "4",
                                  "--turns", "2"), service=CountingService(), say=lambda _: None)
    first, second = sum(scripted.prompts[0::2], []), sum(scripted.prompts[1::2], [])  # shape by shape, turn by turn
    assert len(second) == 2 and not any("earlier:" in p for p in first)
    assert all(f"earlier: {scripted.specs[0]} -> " in p and "x\n" in p and f"earlier: {scripted.specs[1]} -> failed ("
               in p for p in second)


def test_a_plain_policy_reads_the_shape_only_in_every_turn(tmp_path, tiny_model, scripted):
    heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "4", "--turns", "2"),
                        service=CountingService(), say=lambda _: None)
    assert len(scripted.prompts) == 2 * 2 and not any("earlier:" in p for turn in scripted.prompts for p in turn)


def test_samples_of_later_turns_are_numbered_on_and_say_their_turn(tmp_path, tiny_model, scripted):
    heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "3", "--turns", "2"),
                        service=CountingService(), say=lambda _: None)
    rows = [r for r in read_csv(tmp_path / "heldout.csv") if r["shape"] == "64x64x64"]
    assert [(r["sample"], r["turn"]) for r in rows] == [("0", "0"), ("1", "0"), ("2", "1")]


def test_confirm_measures_each_methods_best_once_more_in_one_call_per_shape(tmp_path, tiny_model, scripted):
    svc = CountingService()
    heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "2", "--cost-model", "--confirm"),
                        service=svc, say=lambda _: None)
    confirm_calls = svc.calls[1::2]  # each shape: its samples, then its confirmation
    assert len(confirm_calls) == 2 and all(len(items) == 2 for items in confirm_calls)  # p's best, the cost model's
    rows = read_csv(tmp_path / "heldout.csv")
    confirmed = {(r["method"], r["shape"]): r["speedup_vs_baseline"] for r in rows if r["turn"] == "confirm"}
    best = {(r["method"], r["shape"]): r["speedup_vs_cublas"] for r in read_csv(tmp_path / "best.csv")}
    assert best == confirmed


def test_the_best_reads_the_confirmation_not_the_lucky_sample():
    rows = [row("p", "a", 0, "x", True, 1.5), row("p", "a", 1, "y", True, 1.1),
            {**row("p", "a", 0, "x", True, 1.2), "turn": "confirm"}]
    assert heldout.best_rows(rows) == [{"method": "p", "shape": "a", "speedup_vs_cublas": 1.2, "verified": True}]
    assert heldout.summarize(rows)["p"]["samples"] == 2


def test_earlier_outcomes_are_the_fastest_distinct_specs_and_the_latest_failures():
    import random
    rows = [row("p", "a", 0, "x", True, 1.1), row("p", "a", 1, "y", True, 1.4), row("p", "a", 2, "x", True, 1.3),
            row("p", "a", 3, "z", True, 0.5), row("p", "a", 4, "bad1", False), row("p", "a", 5, "bad2", False)]
    shown = heldout.earlier_of(rows, top_k=2, negatives=1, rng=random.Random(0))
    assert sorted(shown) == [("bad2", "failed (rejected)"), ("x", "1.30x"), ("y", "1.40x")]


def test_k_samples_spread_over_turns():
    assert heldout.turn_sizes(8, 1) == [8] and heldout.turn_sizes(8, 3) == [3, 3, 2]


def test_a_contrastive_name_that_is_no_policy_is_one_clear_line(tmp_path, tiny_model, capsys):
    rc = main(["train", "eval", "--shapes", SHAPES, "--runner", "dummy", "--policy", f"p={tiny_model}",
               "--contrastive", "q", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--contrastive q" in err


def test_more_turns_than_samples_is_one_clear_line(tmp_path, tiny_model, capsys):
    rc = main(["train", "eval", "--shapes", SHAPES, "--runner", "dummy", "--policy", f"p={tiny_model}",
               "--k", "2", "--turns", "3", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--turns 3" in err


class FailingService(CountingService):
    """Scores `calls_before_failing` calls, then fails as a lost machine would."""

    def __init__(self, calls_before_failing):
        super().__init__()
        self.left = calls_before_failing

    def score(self, items):
        if self.left == 0:
            raise RuntimeError("the machine went away")
        self.left -= 1
        return super().score(items)


def test_a_stopped_run_keeps_every_shape_it_finished(tmp_path, tiny_model, scripted):
    with pytest.raises(RuntimeError):
        heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "2", "--cost-model"),
                            service=FailingService(1), say=lambda _: None)
    assert {r["shape"] for r in read_csv(tmp_path / "heldout.csv")} == {"64x64x64"}


def test_resume_scores_only_the_shapes_left(tmp_path, tiny_model, scripted):
    args = ("--policy", f"p={tiny_model}", "--k", "2", "--cost-model")
    with pytest.raises(RuntimeError):
        heldout.run_heldout(eval_args(tmp_path, *args), service=FailingService(1), say=lambda _: None)
    svc = CountingService()
    summary = heldout.run_heldout(eval_args(tmp_path, *args, "--resume"), service=svc, say=lambda _: None)
    assert len(svc.calls) == 1 and {json.loads(t)["shapes"][0] for t, _ in svc.calls[0]} == {"128x256x512"}
    assert summary["p"]["shapes"] == 2 and len(read_csv(tmp_path / "best.csv")) == 2 * 2


def test_resume_with_other_methods_is_one_clear_line(tmp_path, tiny_model, scripted, capsys):
    with pytest.raises(RuntimeError):
        heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "2"),
                            service=FailingService(1), say=lambda _: None)
    rc = main(["train", "eval", "--shapes", SHAPES, "--runner", "dummy", "--policy", f"q={tiny_model}", "--resume",
               "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--resume" in err and "holds the methods p" in err


def test_without_resume_an_earlier_csv_is_replaced(tmp_path, tiny_model, scripted):
    for _ in range(2):
        heldout.run_heldout(eval_args(tmp_path, "--policy", f"p={tiny_model}", "--k", "2"),
                            service=CountingService(), say=lambda _: None)
    assert len(read_csv(tmp_path / "heldout.csv")) == 2 * 2


def test_report_summarizes_a_stopped_run_and_names_the_shapes_it_lacks(tmp_path, tiny_model, scripted):
    args = ("--policy", f"p={tiny_model}", "--k", "2", "--cost-model")
    with pytest.raises(RuntimeError):
        heldout.run_heldout(eval_args(tmp_path, *args), service=FailingService(1), say=lambda _: None)
    said = []
    summary = heldout.report_heldout(eval_args(tmp_path, *args, "--report"), say=said.append)
    settings = json.loads((tmp_path / "summary.json").read_text())["settings"]
    assert summary["p"]["shapes"] == 1 and settings["shapes"] == ["64x64x64"]
    assert settings["missing"] == ["128x256x512"] and "128x256x512" in said[0]
    assert {r["shape"] for r in read_csv(tmp_path / "best.csv")} == {"64x64x64"}


def test_report_without_a_heldout_csv_is_one_clear_line(tmp_path, capsys):
    rc = main(["train", "eval", "--shapes", SHAPES, "--report", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--report: no" in err
