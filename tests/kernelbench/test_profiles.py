"""Both tolerance profiles on every KernelBench pair (CPU worker): a candidate whose outputs are off by about 1e-3
(TF32-like) is wrong under `strict` (fp32 1e-4) and correct under `kernelbench` (1e-2, KernelBench v0 / CUDA-L1),
is timed either way, and the profile a run names decides `verified`; one off by 1e-1 fails both and is not timed.
Integrity verdicts do not depend on the profile."""

import pytest

from kernelrl.harness.tolerance import UnknownProfile
from kernelrl.kernelbench.aggregate import TaskResult, profile_table
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs, task_result
from tests.kb_helpers import pairs_in, task

BODIES = {"exact": "torch.tanh(x)", "tf32_like": "torch.tanh(x) * (1 + 1e-3)", "wrong": "torch.tanh(x) + 1e-1",
          "inplace": "x.mul_(1.0 + 1e-3).tanh()"}


def evaluate(tmp_path, profile):
    pairs = pairs_in(tmp_path, task(), BODIES)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=30.0,
                          tolerance_profile=profile)
    out = run_pairs(pairs, settings)
    return {name: out[i][0] for i, name in enumerate(BODIES)}


@pytest.fixture(scope="module")
def by_profile(tmp_path_factory):
    return {p: evaluate(tmp_path_factory.mktemp(p), p) for p in ("strict", "kernelbench")}


def test_a_tf32_like_error_fails_strict_and_passes_kernelbench_and_is_timed_under_both(by_profile):
    strict, loose = by_profile["strict"]["tf32_like"], by_profile["kernelbench"]["tf32_like"]
    assert not strict["verified"] and strict["verdict"] == "wrong values"
    assert "within the kernelbench profile's" in strict["reason"]
    assert loose["verified"] and loose["reason"] is None
    for rec in (strict, loose):
        assert rec["profiles"] == {"strict": False, "kernelbench": True}
        assert rec["candidate_us"] and rec["speedup"]
        assert 1e-4 < rec["tightest_tolerance"] < 1e-2


def test_an_exact_candidate_passes_both_profiles(by_profile):
    for profile, recs in by_profile.items():
        rec = recs["exact"]
        assert rec["verified"] and rec["profile"] == profile
        assert rec["profiles"] == {"strict": True, "kernelbench": True}


def test_an_error_beyond_every_profile_fails_both_untimed(by_profile):
    for recs in by_profile.values():
        rec = recs["wrong"]
        assert not rec["verified"] and rec["verdict"] == "wrong values" and rec["candidate_us"] is None
        assert not any((rec["profiles"] or {}).values())


def test_an_integrity_verdict_holds_under_the_loose_profile(by_profile):
    rec = by_profile["kernelbench"]["inplace"]
    assert not rec["verified"] and rec["verdict"] == "modified inputs" and rec["candidate_us"] is None


def test_task_results_carry_each_profile_and_its_time(by_profile):
    res = task_result("t", [by_profile["strict"]["tf32_like"]], ("eager",))
    ok, _ = pair_verdict([by_profile["strict"]["tf32_like"]])
    assert not ok and not res.ok and res.profiles["kernelbench"] and res.timed_us
    assert res.speedup("eager") is None and res.speedup_under("eager", "kernelbench") > 0


def test_fast_p_counts_every_task_and_only_correct_fast_ones():
    results = [TaskResult("a", 10.0, {"eager": 30.0}, "", {"strict": True, "kernelbench": True}, 10.0),
               TaskResult("b", None, {"eager": 12.0}, "wrong values", {"strict": False, "kernelbench": True}, 10.0),
               TaskResult("c", None, {"eager": 5.0}, "crash", {}, None),
               TaskResult("d", 10.0, {"eager": 5.0}, "", {"strict": True, "kernelbench": True}, 10.0)]
    rows = {r["profile"]: r for r in profile_table(results, "eager")}
    assert rows["strict"]["correct"] == 2 and rows["kernelbench"]["correct"] == 3
    assert rows["strict"]["fast_0"] == 0.5 and rows["kernelbench"]["fast_0"] == 0.75
    assert rows["strict"]["fast_1"] == 0.25 and rows["kernelbench"]["fast_1"] == 0.5  # a: 3x, b: 1.2x
    assert rows["kernelbench"]["fast_2"] == 0.25
    assert rows["strict"]["geomean"] == pytest.approx((3.0 * 0.5) ** 0.5)


def test_an_unknown_profile_is_one_clear_error():
    with pytest.raises(UnknownProfile, match="choose from strict, kernelbench"):
        KBSettings(tolerance_profile="loose")


OVERFLOW_TASK = task("torch.exp(x * 200.0)")  # inf wherever x > ~0.44: the reference's own overflow

OVERFLOW_BODIES = {"same": "torch.exp(x * 200.0)", "clamped": "torch.exp(x * 200.0).clamp_max(3e38)",
                   "nan_everywhere": "torch.exp(x * 200.0) * float('nan')"}


@pytest.fixture(scope="module")
def overflow(tmp_path_factory):
    pairs = pairs_in(tmp_path_factory.mktemp("overflow"), OVERFLOW_TASK, OVERFLOW_BODIES)
    out = run_pairs(pairs, KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2))
    return {name: out[i][0] for i, name in enumerate(OVERFLOW_BODIES)}


def test_the_references_own_infinities_are_matched_not_blamed_on_the_candidate(overflow):
    rec = overflow["same"]
    assert rec["verified"], rec["reason"]
    assert any("reference's output is non-finite" in n for n in rec["extra"]["notes"])


def test_a_finite_value_where_the_reference_overflows_is_wrong(overflow):
    rec = overflow["clamped"]
    assert rec["verdict"] == "wrong values" and "where the reference itself is non-finite" in rec["reason"]


def test_nan_where_the_reference_is_finite_is_still_nan_inf(overflow):
    rec = overflow["nan_everywhere"]
    assert rec["verdict"] == "NaN/Inf" and "where the reference is finite" in rec["reason"]


RANDOM_TASK = '''
import os
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.5)  # training mode: a new mask every call

    def forward(self, x):
        return {forward}

def get_inputs():
    return [torch.randn(64, 32)]

def get_init_inputs():
    return []
'''

RANDOM_CANDIDATE = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        return {forward}
'''


@pytest.fixture(scope="module")
def random_tasks(tmp_path_factory):
    d = tmp_path_factory.mktemp("random")
    cases = {"dropout_self": ("torch.softmax(self.dropout(x), dim=1)", "torch.softmax(self.dropout(x), dim=1)"),
             "dropout_skipped": ("torch.softmax(self.dropout(x), dim=1)", "torch.softmax(x, dim=1)"),
             # one os.urandom byte per element: two calls agree by chance with odds 256**-2048 (one byte for the whole
             # tensor agreed once in 256, and the task then passed as not random)
             "os_random": ("x + torch.frombuffer(bytearray(os.urandom(x.numel())), dtype=torch.uint8)"
                           ".reshape(x.shape).float()", "x + 1.0")}
    pairs = []
    for name, (task_fwd, cand_fwd) in cases.items():
        (d / f"{name}_task.py").write_text(RANDOM_TASK.replace("{forward}", task_fwd))
        (d / f"{name}.py").write_text(RANDOM_CANDIDATE.replace("{forward}", cand_fwd))
        pairs.append((str(d / f"{name}_task.py"), str(d / f"{name}.py")))
    out = run_pairs(pairs, KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2))
    return {name: out[i][0] for i, name in enumerate(cases)}


def test_a_dropout_task_against_itself_is_correct_under_one_seed_per_call(random_tasks):
    rec = random_tasks["dropout_self"]
    assert rec["verified"], rec["reason"]
    assert any("the reference is random" in n for n in rec["extra"]["notes"])


def test_a_candidate_that_drops_the_dropout_is_wrong(random_tasks):
    assert random_tasks["dropout_skipped"]["verdict"] == "wrong values"


def test_a_reference_no_seed_repeats_is_a_task_verdict(random_tasks):
    rec = random_tasks["os_random"]
    assert rec["verdict"] == "random reference" and rec["candidate_us"] is None


def test_a_progress_line_estimates_the_rest_from_the_mean_pair_so_far():
    from kernelrl.kernelbench.worker import progress_line
    assert progress_line(2, 10, "t <- c", "correct", 30.0) == "[2/10] t <- c: correct (30 s, about 120 s left)"
    assert progress_line(10, 10, "t <- c", "correct", 150.0) == "[10/10] t <- c: correct (150 s)"


def test_a_progress_line_leaves_the_build_step_out_of_its_estimate():
    from kernelrl.kernelbench.worker import progress_line
    # 100 s so far, 90 of them building: 5 s a pair, 8 pairs left
    assert progress_line(2, 10, "t <- c", "correct", 100.0, 10.0) == "[2/10] t <- c: correct (100 s, about 40 s left)"
