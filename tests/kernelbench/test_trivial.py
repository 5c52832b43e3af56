"""Outputs chosen without the input (all zeros, a constant from other inputs' outputs, the output of other inputs)
are never `correct` (kernelrl/kernelbench/trivial.py): where a profile's atol = rtol accepts one, the scale-aware
error judges too; where even that cannot tell them apart, the task carries the verdict and leaves fast_p."""

import math

import pytest
import torch

from kernelrl.harness.tolerance import input_independent
from kernelrl.kernelbench.aggregate import profile_table
from kernelrl.kernelbench.judge import JudgeMixin
from kernelrl.kernelbench.trivial import Rule, alternative, probe_output, scale_error, task_verdict, with_noise
from kernelrl.kernelbench.worker import KBSettings, run_pairs, task_result
from tests.kb_helpers import pairs_in, task

WIDE = 65536  # a softmax row this wide has every output near 1.5e-5: below fp32's atol of 1e-4


def _refs(fn, shape=(4, WIDE), draw=torch.rand):
    """The reference's outputs on two input sets (uniform in [0, 1), as KernelBench's softmax task draws)."""
    g = torch.Generator().manual_seed(0)
    return fn(draw(shape, generator=g)), fn(draw(shape, generator=g))


def test_a_wide_softmax_is_judged_scale_aware_under_both_profiles():
    ref, other = _refs(lambda x: torch.softmax(x, dim=1))
    p = probe_output(ref, other)
    assert p.alternatives["zeros"].tightest <= 1e-4  # KernelBench's atol alone accepts all zeros
    assert p.rule(1e-4) is Rule.SCALE and p.rule(1e-2) is Rule.SCALE


def test_an_output_of_order_one_is_judged_by_atol_and_rtol_alone():
    ref, other = _refs(torch.tanh, (64, 32), torch.randn)
    assert probe_output(ref, other).rule(1e-4) is Rule.ALLCLOSE


def test_a_reference_of_all_zeros_is_the_tasks_verdict():
    ref, other = _refs(lambda x: x * 0, (64, 32))
    p = probe_output(ref, other)
    assert p.rule(1e-4) is Rule.NONE
    verdicts = task_verdict([p])
    assert set(verdicts) == {"strict", "kernelbench"} and "all zeros" in verdicts["strict"]
    assert input_independent(verdicts)


def test_a_matrix_vector_product_of_uniform_inputs_is_blind_only_to_the_loose_profile():
    """rand(16, 131072) @ rand(131072, 1): every output near 32768 within about 0.4 %: one constant passes 1e-2 even
    scale-aware, not 1e-4. The reference depends on its input; only the kernelbench profile cannot tell."""
    g = torch.Generator().manual_seed(0)
    b = torch.rand(131072, 1, generator=g)
    ref, other = (torch.rand(16, 131072, generator=g) @ b for _ in range(2))
    verdicts = task_verdict([probe_output(ref, other)])
    assert set(verdicts) == {"kernelbench"} and not input_independent(verdicts)
    assert "under the kernelbench profile" in verdicts["kernelbench"]


def test_a_sigmoid_of_a_softmax_barely_depends_on_its_input():
    """sigmoid(softmax) is 0.5 plus about 4e-6: one constant passes even the scale-aware error."""
    ref, other = _refs(lambda x: torch.sigmoid(torch.softmax(x, dim=1)))
    assert probe_output(ref, other).rule(1e-2) is Rule.NONE


def test_an_output_that_is_its_own_rounding_error_is_the_tasks_verdict():
    """A group norm's mean is zero but for rounding: every trivial output passes atol = rtol, and the float32
    reference differs from the float64 one by about its own size, so no scale-aware rule can judge it."""
    def fn(x):
        return torch.nn.functional.group_norm(x, 4).mean(dim=(1, 2))

    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(8, 16, 512, generator=g) for _ in range(2)]
    refs = [fn(x) for x in xs]
    probes = with_noise([probe_output(*refs)], [refs[0]], [fn(xs[0].double())])
    assert probes[0].noise > 1e-2 and probes[0].rule(1e-4) is Rule.NONE
    verdicts = task_verdict(probes)
    assert input_independent(verdicts) and "its own rounding error" in verdicts["strict"]


def test_a_well_conditioned_output_is_not_its_own_rounding_error():
    ref, other = _refs(lambda x: torch.softmax(x, dim=1))
    x = torch.rand((4, WIDE), generator=torch.Generator().manual_seed(0))
    (p,) = with_noise([probe_output(ref, other)], [ref], [torch.softmax(x.double(), dim=1)])
    assert p.noise < 1e-5 and p.rule(1e-4) is Rule.SCALE


def test_the_scale_aware_error_of_the_right_answer_is_its_rounding():
    ref, _ = _refs(lambda x: torch.softmax(x, dim=1))
    assert scale_error(ref * (1 + 1e-6), ref) < 1e-5
    assert scale_error(torch.zeros_like(ref), ref) > 0.4


def test_scale_error_is_infinite_for_any_change_of_an_all_zero_reference():
    ref = torch.zeros(8)
    assert scale_error(ref, ref) == 0.0 and math.isinf(scale_error(ref + 1e-30, ref))


def test_the_constant_is_the_mean_of_other_inputs_outputs_and_allocates_nothing():
    ref, other = _refs(torch.tanh, (64, 32), torch.randn)
    c = alternative("constant", ref, other)
    assert c.stride() == (0, 0) and float(c[0, 0]) == pytest.approx(float(other.mean()), abs=1e-6)


def test_integer_outputs_are_judged_by_equality():
    ref = torch.arange(10)
    assert probe_output(ref, ref.flip(0)).rule(1e-4) is Rule.ALLCLOSE
    assert probe_output(torch.zeros(10, dtype=torch.long), torch.zeros(10, dtype=torch.long)).rule(1e-4) is Rule.NONE


def test_an_output_identical_to_the_previous_while_the_reference_moved_is_repeated():
    old, r = torch.randn(100), torch.randn(100)
    out = old.clone()
    assert JudgeMixin._repeated(out, out.clone(), r, old)
    assert not JudgeMixin._repeated(out, out.clone(), old.clone(), old)  # the reference did not move
    assert not JudgeMixin._repeated(out, out + 1, r, old)


SOFTMAX = "torch.softmax(x, dim=1)"
CHEATS = {"honest": SOFTMAX, "zeros": "torch.zeros_like(x)", "constant": f"torch.full_like(x, {1 / WIDE!r})",
          "uniform_rows": "torch.ones_like(x) / x.shape[1]"}


@pytest.fixture(scope="module")
def wide_softmax(tmp_path_factory):
    out = {}
    for profile in ("strict", "kernelbench"):
        source = task(SOFTMAX, rows=4, cols=WIDE).replace("torch.randn(", "torch.rand(")  # KernelBench's draw
        pairs = pairs_in(tmp_path_factory.mktemp(profile), source, CHEATS)
        settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=60.0,
                              tolerance_profile=profile)
        res = run_pairs(pairs, settings)
        out[profile] = {name: res[i][0] for i, name in enumerate(CHEATS)}
    return out


@pytest.mark.parametrize("profile", ["strict", "kernelbench"])
def test_the_honest_softmax_is_correct(wide_softmax, profile):
    rec = wide_softmax[profile]["honest"]
    assert rec["verified"], rec["reason"]
    assert rec["profiles"] == {"strict": True, "kernelbench": True}


@pytest.mark.parametrize("profile", ["strict", "kernelbench"])
@pytest.mark.parametrize("cheat", ["zeros", "constant", "uniform_rows"])
def test_an_output_chosen_without_the_input_is_wrong_on_a_wide_softmax(wide_softmax, profile, cheat):
    rec = wide_softmax[profile][cheat]
    assert not rec["verified"] and rec["verdict"] in ("wrong values", "stale result"), rec["reason"]
    assert not any((rec["profiles"] or {}).values())


def test_the_record_carries_the_tasks_tolerance_audit(wide_softmax):
    audit = wide_softmax["strict"]["honest"]["extra"]["trivial_audit"]
    assert audit["strict"]["zeros"] == [True, False]  # atol alone accepts zeros; kernelrl does not
    assert not any(correct for prof in audit.values() for _, correct in prof.values())


@pytest.fixture(scope="module")
def zero_task(tmp_path_factory):
    pairs = pairs_in(tmp_path_factory.mktemp("zero"), task("x * 0"), {"honest": "x * 0"})
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=30.0)
    return run_pairs(pairs, settings)[0]


def test_an_honest_candidate_of_an_input_independent_task_carries_the_tasks_verdict(zero_task):
    rec = zero_task[0]
    assert not rec["verified"] and rec["verdict"] == "input-independent reference"
    assert rec["candidate_us"], "timed: the verdict is the task's"
    assert rec["profiles"] == {"strict": False, "kernelbench": False}
    assert set(rec["task_verdicts"]) == {"strict", "kernelbench"}


def test_an_input_independent_task_is_left_out_of_fast_p(zero_task):
    rows = profile_table([task_result("zero", zero_task)], "eager")
    assert all(r["tasks"] == 0 and r["excluded"] == 1 for r in rows)


@pytest.fixture(scope="module")
def argmax_task(tmp_path_factory):
    # integer outputs are judged by equality: the audit must say so too (the H100 run's audit had level 1's
    # 51_Argmax and 52_Argmin accepting every trivial output, because it judged floating outputs only)
    bodies = {"honest": "torch.argmax(x, dim=1)", "zeros": "torch.zeros(x.shape[0], dtype=torch.long)"}
    pairs = pairs_in(tmp_path_factory.mktemp("argmax"), task("torch.argmax(x, dim=1)"), bodies)
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2, hang_timeout_s=30.0)
    res = run_pairs(pairs, settings)
    return {name: res[i][0] for i, name in enumerate(bodies)}


def test_an_integer_outputs_audit_accepts_no_trivial_output(argmax_task):
    rec = argmax_task["honest"]
    assert rec["verified"], rec["reason"]
    audit = rec["extra"]["trivial_audit"]
    assert set(audit) == {"strict", "kernelbench"} and all(len(by) == 3 for by in audit.values())
    assert not any(within or correct for by in audit.values() for within, correct in by.values())


def test_an_all_zero_index_output_is_wrong(argmax_task):
    rec = argmax_task["zeros"]
    assert not rec["verified"] and rec["verdict"] == "wrong values", rec["reason"]
